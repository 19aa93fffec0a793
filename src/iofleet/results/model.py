"""The run model: a stored run, its tests and their figures, typed. A run's
`to_dict` is the JSON export (docs/results-format.md); nothing else builds
a run's shape."""

from dataclasses import dataclass, field

from ..fio.records import DiskUtil, JobResult
from ..fleet.metrics import HostCpu, HostMetrics
from .aggregate import Aggregate, aggregate, by_host
from .export import FORMAT, FORMAT_VERSION, RUN_FIELDS, aggregate_figures, host_metrics_figures

__all__ = ["Aggregate", "TestRecord", "RunInfo", "Run", "ListedRun"]


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
    fleet: dict | None
    methodology: dict | None
    aggregate: Aggregate | None
    jobs: list[JobResult]
    disks: list[DiskUtil]
    artifact_dir: str | None  # absolute
    artifacts: list[str]

    def jobs_by_group(self) -> dict[str, list[JobResult]]:
        """A mixed test's jobs by host group (workload); empty for other tests."""
        groups = (self.fleet or {}).get("groups") or {}
        return {g: [j for j in self.jobs if j.host in info["hosts"]] for g, info in groups.items()}

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
            "hosts": {host: aggregate_figures(host_agg, include_bins) for host, host_agg in by_host(self.jobs).items()},
            "disks": [{"host": d.host, "name": d.name, "util_pct": d.util_pct,
                       "read_ios": d.read_ios, "write_ios": d.write_ios} for d in self.disks],
            # Host metrics over the measured part: each host's, and the controller's own.
            "host_metrics": {m.host: host_metrics_figures(m) for m in self.host_metrics},
            "controller_metrics": host_metrics_figures(self.controller) if self.controller else None,
            # Fleet tests: the hosts, their start/end spread and window overlap, host groups.
            "fleet": self.fleet,
            # Mixed tests: figures of each host group (workload), merged like the fleet's.
            "groups": {g: aggregate_figures(aggregate(jobs) if jobs else None, include_bins)
                       for g, jobs in self.jobs_by_group().items()},
            # Steady-state verdicts (IOPS, latency), the measurement window's
            # figures, caches, and cache vs capacity test per host.
            "methodology": self.methodology,
        }


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
    methodology: dict | None  # preparation, cache policy, resumes
    resume: dict | None  # what `run --resume` needs; None: it cannot be resumed


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
        out["tests"] = [t.to_dict(include_bins) for t in self.tests]
        return out


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
