"""Typed records of what fio measured, shared by the parser and every later stage.

Units are in the field names: `_ns` nanoseconds, `_bytes` bytes, `_ms`
milliseconds, `_pct` percent. Rates: `iops` (IOs per second) and `bw_bytes_s`
(bytes per second); the report shows MB/s = 10^6 bytes/s.
"""

from dataclasses import dataclass, field

# Percentiles reported everywhere, as fio names them in its JSON.
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
DIRECTIONS = ("read", "write", "all")


def pct_key(p: float) -> str:
    """50.0 → 'p50', 99.9 → 'p99.9' (keys of DirectionStats.percentiles_ns)."""
    return f"p{p:g}"


@dataclass
class DirectionStats:
    """One IO direction (read, write, or all IO) of one job, host or test.

    Latency is fio's total latency (`lat_ns`: submission + completion).
    `bins` is fio's json+ latency histogram {bucket value in ns: IO count};
    it is None when the source had no histogram (plain json). Percentiles
    are None when they cannot be known exactly (merged data without bins).
    """

    ios: int = 0
    io_bytes: int = 0
    runtime_ms: int = 0
    iops: float = 0.0
    bw_bytes_s: float = 0.0
    lat_n: int = 0
    lat_mean_ns: float | None = None
    lat_stddev_ns: float | None = None
    lat_min_ns: int | None = None
    lat_max_ns: int | None = None
    percentiles_ns: dict[str, float | None] = field(default_factory=dict)
    bins: dict[int, int] | None = None
    # Which latency the percentiles and bins describe: 'lat' (total, what
    # iofleet's own jobs record) or 'clat' (completion only, in outputs of
    # fio jobs that did not set lat_percentiles=1).
    percentile_basis: str = "lat"


@dataclass
class JobResult:
    """One fio job (one thread: one numjobs clone) on one host."""

    host: str
    job: str  # fio jobname
    index: int  # position of the job in fio's output for this host
    error: int  # fio's error code, 0 = fine
    runtime_ms: int
    usr_cpu_pct: float  # fio's user CPU of this job, % of one CPU
    sys_cpu_pct: float
    read: DirectionStats
    write: DirectionStats
    all: DirectionStats
    # until: steady — whether fio's own steady-state check ended the job.
    steady_attained: bool | None = None


@dataclass
class DiskUtil:
    """fio's disk_util entry for one block device."""

    host: str
    name: str
    util_pct: float
    read_ios: int
    write_ios: int


@dataclass
class FioOutput:
    """Everything parsed from one fio JSON document."""

    fio_version: str
    timestamp: int | None
    jobs: list[JobResult]
    disks: list[DiskUtil]
    has_bins: bool  # json+ (histograms present) or plain json
    # Per-host totals fio itself reported in client/server mode ("All
    # clients"); used only to cross-check our own sums.
    fio_all_clients: dict | None = None
    # The warm-up group's jobs (only their errors matter).
    warmup_jobs: list[JobResult] = field(default_factory=list)


@dataclass
class Series:
    """A per-second series from fio's logs: one job, one metric, one direction."""

    host: str
    job_index: int
    metric: str  # iops | bw_bytes_s | lat_ns
    direction: str  # read | write
    t_ms: list[int]
    values: list[float]
    phase: str = "measured"  # or "warmup": kept for plots, in no figure
