"""What an import says about what it did: one note per thing that was
assumed or could not be carried over, and the result of one import.

Notes come in three levels:

- refused: a dangerous option (runs commands, reads or writes other files,
  changes the host). Never carried.
- unsupported: an option whose IO iofleet cannot reproduce (verify=md5,
  rate=..., a block-size distribution, ...). Not carried.
- info: what was assumed (a format's default, a value taken from HCIBench's
  file-name convention) or what iofleet does itself (targets, logs).
"""

import re
from dataclasses import dataclass, field

INFO, UNSUPPORTED, REFUSED = "info", "unsupported", "refused"


@dataclass
class ImportResult:
    """One imported file."""

    plan: dict  # a plan as plain data, valid for parse_plan
    notes: list[str]  # every note, one line each, in file order
    kind: str  # "vdbench" | "fio"
    refused: list[str] = field(default_factory=list)  # the dangerous options among notes
    unsupported: list[str] = field(default_factory=list)  # options whose IO differs


class Skip(Exception):
    """A workload cannot be imported: where (may be empty) and why."""

    def __init__(self, problem: str, where: str = ""):
        super().__init__(problem)
        self.problem = problem
        self.where = where


def one_line(text: str) -> str:
    return "".join(c if c >= " " and c != "\x7f" else "?" for c in text)


def shown(value) -> str:
    """A value as it may appear in a note: short, one line, quoted if odd."""
    if isinstance(value, list):  # a vdbench (a,b,c) list
        value = "(" + ",".join(map(str, value)) + ")"
    text = "" if value is None else str(value)
    if not re.fullmatch(r"[\w./:+,=~@%()\- ]*", text):
        text = repr(text)
    return text if len(text) <= 60 else text[:57] + "..."


class Notes:
    """The notes of one file, each once, in the order they were found."""

    def __init__(self, source: str):
        self.source = one_line(source)
        self.items: list[tuple[str, str]] = []
        self._seen: set[str] = set()

    def add(self, level: str, where: str, problem: str, fix: str = "") -> None:
        line = one_line(f"{self.source}: {where}: {problem}" + (f"; {fix}" if fix else ""))
        if line not in self._seen:
            self._seen.add(line)
            self.items.append((level, line))

    def result(self, plan: dict, kind: str) -> ImportResult:
        return ImportResult(
            plan=plan, kind=kind, notes=[t for _, t in self.items],
            refused=[t for lvl, t in self.items if lvl == REFUSED],
            unsupported=[t for lvl, t in self.items if lvl == UNSUPPORTED],
        )
