"""What several diagnostics rules need from a run, computed once: the judged
tests, their sweeps of outstanding IO, and small readings of a test."""

from __future__ import annotations

import json
import statistics
from collections import namedtuple
from dataclasses import dataclass
from functools import cached_property

from ...fleet.metrics.records import HostMetrics
from ...plan.params import IO_PARAMS
from ...plan.target_kinds import name_kind
from ...results.model import Run, TestRecord
from ..host_facts import local_targets, readable, recorded_facts, recorded_hosts
from ..little import outstanding_io
from .thresholds import Thresholds

JUDGED = ("ok", "partial")  # failed and interrupted tests have no figures worth judging
DIRECTIONS = ("read", "write")


LOCAL_HOST = "local"  # a one-host run's host in host_metrics (fleet.places.LocalPlace)

Hit = namedtuple("Hit", "index test host evidence change")  # index: the test's place in the run, -1 run-wide


@dataclass
class Level:
    """One outstanding-IO level of a sweep: the (jobs, iodepth) that got the
    most IOPS at it, its IOPS and mean latency averaged over repeats."""

    oio: int
    iops: float
    lat_us: float
    index: int
    test: TestRecord


class JudgedRun:
    """The run with what several rules need, computed once."""

    def __init__(self, run: Run):
        self.method = run.methodology
        self.measure = (self.method.measure if self.method is not None else None) or "capacity"
        self.percentile = (self.method.percentile if self.method is not None else None) or "p99"
        ids = [t.id for t in run.tests]
        self.tests = [(i, t) for i, t in enumerate(run.tests) if t.status in JUDGED and t.figures().all.ios]
        self._repeated = {i for i in ids if ids.count(i) > 1}
        # Fleet runs list host dicts; imports of client/server output just names.
        self.nics = {h.name: h.nic_gbps for h in recorded_hosts(run.host_facts)}
        self.facts = readable(recorded_facts(run.host_facts or {}))  # fleet hosts read through SSH
        self.host_facts = run.host_facts or {}
        self.network = self.method.network if self.method is not None else None  # a fleet's last network check

    def target_client(self, host: str) -> str | None:
        """The client through which all of a host's targets are reached
        when none of them is on a device of that host (a network or FUSE
        filesystem, an RBD image: "ceph-fuse", "kernel nfs4", "librbd"),
        from the run's facts; None when one is on a device, or nothing is
        known. The local host's targets are in host_facts' target_facts,
        a fleet host's in the facts read through SSH."""
        if host == LOCAL_HOST:
            targets = list(local_targets(self.host_facts).values())
        else:
            names = next((h.targets for h in recorded_hosts(self.host_facts) if h.name == host), [])
            clients = {name_kind(str(n)).client for n in names}
            if names and None not in clients:  # none is a path on the host (RBD images): their kinds' clients
                return " + ".join(sorted(clients))
            seen = self.facts.get(host)
            targets = list(seen.targets.values()) if seen else []
        clients = {t.client for t in targets}
        return " + ".join(sorted(clients)) if targets and None not in clients else None

    def more_jobs_no_better(self, test: TestRecord) -> str | None:
        """What this run measured with more jobs at the same outstanding IO
        per host and the same IO that gave no more IOPS than `test`'s jobs ×
        iodepth (its own tests, or Easy Run's probe of its cells); None when
        it measured nothing of the kind. A diagnostic never advises what the
        run itself measured to be worse."""
        params = test.params or {}
        jobs, depth = params.get("jobs"), params.get("iodepth")
        if not jobs or not depth or params.get("groups"):
            return None
        io = [params.get(k) for k in IO_PARAMS]
        for _, other in self.tests:
            p = other.params or {}
            if ([p.get(k) for k in IO_PARAMS] == io and (p.get("jobs") or 0) > jobs
                    and p["jobs"] * p.get("iodepth", 0) == jobs * depth
                    and other.figures().all.iops <= test.figures().all.iops):
                return (f"{p['jobs']} × {p['iodepth']} gave {other.figures().all.iops:,.0f} IOPS in this run "
                        f"({self.name(other)})")
        probe = (self.method.probe if self.method is not None else None) or {}
        cells = {(c["jobs"], c["iodepth"]): c["iops"] for c in probe.get("cells") or []}
        mine = cells.get((jobs, depth))
        for (j, d), iops in cells.items():
            if mine is not None and j > jobs and j * d == jobs * depth and iops <= mine:
                return (f"Easy Run's probe (run {probe.get('run')}) measured {j} × {d} at {iops:,.0f} IOPS "
                        f"against {jobs} × {depth}'s {mine:,.0f}")
        return None

    def name(self, test: TestRecord) -> str:
        return f"{test.id} #{test.repeat}" if test.id in self._repeated else test.id

    def hit(self, index: int, test: TestRecord | None, evidence: str, change: str, host: str | None = None) -> Hit:
        return Hit(index, None if test is None else self.name(test), host, evidence, change)

    @property
    def unprepared(self) -> bool:
        # Imports have no methodology: nothing is known about their data.
        return self.method is not None and self.method.has("prepare") and self.method.prepare is None

    @cached_property
    def sweeps(self) -> dict[int, list[Level]]:
        """Test index → the levels of its sweep: the run's tests that are
        identical but for jobs and iodepth (and repeats), by outstanding IO."""
        groups: dict[str, dict[tuple, list]] = {}
        for i, t in self.tests:
            figures = t.figures().all
            if outstanding_io(t) is None or not figures.iops or not figures.lat_mean_us:
                continue
            rest = {k: v for k, v in t.params.items() if k not in ("jobs", "iodepth")}
            configs = groups.setdefault(json.dumps(rest, sort_keys=True, default=str), {})
            configs.setdefault((t.params["jobs"], t.params["iodepth"]), []).append((i, t, figures))
        out = {}
        for configs in groups.values():
            best: dict[int, Level] = {}
            for runs in configs.values():
                ios = sum(f.ios for _, _, f in runs)
                level = Level(outstanding_io(runs[0][1]), statistics.fmean(f.iops for _, _, f in runs),
                              sum(f.lat_mean_us * f.ios for _, _, f in runs) / ios, *runs[0][:2])
                if level.oio not in best or level.iops > best[level.oio].iops:
                    best[level.oio] = level
            levels = [best[k] for k in sorted(best)]
            for runs in configs.values():
                for i, _, _ in runs:
                    out[i] = levels
        return out

    def sweep_levels(self) -> list[list[Level]]:
        """Each sweep once, in the order of its first test."""
        seen, out = set(), []
        for i, _ in self.tests:
            levels = self.sweeps.get(i)
            if levels and id(levels) not in seen:
                seen.add(id(levels))
                out.append(levels)
        return out


def as_percent(ratio: float) -> str:
    """A share as a percentage: 0.52 → "52 %"."""
    return f"{ratio * 100:.0f} %"


def values_of(test: TestRecord, name: str) -> list:
    """A parameter's values: one, or one per host group of a mixed test."""
    params = test.params or {}
    if name in params:
        return [params[name]]
    return [g[name] for g in (params.get("groups") or {}).values() if name in g]


def is_direct(test: TestRecord) -> bool:
    return all(v is not False for v in values_of(test, "direct"))


def has_reads(test: TestRecord) -> bool:
    return any((v or 0) > 0 for v in values_of(test, "read_pct"))


def host_count(test: TestRecord) -> int:
    """The hosts with figures in the test."""
    return len(test.host_aggregates())


def per_host_text(test: TestRecord) -> str:
    return " per host" if host_count(test) > 1 else ""


def cpu_hot(test: TestRecord, th: Thresholds) -> dict[str, HostMetrics]:
    """The hosts whose mean CPU is over host_cpu_pct (whoever used it)."""
    return {h: m for h, m in test.metrics_by_host().items()
            if m.cpu.avg_pct is not None and m.cpu.avg_pct > th.host_cpu_pct}


def storage_share(m: HostMetrics) -> float | None:
    """The share of a host's busy CPU that its storage daemons and clients
    used (0.71), from the split of the local host's CPU; None where the
    split is not known (node_exporter hosts, older runs)."""
    storage, busy = m.cpu.storage_avg_pct, m.cpu.avg_pct
    if storage is None or not busy:
        return None
    return storage / busy


def storage_hot(test: TestRecord, th: Thresholds) -> dict[str, HostMetrics]:
    """The hosts over host_cpu_pct whose CPU went mostly (storage_cpu_pct
    of it or more) to storage daemons beside fio: a hyperconverged host."""
    return {h: m for h, m in cpu_hot(test, th).items()
            if (share := storage_share(m)) is not None and share * 100 >= th.storage_cpu_pct}
