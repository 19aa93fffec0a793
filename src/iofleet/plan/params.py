"""The one table of workload parameters.

Like fio's own option table, every parameter is defined once here and reused
by plan validation (model.py), matrix expansion (expand.py), job-file
rendering (iofleet.fio.jobfile) and the docs (`iofleet params`).
"""

from dataclasses import dataclass, field
from typing import Any

from .units import format_duration, format_size, parse_duration, parse_size

ENGINES = ("auto", "io_uring", "libaio", "psync", "posixaio", "sync")
# Tried in this order when engine is auto: the first that works on the target.
AUTO_ENGINES = ("io_uring", "libaio", "psync")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # size | duration | int | pct | choice | bool
    default: Any
    help: str
    fio: str  # the fio option(s) it becomes, for the docs
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple = field(default=())
    in_matrix: bool = True  # may be given as a list under `matrix:`

    def parse(self, value: Any) -> Any:
        """Validate one value; raise ValueError saying what is allowed."""
        if self.kind == "size":
            v = parse_size(value)
        elif self.kind == "duration":
            v = parse_duration(value)
        elif self.kind in ("int", "pct"):
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise ValueError(f"expected a whole number, {self.allowed()}")
            try:
                v = int(str(value).strip().rstrip("%") if self.kind == "pct" else str(value).strip())
            except ValueError:
                raise ValueError(f"expected a whole number, {self.allowed()}") from None
        elif self.kind == "bool":
            if isinstance(value, bool):
                return value
            raise ValueError("expected true or false")
        elif self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}")
            return value
        else:  # pragma: no cover - the table is fixed
            raise AssertionError(self.kind)
        if (self.minimum is not None and v < self.minimum) or (
            self.maximum is not None and v > self.maximum
        ):
            raise ValueError(self.allowed())
        return v

    def allowed(self) -> str:
        fmt = self.format
        if self.minimum is not None and self.maximum is not None:
            return f"allowed: {fmt(self.minimum)} to {fmt(self.maximum)}"
        if self.minimum is not None:
            return f"allowed: at least {fmt(self.minimum)}"
        return "allowed: any"

    def format(self, value: Any) -> str:
        if self.kind == "size":
            return format_size(value)
        if self.kind == "duration":
            return format_duration(value)
        if self.kind == "bool":
            return "true" if value else "false"
        return str(value)


PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("bs", "size", 4096, "block size of each IO", "bs",
              minimum=512, maximum=128 * 1024**2),
        Param("read_pct", "pct", 100, "share of IOs that are reads (0 = all writes)",
              "rw, rwmixread", minimum=0, maximum=100),
        Param("random_pct", "pct", 100, "share of IOs at random offsets (0 = sequential)",
              "rw, percentage_random", minimum=0, maximum=100),
        Param("iodepth", "int", 1, "outstanding IOs per job (queue depth)", "iodepth",
              minimum=1, maximum=4096),
        Param("jobs", "int", 1, "parallel jobs (threads), each with its own file",
              "numjobs", minimum=1, maximum=1024),
        Param("size", "size", 1024**3, "size of each job's data file (on a device: its region)", "size",
              minimum=4096, maximum=1024**5),
        Param("working_set_pct", "pct", 100, "share of each file that the IO touches",
              "size (of the file region)", minimum=1, maximum=100),
        Param("runtime", "duration", 60, "measured time, after the warm-up",
              "runtime, time_based", minimum=1, maximum=30 * 86400),
        Param("ramp", "duration", 10, "warm-up before measuring; logged, excluded from every figure",
              "runtime of a warm-up job group", minimum=0, maximum=86400),
        Param("engine", "choice", "auto",
              "IO engine; auto = first of io_uring, libaio, psync that works",
              "ioengine", choices=ENGINES),
        Param("direct", "bool", True, "bypass the page cache (O_DIRECT)", "direct"),
        Param("compress_pct", "pct", 0, "how compressible written data is (0 = not at all)",
              "buffer_compress_percentage", minimum=0, maximum=100),
        Param("dedupe_pct", "pct", 0, "share of written blocks that are duplicates",
              "dedupe_percentage", minimum=0, maximum=100),
        Param("until", "choice", "time",
              "time = measure for `runtime`; steady = stop once steady (SNIA PTS), at most `max_runtime`",
              "steadystate, ss_dur", choices=("time", "steady"), in_matrix=False),
        Param("max_runtime", "duration", 3600, "with until: steady, the longest a test may measure",
              "runtime", minimum=1, maximum=30 * 86400, in_matrix=False),
        Param("round", "duration", 60, "steady state: length of one round (5 rounds = the window)",
              "ss_dur (5 rounds)", minimum=1, maximum=86400, in_matrix=False),
        Param("repeat", "int", 1, "how many times each test runs", "(iofleet)",
              minimum=1, maximum=1000, in_matrix=False),
    )
}

# Steady state (SNIA PTS): a window of this many rounds, whose rounds may
# differ by this share of the window's average (data excursion), and whose
# fitted line may change by this share across the window (slope excursion).
STEADY_WINDOW_ROUNDS = 5
STEADY_DATA_PCT = 20.0
STEADY_SLOPE_PCT = 10.0

# Settings of a whole run (plan top level), documented by `iofleet params`
# like the workload parameters above.
RUN_PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("prepare", "choice", "random",
              "before the first test, write every working set sequentially: random data, zeros, or none",
              "rw=write, refill_buffers | zero_buffers", choices=("random", "zero", "none"), in_matrix=False),
        Param("prepare_passes", "int", 2, "how many times preparation writes the working set", "loops",
              minimum=1, maximum=10, in_matrix=False),
        Param("prepare_bs", "size", 128 * 1024, "block size of the preparation writes", "bs",
              minimum=4096, maximum=16 * 1024**2, in_matrix=False),
        Param("clear_cache", "bool", True,
              "before each test: drop the page cache of iofleet's files and, as root, the kernel caches",
              "invalidate (+ /proc/sys/vm/drop_caches)", in_matrix=False),
        Param("cache_size", "size", None,
              "cache in front of the storage per host (e.g. an HCI cache tier): says cache or capacity test",
              "(iofleet)", minimum=0, maximum=1024**6, in_matrix=False),
        Param("measure", "choice", "capacity",
              "what the plan means to measure: the storage behind every cache (capacity) or a cache; "
              "the diagnostics warn when the working set says otherwise", "(iofleet)",
              choices=("capacity", "cache"), in_matrix=False),
        Param("percentile", "choice", "p99",
              "the latency percentile the plan asks about: shown in the summary beside p95, and checked "
              "against the IO count (enough IOs beyond it to be meaningful)", "lat_percentiles",
              choices=("p90", "p95", "p99", "p99.9"), in_matrix=False),
    )
}

MATRIX_PARAMS = tuple(name for name, p in PARAMS.items() if p.in_matrix)
