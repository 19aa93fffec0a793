"""What a fault kind is: one module of fault_kinds/ declaring one class of
FaultKind, as fio's ioengines each declare their ops from their own file.

The class names the kind and declares, beside the fields an event of it
takes and what it needs (plan/scenario.py's FaultFields, registered by
its name when the module is loaded):

  apply, detail   the commands that apply it on a host (Fault.run), and
                  what its output says (the interface, the pids)
  undo_at_end     undone once the run is over, not at the end of `for`
  loses_host      it takes its host out of the test (host-down)
  on_target       it exists on this host (`scenario --target`)
  same            two events of it that act on one thing (refuse_overlaps)
  recorded,       whether it leaves something to undo, and what its record
  record_values   holds beside the event's own values (fault_records.py)
  left, left_undo, undone_words
                  a record of it left by a killed iofleet, in words; the
                  command undoing it, rebuilt from fixed scripts; what that
                  undo did, in words

A kind whose only undo is the user's own (`user_undo`: run's `undo`,
process-kill's `restart`) needs none of the last three. A kind acts
through a Fault: one event on one host, which runs its commands as root
(Fault.run) in the same shell as writing or removing its record.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import IofleetError
from ...plan.scenario import FAULT_KINDS, Event, FaultFields, listed_kinds
from ..inventory import Host
from . import fault_kinds
from .fault_records import FaultRecord, recorded, run_as_root, unrecorded

FAULT_TIMEOUT_S = 30.0
# A record's own lines (fault_records.py), not the fault's values.
HEADER = ("kind", "since", "scenario", "event", "token", "controller", "pid", "pid_start")

# The fio server: the process listening on $PORT, and every descendant (`tree`).
SERVER_TREE = r"""
tree() { echo "$1"; for c in $(pgrep -P "$1"); do tree "$c"; done; }
# ss names every process holding the listening socket (its forked children too): the server is
# the one whose parent is not among them.
pids=$(ss -Hltnp "sport = :$PORT" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
server=
for p in $pids; do echo "$pids" | grep -qx "$(ps -o ppid= -p "$p" | tr -d ' ')" || server=$p; done
[ -n "$server" ] || { echo "no process listens on port $PORT (no fio server)" >&2; exit 3; }
"""


class FaultError(IofleetError):
    """A fault could not be applied or undone."""


def script(text: str, *args) -> str:
    """`sh -c TEXT iofleet-fault ARGS…`, every word quoted."""
    return " ".join(["sh", "-c", shlex.quote(text), "iofleet-fault", *(shlex.quote(str(a)) for a in args)])


class FaultKind(FaultFields):
    """One fault kind (see the module's text); one instance each, in FAULT_KINDS."""

    undo_at_end: ClassVar[bool] = False
    loses_host: ClassVar[bool] = False
    on_target: ClassVar[bool] = False

    def apply(self, fault: Fault) -> str:
        """Apply the fault on its host with fault.run(…, "applied"), having
        set fault.undo_command first where a part-done apply needs undoing;
        the apply's output."""
        raise NotImplementedError

    def detail(self, fault: Fault, out: str) -> dict:
        """What the apply's output says of the host (kept with the event)."""
        return {}

    def same(self, e: Event, o: Event) -> bool:
        """Two events of this kind with one subject (on one host) act on one thing."""
        return True

    def recorded(self, event: Event) -> bool:
        """It leaves something to undo: its host keeps a record of it."""
        return self.user_undo is None or getattr(event, self.user_undo) is not None

    def record_values(self, fault: Fault) -> list[tuple[str, str]]:
        """What its record holds beside the event's own values and the host's address and port."""
        return []

    def left(self, r: FaultRecord) -> str:
        """What the fault recorded in `r` did that is still in place, in words."""
        user = user_undo(r)
        if user:
            return f"{r.kind} done; its {user[0]} not run yet: {user[1]}"
        return f"{r.kind} ({', '.join(f'{k}={x}' for k, x in r.values.items() if k not in HEADER)})"

    def left_undo(self, r: FaultRecord) -> str | None:
        """The command undoing it, rebuilt from fixed scripts and the record's
        values (each checked to look as iofleet wrote it); None: none."""
        return None

    def undone_words(self, r: FaultRecord) -> str:
        user = user_undo(r)
        return f"ran its {user[0]}: {user[1]}" if user else "undone"


_UNKNOWN = FaultKind()  # a kind this iofleet does not have (a record of another one's)


def kinds() -> list[FaultKind]:
    """Every fault kind, in listed order (fault_kinds/ loaded first)."""
    fault_kinds.load()
    return [k for k in listed_kinds() if isinstance(k, FaultKind)]


def kind_of(name: str) -> FaultKind:
    """The kind named `name`; one that knows only the user's own undo if
    this iofleet has no such kind (a record of another iofleet's)."""
    fault_kinds.load()
    kind = FAULT_KINDS.get(name)
    return kind if isinstance(kind, FaultKind) else _UNKNOWN


def user_undo(r: FaultRecord) -> tuple[str, str] | None:
    """The user's own undo of a recorded fault (field, shell text), if it
    has one: a field any kind runs as its user's undo."""
    fields = [k.user_undo for k in kinds() if k.user_undo]
    return next(((k, r.values[k]) for k in fields if r.values.get(k)), None)


@dataclass
class Fault:
    """One event at work on one host (None: this host)."""

    event: Event
    host: Host | None
    target: str = ""  # the target the load runs on, on that host
    token: str = ""  # the run's (in its records' and cgroups' names)
    index: int = 0  # the event's, in the scenario
    undo_command: str | None = None
    record: str = ""  # where it is recorded on its host ("": a fault that leaves nothing to undo)
    record_values: list[tuple[str, str]] = field(default_factory=list)  # what its record holds
    detail: dict = field(default_factory=dict)
    applied: bool = False
    undone: bool = False

    @property
    def kind(self) -> FaultKind:
        return kind_of(self.event.fault)

    @property
    def name(self) -> str:
        return self.host.name if self.host else "local"

    def run(self, command: str, what: str) -> str:
        """Run a command as root on the host (SSH) or here, in the same shell
        as writing (apply) or removing (undo) the fault's record; its stdout.
        FaultError naming the host on failure."""
        if self.record:
            command = (unrecorded(command, self.record) if what == "undone" else
                       recorded(command, self.record, self.record_values, fixed=what == "applied"))
        ok, out, why = run_as_root(self.host, command, FAULT_TIMEOUT_S)
        if not ok:
            raise FaultError(f"{self.name}: {self.event.fault} could not be {what}: {why}")
        return out

    @property
    def in_place(self) -> bool:
        """Applied, or tried (a failed apply may have done part of it), and not undone yet."""
        return self.undo_command is not None and not self.undone

    def apply(self) -> None:
        out = self.kind.apply(self)
        self.applied = True
        self.detail = self.kind.detail(self, out)

    def undo(self) -> None:
        """Idempotent: a second call, or one for a fault never applied, does nothing."""
        if self.undone or self.undo_command is None:
            self.undone = True
            return
        self.undone = True
        self.run(self.undo_command, "undone")

    @property
    def undo_at_end(self) -> bool:
        """Undone once the run is over (host-down: a lost host does not rejoin a running test)."""
        return self.kind.undo_at_end

    @property
    def loses_host(self) -> bool:
        """Applied, it took its host out of the test (host-down)."""
        return self.applied and self.kind.loses_host
