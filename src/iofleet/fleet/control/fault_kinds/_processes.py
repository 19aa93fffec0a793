"""What process-stop and process-kill share: the processes a `pattern`
(pgrep -f's) or a `pid_file` names, and a signal sent to them."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from ....plan.scenario import ProcessText
from ..fault_kind import FaultKind
from ..fault_records import FACTS


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("not an absolute path; give the file's whole path on the host, e.g. /run/ceph/osd.3.pid")
    return value


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


def pids(out: str) -> list[int]:
    """The `pids=1 2` line of PROCESS_SIGNAL's output."""
    line = next((line for line in out.splitlines() if line.startswith("pids=")), "pids=")
    return [int(p) for p in line[5:].split()]


class ProcessFault(FaultKind):
    """A signal to the processes a `pattern` or a `pid_file` names, for `for` (no kind itself)."""

    fields = {"pattern": ProcessText,  # pgrep -f's: the process's command line
              "pid_file": Annotated[ProcessText, AfterValidator(_absolute)]}
    on_target = True
    needs_for = ""  # the kind's words when `for` is missing

    def check(self, event) -> None:
        if (event.pattern is None) == (event.pid_file is None):
            raise ValueError(f"{self.name} needs one of `pattern` (pgrep -f's, e.g. pattern: 'ceph-osd --id 3') "
                             f"or `pid_file` (e.g. pid_file: /run/ceph/osd.3.pid), not both")
        if event.for_s is None:
            raise ValueError(f"{self.name} needs `for`{self.needs_for}")

    def subject(self, event) -> tuple[str, str] | None:
        if event.pattern is not None:
            return ("pattern", event.pattern)
        return ("pid_file", event.pid_file) if event.pid_file is not None else None

    def shown(self, event) -> str:
        return " ({}: {})".format(*event.subject)

    def detail(self, fault, out: str) -> dict:
        return {"pids": pids(out)}
