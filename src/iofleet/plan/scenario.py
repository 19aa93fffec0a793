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
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic import BaseModel

from ..errors import PlanError
from ..units import escaped
from .load import field_problems, parse_plan, problem_lines, read_yaml
from .model import Plan, WorkloadParams, check_name
from .params import PARAMS, SPEC_PARAMS, UNTIL
from .units import parse_duration

FAULTS = ("host-down", "link-slow", "device-slow", "process-stop", "process-kill", "run")
PROCESS_FAULTS = ("process-stop", "process-kill")
# What each fault takes beside `at`, `fault`, `host` and `for`.
FAULT_FIELDS = {"host-down": set(), "link-slow": {"mbit"}, "device-slow": {"mbps", "iops"},
                "process-stop": {"pattern", "pid_file"}, "process-kill": {"pattern", "pid_file", "restart"},
                "run": {"command", "undo"}}
# Load parameters a scenario cannot use: it is one test (not one's value:
# repeat), run for its `runtime` in 1 s rounds (not until steady).
NOT_IN_LOAD = {**{name: "a scenario is one test" for name in PARAMS if name not in SPEC_PARAMS},
               **{name: "a scenario runs for its `runtime`, in 1 s rounds" for name in ("until", *UNTIL["steady"])}}
MAX_EVENTS = 100
MAX_COMMAND = 4096
MAX_PROCESS = 1024  # a `pattern` or `pid_file`
# The user's shell text an event runs (each shown before the run, and confirmed with --yes).
COMMAND_FIELDS = ("command", "undo", "restart")


def _duration(value: Any) -> int:
    return parse_duration(value)


Seconds = Annotated[int, BeforeValidator(_duration)]
Command = Annotated[str, Field(min_length=1, max_length=MAX_COMMAND)]
ProcessText = Annotated[str, Field(min_length=1, max_length=MAX_PROCESS)]


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    at: Seconds
    fault: Literal[FAULTS]  # type: ignore[valid-type]
    host: Optional[Annotated[str, BeforeValidator(check_name)]] = None
    for_s: Optional[Seconds] = Field(None, alias="for")
    mbit: Optional[Annotated[int, Field(ge=1, le=1_000_000)]] = None
    mbps: Optional[Annotated[int, Field(ge=1, le=1_000_000)]] = None
    iops: Optional[Annotated[int, Field(ge=1, le=100_000_000)]] = None
    pattern: Optional[ProcessText] = None  # pgrep -f's: the process's command line
    pid_file: Optional[ProcessText] = None
    command: Optional[Command] = None
    undo: Optional[Command] = None  # run: its own undo, at the end of `for`
    restart: Optional[Command] = None  # process-kill: starts the process again, at the end of `for`

    @field_validator("pattern", "pid_file", *COMMAND_FIELDS)
    @classmethod
    def _one_line(cls, value: str, info):
        if "\n" in value or "\0" in value:
            raise ValueError(f"{info.field_name} is one line (no newline or NUL); "
                             + ("join commands with ';' or '&&'" if info.field_name in COMMAND_FIELDS else "fix it"))
        return value

    @field_validator("pid_file")
    @classmethod
    def _absolute(cls, value: str):
        if not value.startswith("/"):
            raise ValueError("not an absolute path; give the file's whole path on the host, e.g. /run/ceph/osd.3.pid")
        return value

    @model_validator(mode="after")
    def _fits_fault(self):
        given = {k for k in set().union(*FAULT_FIELDS.values()) if getattr(self, k) is not None}
        wanted = FAULT_FIELDS[self.fault]
        extra = given - wanted
        if extra:
            raise ValueError(f"{self.fault} does not take {', '.join(sorted(extra))}")
        if self.fault == "link-slow" and self.mbit is None:
            raise ValueError("link-slow needs `mbit` (the link's rate, e.g. mbit: 100)")
        if self.fault == "device-slow" and self.mbps is None and self.iops is None:
            raise ValueError("device-slow needs `mbps` or `iops` (the device's limit)")
        if self.fault == "run" and self.command is None:
            raise ValueError("run needs `command` (run on the host by ssh)")
        if self.fault == "run" and self.for_s is None:
            raise ValueError("run needs `for`: the span its impact is measured over (and when its `undo` runs), "
                             "e.g. for: 30s")
        if self.fault == "host-down" and self.for_s is not None:
            raise ValueError("host-down takes no `for`: a host lost mid-test does not rejoin it "
                             "(its fio server is started again at the end of the run)")
        if self.fault in PROCESS_FAULTS:
            self._fits_process()
        if self.at < 1:
            raise ValueError("at: at least 1s into the measured part (the seconds before are the baseline)")
        if self.for_s is not None and self.for_s < 1:
            raise ValueError("for: at least 1s")
        return self

    def _fits_process(self) -> None:
        if (self.pattern is None) == (self.pid_file is None):
            raise ValueError(f"{self.fault} needs one of `pattern` (pgrep -f's, e.g. pattern: 'ceph-osd --id 3') "
                             f"or `pid_file` (e.g. pid_file: /run/ceph/osd.3.pid), not both")
        if self.fault == "process-stop" and self.for_s is None:
            raise ValueError("process-stop needs `for` (a stopped process is continued at its end, e.g. for: 30s)")
        if self.fault == "process-kill" and self.for_s is None:
            raise ValueError("process-kill needs `for`: the span its impact is measured over (and when its "
                             "`restart` runs, if any), e.g. for: 30s")

    @property
    def end_s(self) -> int | None:
        return None if self.for_s is None else self.at + self.for_s

    @property
    def subject(self) -> tuple[str, str] | None:
        """What a process fault acts on: ("pattern", TEXT) or ("pid_file", PATH);
        None for the other faults. Two faults of one kind on one host are
        the same fault when their subjects are equal."""
        if self.pattern is not None:
            return ("pattern", self.pattern)
        return ("pid_file", self.pid_file) if self.pid_file is not None else None

    @property
    def commands(self) -> list[tuple[str, str]]:
        """The user's shell text this event runs, as (field, text): `command`, `undo`, `restart`."""
        return [(k, getattr(self, k)) for k in COMMAND_FIELDS if getattr(self, k) is not None]

    def describe(self) -> str:
        """One line, its user text escaped (units.escaped):
        `at 2s: link-slow on h1 (100 Mbit/s) for 2s`,
        `at 5s: run on h1 for 10s: tc qdisc add …; undo at 15s: tc qdisc del …`."""
        what = {"link-slow": f" ({self.mbit} Mbit/s)",
                "device-slow": " (" + ", ".join(x for x in (self.mbps and f"{self.mbps} MB/s",
                                                            self.iops and f"{self.iops} IOPS") if x) + ")"}
        if self.subject:
            what[self.fault] = " ({}: {})".format(*self.subject)
        where = f" on {self.host}" if self.host else " on this host"
        span = f" for {self.for_s}s" if self.for_s is not None else ""
        line = f"at {self.at}s: {self.fault}{where}{what.get(self.fault, '')}{span}"
        if self.command is not None:
            line += f": {self.command}"
        for key in ("undo", "restart"):
            if getattr(self, key) is not None:
                line += f"; {key} at {self.end_s}s: {getattr(self, key)}"
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


def parse_scenario(data, source: str = "<scenario>") -> Scenario:
    if not isinstance(data, dict):
        line = "a scenario is a YAML mapping with name, load and events"
        raise PlanError([f"{source}: {line}"], fields=[("", line)])
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        fields = [(where.replace(".for_s", ".for"), msg) for where, msg in field_problems(exc)]
        raise PlanError(problem_lines(source, fields), fields=fields) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; PlanError naming the file and each field."""
    path = Path(path)
    return parse_scenario(read_yaml(path, "scenario"), str(path))
