"""The run model: a stored run, its tests and their figures, typed. A run's
`to_dict` is the JSON export (docs/results-format.md); nothing else builds
a run's shape."""

import csv
import io
import json
from dataclasses import dataclass, field

from ..fio.records import DiskUtil, JobResult
from ..fleet.metrics.records import HostCpu, HostMetrics
from .aggregate import Aggregate, aggregate, by_host
from .export import (CSV_CPU, CSV_COLUMNS, CSV_PARAMS, DIRECTION_FIELDS, FORMAT, FORMAT_VERSION, RUN_FIELDS, Figures,
                     aggregate_figures, aggregate_of_figures, host_metrics_figures, host_metrics_of_figures)
from .methodology import FleetRecord, RunMethodology, TestMethodology
from .records import from_optional, to_optional

__all__ = ["Aggregate", "TestInfo", "TestRecord", "RunInfo", "Run", "ListedRun", "run_to_csv", "run_to_json"]


@dataclass
class TestInfo:
    """What names a test in its run: its id, workload, repeat and
    parameters (plan names; `engine_used`: the IO engine fio ran)."""

    __test__ = False  # not a pytest test class, despite its name

    id: str
    workload: str
    repeat: int
    params: dict


@dataclass
class TestRecord:
    """One stored test with everything measured in it."""

    __test__ = False  # not a pytest test class, despite its name

    pk: int  # the row id: for Store.get_series, get_host_series and read_artifact
    seq: int
    id: str
    workload: str
    repeat: int
    params: dict
    status: str
    error: str | None
    started_at: str | None
    ended_at: str | None
    host_cpu: HostCpu | None
    host_metrics: list[HostMetrics]  # per host (the fleet's, or this machine's)
    controller: HostMetrics | None  # the machine running iofleet in a fleet test
    fleet: FleetRecord | None
    methodology: TestMethodology | None
    aggregate: Aggregate | None
    jobs: list[JobResult]
    disks: list[DiskUtil]
    artifact_dir: str | None  # absolute
    artifacts: list[str]
    # Read from an export (from_dict), whose jobs are not in it: the hosts'
    # and host groups' figures as exported.
    exported_hosts: dict[str, Aggregate | None] | None = None
    exported_groups: dict[str, Aggregate | None] | None = None

    def jobs_by_group(self) -> dict[str, list[JobResult]]:
        """A mixed test's jobs by host group (workload); empty for other tests."""
        groups = (self.fleet.groups if self.fleet else None) or {}
        return {g: [j for j in self.jobs if j.host in info.hosts] for g, info in groups.items()}

    def host_aggregates(self) -> dict[str, Aggregate | None]:
        """Each host's figures, in the order hosts first appear in the jobs."""
        if self.exported_hosts is not None and not self.jobs:
            return self.exported_hosts
        return by_host(self.jobs)

    def figures(self) -> Figures:
        """The test's figures in export units, as its export writes them."""
        return Figures.of(self.aggregate)

    def host_figures(self) -> dict[str, Figures]:
        """Each host's figures in export units (the export's `hosts`)."""
        return {host: Figures.of(agg) for host, agg in self.host_aggregates().items()}

    def metrics_by_host(self) -> dict[str, HostMetrics]:
        """Each host's metrics by its name (the export's `host_metrics`)."""
        return {m.host: m for m in self.host_metrics}

    def hosts_figures(self, include_bins: bool) -> dict:
        return {host: aggregate_figures(agg, include_bins) for host, agg in self.host_aggregates().items()}

    def groups_figures(self, include_bins: bool) -> dict:
        if self.exported_groups is not None and not self.jobs:
            return {g: aggregate_figures(agg, include_bins) for g, agg in self.exported_groups.items()}
        return {g: aggregate_figures(aggregate(jobs) if jobs else None, include_bins)
                for g, jobs in self.jobs_by_group().items()}

    def to_dict(self, include_bins: bool = False) -> dict:
        """The test's export fields (export.TEST_FIELDS)."""
        agg = aggregate_figures(self.aggregate, include_bins)
        cpu = self.host_cpu
        return {
            "seq": self.seq,
            "id": self.id,
            "workload": self.workload,
            "repeat": self.repeat,
            "params": dict(self.params),
            "status": self.status,
            "error": self.error,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "fio_jobs": agg["fio_jobs"],
            "read": agg["read"],
            "write": agg["write"],
            "all": agg["all"],
            "host_cpu_samples": cpu.samples if cpu else None,
            "host_cpu_avg_pct": cpu.avg_pct if cpu else None,
            "host_cpu_max_pct": cpu.max_pct if cpu else None,
            "host_cpu_fio_avg_pct": cpu.fio_avg_pct if cpu else None,
            "host_cpu_storage_avg_pct": cpu.storage_avg_pct if cpu else None,
            "host_cpu_other_avg_pct": cpu.other_avg_pct if cpu else None,
            "host_cpu_storage_by_name": dict(cpu.storage_by_name) if cpu and cpu.storage_by_name is not None else None,
            "fio_usr_cpu_pct": agg["fio_usr_cpu_pct"],
            "fio_sys_cpu_pct": agg["fio_sys_cpu_pct"],
            "hosts": self.hosts_figures(include_bins),
            "disks": [{"host": d.host, "name": d.name, "util_pct": d.util_pct,
                       "read_ios": d.read_ios, "write_ios": d.write_ios} for d in self.disks],
            # Host metrics over the measured part: each host's, and the controller's own.
            "host_metrics": {m.host: host_metrics_figures(m) for m in self.host_metrics},
            "controller_metrics": host_metrics_figures(self.controller) if self.controller else None,
            # Fleet tests: the hosts, their start/end spread and window overlap, host groups.
            "fleet": to_optional(self.fleet),
            # Mixed tests: figures of each host group (workload), merged like the fleet's.
            "groups": self.groups_figures(include_bins),
            # Steady-state verdicts (IOPS, latency), the measurement window's
            # figures, caches, and cache vs capacity test per host.
            "methodology": to_optional(self.methodology),
        }

    @classmethod
    def from_dict(cls, t: dict) -> "TestRecord":
        """A test read back from its export (to_dict): its figures, not its
        jobs, series or files (pk and artifact_dir are None)."""
        cpu = None
        if t.get("host_cpu_samples") is not None:
            cpu = HostCpu(samples=t["host_cpu_samples"], avg_pct=t.get("host_cpu_avg_pct"),
                          max_pct=t.get("host_cpu_max_pct"), fio_avg_pct=t.get("host_cpu_fio_avg_pct"),
                          storage_avg_pct=t.get("host_cpu_storage_avg_pct"),
                          other_avg_pct=t.get("host_cpu_other_avg_pct"),
                          storage_by_name=t.get("host_cpu_storage_by_name"))
        controller = t.get("controller_metrics")
        return cls(
            pk=None, seq=t.get("seq", 0), id=t.get("id", ""), workload=t.get("workload", ""),
            repeat=t.get("repeat", 1), params=t.get("params") or {}, status=t.get("status", "ok"),
            error=t.get("error"), started_at=t.get("started_at"), ended_at=t.get("ended_at"), host_cpu=cpu,
            host_metrics=[host_metrics_of_figures(h, f) for h, f in (t.get("host_metrics") or {}).items()],
            controller=host_metrics_of_figures("controller", controller) if controller else None,
            fleet=from_optional(FleetRecord, t.get("fleet")),
            methodology=from_optional(TestMethodology, t.get("methodology")),
            aggregate=aggregate_of_figures(t), jobs=[], disks=[DiskUtil(**d) for d in t.get("disks") or []],
            artifact_dir=None, artifacts=[],
            exported_hosts={h: aggregate_of_figures(f) for h, f in (t.get("hosts") or {}).items()},
            exported_groups={g: aggregate_of_figures(f) for g, f in (t.get("groups") or {}).items()})


@dataclass
class RunInfo:
    """The fields of a stored run (its row in the runs table)."""

    id: int
    label: str | None
    plan_name: str
    plan_text: str | None
    source: str  # run | import
    status: str
    created_at: str
    ended_at: str | None
    fio_version: str | None
    host_facts: dict
    tests_planned: int
    note: str | None
    methodology: RunMethodology | None  # preparation, cache policy, resumes, the study's record
    resume: dict | None  # what `run --resume` needs; None: it cannot be resumed

    @property
    def kind(self) -> str:
        """What made the run: run, import, saturate, curve, scenario or network check."""
        if self.source == "import":
            return "import"
        m = self.methodology
        if m is not None and m.own_network:
            return "network check"
        return (m.study if m is not None else None) or "run"


@dataclass
class Run(RunInfo):
    """A stored run with its tests (seq order)."""

    tests: list[TestRecord] = field(default_factory=list)

    def to_dict(self, include_bins: bool = False) -> dict:
        """The JSON export (export.RUN_FIELDS): json.dumps works on it.
        include_bins adds the merged latency histograms."""
        out = {"format": FORMAT, "format_version": FORMAT_VERSION}
        for name in RUN_FIELDS:  # the documented order
            if name not in out and name != "tests":
                out[name] = getattr(self, name)
        out["host_facts"] = dict(self.host_facts)
        out["methodology"] = to_optional(self.methodology)
        out["tests"] = [t.to_dict(include_bins) for t in self.tests]
        return out

    @classmethod
    def from_dict(cls, doc: dict) -> "Run":
        """A run read back from its JSON export (to_dict): a bundle's, an
        API client's. What the export leaves out (what `run --resume`
        needs, the tests' jobs and series) is not in it."""
        return cls(
            id=doc.get("id", 0), label=doc.get("label"), plan_name=doc.get("plan_name", ""),
            plan_text=doc.get("plan_text"), source=doc.get("source", "run"), status=doc.get("status", "complete"),
            created_at=doc.get("created_at", ""), ended_at=doc.get("ended_at"),
            fio_version=doc.get("fio_version"), host_facts=doc.get("host_facts") or {},
            tests_planned=doc.get("tests_planned", len(doc.get("tests") or [])), note=doc.get("note"),
            methodology=from_optional(RunMethodology, doc.get("methodology")), resume=None,
            tests=[TestRecord.from_dict(t) for t in doc.get("tests") or []])


@dataclass
class ListedRun(RunInfo):
    """A run as Store.list_runs lists it: its tests counted, not read."""

    tests_by_status: dict[str, int] = field(default_factory=dict)
    tests_saved: int = 0
    held_by: int | None = None  # pid of the process running it (0: unknown pid); None: none

    @property
    def stale(self) -> bool:
        """'running' but held by no process: that process crashed or was killed."""
        return self.status == "running" and self.held_by is None

    def to_dict(self) -> dict:
        """A listed run as JSON, the one shape of `results list --format json`
        and GET /api/results (docs/report.md): `tests` counts the tests saved."""
        return {"id": self.id, "plan": self.plan_name, "label": self.label, "source": self.source, "kind": self.kind,
                "status": self.status, "stale": self.stale, "created_at": self.created_at,
                "ended_at": self.ended_at, "fio_version": self.fio_version, "tests": self.tests_saved,
                "tests_planned": self.tests_planned, "tests_ok": self.tests_by_status.get("ok", 0),
                "tests_by_status": dict(self.tests_by_status), "note": self.note}


def _cell(value):
    if value is None:
        return ""  # unavailable: empty, never 0
    if isinstance(value, bool):
        return "true" if value else "false"
    return value  # csv writes floats with repr: exact


def run_to_json(run: Run, include_bins: bool = False, indent: int = 2) -> str:
    """The JSON export as a file's text (docs/results-format.md)."""
    return json.dumps(run.to_dict(include_bins), indent=indent) + "\n"


def run_to_csv(run: Run) -> str:
    """One CSV row per test, with a header row; units are in the column names."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for test in run.tests:
        t = test.to_dict()
        row = {
            "run_id": run.id,
            "fio_version": run.fio_version,
            "test_id": t["id"],
            **{k: t[k] for k in ("seq", "workload", "repeat", "status", "error", "started_at", "ended_at")},
            **{col: test.params.get(key) for col, key in CSV_PARAMS},
            "fio_jobs": t["fio_jobs"],
            **{f"{d}_{f}": t[d][f] for d in ("all", "read", "write") for f in DIRECTION_FIELDS},
            **{k: t[k] for k in CSV_CPU},
        }
        writer.writerow([_cell(row[c]) for c in CSV_COLUMNS])
    return buf.getvalue()

