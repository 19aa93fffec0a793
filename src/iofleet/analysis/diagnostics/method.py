"""Diagnostics rules on what the measurement covered: a steady window,
data written before it was read, a working set on the storage (or in the
cache) as the plan asks, enough IOs for its percentiles."""

from __future__ import annotations

import math
from typing import Iterator

from ...plan.units import format_bytes, format_duration
from ...results.model import TestRecord
from .context import DIRECTIONS, Hit, JudgedRun, has_reads, host_count, values_of
from .thresholds import Thresholds


def _params_of(test: TestRecord, host: str) -> dict:
    """The parameters the host ran: its group's in a mixed test."""
    for group, info in ((test.fleet.groups if test.fleet is not None else None) or {}).items():
        if host in info.hosts:
            return test.params["groups"][group]
    return test.params


_NICE_SECONDS = (1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1200, 1800, 2700, 3600)


def _nice_seconds(s: float) -> int:
    """The next round duration at or above s (so advice repeats across tests)."""
    for n in _NICE_SECONDS:
        if n >= s:
            return n
    return math.ceil(s / 3600) * 3600


def not_steady(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    # Silent where steady state was not asked for: a fixed-time test (`until: time`; its verdict is in the
    # report, for information), and a scenario, whose faults are meant to move the figures.
    if run.method is not None and run.method.scenario:
        return
    for i, t in run.tests:
        verdict = t.methodology.verdict("iops") if t.methodology is not None else None
        if not verdict or (t.methodology.has("until") and t.methodology.until == "time"):
            continue
        if verdict.steady or verdict.first_round is None:  # too few rounds to judge: n/a, not a finding
            continue
        why = verdict.reason.removeprefix("not steady: ")
        evidence = (f"IOPS in rounds {verdict.first_round + 1}–{verdict.last_round + 1} of {verdict.round_s} s: "
                    f"{why}")
        most = values_of(t, "max_runtime")
        change = (f"raise max_runtime (now {format_duration(most[0])}) so a steady window can be found"
                  if most else "raise max_runtime so a steady window can be found")
        yield run.hit(i, t, evidence, change)


def unprepared_reads(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    if not run.unprepared:
        return
    for i, t in run.tests:
        if has_reads(t):
            pct = "/".join(f"{v:g}" for v in values_of(t, "read_pct"))
            yield run.hit(i, t, f"read_pct {pct} with prepare: none: the run wrote no data before its first test",
                          "remove `prepare: none` from the plan: the default, prepare: random, writes the data "
                          "before the first test")


def working_set_cache(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    wrong = "cache test" if run.measure == "capacity" else "capacity test"
    for i, t in run.tests:
        working_set = t.methodology.working_set if t.methodology is not None else {}
        verdicts = {h: v for h, v in working_set.items() if v.kind == wrong}
        if not verdicts:
            continue
        host, v = max(verdicts.items(), key=lambda hv: hv[1].working_set_bytes)
        ws, cache = format_bytes(v.working_set_bytes), format_bytes(v.cache_bytes)
        page_cache = v.source.startswith("host RAM")
        p = _params_of(t, host)
        per_job = format_bytes(v.cache_bytes / (p.get("jobs") or 1) / ((p.get("working_set_pct") or 100) / 100))
        if run.measure == "capacity":
            evidence = (f"working set {ws} fits in the {cache} {v.source}: the results measure "
                        + ("the page cache" if page_cache else "that cache, not the storage behind it"))
            change = (f"use direct: true, or a working set above {cache} per host" if page_cache else
                      f"raise size to more than {per_job} per job (a working set above the {cache} cache per host)")
        else:
            evidence = (f"working set {ws} exceeds the {cache} {v.source} (measure: cache): the results measure "
                        f"the storage behind the cache")
            change = f"lower size to at most {per_job} per job so the working set fits the {cache} cache"
        yield run.hit(i, t, evidence, change, host=host if len(verdicts) < host_count(t) else None)


def runtime_too_short(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    asked = sorted({run.percentile, "p99"}, key=lambda p: float(p[1:]))
    for i, t in run.tests:
        short = []  # (direction, percentile, ios, IOs needed, iops)
        figures = t.figures()
        for d in DIRECTIONS:
            ios, iops = figures.direction(d).ios or 0, figures.direction(d).iops or 0
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
        if t.methodology is not None and t.methodology.until == "steady":
            change = f"measure at least {seconds} (raise round and max_runtime)"
        else:
            now = values_of(t, "runtime")
            change = f"set runtime to at least {seconds}" + (f" (now {format_duration(now[0])})" if now else "")
        yield run.hit(i, t, evidence, change)

