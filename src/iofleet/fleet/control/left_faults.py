"""Faults left in place on hosts by an iofleet that ended before undoing
them (kill -9, a lost controller): found from their records on the hosts
(fault_records.py), told in words, and undone.

Each undo is rebuilt from the fixed scripts of faults.py and the record's
structured values, every value quoted: stored shell text is never run,
except the user's own undo of a `run` (or restart of a process-kill),
which is run only when the user says yes after seeing it. A value that
does not look as iofleet wrote it (a cgroup outside iofleet's, a port that
is no number) is refused, and the record left, with the line saying so.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .fault_records import FaultRecord, run_as_root, unrecorded
from .faults import (BLKIO_ROOT, DEVICE_UNDO, FAULT_TIMEOUT_S, HOST_UP, LINK_UNDO, PROCESS_CONT, USER_UNDO,
                     FaultError, script)

_CGROUP = re.compile(rf"{re.escape(BLKIO_ROOT)}/iofleet-[A-Za-z0-9]+-[0-9]+")
_ADDRESS = re.compile(r"[A-Za-z0-9.:_-]+")
# A record's own lines (fault_records.py), not the fault's values.
_HEADER = ("kind", "since", "scenario", "event", "token", "controller", "pid", "pid_start")


def what_is_left(r: FaultRecord) -> str:
    """What the fault did that is still in place, in words."""
    v = r.values
    if r.kind == "link-slow":
        return f"tc tbf at {v.get('mbit', '?')} Mbit/s on {v.get('dev') or 'the interface of ' + v.get('address', '?')}"
    if r.kind == "device-slow":
        limits = ", ".join(x for x in (v.get("mbps") and f"{v['mbps']} MB/s", v.get("iops") and f"{v['iops']} IOPS")
                           if x)
        return f"blkio throttle ({limits}) on disk {v.get('device', '?')}, cgroup {v.get('cgroup', '?')}"
    if r.kind == "host-down":
        return (f"fio server on port {v.get('port', '?')} killed (pid {v.get('server_pid', '?')})"
                + ("" if r.args else "; its command line is not recorded: `iofleet hosts deploy` starts it"))
    if r.kind == "process-stop":
        named = next((f"{k} {v[k]}" for k in ("pattern", "pid_file") if v.get(k)), "?")
        return f"processes {v.get('pids') or '(not recorded)'} stopped (SIGSTOP; {named})"
    user = _user_undo(r)
    if user:
        return f"{r.kind} done; its {user[0]} not run yet: {user[1]}"
    return f"{r.kind} ({', '.join(f'{k}={x}' for k, x in v.items() if k not in _HEADER)})"


def _stopped(r: FaultRecord) -> tuple[tuple[str, str], list[str]] | None:
    """A process-stop's subject (pattern or pid_file, as recorded) and the pids it stopped (digits only)."""
    subject = next(((k, r.values[k]) for k in ("pattern", "pid_file") if r.values.get(k)), None)
    pids = r.values.get("pids", "").split()
    if subject is None or not all(p.isdigit() for p in pids):
        return None
    return subject, pids


def _user_undo(r: FaultRecord) -> tuple[str, str] | None:
    """The user's own undo of the fault (field, shell text), if it has one."""
    return next(((k, r.values[k]) for k in USER_UNDO if r.values.get(k)), None)


def undo_command(r: FaultRecord) -> str:
    """The command undoing a recorded fault, rebuilt from the fixed scripts;
    a user's undo as written. FaultError saying why it cannot be rebuilt."""
    v = r.values
    if r.kind == "link-slow" and _ADDRESS.fullmatch(v.get("address", "")):
        return script(LINK_UNDO, v["address"])
    if r.kind == "device-slow" and _CGROUP.fullmatch(v.get("cgroup", "")):
        return script(DEVICE_UNDO, v["cgroup"])
    if r.kind == "host-down" and v.get("port", "").isdigit():
        return script(HOST_UP, v["port"], *([v.get("exe") or r.args[0], *r.args[1:]] if r.args else []))
    if r.kind == "process-stop" and _stopped(r):
        (named, value), pids = _stopped(r)
        return script(PROCESS_CONT, named, value, *pids)
    user = _user_undo(r)
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
    user = _user_undo(r)
    if user and not yes:
        how = f"run `iofleet hosts clean {inventory} --yes` to run it, or" if r.host else "if it is still needed,"
        return False, (f"{r.place}: {left_line(r)}; its {user[0]} is your shell text, run as root: check it and "
                       f"{how} run it by hand and remove {r.path}")
    ok, _, why = run_as_root(r.host, unrecorded(command, r.path), FAULT_TIMEOUT_S)
    if not ok:
        return False, f"{r.place}: {r.kind} {r.origin()} could not be undone: {why}"
    return True, f"{r.place}: undid {r.kind} {r.origin()}: {_undone_words(r)}"


def _undone_words(r: FaultRecord) -> str:
    v = r.values
    if r.kind == "link-slow":
        return f"tc tbf removed from {v.get('dev') or 'the interface of ' + v.get('address', '?')}"
    if r.kind == "device-slow":
        return f"cgroup {v['cgroup']} removed, its processes moved back"
    if r.kind == "host-down":
        return f"fio server on port {v['port']} listening again"
    if r.kind == "process-stop":
        return f"processes {v.get('pids')} continued (SIGCONT)"
    user = _user_undo(r)
    return f"ran its {user[0]}: {user[1]}" if user else "undone"
