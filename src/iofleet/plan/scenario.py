"""Scenario files: one background load at a fixed rate, and timed faults.

    name: host-loss
    load: {bs: 4k, read_pct: 70, iodepth: 4, rate_iops: 5000, size: 1g, runtime: 10m, ramp: 30s}
    events:
      - {at: 2m, fault: host-down, host: h2}
      - {at: 5m, fault: link-slow, host: h3, mbit: 100, for: 1m}
      - {at: 7m, fault: process-stop, host: h1, pattern: "ceph-osd --id 3", for: 30s}
    watch: {command: "ceph health --format json", every: 1s, host: h1}

`load` holds the parameters of ONE test, checked by the plan's parameter
table (plan/params.py); `at` and `for` are durations as in a plan, counted
from the start of the measured part (after the warm-up). The scenario is
run as a one-test plan (`plan()`), with one-second rounds: the per-second
series the impact is measured on. `watch` (optional) is a command giving
the storage's own account of its state, run every `every` seconds while
the load runs (studies/watch.py).

Each fault kind is one module of fleet/control/fault_kinds/: its class
declares its name, the fields an event of it takes and what it needs
(FaultFields), and registers here when the fleet loads the kinds
(fleet/control/faults.py does, as it is imported). The event model is
built from the kinds registered (scenario_model): plan reads no fleet
module, and a new kind is one new file there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Optional

from pydantic import (AfterValidator, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo,
                      create_model, field_validator, model_validator)
from pydantic import BaseModel

from ..errors import PlanError
from ..units import escaped
from .load import field_problems, parse_plan, problem_lines, read_yaml
from .model import Plan, WorkloadParams, check_name
from .params import PARAMS, SPEC_PARAMS, UNTIL
from .units import parse_duration

# Load parameters a scenario cannot use: it is one test (not one's value:
# repeat), run for its `runtime` in 1 s rounds (not until steady).
NOT_IN_LOAD = {**{name: "a scenario is one test" for name in PARAMS if name not in SPEC_PARAMS},
               **{name: "a scenario runs for its `runtime`, in 1 s rounds" for name in ("until", *UNTIL["steady"])}}
MAX_EVENTS = 100
MAX_COMMAND = 4096
MAX_PROCESS = 1024  # a `pattern` or `pid_file`


def _duration(value: Any) -> int:
    return parse_duration(value)


def _one_line(value: str, info: ValidationInfo) -> str:
    if "\n" in value or "\0" in value:
        raise ValueError(f"{info.field_name} is one line (no newline or NUL); fix it")
    return value


def _one_command(value: str, info: ValidationInfo) -> str:
    if "\n" in value or "\0" in value:
        raise ValueError(f"{info.field_name} is one line (no newline or NUL); join commands with ';' or '&&'")
    return value


Seconds = Annotated[int, BeforeValidator(_duration)]
# The user's shell text, one line (shown before the run, confirmed with --yes).
Command = Annotated[str, Field(min_length=1, max_length=MAX_COMMAND), AfterValidator(_one_command)]
ProcessText = Annotated[str, Field(min_length=1, max_length=MAX_PROCESS), AfterValidator(_one_line)]

# Every fault kind by its name, as its module declared it (FaultFields).
FAULT_KINDS: dict[str, "FaultFields"] = {}


class FaultFields:
    """What a fault kind takes in an event beside `at`, `fault`, `host` and
    `for`, and what it needs. Each kind is one module of
    fleet/control/fault_kinds/ whose class (from this one) registers here by
    its `name` when the fleet loads it; parse_scenario builds the event
    model from the kinds registered."""

    name: ClassVar[str] = ""
    listed: ClassVar[int] = 100  # its place in lists (the `fault:` choices)
    fields: ClassVar[dict[str, Any]] = {}  # field → its type; each optional in an event
    shell_text: ClassVar[tuple[str, ...]] = ()  # fields that are the user's shell text
    user_undo: ClassVar[Optional[str]] = None  # the one of them run at the end of `for`

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):  # a kind; a shared base names none
            old = FAULT_KINDS.get(cls.name)
            if old is not None and _where(type(old)) != _where(cls):
                raise TypeError(f"fault kind {cls.name} is declared twice: {_where(type(old))} and {_where(cls)}")
            FAULT_KINDS[cls.name] = cls()

    def check(self, event: "Event") -> None:
        """ValueError, one line, when the event does not fit the kind."""

    def shown(self, event: "Event") -> str:
        """What the event's line says of its own values: ` (100 Mbit/s)`."""
        return ""

    def subject(self, event: "Event") -> Optional[tuple[str, str]]:
        """What it acts on: two events of the kind on one host with equal
        subjects act on one thing. None: the kind has no subject."""
        return None


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def listed_kinds() -> list[FaultFields]:
    return sorted(FAULT_KINDS.values(), key=lambda k: (k.listed, k.name))


class Event(BaseModel):
    """One timed fault: what every kind has. The model parse_scenario
    reads events with adds each kind's own fields (FaultFields.fields)."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    at: Seconds
    fault: str  # a kind of FAULT_KINDS
    host: Optional[Annotated[str, BeforeValidator(check_name)]] = None
    for_s: Optional[Seconds] = Field(None, alias="for")

    @model_validator(mode="after")
    def _fits_fault(self):
        given = {k for k in type(self).model_fields if k not in Event.model_fields and getattr(self, k) is not None}
        extra = given - set(self.kind.fields)
        if extra:
            raise ValueError(f"{self.fault} does not take {', '.join(sorted(extra))}")
        self.kind.check(self)
        if self.at < 1:
            raise ValueError("at: at least 1s into the measured part (the seconds before are the baseline)")
        if self.for_s is not None and self.for_s < 1:
            raise ValueError("for: at least 1s")
        return self

    @property
    def kind(self) -> FaultFields:
        return FAULT_KINDS[self.fault]

    @property
    def end_s(self) -> int | None:
        return None if self.for_s is None else self.at + self.for_s

    @property
    def subject(self) -> tuple[str, str] | None:
        """What the fault acts on (a process fault: ("pattern", TEXT) or
        ("pid_file", PATH)); None for a kind without one."""
        return self.kind.subject(self)

    @property
    def commands(self) -> list[tuple[str, str]]:
        """The user's shell text this event runs, as (field, text): `command`, `undo`, `restart`."""
        return [(k, getattr(self, k)) for k in self.kind.shell_text if getattr(self, k) is not None]

    def describe(self) -> str:
        """One line, its user text escaped (units.escaped):
        `at 2s: link-slow on h1 (100 Mbit/s) for 2s`,
        `at 5s: run on h1 for 10s: tc qdisc add …; undo at 15s: tc qdisc del …`."""
        where = f" on {self.host}" if self.host else " on this host"
        span = f" for {self.for_s}s" if self.for_s is not None else ""
        line = f"at {self.at}s: {self.fault}{where}{self.kind.shown(self)}{span}"
        undo = self.kind.user_undo
        for key, text in self.commands:
            line += f"; {key} at {self.end_s}s: {text}" if key == undo else f": {text}"
        return escaped(line)


class Watch(BaseModel):
    """The storage's own account: the user's shell text, run every `every`
    seconds on `host` (by ssh) or on this host, each answer kept."""
    model_config = ConfigDict(extra="forbid")

    command: Annotated[str, Field(min_length=1, max_length=MAX_COMMAND)]
    every: Seconds = 1
    host: Optional[Annotated[str, BeforeValidator(check_name)]] = None

    @model_validator(mode="after")
    def _fits(self):
        if "\n" in self.command or "\0" in self.command:
            raise ValueError("command is one line")
        if self.every < 1:
            raise ValueError("every: at least 1s")
        return self

    @staticmethod
    def mapping(value: Any) -> Any:
        if value is not None and not isinstance(value, (dict, Watch)):
            raise ValueError('a mapping, e.g. {command: "ceph health --format json", every: 1s, host: h1}')
        return value

    def describe(self) -> str:
        """One line: `watch: ceph health --format json on h1 every 1s`."""
        return f"watch: {self.command} on {self.host or 'this host'} every {self.every}s"


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, BeforeValidator(check_name)]
    description: str = ""
    load: WorkloadParams  # type: ignore[valid-type]
    events: list[Event]
    watch: Optional[Annotated[Watch, BeforeValidator(Watch.mapping)]] = None

    @field_validator("events")
    @classmethod
    def _some_events(cls, events):
        if not events or len(events) > MAX_EVENTS:
            raise ValueError(f"give 1 to {MAX_EVENTS} events, e.g. `- {{at: 2m, fault: host-down, host: h2}}`")
        return events

    @model_validator(mode="after")
    def _load_fits(self):
        for key, why in NOT_IN_LOAD.items():
            if getattr(self.load, key) is not None:
                raise ValueError(f"load.{key}: not in a scenario ({why}); leave it out")
        runtime = self.runtime
        for i, e in enumerate(self.events):
            if e.at >= runtime:
                raise ValueError(f"events[{i}].at: {e.at}s is not inside the runtime ({runtime}s); "
                                 f"give an earlier time or a longer load.runtime")
            if e.end_s is not None and e.end_s > runtime:
                raise ValueError(f"events[{i}].for: ends at {e.end_s}s, after the runtime ({runtime}s); "
                                 f"shorten it or lengthen load.runtime")
        return self

    @property
    def runtime(self) -> int:
        return self.load.runtime if self.load.runtime is not None else PARAMS["runtime"].default

    @property
    def ramp(self) -> int:
        return self.load.ramp if self.load.ramp is not None else PARAMS["ramp"].default

    @property
    def commands(self) -> list[tuple[Event, str, str]]:
        """The shell text the user wrote, as (event, field, text): each `run`'s
        command and undo, each process-kill's restart; shown before the run
        and confirmed with --yes."""
        return [(e, key, text) for e in self.events for key, text in e.commands]

    def plan(self, source: str, targets: list[str] = ()) -> Plan:
        """The one-test plan the scenario runs: its load, with one-second
        rounds (the per-second series), and going on when a host is lost."""
        load = self.load.model_dump(exclude_none=True)
        data = {"name": self.name, "description": self.description, "targets": [str(t) for t in targets],
                "on_host_loss": "continue", "workloads": [{"name": "load", **load, "round": 1}]}
        return parse_plan(data, f"{source}: load")


_MODELS: dict[tuple, type[Scenario]] = {}


def scenario_model() -> type[Scenario]:
    """The scenario model of the fault kinds registered: Event with each
    kind's fields (a field two kinds take is one field, of one type),
    `fault` one of the kinds' names."""
    kinds = listed_kinds()
    if not kinds:
        raise RuntimeError("no fault kind is registered: import iofleet.fleet.control.faults first (it loads them)")
    key = tuple((k.name, type(k)) for k in kinds)
    if key not in _MODELS:
        fields: dict[str, Any] = {}
        for kind in kinds:
            for name, type_ in kind.fields.items():
                if name in Event.model_fields or hasattr(Event, name) or fields.get(name, type_) != type_:
                    raise TypeError(f"fault kind {kind.name}: its field {name} is one of another kind's or an "
                                    f"event's own, with another type")
                fields[name] = type_
        event = create_model("Event", __base__=Event, __module__=__name__,
                             fault=(Literal[tuple(k.name for k in kinds)], ...),
                             **{name: (Optional[type_], None) for name, type_ in fields.items()})
        _MODELS.clear()
        _MODELS[key] = create_model("Scenario", __base__=Scenario, __module__=__name__, events=(list[event], ...))
    return _MODELS[key]


def parse_scenario(data, source: str = "<scenario>") -> Scenario:
    if not isinstance(data, dict):
        line = "a scenario is a YAML mapping with name, load and events"
        raise PlanError([f"{source}: {line}"], fields=[("", line)])
    try:
        return scenario_model().model_validate(data)
    except ValidationError as exc:
        fields = [(where.replace(".for_s", ".for"), msg) for where, msg in field_problems(exc)]
        raise PlanError(problem_lines(source, fields), fields=fields) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; PlanError naming the file and each field."""
    path = Path(path)
    return parse_scenario(read_yaml(path, "scenario"), str(path))
