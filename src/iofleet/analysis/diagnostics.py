"""Diagnostics: rules over a stored run that say what limited or spoiled a
measurement, with the numbers that show it and what to change in the plan
or the set-up (like vSAN's Performance Diagnostics for HCIBench).

The input is the exported run document (`results.export.run_to_dict`), so a
recorded run is just a JSON file. Every rule is one row of `RULES`, every
threshold one field of `Thresholds`; docs/diagnostics.md shows each with a
real finding. Only tests with status ok or partial, and with IO, are judged.

Severities: critical = the figures do not measure what the plan asks (a
cache instead of the storage, never-written data, the client instead of the
storage); warning = the figures are weak, or the set-up limits them;
info = a better operating point exists.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import namedtuple
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Callable, Iterator

from ..errors import IofleetError
from ..plan.units import format_bytes, format_duration
from .little import LITTLE_TOLERANCE, SYNC_ENGINES, in_flight, little_holds, little_ratio, outstanding_io
from .steady import SteadyVerdict
from .stragglers import STRAGGLER_SHARE, stragglers

SEVERITIES = ("critical", "warning", "info")
JUDGED = ("ok", "partial")  # failed and interrupted tests have no figures worth judging
DIRECTIONS = ("read", "write")
MB_S_PER_GBPS = 125  # 1 Gbit/s = 125 MB/s (10^6 bytes)


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    test: str | None     # test id, with " #N" when the id repeats in the run; None when run-wide
    host: str | None
    evidence: str        # the numbers that triggered it, with units
    change: str          # what to change, phrased for the user

    def to_dict(self) -> dict:
        return asdict(self)


def _threshold(default, doc: str, low: float = 0, high: float | None = None):
    return field(default=default, metadata={"doc": doc, "low": low, "high": high})


@dataclass(frozen=True)
class Thresholds:
    """Every threshold a rule uses, with its default (docs/diagnostics.md)."""

    oio_gain_pct: float = _threshold(
        10.0, "outstanding_io_low: the sweep's last step still gained at least this much IOPS, %")
    oio_latency_vs_gain: float = _threshold(
        1.0, "outstanding_io_low: ... while mean latency rose at most this many times as much (in %) as IOPS")
    disk_util_low_pct: float = _threshold(
        50.0, "outstanding_io_low (single test): a device busier than this, %, is not idle enough to say", high=100)
    low_oio_per_host: int = _threshold(
        8, "outstanding_io_low (single test): judged only at up to this many outstanding IOs per host", low=1)
    deep_iodepth: int = _threshold(
        32, "advice: from this iodepth per job on, add jobs rather than depth", low=1)
    knee_gain_pct: float = _threshold(5.0, "past_knee: a step up in outstanding IO gained less IOPS than this, %")
    knee_latency_rise_pct: float = _threshold(25.0, "past_knee: ... while mean latency rose at least this much, %")
    read_latency_ms: float = _threshold(15.0, "latency_limit: highest acceptable mean read latency, ms")
    write_latency_ms: float = _threshold(20.0, "latency_limit: highest acceptable mean write latency, ms")
    p95_over_mean: float = _threshold(3.0, "unpredictable_latency: p95 above this many times the mean", low=1)
    host_cpu_pct: float = _threshold(90.0, "client_bound: a host's mean CPU above this, % of all its CPUs", high=100)
    job_cpu_pct: float = _threshold(90.0, "client_bound: fio's CPU per job (user + system) from this, % of one CPU",
                                    high=100)
    little_tolerance_pct: float = _threshold(
        LITTLE_TOLERANCE * 100, "client_bound: IOPS × mean latency may differ this much from the outstanding IO, %")
    nic_pct: float = _threshold(90.0, "network_bound: a host's MB/s from this share of its nic_gbps, %", high=100)
    straggler_pct: float = _threshold(
        STRAGGLER_SHARE * 100, "host_imbalance: a host below this share of the median host's IOPS, %", high=100)
    tail_ios: int = _threshold(100, "runtime_too_short: IOs needed beyond a percentile to trust it", low=1)

    def with_overrides(self, items: list[str]) -> Thresholds:
        """A copy with `NAME=VALUE` items applied (`read_latency_ms=10`)."""
        known = {f.name: f for f in fields(self)}
        changes = {}
        for item in items:
            name, sep, text = item.partition("=")
            name, text = name.strip(), text.strip()
            if not sep or not name:
                raise IofleetError(f"threshold {item!r}: write NAME=VALUE, e.g. read_latency_ms=10")
            if name not in known:
                raise IofleetError(f"unknown threshold {name!r}; known: {', '.join(known)}")
            meta = known[name].metadata
            whole = isinstance(known[name].default, int)
            allowed = (f"{'a whole number' if whole else 'a number'} from {meta['low']:g}"
                       + (f" to {meta['high']:g}" if meta["high"] is not None else ""))
            try:
                value = int(text) if whole else float(text)
            except ValueError:
                raise IofleetError(f"threshold {name}: {text!r} is not a number; allowed: {allowed}") from None
            if not math.isfinite(value) or value < meta["low"] or (meta["high"] is not None and value > meta["high"]):
                raise IofleetError(f"threshold {name}: {text} is out of range; allowed: {allowed}")
            changes[name] = value
        return Thresholds(**(asdict(self) | changes))


# ----------------------------------------------------------------- the run


_Hit = namedtuple("_Hit", "index test host evidence change")  # index: the test's place in the run, -1 run-wide


@dataclass
class _Level:
    """One outstanding-IO level of a sweep: the (jobs, iodepth) that got the
    most IOPS at it, its IOPS and mean latency averaged over repeats."""

    oio: int
    iops: float
    lat_us: float
    index: int
    test: dict


class _Run:
    """The run document with what several rules need, computed once."""

    def __init__(self, run: dict):
        self.method = run.get("methodology") or {}
        self.measure = self.method.get("measure") or "capacity"
        self.percentile = self.method.get("percentile") or "p99"
        ids = [t.get("id") for t in run.get("tests", [])]
        self.tests = [(i, t) for i, t in enumerate(run.get("tests", []))
                      if t.get("status") in JUDGED and (t.get("all") or {}).get("ios")]
        self._repeated = {i for i in ids if ids.count(i) > 1}
        # Fleet runs list host dicts; imports of client/server output just names.
        self.nics = {h.get("name"): h.get("nic_gbps") for h in (run.get("host_facts") or {}).get("hosts", [])
                     if isinstance(h, dict)}

    def name(self, test: dict) -> str:
        return f"{test['id']} #{test.get('repeat', 1)}" if test["id"] in self._repeated else test["id"]

    def hit(self, index: int, test: dict | None, evidence: str, change: str, host: str | None = None) -> _Hit:
        return _Hit(index, None if test is None else self.name(test), host, evidence, change)

    @property
    def unprepared(self) -> bool:
        # Imports have no methodology: nothing is known about their data.
        return "prepare" in self.method and self.method["prepare"] is None

    @cached_property
    def sweeps(self) -> dict[int, list[_Level]]:
        """Test index → the levels of its sweep: the run's tests that are
        identical but for jobs and iodepth (and repeats), by outstanding IO."""
        groups: dict[str, dict[tuple, list]] = {}
        for i, t in self.tests:
            if outstanding_io(t) is None or not t["all"].get("iops") or not t["all"].get("lat_mean_us"):
                continue
            rest = {k: v for k, v in t["params"].items() if k not in ("jobs", "iodepth")}
            configs = groups.setdefault(json.dumps(rest, sort_keys=True, default=str), {})
            configs.setdefault((t["params"]["jobs"], t["params"]["iodepth"]), []).append((i, t))
        out = {}
        for configs in groups.values():
            best: dict[int, _Level] = {}
            for runs in configs.values():
                ios = sum(t["all"]["ios"] for _, t in runs)
                level = _Level(outstanding_io(runs[0][1]), statistics.fmean(t["all"]["iops"] for _, t in runs),
                               sum(t["all"]["lat_mean_us"] * t["all"]["ios"] for _, t in runs) / ios, *runs[0])
                if level.oio not in best or level.iops > best[level.oio].iops:
                    best[level.oio] = level
            levels = [best[k] for k in sorted(best)]
            for runs in configs.values():
                for i, _ in runs:
                    out[i] = levels
        return out

    def sweep_levels(self) -> list[list[_Level]]:
        """Each sweep once, in the order of its first test."""
        seen, out = set(), []
        for i, _ in self.tests:
            levels = self.sweeps.get(i)
            if levels and id(levels) not in seen:
                seen.add(id(levels))
                out.append(levels)
        return out


# ----------------------------------------------------------------- helpers


def _ms(us: float) -> str:
    ms = us / 1000
    return f"{ms:.{3 if ms < 1 else 2 if ms < 10 else 1 if ms < 100 else 0}f} ms"


def _pct(ratio: float) -> str:
    """A change as a signed percentage: 1.56 → "+56 %"."""
    return f"{(ratio - 1) * 100:+.0f} %"


def _share(ratio: float) -> str:
    """A share as a percentage: 0.52 → "52 %"."""
    return f"{ratio * 100:.0f} %"


def _span(values) -> str:
    """"92" or "88–92": the range of some percentages."""
    values = list(values)
    low, high = min(values, default=math.nan), max(values, default=math.nan)
    return f"{low:.0f}" if f"{low:.0f}" == f"{high:.0f}" else f"{low:.0f}–{high:.0f}"


def _values(test: dict, name: str) -> list:
    """A parameter's values: one, or one per host group of a mixed test."""
    params = test.get("params") or {}
    if name in params:
        return [params[name]]
    return [g[name] for g in (params.get("groups") or {}).values() if name in g]


def _params_of(test: dict, host: str) -> dict:
    """The parameters the host ran: its group's in a mixed test."""
    for group, info in ((test.get("fleet") or {}).get("groups") or {}).items():
        if host in info["hosts"]:
            return test["params"]["groups"][group]
    return test["params"]


def _direct(test: dict) -> bool:
    return all(v is not False for v in _values(test, "direct"))


def _reads(test: dict) -> bool:
    return any((v or 0) > 0 for v in _values(test, "read_pct"))


def _per_host(test: dict) -> str:
    return " per host" if len(test.get("hosts") or {}) > 1 else ""


def _shape(test: dict, per_job: int | None = None, jobs: int | None = None) -> str:
    """How a test makes its outstanding IO: "jobs 2 × iodepth 32"."""
    p = test["params"]
    jobs = p["jobs"] if jobs is None else jobs
    engine = p.get("engine_used") or p.get("engine")
    if engine in SYNC_ENGINES:
        return f"jobs {jobs}{_per_host(test)}, {engine}: one IO in flight per job"
    return f"jobs {jobs} × iodepth {p['iodepth'] if per_job is None else per_job}{_per_host(test)}"


def _more_oio(test: dict, th: Thresholds) -> str:
    """Double the outstanding IO the way that works for the test's engine."""
    p = test["params"]
    oio = outstanding_io(test)
    engine = p.get("engine_used") or p.get("engine")
    if engine in SYNC_ENGINES:
        return (f"increase jobs from {p['jobs']} to {2 * p['jobs']}{_per_host(test)} ({engine} keeps one IO in "
                f"flight per job, whatever iodepth says): outstanding IO {oio} → {2 * oio}")
    if p["iodepth"] >= th.deep_iodepth:
        return (f"increase jobs from {p['jobs']} to {2 * p['jobs']}{_per_host(test)} (iodepth {p['iodepth']} "
                f"per job is already deep): outstanding IO {oio} → {2 * oio}")
    return f"increase iodepth from {p['iodepth']} to {2 * p['iodepth']} per job: outstanding IO {oio} → {2 * oio}"


def _fewer_oio(test: dict, target: int) -> tuple[int, str]:
    """At most `target` outstanding IOs with the test's hosts: (the
    outstanding IO reached, its jobs × iodepth)."""
    p = test["params"]
    hosts = max(1, len(test.get("hosts") or {}))
    engine = p.get("engine_used") or p.get("engine")
    per_job = max(1, target // (hosts * p["jobs"]))
    if engine in SYNC_ENGINES or target < hosts * p["jobs"]:
        jobs = max(1, target // hosts)
        return hosts * jobs, _shape(test, per_job=1, jobs=jobs)
    return hosts * p["jobs"] * per_job, _shape(test, per_job=per_job)


def _step(a: _Level, b: _Level) -> str:
    return (f"outstanding IO {a.oio} → {b.oio}: IOPS {a.iops:,.0f} → {b.iops:,.0f} ({_pct(b.iops / a.iops)}), "
            f"mean latency {_ms(a.lat_us)} → {_ms(b.lat_us)} ({_pct(b.lat_us / a.lat_us)})")


def _cpu_hot(test: dict, th: Thresholds) -> dict[str, dict]:
    return {h: m for h, m in (test.get("host_metrics") or {}).items()
            if m.get("cpu_avg_pct") is not None and m["cpu_avg_pct"] > th.host_cpu_pct}


def _device_busy(test: dict) -> dict[str, tuple[float, str]]:
    """Host → (busy %, device) of its busiest device under the test: fio's
    disk util, else node_exporter's busiest disk when that disk carried at
    least half the host's IOPS (else it is not the test's device, e.g. with
    network storage)."""
    out: dict[str, tuple[float, str]] = {}
    for d in test.get("disks") or []:
        if d.get("util_pct") is not None and d["util_pct"] >= out.get(d["host"], (-1, ""))[0]:
            out[d["host"]] = (d["util_pct"], d["name"])
    for host, m in (test.get("host_metrics") or {}).items():
        figures = (test.get("hosts") or {}).get(host)
        if host in out or not figures or m.get("disk_busy_avg_pct") is None:
            continue
        if (m.get("disk_iops_avg") or 0) >= 0.5 * (figures["all"].get("iops") or math.inf):
            out[host] = (m["disk_busy_avg_pct"], "busiest disk")
    return out


_NICE_SECONDS = (1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1200, 1800, 2700, 3600)


def _nice_seconds(s: float) -> int:
    """The next round duration at or above s (so advice repeats across tests)."""
    for n in _NICE_SECONDS:
        if n >= s:
            return n
    return math.ceil(s / 3600) * 3600


# ----------------------------------------------------------------- the rules


def _outstanding_io_low(run: _Run, th: Thresholds) -> Iterator[_Hit]:
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
        if not levels or len(levels) > 1 or not _direct(t) or (run.unprepared and _reads(t)):
            continue
        hosts = max(1, len(t.get("hosts") or {}))
        per_host = outstanding_io(t) / hosts
        if per_host > th.low_oio_per_host:
            continue
        hot = _cpu_hot(t, th)
        idle = [(h, pct, dev) for h, (pct, dev) in _device_busy(t).items()
                if pct < th.disk_util_low_pct and h not in hot]
        if idle:
            where = ", ".join(f"{pct:.0f} % ({dev} on {h})" for h, pct, dev in idle)
            yield run.hit(i, t, f"device busy {where} of the time (< {th.disk_util_low_pct:g} %) at "
                                f"{per_host:g} outstanding IO{_per_host(t)}", _more_oio(t, th),
                          host=idle[0][0] if len(idle) == 1 and hosts > 1 else None)


def _past_knee(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    # One finding per sweep: its first step that bought latency but no IOPS.
    for levels in run.sweep_levels():
        for a, b in zip(levels, levels[1:]):
            if (b.iops / a.iops - 1) * 100 < th.knee_gain_pct and \
                    (b.lat_us / a.lat_us - 1) * 100 >= th.knee_latency_rise_pct:
                yield run.hit(b.index, b.test, _step(a, b),
                              f"lower the outstanding IO to {a.oio} ({_shape(a.test)}): {_share(a.iops / b.iops)} of "
                              f"the IOPS at {_share(a.lat_us / b.lat_us)} of the mean latency")
                break


def _latency_limit(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    limits = {"read": th.read_latency_ms, "write": th.write_latency_ms}
    for i, t in run.tests:
        over = [(d, t[d]["lat_mean_us"], limits[d]) for d in DIRECTIONS
                if t[d].get("ios") and t[d].get("lat_mean_us") is not None and t[d]["lat_mean_us"] / 1000 > limits[d]]
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


def _unpredictable_latency(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    for i, t in run.tests:
        spread = [(d, t[d]["lat_p95_us"], t[d]["lat_mean_us"]) for d in DIRECTIONS
                  if t[d].get("ios") and t[d].get("lat_p95_us") is not None and t[d].get("lat_mean_us")
                  and t[d]["lat_p95_us"] > th.p95_over_mean * t[d]["lat_mean_us"]]
        if not spread:
            continue
        evidence = ", ".join(f"{d} p95 {_ms(p95)} = {p95 / mean:.1f} × the mean {_ms(mean)} (> {th.p95_over_mean:g} ×)"
                             for d, p95, mean in spread)
        change = ("use direct: true: with buffered IO the page cache serves part of the IOs and the disk the rest"
                  if not _direct(t) else
                  "find what delays a share of the IOs: a cache serving only part of them, background work "
                  "(garbage collection, rebuilds), throttling")
        yield run.hit(i, t, evidence, change)


def _not_steady(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    for i, t in run.tests:
        data = ((t.get("methodology") or {}).get("steady") or {}).get("iops")
        if not data:
            continue
        verdict = SteadyVerdict.from_dict(data)
        if verdict.steady or verdict.first_round is None:  # too few rounds to judge: n/a, not a finding
            continue
        why = verdict.reason.removeprefix("not steady: ")
        evidence = (f"IOPS in rounds {verdict.first_round + 1}–{verdict.last_round + 1} of {verdict.round_s} s: "
                    f"{why}")
        if t["methodology"].get("until") == "steady":
            most = _values(t, "max_runtime")
            change = (f"raise max_runtime (now {format_duration(most[0])}) so a steady window can be found"
                      if most else "raise max_runtime so a steady window can be found")
        else:
            ramp = _values(t, "ramp")
            change = (f"lengthen the warm-up (ramp, now {format_duration(ramp[0]) if ramp else '?'}) or measure "
                      f"until steady (until: steady, with max_runtime)")
        yield run.hit(i, t, evidence, change)


def _client_bound(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    for i, t in run.tests:
        evidence, changes = [], []
        hot = _cpu_hot(t, th)
        if hot:
            avg = _span(m["cpu_avg_pct"] for m in hot.values())
            top = _span(m["cpu_max_pct"] for m in hot.values() if m.get("cpu_max_pct") is not None)
            on = f" on {', '.join(hot)}" if len(t.get("hosts") or {}) > 1 else ""
            evidence.append(f"host CPU {avg} % avg (max {top} %){on} > {th.host_cpu_pct:g} %")
            changes.append("add hosts: the same outstanding IO spread over more clients")
        job_cpu = (t.get("fio_usr_cpu_pct") or 0) + (t.get("fio_sys_cpu_pct") or 0)
        if job_cpu >= th.job_cpu_pct:
            evidence.append(f"fio used {job_cpu:.0f} % of a CPU per job (≥ {th.job_cpu_pct:g} %)")
        ratio = little_ratio(t)
        tolerance = th.little_tolerance_pct / 100
        if little_holds(ratio, tolerance) is False:
            seen = in_flight(t["all"]["iops"], t["all"]["lat_mean_us"])
            evidence.append(f"IOPS × mean latency = {seen:.2f} IOs in flight of {outstanding_io(t)} outstanding "
                            f"(ratio {ratio:.2f}, outside 1 ± {tolerance:g})")
        if hot:
            pass  # more jobs on a host whose CPU is spent would not help
        elif job_cpu >= th.job_cpu_pct or (ratio is not None and ratio < 1 - tolerance):
            jobs = _values(t, "jobs")
            more = f" (from {jobs[0]} to {2 * jobs[0]}{_per_host(t)})" if len(jobs) == 1 else ""
            changes.append(f"add jobs{more}: fio itself could not keep its IOs in flight")
        elif ratio is not None and ratio > 1 + tolerance:
            changes.append("rerun the test: its figures hold more IOs in flight than it asked for")
        if evidence:
            host = next(iter(hot)) if len(hot) == 1 and len(t.get("hosts") or {}) > 1 else None
            yield run.hit(i, t, "; ".join(evidence), "; ".join(changes), host=host)


def _network_bound(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    for i, t in run.tests:
        if not t.get("fleet"):
            continue
        for host in t["fleet"].get("hosts") or []:
            nic, figures = run.nics.get(host), (t.get("hosts") or {}).get(host)
            if not nic or not figures or figures["all"].get("bw_mb_s") is None:
                continue
            mb_s, line = figures["all"]["bw_mb_s"], nic * MB_S_PER_GBPS
            if mb_s >= th.nic_pct / 100 * line:
                yield run.hit(i, t, f"{host}: {mb_s:,.1f} MB/s = {_share(mb_s / line)} of its {nic:g} Gbit/s NIC "
                                    f"({line:,.0f} MB/s; ≥ {th.nic_pct:g} %)",
                              f"the network, not the storage, limits {host}: give it a faster network or spread the "
                              f"load over more hosts (or correct its nic_gbps in the inventory)", host=host)


def _host_imbalance(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    # stragglers() reads a.all.iops of each host's figures.
    figures = namedtuple("figures", "all")
    iops = namedtuple("iops", "iops")
    for i, t in run.tests:
        hosts = t.get("hosts") or {}
        if not t.get("fleet") or len(hosts) < 2:
            continue
        # Hosts are only comparable when they ran the same workload: per group in a mixed test.
        groups = {g: info["hosts"] for g, info in (t["fleet"].get("groups") or {}).items()} or {None: list(hosts)}
        for group, members in groups.items():
            per_host = {h: figures(iops(hosts[h]["all"]["iops"] or 0)) for h in members if h in hosts}
            slow = stragglers(per_host, th.straggler_pct / 100)
            if not slow:
                continue
            median = statistics.median(f.all.iops for f in per_host.values())
            names = ", ".join(f"{h}: {per_host[h].all.iops:,.0f} IOPS = {_share(share)}" for h, share in slow)
            where = f" in group {group}" if group else ""
            yield run.hit(i, t, f"{names} of the median host's {median:,.0f} IOPS{where} "
                                f"(< {th.straggler_pct:g} %)",
                          f"check what differs on {', '.join(h for h, _ in slow)} (its targets' devices, network, "
                          f"CPU, other load), or leave {'it' if len(slow) == 1 else 'them'} out of the inventory",
                          host=slow[0][0] if len(slow) == 1 else None)


def _unprepared_reads(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    if not run.unprepared:
        return
    for i, t in run.tests:
        if _reads(t):
            pct = "/".join(f"{v:g}" for v in _values(t, "read_pct"))
            yield run.hit(i, t, f"read_pct {pct} with prepare: none: the run wrote no data before its first test",
                          "remove `prepare: none` from the plan: the default, prepare: random, writes the data "
                          "before the first test")


def _working_set_cache(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    wrong = "cache test" if run.measure == "capacity" else "capacity test"
    for i, t in run.tests:
        verdicts = {h: v for h, v in ((t.get("methodology") or {}).get("working_set") or {}).items()
                    if v.get("kind") == wrong}
        if not verdicts:
            continue
        host, v = max(verdicts.items(), key=lambda hv: hv[1]["working_set_bytes"])
        ws, cache = format_bytes(v["working_set_bytes"]), format_bytes(v["cache_bytes"])
        page_cache = v["source"].startswith("host RAM")
        p = _params_of(t, host)
        per_job = format_bytes(v["cache_bytes"] / (p.get("jobs") or 1) / ((p.get("working_set_pct") or 100) / 100))
        if run.measure == "capacity":
            evidence = (f"working set {ws} fits in the {cache} {v['source']}: the results measure "
                        + ("the page cache" if page_cache else "that cache, not the storage behind it"))
            change = (f"use direct: true, or a working set above {cache} per host" if page_cache else
                      f"raise size to more than {per_job} per job (a working set above the {cache} cache per host)")
        else:
            evidence = (f"working set {ws} exceeds the {cache} {v['source']} (measure: cache): the results measure "
                        f"the storage behind the cache")
            change = f"lower size to at most {per_job} per job so the working set fits the {cache} cache"
        yield run.hit(i, t, evidence, change, host=host if len(verdicts) < len(t.get("hosts") or {}) else None)


def _runtime_too_short(run: _Run, th: Thresholds) -> Iterator[_Hit]:
    asked = sorted({run.percentile, "p99"}, key=lambda p: float(p[1:]))
    for i, t in run.tests:
        short = []  # (direction, percentile, ios, IOs needed, iops)
        for d in DIRECTIONS:
            ios, iops = t[d].get("ios") or 0, t[d].get("iops") or 0
            if not ios:
                continue
            for p in reversed(asked):  # the strictest percentile that fails
                tail = round(100 - float(p[1:]), 6) / 100
                if ios * tail < th.tail_ios:
                    short.append((d, p, ios, math.ceil(th.tail_ios / tail - 1e-6), iops, ios * tail))
                    break
        if not short:
            continue
        evidence = "; ".join(f"{p} of {d}s from {ios:,} IOs: {beyond:.0f} beyond it (< {th.tail_ios})"
                             for d, p, ios, _, _, beyond in short)
        # The advice is rounded up to a round duration so that tests alike share it.
        d, p, _, need, iops, _ = max(short, key=lambda s: s[3] / s[4] if s[4] else math.inf)
        if not iops:
            yield run.hit(i, t, evidence, f"measure at least {need:,} {d}s for {p}")
            continue
        evidence += f"; {need:,} {d}s take {need / iops:.1f} s at {iops:,.0f} IOPS"
        seconds = format_duration(_nice_seconds(need / iops))
        if (t.get("methodology") or {}).get("until") == "steady":
            change = f"measure at least {seconds} (raise round and max_runtime)"
        else:
            now = _values(t, "runtime")
            change = f"set runtime to at least {seconds}" + (f" (now {format_duration(now[0])})" if now else "")
        yield run.hit(i, t, evidence, change)


@dataclass(frozen=True)
class Rule:
    name: str
    title: str
    severity: str
    threshold: str  # when it fires; {names} are Thresholds fields
    check: Callable[[_Run, Thresholds], Iterator[_Hit]]

    def describe(self, th: Thresholds | None = None) -> str:
        return self.threshold.format(**asdict(th or Thresholds()))


RULES: tuple[Rule, ...] = (
    Rule("outstanding_io_low", "outstanding IO too low", "warning",
         "the sweep's last step up in outstanding IO gained ≥ {oio_gain_pct:g} % IOPS while mean latency rose "
         "≤ {oio_latency_vs_gain:g} × as much; or, a lone test: its device busy < {disk_util_low_pct:g} % at "
         "≤ {low_oio_per_host} outstanding IO per host", _outstanding_io_low),
    Rule("past_knee", "past the knee", "info",
         "a step up in outstanding IO gained < {knee_gain_pct:g} % IOPS while mean latency rose "
         "≥ {knee_latency_rise_pct:g} %", _past_knee),
    Rule("latency_limit", "latency over the limit", "warning",
         "mean read latency > {read_latency_ms:g} ms or mean write latency > {write_latency_ms:g} ms",
         _latency_limit),
    Rule("unpredictable_latency", "unpredictable latency", "warning",
         "p95 > {p95_over_mean:g} × the mean latency (reads or writes)", _unpredictable_latency),
    Rule("not_steady", "not steady", "warning",
         "the SNIA verdict on the test's IOPS is not steady (n/a verdicts are skipped)", _not_steady),
    Rule("client_bound", "client-bound", "critical",
         "a host's mean CPU > {host_cpu_pct:g} %, fio's CPU per job ≥ {job_cpu_pct:g} % of a CPU, or IOPS × mean "
         "latency more than {little_tolerance_pct:g} % off the outstanding IO (Little's law)", _client_bound),
    Rule("network_bound", "network-bound", "warning",
         "a fleet host's MB/s ≥ {nic_pct:g} % of its inventory nic_gbps × 125 MB/s", _network_bound),
    Rule("host_imbalance", "host imbalance", "warning",
         "a host's IOPS < {straggler_pct:g} % of the median host's running the same workload", _host_imbalance),
    Rule("unprepared_reads", "unprepared reads", "critical",
         "the run has prepare: none and the test reads", _unprepared_reads),
    Rule("working_set_cache", "working set vs cache", "critical",
         "measure: capacity and the working set fits in the cache (a cache test), or measure: cache and it "
         "does not", _working_set_cache),
    Rule("runtime_too_short", "runtime too short", "warning",
         "fewer than {tail_ios} reads or writes beyond the run's percentile or p99", _runtime_too_short),
)


def diagnose(run: dict, thresholds: Thresholds | None = None) -> list[Finding]:
    """Findings over an exported run, in run order of tests, then rule order."""
    th = thresholds or Thresholds()
    ctx = _Run(run)
    found = []
    for order, rule in enumerate(RULES):
        for n, hit in enumerate(rule.check(ctx, th)):
            found.append(((hit.index, order, n), Finding(rule.name, rule.severity, hit.test, hit.host,
                                                         hit.evidence, hit.change)))
    return [f for _, f in sorted(found, key=lambda x: x[0])]
