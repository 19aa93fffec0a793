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
        Param("size", "size", 1024**3, "size of each job's data file", "size",
              minimum=4096, maximum=1024**5),
        Param("working_set_pct", "pct", 100, "share of each file that the IO touches",
              "size (of the file region)", minimum=1, maximum=100),
        Param("runtime", "duration", 60, "measured time, after the warm-up",
              "runtime, time_based", minimum=1, maximum=30 * 86400),
        Param("ramp", "duration", 10, "warm-up before measuring; excluded from every figure",
              "ramp_time", minimum=0, maximum=86400),
        Param("engine", "choice", "auto",
              "IO engine; auto = first of io_uring, libaio, psync that works",
              "ioengine", choices=ENGINES),
        Param("direct", "bool", True, "bypass the page cache (O_DIRECT)", "direct"),
        Param("repeat", "int", 1, "how many times each test runs", "(iofleet)",
              minimum=1, maximum=1000, in_matrix=False),
    )
}

MATRIX_PARAMS = tuple(name for name, p in PARAMS.items() if p.in_matrix)
