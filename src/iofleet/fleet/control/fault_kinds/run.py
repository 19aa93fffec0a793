"""run: the user's command, once, on the host (by ssh); undo runs the
user's `undo` command, if any (also after a failed command: it may have
done part)."""

from __future__ import annotations

from ....plan.scenario import Command
from ..fault_kind import FaultKind


class Run(FaultKind):
    name = "run"
    listed = 6
    fields = {"command": Command, "undo": Command}  # undo: its own, at the end of `for`
    shell_text = ("command", "undo")
    user_undo = "undo"

    def check(self, event) -> None:
        if event.command is None:
            raise ValueError("run needs `command` (run on the host by ssh)")
        if event.for_s is None:
            raise ValueError("run needs `for`: the span its impact is measured over (and when its `undo` runs), "
                             "e.g. for: 30s")

    def same(self, e, o) -> bool:
        """A run acts on what its command does: two conflict only when both
        have an `undo` (one might end what both did)."""
        return e.undo is not None and o.undo is not None

    def apply(self, fault) -> str:
        fault.undo_command = fault.event.undo  # first: a command that failed may have done part of its work
        return fault.run(fault.event.command, "run")  # the user's own shell text, as one argument of the remote shell
