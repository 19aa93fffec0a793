"""Each fault a scenario applies is recorded on the host it is applied on,
by the same command that applies it, and the record is removed by the
command that undoes it: what a killed iofleet left in place can be found
(`hosts check`, the next scenario) and undone (`hosts clean`).

    /run/iofleet/faults/ADDR-PORT/TOKEN-N   a fleet host's fault (one directory per fio server:
                                            hosts may share a machine, as the test fleet's namespaces do)
    /run/iofleet/faults/local/TOKEN-N       this machine's (`scenario --target`)

/run is a tmpfs: a reboot clears the records with what they record (tc
qdiscs, cgroups, processes). The directories are root's only (0700): a
record holds what an undo runs as root.

A record is KEY=VALUE lines: `since` (the host's UTC time when the apply
began), the fault's kind, the scenario, the event (numbered as the run's
lines number it), the run's token (in its cgroup names too), the iofleet
that applied it (`controller`, `pid`, `pid_start`: is it still running?)
and the values its undo is rebuilt from (faults._keep_record). A fault's
script adds what it finds on the host with `fact` (FACTS): the interface,
the disk, the fio server's command line (`arg=` lines).

The apply is refused without a trace when its fixed script exits 3
("nothing done": no interface has the address, no fio server listens):
the record is removed then. Any other failure keeps it (the apply may have
done part), until an undo succeeds.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..inventory import Host
from .deploy import state_dir
from .ssh import run_on_all

RECORDS_ROOT = "/run/iofleet/faults"
LOCAL = "local"
READ_TIMEOUT_S = 30.0

# Shell helpers of the fault scripts: `fact KEY VALUE` prints KEY=VALUE for
# the controller and adds it to the fault's record; `facts` does so for
# lines already KEY=VALUE (stdin).
FACTS = r"""
facts() { if [ -n "${IOFLEET_FAULT_RECORD:-}" ]; then tee -a "$IOFLEET_FAULT_RECORD"; else cat; fi; }
fact() { printf '%s=%s\n' "$1" "$2" | facts; }
"""

# $1 the record, then its KEY=VALUE lines.
_WRITE = r"""
rec=$1; shift
umask 077
mkdir -p "${rec%/*}" || exit 1
{ printf 'since=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"; for kv do printf '%s\n' "$kv"; done; } > "$rec"
"""

# Every record of a directory: `record=NAME`, then its lines each after a dot (a value cannot start a record).
_READ = r"""
[ -d "$1" ] || exit 0
for f in "$1"/*; do
  [ -f "$f" ] || continue
  printf 'record=%s\n' "${f##*/}"
  sed 's/^/./' "$f"
done
"""


def _sh(text: str, *args) -> str:
    """`sh -c TEXT iofleet-fault ARGS…`, every word quoted."""
    return " ".join(["sh", "-c", shlex.quote(text), "iofleet-fault", *(shlex.quote(str(a)) for a in args)])


def records_dir(host: Host | None) -> str:
    """Where a host's faults are recorded (None: this machine's)."""
    return f"{RECORDS_ROOT}/{PurePosixPath(state_dir(host)).name if host else LOCAL}"


def record_path(host: Host | None, token: str, index: int) -> str:
    return f"{records_dir(host)}/{token}-{index}"


def controller() -> list[tuple[str, str]]:
    """Who applies the fault: this machine and this process (with its start
    time, so a pid used again later is not taken for it)."""
    return [("controller", socket.gethostname()), ("pid", str(os.getpid())), ("pid_start", _start_ticks(os.getpid()))]


def _start_ticks(pid: int) -> str:
    """A process's start time (/proc/PID/stat field 22), '' when it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]


def recorded(command: str, record: str, values: list[tuple[str, str]], fixed: bool) -> str:
    """The apply `command` that first writes the fault's `record` (its
    KEY=VALUE `values`, one line each), in the same shell. `fixed`: a fixed
    script, whose exit 3 means nothing was done (the record goes); else the
    user's text, whose record stays until its undo ran."""
    write = _sh(_WRITE, record, *(f"{k}={v}" for k, v in values))
    lines = [f"export IOFLEET_FAULT_RECORD={shlex.quote(record)}", f"{write} || exit 1", command]
    if fixed:
        lines.append(f'rc=$?; [ "$rc" -ne 3 ] || rm -f -- {shlex.quote(record)}; exit "$rc"')
    return "\n".join(lines)


def unrecorded(undo: str, record: str) -> str:
    """The undo `undo`, removing the fault's record once it succeeded."""
    return f"(\n{undo}\n) && rm -f -- {shlex.quote(record)}"


def run_as_root(host: Host | None, command: str, timeout_s: float) -> tuple[bool, str, str]:
    """Run a shell command as root on a fleet host (SSH) or here (None):
    (ok, stdout, why it failed)."""
    if host is None:
        try:
            proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False, "", f"did not finish within {timeout_s:g} s"
        return proc.returncode == 0, proc.stdout, _said(proc.stderr)
    reply = run_on_all([host], command, timeout_s=timeout_s, as_root=True)[host.name]
    return reply.ok, reply.stdout, reply.error or _said(reply.stderr)


def _said(stderr: str) -> str:
    return " ".join(stderr.split())[-300:] or "failed without a message"


@dataclass
class FaultRecord:
    """A fault recorded on a host: in place, or left by an iofleet that ended
    before it could undo it."""

    host: Host | None  # None: this machine
    name: str  # TOKEN-N, the file's name
    values: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # host-down: the fio server's command line

    @property
    def path(self) -> str:
        return f"{records_dir(self.host)}/{self.name}"

    @property
    def place(self) -> str:
        return self.host.name if self.host else "this host"

    @property
    def kind(self) -> str:
        return self.values.get("kind", "?")

    @property
    def running(self) -> bool:
        """The iofleet that applied it still runs (on this machine; one on
        another machine cannot be asked, and counts as gone)."""
        v = self.values
        return (v.get("controller") == socket.gethostname() and v.get("pid", "").isdigit()
                and bool(v.get("pid_start")) and _start_ticks(int(v["pid"])) == v["pid_start"])

    def origin(self) -> str:
        """`since 2025-06-01T10:00:00Z, by scenario s (event 2; iofleet pid 4242 has ended)`."""
        v = self.values
        elsewhere = v.get("controller") not in (None, socket.gethostname())
        who = f"iofleet pid {v.get('pid', '?')}" + (f" on {v['controller']}" if elsewhere else "")
        state = "still runs it" if self.running else "may still run: not known from here" if elsewhere else "has ended"
        return (f"since {v.get('since', '?')}, by scenario {v.get('scenario', '?')} (event {v.get('event', '?')}; "
                f"{who} {state})")


def parse_records(host: Host | None, text: str) -> list[FaultRecord]:
    """The records _READ printed."""
    out: list[FaultRecord] = []
    for line in text.splitlines():
        if line.startswith("record="):
            out.append(FaultRecord(host, line[7:]))
        elif line.startswith(".") and out:
            key, _, value = line[1:].partition("=")
            if key == "arg":
                out[-1].args.append(value)
            else:
                out[-1].values[key] = value
    return out


def read_records(hosts: list[Host] | None) -> tuple[list[FaultRecord], dict[str, str]]:
    """The faults recorded on each host with `ssh:` (None: on this machine):
    (the records, host → why its records could not be read)."""
    if hosts is None:
        ok, out, why = run_as_root(None, _sh(_READ, records_dir(None)), READ_TIMEOUT_S)
        return (parse_records(None, out), {}) if ok else ([], {LOCAL: why})
    with_ssh = [h for h in hosts if h.ssh is not None]
    if not with_ssh:
        return [], {}
    replies = run_on_all(with_ssh, lambda h: _sh(_READ, records_dir(h)), timeout_s=READ_TIMEOUT_S, as_root=True)
    records, unread = [], {}
    for h in with_ssh:
        reply = replies[h.name]
        if reply.ok:
            records += parse_records(h, reply.stdout)
        else:
            unread[h.name] = reply.error or _said(reply.stderr)
    return records, unread
