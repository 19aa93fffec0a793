"""What every importer shares: reading the file, checking values with the
parameter table, naming, workloads as plan data, and the finished plan."""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PlanError
from ..inputs import read_input
from ..plan.expand import expand
from ..plan.load import parse_plan
from ..plan.names import NAME_RE
from ..plan.target_kinds import check_target, name_kind
from ..plan.params import PARAMS
from ..plan.units import format_size
from .notes import INFO, UNSUPPORTED, ImportResult, Notes, Skip, one_line, shown

FIO_SUFFIXES = (".fio", ".job", ".ini")
MAX_BYTES = 4 * 1024**2  # a parameter file is small; anything larger is not one
# Suffixes a parameter file's name may carry; the plan is named without them.
NAME_SUFFIXES = FIO_SUFFIXES + (".cfg", ".vdb", ".txt", ".conf", ".parm", ".param", ".params")


def read_text(path: Path) -> str:
    src = str(path)
    if not os.path.lexists(path):
        raise PlanError([f"{src}: no such file"])
    # A regular file only (not a FIFO, device or directory), at most MAX_BYTES.
    data = read_input(path, "parameter or job", MAX_BYTES, error=lambda line: PlanError([line]))
    if b"\0" in data:
        raise PlanError([f"{src}: is a binary file, not a vdbench parameter file or fio job file"])
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise PlanError([f"{src}: byte {exc.start} is not UTF-8 text; save the file as UTF-8"]) from None
    if not text.strip():
        raise PlanError([f"{src}: is empty; give a vdbench parameter file or fio job file"])
    return text


def meaningful_lines(text: str, comments: str) -> list[tuple[int, str]]:
    """(line number, stripped text) of every line that is neither blank nor a comment."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and line.strip()[0] not in comments]


def check(name: str, value, what: str):
    """Validate one parameter value with the table's rules; Skip if bad."""
    try:
        return PARAMS[name].parse(value)
    except ValueError as exc:
        raise Skip(str(exc), what) from None


def fmt(name: str, value):
    """An internal value (bytes, seconds) as a plan writes it: 4k, 30m."""
    param = PARAMS[name]
    if param.kind == "size":
        return format_size(value) if value % 1024 == 0 else value
    if param.kind == "duration":
        if value and value % 3600 == 0:
            return f"{value // 3600}h"
        if value and value % 60 == 0:
            return f"{value // 60}m"
        return f"{value}s" if value else 0
    return value


def sanitize_name(raw: str, fallback: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw.strip())
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:64].rstrip("-")
    return name if name and NAME_RE.match(name) else fallback


def unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name[:60]}-{n}" in taken:
        n += 1
    return f"{name[:60]}-{n}"


@dataclass
class Workload:
    name: str
    where: str  # for notes: "rd run1", "[job0]"
    fixed: dict = field(default_factory=dict)  # explicit values from the file (internal units)
    matrix: dict = field(default_factory=dict)  # param → list of values
    description: str = ""
    dirs: list = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self.fixed or name in self.matrix


def workload_dict(w: Workload) -> dict:
    d: dict = {"name": w.name}
    if w.description:
        d["description"] = w.description
    for name in PARAMS:
        if name in w.fixed and name not in w.matrix:
            d[name] = fmt(name, w.fixed[name])
    if w.matrix:
        d["matrix"] = {n: [fmt(n, v) for v in w.matrix[n]] for n in PARAMS if n in w.matrix}
    return d


def finish(path: Path, kind: str, workloads: list[Workload], targets: list[str], notes: Notes,
           sections: dict | None = None) -> ImportResult:
    """Validate each workload alone (a bad one is noted and left out), then the plan."""
    src = str(path)
    plan_name = sanitize_name(path.stem if path.suffix.lower() in NAME_SUFFIXES else path.name, "imported")
    if plan_name in ("vdbench", "fio") and path.parent.name:
        plan_name = sanitize_name(path.parent.name, plan_name)
    kept = []
    for w in workloads:
        d = workload_dict(w)
        try:
            expand(parse_plan({"name": "check", "workloads": [d]}, src))
        except PlanError as exc:
            for problem in exc.problems:
                notes.add(UNSUPPORTED, w.where, problem.removeprefix(f"{src}: ").replace("workloads[0].", "")
                          + "; this workload is not imported")
            continue
        kept.append(d)
    if not kept:
        why = [t for lvl, t in notes.items if lvl != INFO][:20]
        raise PlanError([f"{src}: nothing could be imported: no workload is left"
                         + (", because:" if why else "")] + why)
    plan: dict = {"name": plan_name,
                  "description": one_line(f"imported from {path.name} ({kind})")}
    if targets:
        plan["targets"] = targets
    plan.update(sections or {})
    plan["workloads"] = kept
    parse_plan(plan, src)  # every piece was checked; this guards the whole
    return notes.result(plan, kind)


def add_kind_target(kind, target: str, settings: dict, where: str, targets: list[str], sections: dict,
                    notes: Notes) -> None:
    """An imported job whose options name a target kind's target (an
    ioengine=rbd job's pool= and rbdname=): the plan's target, and its
    section's settings (`ceph: {client}`), never a file test."""
    detail = "".join(f" ({k} {shown(v)})" for k, v in settings.items())
    try:
        kind.check(target)
        kind.check_settings(settings)
    except ValueError as exc:
        notes.add(UNSUPPORTED, where, f"the {kind.short} {shown(target)}{detail} is not carried over ({exc})",
                  f"give plain names, or run the plan with --target {kind.example}")
        return
    if target in targets:
        return
    if any(t != target for t in targets):
        notes.add(UNSUPPORTED, where, f"{target} is not carried over: a plan tests one {kind.short} alone, and "
                  f"this one already has {', '.join(targets)}", f"import one {kind.short.split()[-1]} per plan")
        return
    targets.append(target)
    if settings and kind.section:
        sections.setdefault(kind.section, {}).update(settings)
    notes.add(INFO, where, kind.imported(target, settings))


def add_target(directory: str, targets: list[str], notes: Notes, where: str) -> None:
    try:
        if not name_kind(directory).fallback:  # e.g. a path under /dev: a device, never a directory for files
            raise ValueError(f"a {name_kind(directory).short}, not a directory")
        check_target(directory)
    except ValueError as exc:
        notes.add(INFO, where, f"{shown(directory)} is not carried over as a target ({exc})",
                  "give --target DIR")
        return
    if directory not in targets:
        targets.append(directory)
