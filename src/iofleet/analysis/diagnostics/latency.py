"""Diagnostics rules on outstanding IO and latency: a sweep that stopped
too early or went past the knee, latency over its limit, a long tail."""

from __future__ import annotations

import math
from typing import Iterator

from ...results.model import TestRecord
from ...units import format_value
from ..little import SYNC_ENGINES, outstanding_io
from .context import (
    DIRECTIONS, Hit, JudgedRun, Level, as_percent, cpu_hot, has_reads, host_count, is_direct, per_host_text,
)
from .thresholds import Thresholds


def _ms(us: float) -> str:
    """A latency in prose: "1.23 ms" (about three significant digits)."""
    return format_value(us, "us", with_unit=True, short=True)


def _pct(ratio: float) -> str:
    """A change as a signed percentage: 1.56 → "+56 %"."""
    return f"{(ratio - 1) * 100:+.0f} %"


def _shape(test: TestRecord, per_job: int | None = None, jobs: int | None = None) -> str:
    """How a test makes its outstanding IO: "jobs 2 × iodepth 32"."""
    p = test.params
    jobs = p["jobs"] if jobs is None else jobs
    engine = p.get("engine_used") or p.get("engine")
    if engine in SYNC_ENGINES:
        return f"jobs {jobs}{per_host_text(test)}, {engine}: one IO in flight per job"
    return f"jobs {jobs} × iodepth {p['iodepth'] if per_job is None else per_job}{per_host_text(test)}"


def _more_oio(test: TestRecord, th: Thresholds) -> str:
    """Double the outstanding IO the way that works for the test's engine."""
    p = test.params
    oio = outstanding_io(test)
    engine = p.get("engine_used") or p.get("engine")
    if engine in SYNC_ENGINES:
        return (f"increase jobs from {p['jobs']} to {2 * p['jobs']}{per_host_text(test)} ({engine} keeps one IO in "
                f"flight per job, whatever iodepth says): outstanding IO {oio} → {2 * oio}")
    if p["iodepth"] >= th.deep_iodepth:
        return (f"increase jobs from {p['jobs']} to {2 * p['jobs']}{per_host_text(test)} (iodepth {p['iodepth']} "
                f"per job is already deep): outstanding IO {oio} → {2 * oio}")
    return f"increase iodepth from {p['iodepth']} to {2 * p['iodepth']} per job: outstanding IO {oio} → {2 * oio}"


def _fewer_oio(test: TestRecord, target: int) -> tuple[int, str]:
    """At most `target` outstanding IOs with the test's hosts: (the
    outstanding IO reached, its jobs × iodepth)."""
    p = test.params
    hosts = max(1, host_count(test))
    engine = p.get("engine_used") or p.get("engine")
    per_job = max(1, target // (hosts * p["jobs"]))
    if engine in SYNC_ENGINES or target < hosts * p["jobs"]:
        jobs = max(1, target // hosts)
        return hosts * jobs, _shape(test, per_job=1, jobs=jobs)
    return hosts * p["jobs"] * per_job, _shape(test, per_job=per_job)


def _step(a: Level, b: Level) -> str:
    return (f"outstanding IO {a.oio} → {b.oio}: IOPS {a.iops:,.0f} → {b.iops:,.0f} ({_pct(b.iops / a.iops)}), "
            f"mean latency {_ms(a.lat_us)} → {_ms(b.lat_us)} ({_pct(b.lat_us / a.lat_us)})")


def _device_busy(run: JudgedRun, test: TestRecord) -> dict[str, tuple[float, str]]:
    """Host → (busy %, device) of its busiest device under the test: fio's
    disk util, else the host's busiest disk (/proc or node_exporter) when
    that disk carried at least half the host's IOPS (else it is not the
    test's device, e.g. with network storage). Never the busiest disk of a
    host whose targets have no device there (a FUSE or network filesystem,
    an RBD image: their facts name the client): on a hyperconverged host
    that disk is the storage daemons' (OSDs), not the target's."""
    out: dict[str, tuple[float, str]] = {}
    for d in test.disks:
        if d.util_pct is not None and d.util_pct >= out.get(d.host, (-1, ""))[0]:
            out[d.host] = (d.util_pct, d.name)
    hosts = test.host_figures()
    for host, m in test.metrics_by_host().items():
        figures = hosts.get(host)
        if host in out or not figures or m.disk_busy_avg_pct is None or run.target_client(host):
            continue
        if (m.disk_iops_avg or 0) >= 0.5 * (figures.all.iops or math.inf):
            out[host] = (m.disk_busy_avg_pct, "busiest disk")
    return out


# ----------------------------------------------------------------- the rules


def outstanding_io_low(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    # A sweep whose last step still bought more IOPS than latency stopped too early.
    for levels in run.sweep_levels():
        if len(levels) < 2:
            continue
        a, b = levels[-2], levels[-1]
        gain, rise = b.iops / a.iops - 1, b.lat_us / a.lat_us - 1
        if gain * 100 >= th.oio_gain_pct and rise <= th.oio_latency_vs_gain * gain:
            yield run.hit(b.index, b.test, f"{_step(a, b)}: IOPS still grow faster than latency",
                          _more_oio(b.test, th))
    # A lone test: a device idle much of the time at low outstanding IO had more to give,
    # unless the data is not on it (buffered IO, never-written data) or the host's CPU is the limit.
    for i, t in run.tests:
        levels = run.sweeps.get(i)
        if not levels or len(levels) > 1 or not is_direct(t) or (run.unprepared and has_reads(t)):
            continue
        hosts = max(1, host_count(t))
        per_host = outstanding_io(t) / hosts
        if per_host > th.low_oio_per_host:
            continue
        hot = cpu_hot(t, th)
        idle = [(h, pct, dev) for h, (pct, dev) in _device_busy(run, t).items()
                if pct < th.disk_util_low_pct and h not in hot]
        if idle:
            where = ", ".join(f"{pct:.0f} % ({dev} on {h})" for h, pct, dev in idle)
            yield run.hit(i, t, f"device busy {where} of the time (< {th.disk_util_low_pct:g} %) at "
                                f"{per_host:g} outstanding IO{per_host_text(t)}", _more_oio(t, th),
                          host=idle[0][0] if len(idle) == 1 and hosts > 1 else None)


def past_knee(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    # One finding per sweep: its first step that bought latency but no IOPS.
    for levels in run.sweep_levels():
        for a, b in zip(levels, levels[1:]):
            if (b.iops / a.iops - 1) * 100 < th.knee_gain_pct and \
                    (b.lat_us / a.lat_us - 1) * 100 >= th.knee_latency_rise_pct:
                yield run.hit(b.index, b.test, _step(a, b),
                              f"lower the outstanding IO to {a.oio} ({_shape(a.test)}): "
                              f"{as_percent(a.iops / b.iops)} of the IOPS at {as_percent(a.lat_us / b.lat_us)} of "
                              f"the mean latency")
                break


def latency_limit(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    limits = {"read": th.read_latency_ms, "write": th.write_latency_ms}
    for i, t in run.tests:
        figures = t.figures()
        over = [(d, f.lat_mean_us, limits[d]) for d in DIRECTIONS if (f := figures.direction(d)).ios
                and f.lat_mean_us is not None and f.lat_mean_us / 1000 > limits[d]]
        if not over:
            continue
        evidence = ", ".join(f"mean {d} latency {_ms(lat)} > {limit:g} ms" for d, lat, limit in over)
        oio = outstanding_io(t)
        # Past saturation latency grows in proportion to the outstanding IO (Little's
        # law at constant IOPS): scale it down to where the worst direction meets its limit.
        d, lat, limit = min(over, key=lambda o: o[2] * 1000 / o[1])
        target = math.floor(oio * limit * 1000 / lat) if oio else 0
        look = "look at the storage (other load, throttling, a failing device, the network)"
        if not oio:  # a mixed test: each host group has its own depth
            change = f"lower the host groups' outstanding IO, or {look}"
        elif target >= 1:
            reached, shape = _fewer_oio(t, target)
            change = (f"lower the outstanding IO from {oio} to {reached} ({shape}): at the same IOPS, Little's law "
                      f"gives a mean {d} latency of {_ms(lat * reached / oio)}")
        else:
            change = f"the storage takes {_ms(lat)} per {d} even at {oio} outstanding IO: {look}, not the plan"
        yield run.hit(i, t, evidence, change)


def unpredictable_latency(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    for i, t in run.tests:
        figures = t.figures()
        spread = [(d, f.lat_us("p95"), f.lat_mean_us) for d in DIRECTIONS
                  if (f := figures.direction(d)).ios and f.lat_us("p95") is not None and f.lat_mean_us
                  and f.lat_us("p95") > th.p95_over_mean * f.lat_mean_us]
        if not spread:
            continue
        evidence = ", ".join(f"{d} p95 {_ms(p95)} = {p95 / mean:.1f} × the mean {_ms(mean)} (> {th.p95_over_mean:g} ×)"
                             for d, p95, mean in spread)
        change = ("use direct: true: with buffered IO the page cache serves part of the IOs and the disk the rest"
                  if not is_direct(t) else
                  "find what delays a share of the IOs: a cache serving only part of them, background work "
                  "(garbage collection, rebuilds), throttling")
        yield run.hit(i, t, evidence, change)
