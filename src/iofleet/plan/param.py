"""One row of the parameter table (params.py): a parameter's type, default,
limits, help, label and unit, its CSV column, its part of a test id and its
fio option(s) in both directions. Its own module so that a target kind's
declaration (plan/target_kinds/) can add rows without importing the table."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .units import exact_duration, format_duration, format_size, parse_duration, parse_size

# fio options as a job file or a fio output states them: option → value
# (None for a bare flag such as `time_based`).
FioOptions = Mapping[str, Any]


# A study's name as the table's rows name it (`Param.studies`): the command that offers them.
SATURATE, CURVE, EASY_RUN = "saturate", "curve", "easy-run"
PLAN_DEFAULT = object()  # a study's default that is the plan's (the row's own)


@dataclass(frozen=True)
class StudyUse:
    """A parameter as a study takes it (`Param.studies`): the study's setting
    and its command-line option. `help`: the option's help there, a sentence
    (None: the row's own; False: a setting the study carries, not offered);
    `default`: the study's own, when it is not a plan's. A curve's setting
    without a default of its own is its sweep's (the option sets the sweep)."""

    help: str | bool | None = None
    default: Any = PLAN_DEFAULT


class FioOptionError(ValueError):
    """A fio option iofleet cannot take as a parameter value."""

    def __init__(self, option: str, problem: str):
        super().__init__(f"{option}: {problem}")
        self.option, self.problem = option, problem


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
    label: str = ""  # its header in tables and forms
    in_table: bool = False  # a column of every tests table (others: when a plan sets them)
    unit: str = ""  # of the stored value: bytes, s, % or nothing
    column: str | None = None  # its CSV column (with the unit in the name)
    # Its part of a test id, when the plan varies it (the base id always has bs, read, pattern, jobs, qd).
    id_part: Callable[[Any], str] | None = None
    # fio options from all of a test's values (job-file rendering) ...
    to_fio: Callable[[Mapping], list] | None = None
    # ... and its raw value back from fio's options (None: not stated there).
    from_fio: Callable[[FioOptions], Any] | None = None
    # The fio options from_fio reads: the main one, then those that refine it
    # in the order fio prefers them (the job-file importer takes exactly these).
    fio_keys: tuple = field(default=())
    # The studies that take it as a setting, by name (SATURATE, CURVE, EASY_RUN): how each does.
    studies: Mapping[str, StudyUse] = field(default_factory=dict, compare=False)
    recorded: bool = False  # a run setting stated in the run's methodology as the plan gives it
    fio_default: Any = None  # fio's own value when a job file leaves it out (the importer sets it silently)

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
        if value is None:
            return "none"  # a parameter whose default is none given (rate_iops)
        if self.kind == "size":
            return format_size(value)
        if self.kind == "duration":
            return exact_duration(value)
        if self.kind == "bool":
            return "true" if value else "false"
        return str(value)

    def plan_text(self, value: Any) -> Any:
        """A value as a generated plan writes it: sizes and durations in units."""
        if self.kind == "size":
            return format_size(value)
        if self.kind == "duration":
            return format_duration(value)
        return value

    def study_default(self, study: str) -> Any:
        use = self.studies[study]
        return self.default if use.default is PLAN_DEFAULT else use.default

    def read_fio(self, options: FioOptions) -> Any:
        """This parameter's value from fio options, validated by the table's
        rules; None when they do not state it. FioOptionError if unusable."""
        raw = self.from_fio(options) if self.from_fio else None
        if raw is None:
            return None
        try:
            return self.parse(raw)
        except ValueError as exc:
            # Name the option that gave the value: a refining one (rwmixread), else the main one.
            given = [key for key in self.fio_keys[1:] if key in options] or list(self.fio_keys[:1]) or [self.name]
            raise FioOptionError(given[0], str(exc)) from None
