"""fio's job-file grammar: `[section]` headers, `option` and `option=value`
lines, `;` and `#` comments, and `include FILE` lines.

Lexing only: what to carry, note or refuse is the importer's call
(iofleet.importers.fio_jobs). Nothing here reads another file or expands
anything; an `include` line is handed back as it is.
"""

import re
from dataclasses import dataclass, field

COMMENTS = ";#"
SECTION_RE = re.compile(r"^\[([^\[\]]*)\]$")
INCLUDE_RE = re.compile(r"^include(\s|$)")
_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# fio's own aliases of an option name → the name iofleet reads.
ALIASES = {"readwrite": "rw", "blocksize": "bs", "timeout": "runtime", "wait_for_previous": "stonewall"}


@dataclass
class Option:
    key: str  # lower case, aliases resolved
    value: str | None  # None: a bare flag such as `time_based`
    line: int
    section: str


@dataclass
class Section:
    name: str
    line: int
    options: list[Option] = field(default_factory=list)


@dataclass
class BadLine:
    line: int
    text: str
    outside: bool  # an option before any [section]; else not an option line at all


@dataclass
class JobFile:
    sections: list[Section] = field(default_factory=list)
    includes: list[tuple[int, str]] = field(default_factory=list)  # (line, text)
    comments: list[tuple[int, str]] = field(default_factory=list)  # (line, text with its ; or #)
    bad: list[BadLine] = field(default_factory=list)


def lex(text: str) -> JobFile:
    """A job file's sections with their options, in file order."""
    out = JobFile()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line[0] in COMMENTS:
            out.comments.append((n, line))
            continue
        if INCLUDE_RE.match(line):
            out.includes.append((n, line))
            continue
        m = SECTION_RE.match(line)
        if m:
            out.sections.append(Section(m[1].strip(), n))
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not _KEY_RE.fullmatch(key):
            out.bad.append(BadLine(n, line, outside=False))
        elif not out.sections:
            out.bad.append(BadLine(n, line, outside=True))
        else:
            key = ALIASES.get(key.lower(), key.lower())
            out.sections[-1].options.append(Option(key, value.strip() if sep else None, n, out.sections[-1].name))
    return out
