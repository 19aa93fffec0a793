"""Scenario faults: each applied at its time and undone at its end and at
any exit (undo is idempotent).

On a fleet host they run as root through the SSH control channel
(ssh.run_on_all); on this host (`--target`) device-slow and the process
faults exist, run here. Every value that reaches a shell is one quoted
argument of a fixed script (shlex.quote), except the user's commands (a
`run:` event's command and undo, a process-kill's restart), which are
shell text by design (shown before the run, confirmed with --yes).

  host-down    kill -9 the host's fio server (the process listening on
               its port) and its children; undo starts it again with its
               own command line, once the run is over.
  link-slow    tc tbf on the interface holding the host's address; undo
               deletes the qdisc.
  device-slow  a blkio (cgroup v1) throttle on the target's disk, for the
               fio server's processes (here: the fio processes using the
               target); undo moves them back and removes the cgroup.
  process-stop SIGSTOP to the processes a `pattern` (pgrep -f) or a
               `pid_file` names; undo sends them SIGCONT.
  process-kill SIGKILL to them; undo runs the user's `restart` command,
               if any (and only if something was killed).
  run          the command, once; undo runs the user's `undo` command, if
               any (also after a failed command: it may have done part).

Each fault that leaves something to undo is recorded on its host by the
command that applies it, and its record removed by the one that undoes it
(fault_records.py); a fixed script exits 3 when it refused before doing
anything (its record goes then). Two faults of one kind on one host at
once are refused before the load starts (refuse_overlaps): the second
would replace the first (tc), or take its processes (blkio), and one undo
would end both.
"""

from __future__ import annotations

import os
import shlex
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import IofleetError
from ...fio.jobfile import DATA_DIR_NAME
from ...plan.scenario import Event, Scenario
from ..inventory import Host
from ..fio_link.procs import fio_using
from .fault_records import FACTS, LOCAL, controller, record_path, recorded, run_as_root, unrecorded

BLKIO_ROOT = "/sys/fs/cgroup/blkio"
# The faults a scenario on this host (--target) can have: run here, as root.
ON_TARGET = ("device-slow", "process-stop", "process-kill")
FAULT_TIMEOUT_S = 30.0


class FaultError(IofleetError):
    """A fault could not be applied or undone."""


# The interface holding an address: `ip -o addr` lines read "2: eth0 inet 10.0.0.2/24 ...".
_FIND_DEV = r"""
dev=$(ip -o addr show | awk -v a="$1" '{split($4, p, "/"); if (p[1] == a) {print $2; exit}}')
[ -n "$dev" ] || { echo "no interface has the address $1" >&2; exit 3; }
"""

LINK_SLOW = FACTS + _FIND_DEV + r"""
fact dev "$dev"
tc qdisc replace dev "$dev" root tbf rate "$2mbit" burst "$3" latency 50ms
"""

LINK_UNDO = _FIND_DEV + r"""
tc qdisc show dev "$dev" root | grep -q '^qdisc tbf' || exit 0
tc qdisc del dev "$dev" root
"""

# The fio server: the process listening on the port, and every descendant.
_SERVER_TREE = r"""
tree() { echo "$1"; for c in $(pgrep -P "$1"); do tree "$c"; done; }
# ss names every process holding the listening socket (its forked children too): the server is
# the one whose parent is not among them.
pids=$(ss -Hltnp "sport = :$PORT" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
server=
for p in $pids; do echo "$pids" | grep -qx "$(ps -o ppid= -p "$p" | tr -d ' ')" || server=$p; done
[ -n "$server" ] || { echo "no process listens on port $PORT (no fio server)" >&2; exit 3; }
"""

HOST_DOWN = "PORT=$1" + FACTS + _SERVER_TREE + r"""
fact server_pid "$server"
fact exe "$(readlink "/proc/$server/exe")"
tr '\0' '\n' < "/proc/$server/cmdline" | sed 's/^/arg=/' | facts
kill -9 $(tree "$server")
"""

# Starts the server again only if nothing listens on its port.
HOST_UP = r"""
port=$1; shift
ss -Hltn "sport = :$port" | grep -q . && exit 0
[ $# -gt 0 ] || { echo "no fio server listens on port $port and its command line is not known; start it with \`iofleet hosts deploy\`" >&2; exit 3; }
setsid "$@" < /dev/null > /dev/null 2>&1 &
i=0; while ! ss -Hltn "sport = :$port" | grep -q . && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
"""

# $1 target, $2 cgroup, $3.. throttle files and values ("read_bps_device 1048576" pairs), after `--` the pids.
_TARGET_DISK = r"""
t=$1
if [ -b "$t" ]; then
  hex=$(stat -L -c '%t:%T' "$t") && mm=$(printf '%d:%d' "0x${hex%:*}" "0x${hex#*:}")
else
  mm=$(findmnt -n -o MAJ:MIN -T "$t" | head -n 1 | tr -d ' ')
fi
[ -e "/sys/dev/block/$mm" ] || { echo "the target $t is on no block device ($mm)" >&2; exit 3; }
# blkio throttles whole disks: a partition's disk
[ -e "/sys/dev/block/$mm/partition" ] && mm=$(cat "/sys/dev/block/$mm/../dev")
"""

DEVICE_SLOW = FACTS + _TARGET_DISK + r"""
cg=$2; shift 2
[ -d /sys/fs/cgroup/blkio ] || { echo "no blkio cgroup (v1) at /sys/fs/cgroup/blkio" >&2; exit 3; }
fact device "$mm"
mkdir -p "$cg"
while [ "$1" != "--" ]; do echo "$mm $2" > "$cg/blkio.throttle.$1"; shift 2; done
shift
for p in "$@"; do echo "$p" > "$cg/cgroup.procs" 2>/dev/null || true; done
"""

DEVICE_SLOW_REMOTE = _SERVER_TREE + r"""
set -- "$@" $(tree "$server")
""" + DEVICE_SLOW

DEVICE_UNDO = r"""
cg=$1
[ -d "$cg" ] || exit 0
# Limits off first: IOs already queued in the cgroup's throttle go at once, not at the slow rate.
for f in "$cg"/blkio.throttle.*_device; do
  while read -r mm value; do echo "$mm 0" > "$f"; done < "$f"
done
for p in $(cat "$cg/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/blkio/cgroup.procs 2>/dev/null || true; done
i=0; while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do
  for p in $(cat "$cg/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/blkio/cgroup.procs 2>/dev/null || true; done
  sleep 0.02; i=$((i + 1)); done
[ ! -d "$cg" ] || { echo "cannot remove the cgroup $cg" >&2; exit 1; }
"""


# $1 pid_file or pattern, $2 its value: `named` sets $pids to the processes it names, or says why none.
_NAMED = r"""
named() {
  if [ "$1" = pid_file ]; then
    [ -r "$2" ] || { echo "no pid file $2" >&2; return 3; }
    pids=$(head -n 1 "$2" | tr -d ' \t\r')
    case $pids in ''|*[!0-9]*) echo "the pid file $2 holds no pid" >&2; return 3;; esac
    [ -d "/proc/$pids" ] || { echo "no process $pids (the pid in $2) runs" >&2; return 3; }
    return 0
  fi
  # pgrep -f reads whole command lines, and the pattern is on this shell's and its parents' (sudo,
  # the login shell, iofleet on this host): they are left out, and so is the subshell pgrep ran in
  # (a copy of this shell, gone once pgrep has answered).
  ours=" $$ "; p=$$
  while [ "$p" -gt 1 ]; do p=$(ps -o ppid= -p "$p" | tr -d ' '); [ -n "$p" ] || break; ours="$ours$p "; done
  found=$(pgrep -f -- "$2"); rc=$?
  [ $rc -le 1 ] || { echo "pgrep refused the pattern $2" >&2; return 3; }
  pids=
  for p in $found; do
    case $ours in *" $p "*) continue;; esac
    [ -d "/proc/$p" ] && pids="$pids $p"
  done
  [ -n "$pids" ] || { echo "no process matches the pattern $2" >&2; return 3; }
}
"""

# $3 the signal; prints the pids it reached.
PROCESS_SIGNAL = FACTS + _NAMED + r"""
named "$1" "$2" || exit 3
sent=
for p in $pids; do kill -s "$3" "$p" 2>/dev/null && sent="$sent $p"; done
[ -n "$sent" ] || { echo "the processes ($pids) ended before they got SIG$3" >&2; exit 3; }
fact pids "${sent# }"
"""

# SIGCONT to the pids stopped ($3..), or, if none are known (an apply cut short), to what the subject names now.
PROCESS_CONT = _NAMED + r"""
kind=$1 value=$2; shift 2
if [ $# -eq 0 ]; then named "$kind" "$value" 2>/dev/null || exit 0; set -- $pids; fi
for p in "$@"; do kill -s CONT "$p" 2>/dev/null || true; done
"""


def script(text: str, *args) -> str:
    """`sh -c TEXT iofleet-fault ARGS…`, every word quoted."""
    return " ".join(["sh", "-c", shlex.quote(text), "iofleet-fault", *(shlex.quote(str(a)) for a in args)])


def tbf_burst(mbit: int) -> int:
    """Bytes tbf may send at once: 10 ms at the rate, at least 16 KiB (a
    burst under rate/HZ would cap the rate below the one asked for)."""
    return max(16384, mbit * 1_000_000 // 8 // 100)


def throttles(event: Event) -> list[str]:
    """blkio throttle file names and values, in pairs, for device-slow."""
    out: list[str] = []
    if event.mbps is not None:
        b = event.mbps * 1_000_000
        out += ["read_bps_device", str(b), "write_bps_device", str(b)]
    if event.iops is not None:
        out += ["read_iops_device", str(event.iops), "write_iops_device", str(event.iops)]
    return out


@dataclass
class Fault:
    """One event at work on one host (None: this host)."""

    event: Event
    host: Host | None
    cgroup: str = ""  # device-slow: its cgroup
    target: str = ""  # device-slow: the target whose disk is throttled
    undo_command: str | None = None
    record: str = ""  # where it is recorded on its host ("": a fault that leaves nothing to undo)
    record_values: list[tuple[str, str]] = field(default_factory=list)  # what its record holds
    detail: dict = field(default_factory=dict)
    applied: bool = False
    undone: bool = False

    @property
    def name(self) -> str:
        return self.host.name if self.host else "local"

    def _run(self, command: str, what: str) -> str:
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
        e = self.event
        if e.fault == "link-slow":
            address = self.host.endpoint[0]
            self.undo_command = script(LINK_UNDO, address)  # first: its undo also clears a part-done apply
            out = self._run(script(LINK_SLOW, address, e.mbit, tbf_burst(e.mbit)), "applied")
        elif e.fault == "host-down":
            port = self.host.endpoint[1]
            out = self._run(script(HOST_DOWN, port), "applied")
            argv = [line[4:] for line in out.splitlines() if line.startswith("arg=")]
            exe = next((line[4:] for line in out.splitlines() if line.startswith("exe=")), "")
            if argv:
                self.undo_command = script(HOST_UP, port, exe or argv[0], *argv[1:])
        elif e.fault == "device-slow":
            self.undo_command = script(DEVICE_UNDO, self.cgroup)
            out = self._device_slow()
        elif e.fault == "process-stop":
            self.undo_command = script(PROCESS_CONT, *e.subject)  # first: continues a part-done apply's
            out = self._run(script(PROCESS_SIGNAL, *e.subject, "STOP"), "applied")
            self.undo_command = script(PROCESS_CONT, *e.subject, *_pids(out))
        elif e.fault == "process-kill":
            out = self._run(script(PROCESS_SIGNAL, *e.subject, "KILL"), "applied")
            self.undo_command = e.restart  # the user's shell text; None: a killed process has nothing to undo
        else:  # run: the user's own shell text, as one argument of the remote shell
            self.undo_command = e.undo  # first: a command that failed may have done part of its work
            out = self._run(e.command, "run")
        self.applied = True
        self.detail = {k: v for k, _, v in (line.partition("=") for line in out.splitlines())
                       if k in ("dev", "device")}
        if e.subject:
            self.detail["pids"] = _pids(out)

    def _device_slow(self) -> str:
        pairs = throttles(self.event)
        if self.host is None:
            pids = _fio_on(self.target)
            if not pids:
                raise FaultError(f"local: device-slow found no fio process using {self.target}")
            return self._run(script(DEVICE_SLOW, self.target, self.cgroup, *pairs, "--", *pids), "applied")
        command = script(DEVICE_SLOW_REMOTE, self.target, self.cgroup, *pairs, "--")
        return self._run(f"PORT={shlex.quote(str(self.host.endpoint[1]))} {command}", "applied")

    def undo(self) -> None:
        """Idempotent: a second call, or one for a fault never applied, does nothing."""
        if self.undone or self.undo_command is None:
            self.undone = True
            return
        self.undone = True
        self._run(self.undo_command, "undone")

    @property
    def undo_at_end(self) -> bool:
        """host-down is undone once the run is over: a lost host does not rejoin a running test."""
        return self.event.fault == "host-down"


def _pids(out: str) -> list[int]:
    """The `pids=1 2` line of a process fault's script."""
    line = next((line for line in out.splitlines() if line.startswith("pids=")), "pids=")
    return [int(p) for p in line[5:].split()]


def _fio_on(target: str) -> list[int]:
    """This host's fio processes doing IO on a target: holding files in
    iofleet's directory under it, or the device itself."""
    if not os.path.exists(target) or not stat.S_ISBLK(os.stat(target).st_mode):
        return sorted(fio_using([Path(target) / DATA_DIR_NAME]))
    device, found = os.path.realpath(target), []
    for entry in os.scandir("/proc"):
        try:
            if not entry.name.isdigit() or Path(f"/proc/{entry.name}/comm").read_text() != "fio\n":
                continue
            fds = os.listdir(f"/proc/{entry.name}/fd")
            if any(os.readlink(f"/proc/{entry.name}/fd/{fd}") == device for fd in fds):
                found.append(int(entry.name))
        except OSError:
            continue  # ended meanwhile, or not ours to read
    return sorted(found)


def control_host(name: str, hosts: list[Host], where: str, what: str) -> Host:
    """The inventory's host `name`, with the SSH control channel that `what`
    (a fault, the watch) needs; FaultError naming `where` and the fix."""
    by_name = {h.name: h for h in hosts}
    host = by_name.get(name)
    if host is None:
        raise FaultError(f"{where}.host: {name} is not a host of the inventory ({', '.join(by_name)}); fix the name")
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
            if e.fault not in ON_TARGET:
                raise FaultError(f"{where}: {e.fault} needs a fleet host; run the scenario with --hosts INVENTORY "
                                 f"(on --target only {', '.join(ON_TARGET)} apply)")
            if e.host is not None:
                raise FaultError(f"{where}.host: {e.host} is a fleet host, and the scenario runs on --target; "
                                 f"leave `host` out or run with --hosts INVENTORY")
            faults.append(Fault(e, None, cgroup=f"{BLKIO_ROOT}/iofleet-{token}-{i}", target=target or ""))
            continue
        if e.host is None:
            raise FaultError(f"{where}.host: missing; name the host it happens on ({', '.join(by_name)})")
        host = control_host(e.host, hosts, where, e.fault)
        faults.append(Fault(e, host, cgroup=f"{BLKIO_ROOT}/iofleet-{token}-{i}", target=host.targets[0]))
    refuse_overlaps(scenario, source)
    for i, f in enumerate(faults):
        _keep_record(f, scenario.name, i, token)
    return faults


# Faults done once: nothing stays in place after them, unless the user gave their undo (these fields).
ONE_SHOT = ("run", "process-kill")
USER_UNDO = ("undo", "restart")


def _keep_record(fault: Fault, scenario: str, index: int, token: str) -> None:
    """Where and what the fault's record on its host is (fault_records.py),
    for a fault that leaves something to undo: its kind, scenario, event and
    run, and the values its undo is rebuilt from: the event's own (mbit,
    iops, a command...), the host's address and port, a device-slow's cgroup
    and target."""
    e = fault.event
    if e.fault in ONE_SHOT and not any(getattr(e, k, None) for k in USER_UNDO):
        return
    values = [("kind", e.fault), ("scenario", scenario), ("event", str(index + 1)), ("token", token),
              *controller()]
    values += [(k, str(v)) for k, v in e.model_dump(exclude_none=True, exclude={"at", "fault", "host", "for_s"}).items()]
    if fault.host is not None:
        values += [("address", fault.host.endpoint[0]), ("port", str(fault.host.endpoint[1]))]
    if e.fault == "device-slow":
        values += [("cgroup", fault.cgroup), ("target", fault.target)]
    fault.record, fault.record_values = record_path(fault.host, token, index), values


def _span(e: Event, runtime: int) -> tuple[int, int]:
    return e.at, e.end_s if e.end_s is not None else runtime


def _span_text(e: Event) -> str:
    return f"{e.at}s–{e.end_s}s" if e.end_s is not None else f"{e.at}s to the end"


def _same_fault(e: Event, o: Event) -> bool:
    """Two events that would act on one thing: one kind, and (a process
    fault) one process named (plan/scenario.py's `subject`, where it
    exists). A `run` acts on what its command does: two conflict only when
    both have an `undo` (one might end what both did)."""
    if e.fault != o.fault or e.subject != o.subject:
        return False
    return e.fault != "run" or (e.undo is not None and o.undo is not None)


def refuse_overlaps(scenario: Scenario, source: str) -> None:
    """Two faults of one kind on one host (this host for --target) whose
    spans overlap (an event without `for` lasts to the test's end), or any
    event on a host at or after a host-down there (the host is gone for the
    rest of the test): FaultError naming both events and the fix. An event
    may start when another of its kind ends (its undo comes first)."""
    events = scenario.events
    for i, e in enumerate(events):
        place = e.host or LOCAL
        for j, o in enumerate(events[:i]):
            if (o.host or LOCAL) != place:
                continue
            where = e.host or "this host"
            for late, li, down, di in ((e, i, o, j), (o, j, e, i)):
                if down.fault == "host-down" and late.at >= down.at:
                    raise FaultError(
                        f"{source}: events[{li}]: {late.fault} on {where} starts at {late.at}s, when {where} is "
                        f"down (events[{di}]: host-down at {down.at}s takes it for the rest of the test); move it "
                        f"before {down.at}s or to another host")
            (a1, b1), (a2, b2) = _span(e, scenario.runtime), _span(o, scenario.runtime)
            if _same_fault(e, o) and a1 < b2 and a2 < b1:
                raise FaultError(
                    f"{source}: events[{i}]: {e.fault} on {where} ({_span_text(e)}) overlaps events[{j}] "
                    f"({o.fault} on {where}, {_span_text(o)}); one {e.fault} at a time on a host: move or "
                    f"shorten one")


def now_s(start: float) -> float:
    return round(time.monotonic() - start, 2)


def blkio_available() -> bool:
    return os.path.isdir(BLKIO_ROOT)
