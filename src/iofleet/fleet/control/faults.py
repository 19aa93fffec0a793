"""Scenario faults: each applied at its time and undone at its end and at
any exit (undo is idempotent).

On a fleet host they run as root through the SSH control channel
(ssh.run_on_all); on this host (`--target`) the kinds that say so
(`on_target`: device-slow and the process faults) exist, run here. What
each kind does is its own module's (fault_kinds/, fault_kind.py): here is
what every fault has. Every value that reaches a shell is one quoted
argument of a fixed script (fault_kind.script), except the user's commands
(a `run:` event's command and undo, a process-kill's restart), which are
shell text by design (shown before the run, confirmed with --yes).

Each fault that leaves something to undo is recorded on its host by the
command that applies it, and its record removed by the one that undoes it
(fault_records.py); a fixed script exits 3 when it refused before doing
anything (its record goes then). Two faults of one kind on one host at
once are refused before the load starts (refuse_overlaps): the second
would replace the first (tc), or take its processes (blkio), and one undo
would end both.
"""

from __future__ import annotations

from ...plan.scenario import Event, Scenario
from ..inventory import Host
from .fault_kind import Fault, FaultError, kind_of, kinds
from .fault_records import LOCAL, controller, record_path

__all__ = ["Fault", "FaultError", "control_host", "plan_faults", "refuse_overlaps"]

kinds()  # loaded here, each registers its fields with plan/scenario.py: scenarios are read after this import


def control_host(name: str, hosts: list[Host], where: str, what: str) -> Host:
    """The inventory's host `name`, with the SSH control channel that `what`
    (a fault, the watch) needs; FaultError naming `where` and the fix."""
    by_name = {h.name: h for h in hosts}
    host = by_name.get(name)
    if host is None:
        raise FaultError(f"{where}.host: {name} is not a host of the inventory ({', '.join(by_name)}); fix the name")
    if host.no_login:
        raise FaultError(f"{where}: {what} on {name} needs the SSH control channel: {host.no_login}")
    if host.ssh is None:
        raise FaultError(f"{where}: {what} on {name} needs the SSH control channel; add `ssh:` to {name} in the "
                         f"inventory")
    return host


def plan_faults(scenario: Scenario, source: str, hosts: list[Host] | None, target: str | None,
                token: str) -> list[Fault]:
    """Each event as a fault on its host, checked before the run starts:
    the host is in the inventory and reachable by ssh, the fault fits the
    place. FaultError naming the file, the event and the fix otherwise."""
    by_name = {h.name: h for h in hosts or []}
    faults = []
    for i, e in enumerate(scenario.events):
        where = f"{source}: events[{i}]"
        if hosts is None:
            if not kind_of(e.fault).on_target:
                here = ", ".join(k.name for k in kinds() if k.on_target)
                raise FaultError(f"{where}: {e.fault} needs a fleet host; run the scenario with --hosts INVENTORY "
                                 f"(on --target only {here} apply)")
            if e.host is not None:
                raise FaultError(f"{where}.host: {e.host} is a fleet host, and the scenario runs on --target; "
                                 f"leave `host` out or run with --hosts INVENTORY")
            faults.append(Fault(e, None, target=target or "", token=token, index=i))
            continue
        if e.host is None:
            raise FaultError(f"{where}.host: missing; name the host it happens on ({', '.join(by_name)})")
        host = control_host(e.host, hosts, where, e.fault)
        faults.append(Fault(e, host, target=host.targets[0], token=token, index=i))
    refuse_overlaps(scenario, source)
    for f in faults:
        _keep_record(f, scenario.name)
    return faults


def _keep_record(fault: Fault, scenario: str) -> None:
    """Where and what the fault's record on its host is (fault_records.py),
    for a fault that leaves something to undo: its kind, scenario, event and
    run, and the values its undo is rebuilt from: the event's own (mbit,
    iops, a command...), the host's address and port, and the kind's own
    (a device-slow's cgroup and target)."""
    e = fault.event
    if not fault.kind.recorded(e):
        return
    values = [("kind", e.fault), ("scenario", scenario), ("event", str(fault.index + 1)), ("token", fault.token),
              *controller()]
    own = e.model_dump(exclude_none=True, exclude={"at", "fault", "host", "for_s"})
    values += [(k, str(v)) for k, v in own.items()]
    if fault.host is not None:
        values += [("address", fault.host.endpoint[0]), ("port", str(fault.host.endpoint[1]))]
    values += fault.kind.record_values(fault)
    fault.record, fault.record_values = record_path(fault.host, fault.token, fault.index), values


def _span(e: Event, runtime: int) -> tuple[int, int]:
    return e.at, e.end_s if e.end_s is not None else runtime


def _span_text(e: Event) -> str:
    return f"{e.at}s–{e.end_s}s" if e.end_s is not None else f"{e.at}s to the end"


def _same_fault(e: Event, o: Event) -> bool:
    """Two events that would act on one thing: one kind, one subject (a
    process fault's process, plan/scenario.py's `subject`), and the kind
    says so (two runs: only both with an `undo`)."""
    return e.fault == o.fault and e.subject == o.subject and kind_of(e.fault).same(e, o)


def refuse_overlaps(scenario: Scenario, source: str) -> None:
    """Two faults of one kind on one host (this host for --target) whose
    spans overlap (an event without `for` lasts to the test's end), or any
    event on a host at or after a fault that takes the host out of the test
    there (host-down: gone for the rest of the test): FaultError naming both
    events and the fix. An event may start when another of its kind ends
    (its undo comes first)."""
    events = scenario.events
    for i, e in enumerate(events):
        place = e.host or LOCAL
        for j, o in enumerate(events[:i]):
            if (o.host or LOCAL) != place:
                continue
            where = e.host or "this host"
            for late, li, down, di in ((e, i, o, j), (o, j, e, i)):
                if kind_of(down.fault).loses_host and late.at >= down.at:
                    raise FaultError(
                        f"{source}: events[{li}]: {late.fault} on {where} starts at {late.at}s, when {where} is "
                        f"down (events[{di}]: {down.fault} at {down.at}s takes it for the rest of the test); move "
                        f"it before {down.at}s or to another host")
            (a1, b1), (a2, b2) = _span(e, scenario.runtime), _span(o, scenario.runtime)
            if _same_fault(e, o) and a1 < b2 and a2 < b1:
                raise FaultError(
                    f"{source}: events[{i}]: {e.fault} on {where} ({_span_text(e)}) overlaps events[{j}] "
                    f"({o.fault} on {where}, {_span_text(o)}); one {e.fault} at a time on a host: move or "
                    f"shorten one")
