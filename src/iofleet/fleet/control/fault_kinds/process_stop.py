"""process-stop: SIGSTOP to the processes a `pattern` (pgrep -f) or a
`pid_file` names; undo sends them SIGCONT."""

from __future__ import annotations

from ..fault_kind import script
from ..fault_records import FaultRecord
from ._processes import PROCESS_CONT, PROCESS_SIGNAL, ProcessFault, pids


class ProcessStop(ProcessFault):
    name = "process-stop"
    listed = 4
    needs_for = " (a stopped process is continued at its end, e.g. for: 30s)"

    def apply(self, fault) -> str:
        subject = fault.event.subject
        fault.undo_command = script(PROCESS_CONT, *subject)  # first: continues a part-done apply's
        out = fault.run(script(PROCESS_SIGNAL, *subject, "STOP"), "applied")
        fault.undo_command = script(PROCESS_CONT, *subject, *pids(out))
        return out

    def left(self, r: FaultRecord) -> str:
        v = r.values
        named = next((f"{k} {v[k]}" for k in ("pattern", "pid_file") if v.get(k)), "?")
        return f"processes {v.get('pids') or '(not recorded)'} stopped (SIGSTOP; {named})"

    def left_undo(self, r: FaultRecord) -> str | None:
        """SIGCONT to the pids it stopped (digits only), named as recorded."""
        subject = next(((k, r.values[k]) for k in ("pattern", "pid_file") if r.values.get(k)), None)
        stopped = r.values.get("pids", "").split()
        if subject is None or not all(p.isdigit() for p in stopped):
            return None
        return script(PROCESS_CONT, *subject, *stopped)

    def undone_words(self, r: FaultRecord) -> str:
        return f"processes {r.values.get('pids')} continued (SIGCONT)"
