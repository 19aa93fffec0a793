"""Which kind a file is, importing one, and loading a plan to run from a
YAML plan or a fio job file."""

import re
from pathlib import Path

from ..errors import PlanError
from ..fio.joblex import COMMENTS, SECTION_RE
from ..plan.load import parse_plan, parse_plan_text, read_plan_text
from ..plan.model import Plan
from .common import FIO_SUFFIXES, meaningful_lines, read_text
from .fio_jobs import import_fio
from .merge import plan_yaml
from .notes import ImportResult
from .vdbench import import_vdbench

PLAN_SUFFIXES = (".yaml", ".yml")
_VDB_START_RE = re.compile(r"^[A-Za-z_]+\s*=")
_VDB_DEF_RE = re.compile(r"^(sd|wd|rd|fsd|fwd)\s*=", re.IGNORECASE)


def detect_kind(text: str) -> str | None:
    """'vdbench', 'fio' or None, from the content alone."""
    fio_lines = meaningful_lines(text, COMMENTS)
    if fio_lines and (SECTION_RE.match(fio_lines[0][1]) or re.match(r"^include\s", fio_lines[0][1])):
        return "fio"
    vdb_lines = meaningful_lines(text, "*#/")
    if vdb_lines and _VDB_START_RE.match(vdb_lines[0][1]) and any(_VDB_DEF_RE.match(t) for _, t in vdb_lines):
        return "vdbench"
    return None


def import_file(path: str | Path) -> ImportResult:
    """Import a vdbench parameter file (as HCIBench writes them) or a fio job
    file. Raises PlanError (one line each) if it is neither, or is broken."""
    path = Path(path)
    text = read_text(path)
    kind = detect_kind(text)
    if kind is None and path.suffix.lower() in FIO_SUFFIXES:
        kind = "fio"
    if kind == "vdbench":
        return import_vdbench(path, text)
    if kind == "fio":
        return import_fio(path, text)
    if re.search(r"^\s*(name|workloads)\s*:", text, re.MULTILINE):
        raise PlanError([f"{path}: is already an iofleet plan (YAML); run or validate it directly"])
    raise PlanError([f"{path}: is neither a vdbench parameter file (sd=, wd=, rd= lines) nor a fio job file "
                     f"([sections] of option=value lines); check the file"])


def load_plan_source(path: str | Path) -> tuple[Plan, str, list[str]]:
    """A plan to run: a YAML plan as is, or a fio job file imported.

    Returns (validated plan, the plan's text to store, notes). A fio job file
    with any refused (dangerous) or unsupported option raises PlanError, one
    line per option: running it must neither drop a command silently nor run
    different IO than the job file describes. `iofleet import` only notes them.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in PLAN_SUFFIXES:
        text = read_plan_text(path)
        return parse_plan_text(text, str(path)), text, []
    is_fio = suffix in FIO_SUFFIXES
    text = None
    if not is_fio:
        try:
            text = read_text(path)
        except PlanError:
            text = read_plan_text(path)  # words the error as a plan's
            return parse_plan_text(text, str(path)), text, []
        kind = detect_kind(text)
        if kind == "vdbench":
            raise PlanError([f"{path}: is a vdbench parameter file; convert it first: "
                             f"iofleet import {path} -o plan.yaml (then check the notes)"])
        is_fio = kind == "fio"
    if not is_fio:
        return parse_plan_text(text, str(path)), text, []
    result = import_file(path)
    blocking = result.refused + result.unsupported
    if blocking:
        raise PlanError([f"{line} (run refuses what would change the IO; `iofleet import` only notes it)"
                         if line in result.unsupported else line for line in blocking])
    plan = parse_plan(result.plan, str(path))
    header = [f"iofleet plan imported from fio job file {path.name}"] + [f"note: {n}" for n in result.notes]
    return plan, plan_yaml(result.plan, header), result.notes
