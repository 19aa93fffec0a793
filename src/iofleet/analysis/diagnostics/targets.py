"""Diagnostics rule on what the targets are: a target in RAM (tmpfs, ramfs,
zram, a RAM disk) measures memory, not the storage under test.

A run records what each target is: a local run in host_facts'
`target_facts` (fleet.targets.facts.seen_target), a fleet host in the facts read
through SSH (fleet.control.parse_facts: filesystem and device)."""

from __future__ import annotations

from typing import Iterator

from ...fleet.targets.device_checks import memory_backing
from ..host_facts import local_targets, readable, recorded_facts
from .context import Hit, JudgedRun
from .thresholds import Thresholds

FIX = "use a directory on the storage under test"


def ram_targets(host_facts: dict) -> list[tuple[str | None, str, str]]:
    """(host or None for the local host, target, what makes it RAM) for
    each target of a run that is in memory."""
    found = [(None, path, t) for path, t in local_targets(host_facts).items()]
    found += [(host, path, t) for host, seen in readable(recorded_facts(host_facts)).items()
              for path, t in seen.targets.items()]
    out = []
    for host, path, t in found:
        what = t.memory or memory_backing(t.filesystem, t.device)
        if what:
            out.append((host, path, what))
    return out


def ram_target_line(host: str | None, path: str, what: str) -> str:
    """The one line said at a run's start."""
    on = f"{host}: " if host else ""
    return f"{on}target {path} is on {what} (RAM): the figures will be memory speed, not storage; {FIX}"


def setup_warnings(host_facts: dict) -> list[str]:
    """What to say once at a run's start about its targets."""
    return [ram_target_line(*found) for found in ram_targets(host_facts)]


def ram_target(run: JudgedRun, th: Thresholds) -> Iterator[Hit]:
    if not run.tests:
        return
    index, best = max(run.tests, key=lambda it: it[1].figures().all.iops or 0)
    a = best.figures().all
    lat = a.lat_mean_us
    figures = (f"{a.iops or 0:,.0f} IOPS, {a.bw_mb_s or 0:,.1f} MB/s"
               + (f", mean latency {lat / 1000:.3f} ms" if lat else "") + f" in {run.name(best)}")
    for host, path, what in ram_targets(run.host_facts):
        yield run.hit(-1, None, f"target {path} is on {what} (RAM): the figures are memory speed, not storage "
                                f"(best: {figures})", FIX, host=host)
