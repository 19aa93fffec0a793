"""Faults left in place on hosts by an iofleet that ended before undoing
them (kill -9, a lost controller): found from their records on the hosts
(fault_records.py), told in words, and undone.

Each undo is rebuilt by the fault's kind (fault_kinds/) from its fixed
scripts and the record's structured values, every value quoted: stored
shell text is never run, except the user's own undo of a `run` (or
restart of a process-kill), which is run only when the user says yes
after seeing it. A value that
does not look as iofleet wrote it (a cgroup outside iofleet's, a port that
is no number) is refused, and the record left, with the line saying so.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .fault_kind import FAULT_TIMEOUT_S, FaultError, kind_of, user_undo
from .fault_records import FaultRecord, run_as_root, unrecorded


def what_is_left(r: FaultRecord) -> str:
    """What the fault did that is still in place, in words (its kind's)."""
    return kind_of(r.kind).left(r)


def undo_command(r: FaultRecord) -> str:
    """The command undoing a recorded fault, rebuilt by its kind from fixed
    scripts; a user's undo as written. FaultError saying why it cannot be
    rebuilt."""
    command = kind_of(r.kind).left_undo(r)
    if command is not None:
        return command
    user = user_undo(r)
    if user:
        return user[1]
    raise FaultError(f"{r.place}: the record {r.path} of a {r.kind} holds nothing this iofleet can undo it from; "
                     f"undo it by hand, then remove the record")


def left_line(r: FaultRecord) -> str:
    """`link-slow left in place since …, by scenario s (event 1; iofleet pid 42 has ended): tc tbf …`."""
    state = "in place" if r.running else "left in place"
    return f"{r.kind} {state} {r.origin()}: {what_is_left(r)}"


def fix_line(r: FaultRecord, inventory: str | None) -> str:
    """A left fault as `hosts check` and a run's check say it, with the fix."""
    if r.running:
        return f"{left_line(r)}; wait for that scenario to end (it undoes its faults)"
    return f"{left_line(r)}; undo it with `iofleet hosts clean {inventory or 'INVENTORY'}`"


@dataclass
class Undone:
    """What `undo_left_faults` did: a line per fault undone, a line per fault left (and why)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def undo_left_faults(records: list[FaultRecord], yes: bool, inventory: str = "INVENTORY") -> Undone:
    """Undo each recorded fault whose iofleet has ended (one still running
    undoes its own), removing its record; the hosts at once, each host's
    faults one after the other. A user's own undo runs only with `yes`."""
    out = Undone()
    by_host: dict[str, list[FaultRecord]] = {}
    for r in records:
        if r.running:
            out.problems.append(f"{r.place}: {left_line(r)}; not undone: that scenario undoes it when it ends")
        else:
            by_host.setdefault(r.place, []).append(r)

    def undo_all(rs: list[FaultRecord]) -> list[tuple[bool, str]]:
        return [_undo_one(r, yes, inventory) for r in rs]

    with ThreadPoolExecutor(max_workers=min(32, len(by_host)) or 1) as pool:
        for said in pool.map(undo_all, by_host.values()):
            for ok, line in said:
                (out.lines if ok else out.problems).append(line)
    return out


def _undo_one(r: FaultRecord, yes: bool, inventory: str) -> tuple[bool, str]:
    try:
        command = undo_command(r)
    except FaultError as exc:
        return False, str(exc)
    user = user_undo(r)
    if user and not yes:
        how = f"run `iofleet hosts clean {inventory} --yes` to run it, or" if r.host else "if it is still needed,"
        return False, (f"{r.place}: {left_line(r)}; its {user[0]} is your shell text, run as root: check it and "
                       f"{how} run it by hand and remove {r.path}")
    ok, _, why = run_as_root(r.host, unrecorded(command, r.path), FAULT_TIMEOUT_S)
    if not ok:
        return False, f"{r.place}: {r.kind} {r.origin()} could not be undone: {why}"
    return True, f"{r.place}: undid {r.kind} {r.origin()}: {kind_of(r.kind).undone_words(r)}"
