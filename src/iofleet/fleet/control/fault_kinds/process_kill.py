"""process-kill: SIGKILL to the processes a `pattern` (pgrep -f) or a
`pid_file` names; undo runs the user's `restart` command, if any (and only
if something was killed)."""

from __future__ import annotations

from ....plan.scenario import Command
from ..fault_kind import script
from ._processes import PROCESS_SIGNAL, ProcessFault


class ProcessKill(ProcessFault):
    name = "process-kill"
    listed = 5
    fields = {**ProcessFault.fields, "restart": Command}  # starts the process again, at the end of `for`
    shell_text = ("restart",)
    user_undo = "restart"
    needs_for = ": the span its impact is measured over (and when its `restart` runs, if any), e.g. for: 30s"

    def apply(self, fault) -> str:
        out = fault.run(script(PROCESS_SIGNAL, *fault.event.subject, "KILL"), "applied")
        fault.undo_command = fault.event.restart  # the user's shell text; None: a killed process has nothing to undo
        return out
