"""Import HCIBench/vdbench parameter files and fio job files as iofleet plans.

`import_file(path)` reads one file and returns an `ImportResult`: the plan as
plain data (valid for `parse_plan`), one note per thing that was assumed or
could not be carried over, and the kind of file it was. Nothing in the file
is ever executed, included or expanded: options that would run a command,
read another file, or expand `${VAR}`/`$expr` are *refused* (noted, never
carried). The mapping tables are in docs/import.md.

Notes come in three levels:

- refused: a dangerous option (runs commands, reads or writes other files,
  changes the host). Never carried.
- unsupported: an option whose IO iofleet cannot reproduce (verify=md5,
  rate=..., a block-size distribution, ...). Not carried.
- info: what was assumed (a format's default, a value taken from HCIBench's
  file-name convention) or what iofleet does itself (targets, logs).

`import_file` only notes; `load_plan_source` (used to *run* a fio job file)
raises `PlanError` on any refused or unsupported option, because the IO run
would then differ from the job file's.
"""

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import PlanError
from ..inputs import read_input
from .expand import expand
from .load import parse_plan, parse_plan_text, read_plan_text
from .model import NAME_RE, Plan, check_target_path, is_device_path
from .params import ENGINES, PARAMS
from .units import format_size, parse_duration

KINDS = ("vdbench", "fio")
FIO_SUFFIXES = (".fio", ".job", ".ini")
PLAN_SUFFIXES = (".yaml", ".yml")
MAX_BYTES = 4 * 1024**2  # a parameter file is small; anything larger is not one

INFO, UNSUPPORTED, REFUSED = "info", "unsupported", "refused"

# Suffixes a parameter file's name may carry; the plan is named without them.
NAME_SUFFIXES = FIO_SUFFIXES + (".cfg", ".vdb", ".txt", ".conf", ".parm", ".param", ".params")


@dataclass
class ImportResult:
    """One imported file."""

    plan: dict  # a plan as plain data, valid for parse_plan
    notes: list[str]  # every note, one line each, in file order
    kind: str  # "vdbench" | "fio"
    refused: list[str] = field(default_factory=list)  # the dangerous options among notes
    unsupported: list[str] = field(default_factory=list)  # options whose IO differs


class _Skip(Exception):
    """A workload cannot be imported: where (may be empty) and why."""

    def __init__(self, problem: str, where: str = ""):
        super().__init__(problem)
        self.problem = problem
        self.where = where


def _one_line(text: str) -> str:
    return "".join(c if c >= " " and c != "\x7f" else "?" for c in text)


def _shown(value) -> str:
    """A value as it may appear in a note: short, one line, quoted if odd."""
    if isinstance(value, list):  # a vdbench (a,b,c) list
        value = "(" + ",".join(map(str, value)) + ")"
    text = "" if value is None else str(value)
    if not re.fullmatch(r"[\w./:+,=~@%()\- ]*", text):
        text = repr(text)
    return text if len(text) <= 60 else text[:57] + "..."


class _Notes:
    def __init__(self, source: str):
        self.source = _one_line(source)
        self.items: list[tuple[str, str]] = []
        self._seen: set[str] = set()

    def add(self, level: str, where: str, problem: str, fix: str = "") -> None:
        line = _one_line(f"{self.source}: {where}: {problem}" + (f"; {fix}" if fix else ""))
        if line not in self._seen:
            self._seen.add(line)
            self.items.append((level, line))

    def result(self, plan: dict, kind: str) -> ImportResult:
        return ImportResult(
            plan=plan, kind=kind, notes=[t for _, t in self.items],
            refused=[t for lvl, t in self.items if lvl == REFUSED],
            unsupported=[t for lvl, t in self.items if lvl == UNSUPPORTED],
        )


# ---------------------------------------------------------------- reading

def _read_text(path: Path) -> str:
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


def _meaningful(text: str, comments: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and line.strip()[0] not in comments]


_VDB_START_RE = re.compile(r"^[A-Za-z_]+\s*=")
_VDB_DEF_RE = re.compile(r"^(sd|wd|rd|fsd|fwd)\s*=", re.IGNORECASE)
_FIO_SECTION_RE = re.compile(r"^\[([^\[\]]*)\]$")


def detect_kind(text: str) -> str | None:
    """'vdbench', 'fio' or None, from the content alone."""
    fio_lines = _meaningful(text, ";#")
    if fio_lines and (_FIO_SECTION_RE.match(fio_lines[0][1]) or re.match(r"^include\s", fio_lines[0][1])):
        return "fio"
    vdb_lines = _meaningful(text, "*#/")
    if vdb_lines and _VDB_START_RE.match(vdb_lines[0][1]) and any(_VDB_DEF_RE.match(t) for _, t in vdb_lines):
        return "vdbench"
    return None


# ---------------------------------------------------------------- values

def _check(name: str, value, what: str):
    """Validate one parameter value with the table's rules; _Skip if bad."""
    try:
        return PARAMS[name].parse(value)
    except ValueError as exc:
        raise _Skip(str(exc), what) from None


def _fmt(name: str, value):
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


def _sanitize_name(raw: str, fallback: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw.strip())
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:64].rstrip("-")
    return name if name and NAME_RE.match(name) else fallback


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name[:60]}-{n}" in taken:
        n += 1
    return f"{name[:60]}-{n}"


def _ratio_pct(ratio: str, what: str) -> tuple[int, bool]:
    """vdbench's N:1 ratio (compratio, dedupratio) → % of data that can go."""
    try:
        r = float(ratio)
    except ValueError:
        raise _Skip("not a number") from None
    if r < 1:
        raise _Skip("a ratio is at least 1")
    exact = 100 - 100 / r
    return round(exact), abs(exact - round(exact)) > 1e-9


# HCIBench names its files `[prefix-]vdb-8vmdk-100ws-4k-70rdpct-100randompct-4threads`,
# results `...-<epoch>` and `...-<epoch>-res.txt`, and copies the file into the
# result folder as vdbench.cfg / fio.cfg.
_HCIBENCH_NAME_RE = re.compile(
    r"(?:^|-)(?:vdb|fio)-(?P<disks>\d+)vmdk-(?P<ws>\d+)ws-(?P<bs>\d+[kKmMgG]?)-(?P<rd>\d+)rdpct-"
    r"(?P<rand>\d+)randompct-(?P<threads>\d*)threads(?:-\d{6,})?(?:-res)?(?:\.txt|\.cfg)?$")


def hcibench_name_values(path: Path) -> tuple[str, dict]:
    """Parameters HCIBench's file-name convention gives, and the name that gave them."""
    for name in (path.name, path.parent.name):
        m = _HCIBENCH_NAME_RE.search(name)
        if m:
            values = {"jobs": int(m["disks"]), "working_set_pct": int(m["ws"]), "bs": m["bs"],
                      "read_pct": int(m["rd"]), "random_pct": int(m["rand"])}
            if m["threads"]:
                values["iodepth"] = int(m["threads"])
            return name, values
    return "", {}


_NAME_WORDS = {"jobs": "{}vmdk", "working_set_pct": "{}ws", "bs": "{}", "read_pct": "{}rdpct",
               "random_pct": "{}randompct", "iodepth": "{}threads"}


@dataclass
class _Workload:
    name: str
    where: str  # for notes: "rd run1", "[job0]"
    fixed: dict = field(default_factory=dict)  # explicit values from the file (internal units)
    matrix: dict = field(default_factory=dict)  # param → list of values
    description: str = ""
    dirs: list = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self.fixed or name in self.matrix


def _apply_name_values(w: _Workload, file_name: str, values: dict, notes: _Notes) -> None:
    """Fill what the content lacks from HCIBench's file name; say so."""
    for name, raw in values.items():
        word = _NAME_WORDS[name].format(raw)
        try:
            value = _check(name, raw, f"file name {word}")
        except _Skip:
            continue
        if w.has(name):
            given = w.fixed.get(name, w.matrix.get(name))
            if name in w.fixed and given != value:
                notes.add(INFO, w.where, f"the file name says {word} but the file says "
                          f"{name}={_fmt(name, given)}; the file's value is used")
            continue
        w.fixed[name] = value
        notes.add(INFO, w.where, f"{name}={_fmt(name, value)} taken from the file name "
                  f"({word} in {file_name}); the file itself does not give it")


def _workload_dict(w: _Workload) -> dict:
    d: dict = {"name": w.name}
    if w.description:
        d["description"] = w.description
    for name in PARAMS:
        if name in w.fixed and name not in w.matrix:
            d[name] = _fmt(name, w.fixed[name])
    if w.matrix:
        d["matrix"] = {n: [_fmt(n, v) for v in w.matrix[n]] for n in PARAMS if n in w.matrix}
    return d


def _finish(path: Path, kind: str, workloads: list[_Workload], targets: list[str],
            notes: _Notes) -> ImportResult:
    """Validate each workload alone (a bad one is noted and left out), then the plan."""
    src = str(path)
    plan_name = _sanitize_name(path.stem if path.suffix.lower() in NAME_SUFFIXES else path.name, "imported")
    if plan_name in ("vdbench", "fio") and path.parent.name:
        plan_name = _sanitize_name(path.parent.name, plan_name)
    kept = []
    for w in workloads:
        d = _workload_dict(w)
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
                  "description": _one_line(f"imported from {path.name} ({kind})")}
    if targets:
        plan["targets"] = targets
    plan["workloads"] = kept
    parse_plan(plan, src)  # every piece was checked; this guards the whole
    return notes.result(plan, kind)


def _add_target(directory: str, targets: list[str], notes: _Notes, where: str) -> None:
    try:
        if is_device_path(directory):  # a target under /dev is a device, never a directory for files
            raise ValueError("a directory under /dev")
        check_target_path(directory)
    except ValueError as exc:
        notes.add(INFO, where, f"{_shown(directory)} is not carried over as a target ({exc})",
                  "give --target DIR")
        return
    if directory not in targets:
        targets.append(directory)


# ---------------------------------------------------------------- vdbench

_VDB_DEFS = ("hd", "sd", "wd", "rd", "fsd", "fwd")
_VDB_REFUSED = {
    "include": "reads another file",
    "start_cmd": "runs a command", "end_cmd": "runs a command",
    "startcmd": "runs a command", "endcmd": "runs a command",
    "monitor": "reads another file to decide when to stop",
}
_VDB_SILENT_GENERAL = {"debug", "data_errors", "messagescan", "histogram", "report", "showlba", "port"}
_VDB_DEFAULTS = {"xfersize": "4k", "rdpct": 100, "seekpct": 100, "threads": 8, "elapsed": 30}


@dataclass
class _VdbDef:
    kind: str
    name: str
    line: int
    params: dict  # key → (value: str | list[str], line)


def _vdb_split(text: str) -> list[str] | None:
    """Split at commas outside parentheses and quotes; None if unbalanced."""
    parts, depth, quote, cur = [], 0, "", ""
    for c in text:
        if quote:
            cur += c
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
            cur += c
        elif c == "(":
            depth += 1
            cur += c
        elif c == ")":
            depth -= 1
            if depth < 0:
                return None
            cur += c
        elif c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    if depth or quote:
        return None
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _vdb_value(raw: str):
    raw = raw.strip()
    if raw.startswith("(") and raw.endswith(")"):
        return [v.strip().strip("\"'") for v in _vdb_split(raw[1:-1]) or []]
    return raw.strip("\"'")


def _lex_vdbench(text: str, src: str, notes: _Notes):
    general: dict = {}
    defs: list[_VdbDef] = []
    problems = []
    for n, line in _meaningful(text, "*#/"):
        pairs = _vdb_split(line)
        if pairs is None:
            problems.append(f"{src}: line {n}: unbalanced parentheses or quotes in {_shown(line)}; "
                            f"close every '(' and quote")
            continue
        for i, pair in enumerate(pairs):
            key, sep, value = pair.partition("=")
            key = key.strip().lower()
            if not sep or not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
                problems.append(f"{src}: line {n}: {_shown(pair)} is not keyword=value; "
                                f"vdbench lines are keyword=value lists such as sd=sd1,lun=/dev/sdb")
                continue
            val = _vdb_value(value)
            if i == 0 and key in _VDB_DEFS:
                defs.append(_VdbDef(key, val if isinstance(val, str) else ",".join(val), n, {}))
            elif defs:
                defs[-1].params[key] = (val, n)
            else:
                general[key] = (val, n)
    if problems:
        raise PlanError(problems)
    return general, defs


def _vdb_dangerous(key: str, value, line: int, owner: str, notes: _Notes) -> bool:
    values = value if isinstance(value, list) else [value]
    if key in _VDB_REFUSED:
        notes.add(REFUSED, f"line {line} {owner}{key}={_shown(value)}",
                  f"refused: {_VDB_REFUSED[key]}; iofleet never runs or reads what a parameter file names",
                  "remove it")
        return True
    if any("$" in v for v in values):
        notes.add(REFUSED, f"line {line} {owner}{key}={_shown(value)}",
                  "refused: a $variable is substituted by vdbench; iofleet never expands one",
                  "write the value itself")
        return True
    return False


def _vdb_resolve(ref, known: dict, kind: str) -> list[str]:
    """Names a reference selects: a name, a list, wildcards, or sdA-sdB ranges."""
    refs = ref if isinstance(ref, list) else [ref]
    out: list[str] = []
    for r in refs:
        m = re.fullmatch(r"([A-Za-z_]+)(\d+)-(?:\1)?(\d+)", r)
        if m:
            names = [f"{m[1]}{i}" for i in range(int(m[2]), int(m[3]) + 1)]
        elif any(c in r for c in "*?["):
            names = fnmatch.filter(list(known), r)
        elif r in ("all", "*"):
            names = list(known)
        else:
            names = [r]
        out += [x for x in names if x in known and x not in out]
    return out


def _vdb_for_values(values, parse) -> list:
    """forxfersize=(4k,8k) lists, and vdbench's (1-64,d) doubling and (0-100,10) step ranges."""
    values = values if isinstance(values, list) else [values]
    if len(values) == 2 and "-" in values[0].strip("-"):
        lo_raw, hi_raw = values[0].split("-", 1)
        lo, hi = parse(lo_raw), parse(hi_raw)
        step = values[1].strip().lower()
        out, v = [], lo
        if step == "d":
            while v <= hi and len(out) < 64:
                out.append(v)
                v *= 2
            return out
        inc = parse(step)
        while v <= hi and len(out) < 256 and inc > 0:
            out.append(v)
            v += inc
        return out
    return [parse(v) for v in values]


def _vdb_seek(value: str) -> tuple[int, str]:
    v = str(value).strip().lower()
    if v in ("seq", "sequential", "0"):
        return 0, ""
    if v in ("eof", "-1"):
        return 0, ("seekpct=eof: vdbench reads sequentially once and stops at the end; "
                   "iofleet reads sequentially for the whole runtime")
    if v == "random":
        return 100, ""
    return int(_check("random_pct", v, f"seekpct={_shown(value)}")), ""


_VDB_SD_KEYS = {"lun", "size", "threads", "openflags", "hitarea", "range", "host", "hd"}
_VDB_WD_KEYS = {"sd", "xfersize", "rdpct", "seekpct", "range", "openflags", "skew", "rhpct", "whpct",
                "iorate", "host", "hd", "hitarea"}
_VDB_RD_KEYS = {"wd", "iorate", "elapsed", "warmup", "interval", "threads", "forthreads", "forxfersize",
                "forrdpct", "forseekpct", "xfersize", "rdpct", "seekpct", "openflags", "pause", "format",
                "distribution"}


def _vdb_unknown(d: _VdbDef, allowed: set, notes: _Notes) -> None:
    for key, (value, line) in d.params.items():
        if key not in allowed:
            notes.add(UNSUPPORTED, f"line {line} {d.kind}={d.name} {key}={_shown(value)}",
                      f"{key} is not carried over (iofleet has no equivalent)",
                      "check the imported plan does what you need")


def _import_vdbench(path: Path, text: str) -> ImportResult:
    src = str(path)
    notes = _Notes(src)
    general, defs = _lex_vdbench(text, src, notes)

    # Refuse what runs commands or substitutes variables, everywhere.
    for key, (value, line) in list(general.items()):
        if _vdb_dangerous(key, value, line, "", notes):
            del general[key]
    for d in defs:
        for key, (value, line) in list(d.params.items()):
            if _vdb_dangerous(key, value, line, f"{d.kind}={d.name} ", notes):
                del d.params[key]

    # General parameters.
    content: dict = {}
    for key, (value, line) in general.items():
        where = f"line {line} {key}={_shown(value)}"
        if key in _VDB_SILENT_GENERAL:
            continue
        if key in ("compratio", "dedupratio"):
            pname = "compress_pct" if key == "compratio" else "dedupe_pct"
            try:
                pct, rounded = _ratio_pct(str(value), key)
            except _Skip as exc:
                notes.add(UNSUPPORTED, where, f"{exc.problem}; not carried over")
                continue
            content[pname] = pct
            meaning = (f"each written block is {pct} % compressible" if key == "compratio"
                       else f"{pct} % of the written blocks are duplicates")
            notes.add(INFO, where, f"{key} {value}:1 gives {pname}: {pct} ({meaning}"
                      + (", rounded to a whole %)" if rounded else ")"))
        elif key in ("dedupunit", "dedupsets", "dedupflipflop"):
            notes.add(INFO, where, f"{key} is not carried over; fio dedupes whole blocks of bs")
        elif key == "loop":
            notes.add(INFO, where, "vdbench repeats the whole file; iofleet runs it once",
                      "set repeat: N on the workloads to repeat each test")
        elif key in ("validate", "journal"):
            notes.add(UNSUPPORTED, where, "data validation is not carried over; iofleet measures performance only")
        else:
            notes.add(UNSUPPORTED, where, f"{key} is not carried over (iofleet has no equivalent)",
                      "check the imported plan does what you need")

    # Definitions, with `xd=default` applied to those that follow.
    tables: dict[str, dict[str, _VdbDef]] = {k: {} for k in _VDB_DEFS}
    default_params: dict[str, dict] = {k: {} for k in _VDB_DEFS}
    for d in defs:
        if d.name == "default":
            default_params[d.kind].update(d.params)
            continue
        d.params = {**default_params[d.kind], **d.params}
        if d.name in tables[d.kind]:
            raise PlanError([f"{src}: line {d.line}: {d.kind}={d.name} is defined twice; give each a unique name"])
        tables[d.kind][d.name] = d

    for d in tables["hd"].values():
        notes.add(INFO, f"line {d.line} hd={d.name}", "host definitions are not carried over",
                  "run on several hosts with an inventory (--hosts)")
    for kind in ("fsd", "fwd"):
        for d in tables[kind].values():
            notes.add(UNSUPPORTED, f"line {d.line} {kind}={d.name}",
                      "vdbench file-system workloads (fsd/fwd) are not carried over; iofleet tests "
                      "block IO to its own files")
    for d in tables["sd"].values():
        _vdb_unknown(d, _VDB_SD_KEYS, notes)
    for d in tables["wd"].values():
        _vdb_unknown(d, _VDB_WD_KEYS, notes)
    for d in tables["rd"].values():
        _vdb_unknown(d, _VDB_RD_KEYS, notes)

    # Targets: a file lun's directory becomes a target; raw devices are not carried.
    targets: list[str] = []
    devices = []
    files: dict[str, list] = {}  # directory → its (sd, lun)
    for d in tables["sd"].values():
        lun = d.params.get("lun", (None, d.line))[0]
        if not isinstance(lun, str) or not lun:
            notes.add(UNSUPPORTED, f"line {d.line} sd={d.name}", "has no lun=", "give lun=")
        elif lun.startswith("/dev/") or lun.startswith("\\\\.\\"):
            devices.append((d.name, lun))
        elif lun.startswith("/"):
            files.setdefault(str(Path(lun).parent), []).append((d.name, lun))
        else:
            notes.add(INFO, f"line {d.line} sd={d.name} lun={_shown(lun)}",
                      "not an absolute path; not carried over", "give --target DIR")
    for parent, sd_luns in files.items():
        where = f"{_sd_range(sd_luns)} lun={_luns(sd_luns)}"
        _add_target(parent, targets, notes, where)
        if parent in targets:
            notes.add(INFO, where, f"the files' directory {parent} becomes a target; iofleet writes its own "
                      f"files under {parent}/iofleet/, never the sd files themselves")
    if devices:
        notes.add(INFO, f"{_sd_range(devices)} lun={_luns(devices)}",
                  "raw device targets are not carried over; each sd becomes one job with its own "
                  "file in a target directory", "give --target DIR")

    if not tables["rd"]:
        raise PlanError([f"{src}: has no rd= (run definition); a vdbench file needs at least one, "
                         f"e.g. rd=run1,wd=wd1,iorate=max,elapsed=60"])

    file_name, name_values = hcibench_name_values(path)
    workloads: list[_Workload] = []
    taken: set[str] = set()
    for rd in tables["rd"].values():
        rp = {k: v for k, (v, _) in rd.params.items()}
        wd_ref = rp.get("wd")
        if wd_ref is None:
            wd_names = list(tables["wd"])
            notes.add(INFO, f"line {rd.line} rd={rd.name}", "names no wd=; vdbench runs every wd")
        else:
            wd_names = _vdb_resolve(wd_ref, tables["wd"], "wd")
        if not wd_names:
            notes.add(UNSUPPORTED, f"line {rd.line} rd={rd.name}",
                      f"wd={_shown(wd_ref)} names no defined wd; this run is not imported")
            continue
        if len(wd_names) > 1:
            notes.add(UNSUPPORTED, f"line {rd.line} rd={rd.name}",
                      f"runs {', '.join(wd_names)} at the same time (skew); iofleet runs them one after "
                      f"the other, as separate workloads", "use a mixed plan (docs/fleet.md) to run them at once")
        for wd_name in wd_names:
            wd = tables["wd"][wd_name]
            raw_name = rd.name if len(wd_names) == 1 else f"{rd.name}-{wd_name}"
            name = _unique(_sanitize_name(raw_name, f"run{len(workloads) + 1}"), taken)
            w = _Workload(name=name, where=f"rd={rd.name}" + ("" if len(wd_names) == 1 else f" wd={wd_name}"))
            try:
                _vdb_workload(w, rd, wd, tables, general, content, notes)
            except _Skip as exc:
                notes.add(UNSUPPORTED, exc.where or w.where, f"{exc.problem}; workload {name} is not imported")
                continue
            if name_values:
                _apply_name_values(w, file_name, name_values, notes)
            _vdb_defaults(w, rp, notes)
            taken.add(name)
            workloads.append(w)
    return _finish(path, "vdbench", workloads, targets, notes)


def _sd_range(items: list) -> str:
    return items[0][0] if len(items) == 1 else f"{items[0][0]}..{items[-1][0]}"


def _luns(items: list) -> str:
    return ", ".join(_shown(lun) for _, lun in items[:4]) + (", ..." if len(items) > 4 else "")


def _vdb_pick(key: str, *sources):
    """First of rd / wd / sd / general that sets `key`: (value, where) or (None, None)."""
    for label, params in sources:
        if key in params:
            return params[key][0], label
    return None, None


def _vdb_workload(w: _Workload, rd: _VdbDef, wd: _VdbDef, tables, general, content, notes: _Notes):
    rp, wp = rd.params, wd.params
    sd_names = _vdb_resolve(wp["sd"][0], tables["sd"], "sd") if "sd" in wp else list(tables["sd"])
    if not sd_names:
        raise _Skip(f"sd={_shown(wp.get('sd', ('', 0))[0])} names no defined sd", f"wd={wd.name}")
    sds = [tables["sd"][n] for n in sd_names]
    w.fixed["jobs"] = _check("jobs", len(sds), f"{len(sds)} sds")
    w.fixed.update(content)
    sources = [(f"rd={rd.name}", rp), (f"wd={wd.name}", wp)]

    # Transfer size, read and seek percentages: rd for-loops → matrix.
    for_keys = (("forxfersize", "xfersize", "bs"), ("forrdpct", "rdpct", "read_pct"),
                ("forseekpct", "seekpct", "random_pct"))
    for for_key, key, pname in for_keys:
        if for_key in rp:
            raw = rp[for_key][0]
            if pname == "random_pct":
                vals = [_vdb_seek(v)[0] for v in (raw if isinstance(raw, list) else [raw])]
            else:
                vals = _vdb_for_values(raw, lambda v, p=pname, k=for_key: _check(p, v, f"{k}={_shown(raw)}"))
            if len(vals) == 1:
                w.fixed[pname] = vals[0]
            else:
                w.matrix[pname] = vals
            continue
        value, label = _vdb_pick(key, *sources)
        if value is None:
            continue
        if isinstance(value, list):
            raise _Skip(f"{key}={_shown(value)}: a distribution of {key} values within "
                        f"one run is not supported (iofleet runs one {pname} per test); use for{key}= for one "
                        f"test per value", label)
        if pname == "random_pct":
            w.fixed[pname], info = _vdb_seek(value)
            if info:
                notes.add(UNSUPPORTED, f"{label} seekpct={value}", info)
        else:
            w.fixed[pname] = _check(pname, value, f"{label} {key}={_shown(value)}")

    # Threads: outstanding IOs per sd → iodepth (one job per sd).
    if "forthreads" in rp:
        raw = rp["forthreads"][0]
        vals = _vdb_for_values(raw, lambda v: _check("iodepth", v, f"forthreads={_shown(raw)}"))
        if len(vals) == 1:
            w.fixed["iodepth"] = vals[0]
        else:
            w.matrix["iodepth"] = vals
    elif "threads" in rp:
        w.fixed["iodepth"] = _check("iodepth", rp["threads"][0], f"rd={rd.name} threads")
    else:
        per_sd = [(sd.name, sd.params["threads"][0]) for sd in sds if "threads" in sd.params]
        if per_sd:
            values = {str(v) for _, v in per_sd}
            first_name, first = per_sd[0]
            if len(values) > 1 or len(per_sd) < len(sds):
                notes.add(UNSUPPORTED, w.where, f"the sds have different threads= ({', '.join(sorted(values))}"
                          f"{', some none' if len(per_sd) < len(sds) else ''}); iofleet gives every job the "
                          f"same iodepth: {first} (from {first_name})")
            w.fixed["iodepth"] = _check("iodepth", first, f"sd={first_name} threads")

    # Working set: range=(0,N) in % of each sd.
    rng, label = _vdb_pick("range", *sources, *[(f"sd={sd.name}", sd.params) for sd in sds[:1]])
    if rng is not None:
        lo_hi = rng if isinstance(rng, list) else [rng]
        try:
            if len(lo_hi) == 1:
                lo, hi = 0, int(lo_hi[0])
            else:
                lo, hi = int(lo_hi[0]), int(lo_hi[1])
        except (ValueError, IndexError):  # IndexError: range=()
            notes.add(UNSUPPORTED, f"{label} range={_shown(rng)}",
                      "an absolute range is not carried over; iofleet gives the working set in % of each file")
        else:
            if lo:
                notes.add(UNSUPPORTED, f"{label} range={_shown(rng)}",
                          f"the IO region starts at {lo} % in vdbench; iofleet's working set is the first "
                          f"{hi - lo} % of each file")
            w.fixed["working_set_pct"] = _check("working_set_pct", hi - lo, f"{label} range")
        if len({str(sd.params.get("range", ("", 0))[0]) for sd in sds}) > 1:
            notes.add(UNSUPPORTED, w.where, "the sds have different range=; iofleet uses one working set for all")

    # Size per job.
    sizes = [(sd.name, sd.params["size"][0]) for sd in sds if "size" in sd.params]
    if sizes:
        w.fixed["size"] = _check("size", sizes[0][1], f"sd={sizes[0][0]} size")
        if len({str(v) for _, v in sizes}) > 1:
            notes.add(UNSUPPORTED, w.where, f"the sds have different size=; every job uses {sizes[0][1]} "
                      f"(from {sizes[0][0]})")

    # Direct IO: openflags=o_direct (or directio) anywhere that applies.
    flags, _ = _vdb_pick("openflags", *sources, (f"sd={sds[0].name}", sds[0].params), ("", general))
    flag_list = [f.lower() for f in (flags if isinstance(flags, list) else [flags] if flags else [])]
    w.fixed["direct"] = any(f in ("o_direct", "directio") for f in flag_list)
    other = [f for f in flag_list if f not in ("o_direct", "directio")]
    if other:
        notes.add(UNSUPPORTED, w.where, f"openflags {', '.join(other)} are not carried over")
    if flags is None:
        notes.add(INFO, w.where, "no openflags=o_direct: vdbench does buffered IO; imported as direct: false")

    # Cache-hit simulation and rates.
    for key in ("rhpct", "whpct"):
        if key in wp and str(wp[key][0]) not in ("0", ""):
            notes.add(UNSUPPORTED, f"wd={wd.name} {key}={wp[key][0]}",
                      "vdbench's cache-hit simulation is not carried over")
    rate, label = _vdb_pick("iorate", *sources)
    if rate is not None and str(rate).lower() != "max":
        notes.add(UNSUPPORTED, f"{label} iorate={_shown(rate)}",
                  "a fixed rate or curve is not carried over; iofleet runs at max")
    if "skew" in wp:
        notes.add(INFO, f"wd={wd.name} skew={wp['skew'][0]}", "skew is not carried over")

    # Time.
    if "elapsed" in rp:
        w.fixed["runtime"] = _check("runtime", rp["elapsed"][0], f"rd={rd.name} elapsed")
    if "warmup" in rp:
        w.fixed["ramp"] = _check("ramp", rp["warmup"][0], f"rd={rd.name} warmup")
    if "interval" in rp:
        notes.add(INFO, f"rd={rd.name} interval={rp['interval'][0]}",
                  "not carried over; iofleet samples every second")
    if "pause" in rp:
        notes.add(INFO, f"rd={rd.name} pause={rp['pause'][0]}", "not carried over; iofleet starts the next test at once")
    if "format" in rp:
        notes.add(INFO, f"rd={rd.name} format={rp['format'][0]}",
                  "not carried over; iofleet prepares its own files before the first test (plan `prepare:`)")
    if "distribution" in rp:
        notes.add(INFO, f"rd={rd.name} distribution={rp['distribution'][0]}",
                  "not carried over; it only shapes a fixed iorate, and iofleet runs at max")
    w.fixed["engine"] = "auto"


def _vdb_defaults(w: _Workload, rp: dict, notes: _Notes) -> None:
    """vdbench's own defaults for what neither the file nor its name gives."""
    for pname, key in (("bs", "xfersize"), ("read_pct", "rdpct"), ("random_pct", "seekpct"),
                       ("iodepth", "threads"), ("runtime", "elapsed")):
        if not w.has(pname):
            w.fixed[pname] = PARAMS[pname].parse(_VDB_DEFAULTS[key])
            notes.add(INFO, w.where, f"{key} not given: vdbench's default {_VDB_DEFAULTS[key]} gives "
                      f"{pname}: {_fmt(pname, w.fixed[pname])}")
    if not w.has("ramp"):
        interval = rp.get("interval", ("1", 0))[0]
        try:
            w.fixed["ramp"] = parse_duration(interval)
        except ValueError:
            w.fixed["ramp"] = 1
        notes.add(INFO, w.where, f"warmup not given: vdbench leaves out only its first interval, so "
                  f"ramp: {_fmt('ramp', w.fixed['ramp'])}")
    if not w.has("working_set_pct"):
        w.fixed["working_set_pct"] = 100
    if not w.has("size"):
        notes.add(INFO, w.where, f"no size= on the sds: each job's file is iofleet's default "
                  f"{_fmt('size', PARAMS['size'].default)}",
                  "set size: to the disk size (HCIBench: size_data_disk) to test the same data")


# ---------------------------------------------------------------- fio

@dataclass
class _Opt:
    key: str
    value: str | None  # None: a bare flag such as `time_based`
    line: int
    section: str

    @property
    def where(self) -> str:
        shown = self.key if self.value is None else f"{self.key}={_shown(self.value)}"
        return f"line {self.line} [{self.section}] {shown}"


_FIO_ALIASES = {"readwrite": "rw", "blocksize": "bs", "timeout": "runtime", "wait_for_previous": "stonewall"}
_FIO_HANDLED = {"rw", "rwmixread", "rwmixwrite", "percentage_random", "percentage_sequential", "bs", "iodepth",
                "numjobs", "size", "runtime", "ramp_time", "time_based", "ioengine", "direct", "buffered",
                "buffer_compress_percentage", "dedupe_percentage", "directory", "filename", "description",
                "stonewall", "wait_for"}
# Dangerous: run commands, read/write other files, change the host.
_FIO_REFUSED = {
    "exec_prerun": "runs a shell command before the job", "exec_postrun": "runs a shell command after the job",
    "ioscheduler": "changes the host's IO scheduler", "write_iolog": "writes a file outside iofleet's directory",
    "read_iolog": "replays IO from another file", "merge_blktrace_file": "reads another file",
    "opendir": "does IO to every file under a directory, not iofleet's own files",
    "program": "runs a program (exec engine)", "arguments": "passes arguments to a program (exec engine)",
    "uid": "changes the user fio runs as", "gid": "changes the group fio runs as",
}
_FIO_REFUSED_PREFIXES = {"exec_": "runs a shell command", "cgroup": "changes the host's cgroups",
                         "trigger": "runs a command or reboots the host on a trigger",
                         "replay_": "replays IO from another file", "merge_blktrace": "reads another file"}
# Not mentioned: no effect on the IO iofleet runs, or iofleet sets it itself.
_FIO_SILENT = {
    "name", "group_reporting", "new_group", "thread", "disk_util", "eta", "eta_newline", "eta_interval",
    "clocksource", "significant_figures", "percentile_list", "lat_percentiles", "clat_percentiles",
    "slat_percentiles", "unlink", "unlink_each_loop", "invalidate", "exitall", "exitall_on_error",
    "per_job_logs", "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log",
    "unified_rw_reporting", "stats", "disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement",
}
_FIO_SILENT_PREFIXES = ("log_",)
# Noted: iofleet does this its own way; the IO pattern is the same.
_FIO_INFO = {
    "norandommap": "iofleet keeps fio's default random map (every block once per pass)",
    "randrepeat": "iofleet keeps fio's default random seed", "randseed": "iofleet keeps fio's default random seed",
    "allrandrepeat": "iofleet keeps fio's default random seed",
    "random_generator": "iofleet keeps fio's default random generator",
    "refill_buffers": "iofleet keeps fio's default buffer contents",
    "scramble_buffers": "iofleet keeps fio's default buffer contents",
    "buffer_compress_chunk": "iofleet keeps fio's default compression chunk",
    "loops": "iofleet is time based: it loops for the whole runtime",
    "startdelay": "iofleet starts every job at once",
    "continue_on_error": "iofleet stops a test on an IO error", "ignore_error": "iofleet stops a test on an IO error",
    "cpus_allowed": "host CPU placement is not carried over", "cpus_allowed_policy": "host CPU placement is not carried over",
    "cpumask": "host CPU placement is not carried over", "numa_cpu_nodes": "host CPU placement is not carried over",
    "numa_mem_policy": "host memory placement is not carried over", "nice": "process priority is not carried over",
    "prio": "IO priority is not carried over", "prioclass": "IO priority is not carried over",
    "fallocate": "iofleet lays out its own files", "overwrite": "iofleet lays out its own files",
    "create_on_open": "iofleet lays out its own files", "create_serialize": "iofleet lays out its own files",
    "create_fsync": "iofleet lays out its own files", "filename_format": "iofleet names its own data files",
    "mem": "IO buffer memory type is not carried over", "iomem": "IO buffer memory type is not carried over",
    "iomem_align": "IO buffer alignment is not carried over", "hugepage-size": "huge pages are not carried over",
    **{k: "fio's steady-state stop is not carried over; iofleet runs the full runtime (`until: steady` stops "
          "at SNIA PTS steady state instead)"
       for k in ("ss", "ss_dur", "ss_ramp", "steadystate", "steadystate_duration", "steadystate_ramp_time")},
    "kb_base": "", "unit_base": "",  # special-cased below
}
# The IO would differ and iofleet cannot express it.
_FIO_UNSUPPORTED_PREFIXES = {
    "rate": "iofleet runs at full speed", "thinktime": "iofleet runs at full speed",
    "flow": "iofleet runs at full speed", "verify": "data verification is not supported",
    "do_verify": "data verification is not supported", "experimental_verify": "data verification is not supported",
    "iodepth_": "fio's batch submission settings are not supported",
    "zone": "zoned IO is not supported", "offset": "IO offsets are not supported",
}
# A workload with one of these is left out: no single bs describes it.
_FIO_SKIP = {"bssplit": "a block-size split", "bsrange": "a block-size range",
             "blocksize_range": "a block-size range", "bs_unaligned": "unaligned block sizes"}
_FIO_NAME_KEYWORDS = re.compile(r"\$(jobnum|jobname|filenum|clientuid)\b")


def _fio_bool(opt: _Opt) -> bool:
    if opt.value is None:
        return True
    v = opt.value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise _Skip("expected 0 or 1", opt.where)


def _fio_int(opt: _Opt, pname: str):
    value = (opt.value or "").strip()
    parts = {p.strip() for p in value.split(",") if p.strip()}
    if len(parts) > 1:
        raise _Skip("different values per direction are not supported", opt.where)
    return _check(pname, parts.pop() if parts else value, opt.where)


@dataclass
class _Section:
    name: str
    line: int
    opts: list[_Opt]


def _lex_fio(text: str, src: str, notes: _Notes) -> list[_Section]:
    sections: list[_Section] = []
    problems = []
    for n, line in _meaningful(text, ";#"):
        if re.match(r"^include(\s|$)", line):
            notes.add(REFUSED, f"line {n} {_shown(line)}",
                      "refused: `include` reads another job file; iofleet never reads what a job file names",
                      "paste the options you need into this file")
            continue
        m = _FIO_SECTION_RE.match(line)
        if m:
            sections.append(_Section(m[1].strip(), n, []))
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key):
            problems.append(f"{src}: line {n}: {_shown(line)} is neither a [section] header nor an "
                            f"option=value line; check the line")
            continue
        if not sections:
            problems.append(f"{src}: line {n}: option {_shown(line)} is outside any [section]; "
                            f"put it under [global] or a job section")
            continue
        key = key.lower()
        key = _FIO_ALIASES.get(key, key)
        sections[-1].opts.append(_Opt(key, value.strip() if sep else None, n, sections[-1].name))
    if problems:
        raise PlanError(problems)
    if not any(s.name != "global" for s in sections):
        raise PlanError([f"{src}: has no job section, only [global]; add a job section such as [randread]"])
    return sections


def _fio_classify(opt: _Opt, notes: _Notes) -> bool:
    """Note what is not carried; True if the option is kept for conversion."""
    key, value = opt.key, opt.value or ""
    refused = _FIO_REFUSED.get(key) or next(
        (why for p, why in _FIO_REFUSED_PREFIXES.items() if key.startswith(p)), None)
    if refused:
        notes.add(REFUSED, opt.where, f"refused: {refused}; iofleet never runs or reads what a job file names",
                  "remove it")
        return False
    if key == "ioengine" and (value.lower() == "exec" or value.lower().startswith("external")):
        notes.add(REFUSED, opt.where, "refused: this engine runs a program or loads a library", "remove it")
        return False
    checked = _FIO_NAME_KEYWORDS.sub("", value) if key in ("filename", "filename_format") else value
    if "$" in checked:
        what = "expands an environment variable" if "${" in value else "is a fio $-expression"
        notes.add(REFUSED, opt.where, f"refused: {what}, which iofleet never evaluates", "write the value itself")
        return False
    if key == "filename":
        return _fio_filename(opt, notes)
    if key in _FIO_HANDLED or key in _FIO_SKIP:
        return True
    if key in _FIO_SILENT or key.startswith(_FIO_SILENT_PREFIXES):
        return False
    if key in ("kb_base", "unit_base"):
        if value.strip() not in ("", "1024", "0", "8"):
            notes.add(UNSUPPORTED, opt.where, "iofleet reads sizes as binary (kb_base=1024)",
                      "write sizes such as 4KiB or 1GiB and remove it")
        return False
    if key in _FIO_INFO:
        notes.add(INFO, opt.where, f"not carried over: {_FIO_INFO[key]}")
        return False
    why = next((why for p, why in _FIO_UNSUPPORTED_PREFIXES.items() if key.startswith(p)), None)
    notes.add(UNSUPPORTED, opt.where,
              f"not carried over: {why or 'iofleet has no equivalent, so the IO would differ'}",
              "remove it to run this file, or import it and adjust the plan")
    return False


def _fio_filename(opt: _Opt, notes: _Notes) -> bool:
    parts = [p for p in re.split(r"(?<!\\):", opt.value or "") if p]
    devices, outside = [], []
    for p in parts:
        if p.startswith("/dev/") or p.startswith("\\\\.\\"):
            devices.append(p)
        elif "/" in p or "\\" in p or p.startswith(".."):
            outside.append(p)
    if outside:
        notes.add(REFUSED, opt.where, "refused: names a file outside iofleet's own directory; iofleet only "
                  "writes its own files under a target", "use directory=DIR (or --target DIR) instead")
        return False
    if devices:
        opt.value = ":".join(devices)
        return True
    notes.add(INFO, opt.where, "not carried over: iofleet names its own data files")
    return False


_FIO_RW = {"read": (100, False), "write": (0, False), "randread": (100, True), "randwrite": (0, True),
           "rw": (None, False), "readwrite": (None, False), "randrw": (None, True)}


@dataclass
class _FioJob:
    section: str
    line: int
    fixed: dict
    numjobs: int
    dirs: list
    devices: list
    stonewall: bool
    description: str
    timed: bool | None  # time_based given: its value; not given: None
    skip: _Skip | None = None


def _fio_job(section: str, line: int, opts: dict[str, _Opt], notes: _Notes) -> _FioJob:
    fixed: dict = {}
    job = _FioJob(section, line, fixed, 1, [], [], False, "", None)
    try:
        for key, why in _FIO_SKIP.items():
            if key in opts:
                raise _Skip(f"{why} is not supported (iofleet runs one bs per test)", opts[key].where)
        if "rw" in opts:
            base, _, modifier = (opts["rw"].value or "").strip().lower().partition(":")
            if base not in _FIO_RW:
                raise _Skip("only read, write, randread, randwrite, rw and randrw are supported",
                            opts["rw"].where)
            if modifier:
                notes.add(UNSUPPORTED, opts["rw"].where, f"the ':{modifier}' offset modifier is not carried over")
            read, random = _FIO_RW[base]
            if read is None:
                if "rwmixread" in opts:
                    read = _fio_int(opts["rwmixread"], "read_pct")
                elif "rwmixwrite" in opts:
                    read = 100 - _fio_int(opts["rwmixwrite"], "read_pct")
                else:
                    read = 50
            fixed["read_pct"] = read
            if random:
                rnd = 100
                if "percentage_random" in opts:
                    rnd = _fio_int(opts["percentage_random"], "random_pct")
                elif "percentage_sequential" in opts:
                    rnd = 100 - _fio_int(opts["percentage_sequential"], "random_pct")
                fixed["random_pct"] = rnd
            else:
                fixed["random_pct"] = 0
        if "bs" in opts:
            parts = {p.strip() for p in (opts["bs"].value or "").split(",") if p.strip()}
            if len(parts) != 1:
                raise _Skip("one block size is supported, not different ones per direction", opts["bs"].where)
            fixed["bs"] = _check("bs", parts.pop(), opts["bs"].where)
        if "iodepth" in opts:
            fixed["iodepth"] = _fio_int(opts["iodepth"], "iodepth")
        if "numjobs" in opts:
            job.numjobs = _fio_int(opts["numjobs"], "jobs")
        if "size" in opts:
            value = (opts["size"].value or "").strip()
            if value.endswith("%"):
                fixed["working_set_pct"] = _check("working_set_pct", value, opts["size"].where)
            else:
                fixed["size"] = _check("size", value, opts["size"].where)
        if "runtime" in opts:
            fixed["runtime"] = _check("runtime", (opts["runtime"].value or "").strip(), opts["runtime"].where)
        if "ramp_time" in opts:
            fixed["ramp"] = _check("ramp", (opts["ramp_time"].value or "").strip(), opts["ramp_time"].where)
        if "time_based" in opts:
            job.timed = _fio_bool(opts["time_based"])
        if "ioengine" in opts:
            engine = (opts["ioengine"].value or "").strip().lower()
            if engine in ENGINES:
                fixed["engine"] = engine
            else:
                fixed["engine"] = "auto"
                notes.add(UNSUPPORTED, opts["ioengine"].where,
                          f"engine {_shown(engine)} is not one of iofleet's ({', '.join(ENGINES)}); "
                          f"imported as engine: auto")
        direct = [o for o in (opts.get("direct"), opts.get("buffered")) if o is not None]
        if direct:
            last = max(direct, key=lambda o: o.line)
            fixed["direct"] = _fio_bool(last) if last.key == "direct" else not _fio_bool(last)
        for key, pname in (("buffer_compress_percentage", "compress_pct"), ("dedupe_percentage", "dedupe_pct")):
            if key in opts:
                fixed[pname] = _fio_int(opts[key], pname)
        if "directory" in opts:
            for d in re.split(r"(?<!\\):", opts["directory"].value or ""):
                if d:
                    job.dirs.append((d, opts["directory"].where))
        if "filename" in opts:
            job.devices += [(d, opts["filename"].where) for d in (opts["filename"].value or "").split(":")]
        if "stonewall" in opts:
            job.stonewall = _fio_bool(opts["stonewall"])
        if "wait_for" in opts:
            job.stonewall = True
            notes.add(INFO, opts["wait_for"].where, "iofleet runs it after every section before it, "
                      "as with stonewall")
        if "description" in opts:
            job.description = _one_line(opts["description"].value or "").strip("\"'")[:200]
    except _Skip as exc:
        job.skip = exc
    return job


def _import_fio(path: Path, text: str) -> ImportResult:
    src = str(path)
    notes = _Notes(src)
    sections = _lex_fio(text, src, notes)

    # Classify every option line once (a [global] option is noted once).
    kept: dict[int, bool] = {}
    for s in sections:
        for o in s.opts:
            kept[id(o)] = _fio_classify(o, notes)

    jobs: list[_FioJob] = []
    glob: dict[str, _Opt] = {}
    for s in sections:
        own = {o.key: o for o in s.opts if kept[id(o)]}
        if s.name == "global":
            glob.update(own)
            continue
        jobs.append(_fio_job(s.name, s.line, {**glob, **own}, notes))

    # fio runs every job of a group at the same time; stonewall starts a new group.
    groups: list[list[_FioJob]] = []
    for j in jobs:
        if not groups or j.stonewall:
            groups.append([])
        groups[-1].append(j)

    file_name, name_values = hcibench_name_values(path)
    workloads: list[_Workload] = []
    targets: list[str] = []
    taken: set[str] = set()
    for group in groups:
        clusters: list[list[_FioJob]] = []
        for j in group:
            if j.skip:
                notes.add(UNSUPPORTED, j.skip.where or f"[{j.section}]",
                          f"{j.skip.problem}; the sections using it are not imported")
                continue
            key = (sorted(j.fixed.items()), j.timed)
            for c in clusters:
                if (sorted(c[0].fixed.items()), c[0].timed) == key:
                    c.append(j)
                    break
            else:
                clusters.append([j])
        if len(clusters) > 1:
            names = ", ".join(f"[{c[0].section}]" for c in clusters)
            notes.add(UNSUPPORTED, names, "fio runs these sections at the same time (no stonewall between "
                      "them); iofleet runs its workloads one after the other",
                      "add stonewall to each job section to accept that, or use a mixed plan (docs/fleet.md)")
        for c in clusters:
            workloads.append(_fio_workload(c, taken, targets, notes))
    for w in workloads:
        if name_values:
            _apply_name_values(w, file_name, name_values, notes)
        _fio_defaults(w, notes)
    dirs_per_workload = {tuple(w.dirs) for w in workloads}
    if len(dirs_per_workload) > 1 and targets:
        notes.add(INFO, "directory", f"targets belong to the whole plan in iofleet: every workload runs on "
                  f"{', '.join(targets)}")
    return _finish(path, "fio", workloads, targets, notes)


def _fio_workload(cluster: list[_FioJob], taken: set, targets: list, notes: _Notes) -> _Workload:
    first = cluster[0]
    if len(cluster) == 1:
        raw = first.section
    else:
        stems = {re.sub(r"[-_.]?\d+$", "", j.section) for j in cluster}
        raw = stems.pop() if len(stems) == 1 and len(next(iter(stems), "")) >= 2 else first.section
    name = _unique(_sanitize_name(raw, f"job{len(taken) + 1}"), taken)
    taken.add(name)
    where = f"[{first.section}]" if len(cluster) == 1 else f"[{first.section}]..[{cluster[-1].section}]"
    if name != raw:
        notes.add(INFO, where, f"workload named {name} (plan names use letters, digits, '.', '_', '-')")
    w = _Workload(name=name, where=where, fixed=dict(first.fixed), description=first.description)
    jobs = sum(j.numjobs for j in cluster)
    w.fixed["jobs"] = jobs
    if len(cluster) > 1:
        notes.add(INFO, where, f"{len(cluster)} sections with the same IO run at the same time in fio: "
                  f"one workload {name} with jobs={jobs} (numjobs summed), each job with its own file")
    for j in cluster:
        for d, dwhere in j.dirs:
            _add_target(d, targets, notes, dwhere)
            if d not in w.dirs:
                w.dirs.append(d)
    devices = [d for j in cluster for d, _ in j.devices]
    if devices:
        shown = ", ".join(devices[:4]) + (", ..." if len(devices) > 4 else "")
        notes.add(INFO, f"{where} filename={shown}", "raw device targets are not carried over; each job "
                  "gets its own file in a target directory", "give --target DIR")
    if any(j.timed is False or (j.timed is None and "runtime" in j.fixed) for j in cluster):
        notes.add(INFO, where, "time_based is not set: fio stops once size is done, or at runtime; iofleet is "
                  "always time based and runs the full runtime")
    return w


def _fio_defaults(w: _Workload, notes: _Notes) -> None:
    """fio's own defaults for what the job file leaves out."""
    if not w.has("read_pct"):
        w.fixed.update(read_pct=100, random_pct=0)
        notes.add(INFO, w.where, "rw not set: fio's default is a sequential read (read_pct: 100, random_pct: 0)")
    for pname, default in (("bs", 4096), ("iodepth", 1), ("ramp", 0)):
        w.fixed.setdefault(pname, default)
    if not w.has("direct"):
        w.fixed["direct"] = False
        notes.add(INFO, w.where, "direct not set: fio's default is buffered IO; imported as direct: false")
    if not w.has("engine"):
        w.fixed["engine"] = "psync"
        notes.add(INFO, w.where, "ioengine not set: fio's default on Linux is psync; imported as engine: psync")
    if not w.has("runtime"):
        notes.add(INFO, w.where, f"runtime not set: fio runs until size is done; iofleet is time based and "
                  f"uses its default runtime {_fmt('runtime', PARAMS['runtime'].default)}", "set runtime")
    if not w.has("size"):
        notes.add(INFO, w.where, f"size not set (or in %): each job's file is iofleet's default "
                  f"{_fmt('size', PARAMS['size'].default)}", "set size")
    if not w.has("working_set_pct"):
        w.fixed["working_set_pct"] = 100


# ---------------------------------------------------------------- entry points

def import_file(path: str | Path) -> ImportResult:
    """Import a vdbench parameter file (as HCIBench writes them) or a fio job
    file. Raises PlanError (one line each) if it is neither, or is broken."""
    path = Path(path)
    text = _read_text(path)
    kind = detect_kind(text)
    if kind is None and path.suffix.lower() in FIO_SUFFIXES:
        kind = "fio"
    if kind == "vdbench":
        return _import_vdbench(path, text)
    if kind == "fio":
        return _import_fio(path, text)
    if re.search(r"^\s*(name|workloads)\s*:", text, re.MULTILINE):
        raise PlanError([f"{path}: is already an iofleet plan (YAML); run or validate it directly"])
    raise PlanError([f"{path}: is neither a vdbench parameter file (sd=, wd=, rd= lines) nor a fio job file "
                     f"([sections] of option=value lines); check the file"])


class _FlowListDumper(yaml.SafeDumper):
    pass


def _represent_list(dumper, data):
    flow = all(isinstance(x, (str, int, float, bool)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_FlowListDumper.add_representer(list, _represent_list)


def plan_yaml(plan: dict, header: list[str] = ()) -> str:
    """A plan as YAML text, with comment lines (notes) on top."""
    lines = [f"# {_one_line(h)}" for h in header]
    body = yaml.dump(plan, Dumper=_FlowListDumper, sort_keys=False, width=1000, allow_unicode=False)
    return "\n".join(lines + [body.rstrip("\n")]) + "\n"


def merge_results(results: list[ImportResult], sources: list[str]) -> tuple[dict, list[str]]:
    """One plan from several imports: every workload (a clashing name gets a
    -2, -3 suffix), targets merged; and every note, in order."""
    taken: set[str] = set()
    workloads, targets, notes = [], [], []
    for r in results:
        notes += r.notes
        for t in r.plan.get("targets", []):
            if t not in targets:
                targets.append(t)
        for w in r.plan["workloads"]:
            name = _unique(w["name"], taken)
            taken.add(name)
            workloads.append({**w, "name": name})
    bare = [Path(s).name for r, s in zip(results, sources) if r.plan.get("targets", []) != targets]
    if targets and bare:
        notes.append(_one_line(f"{', '.join(bare)}: targets belong to the whole plan: its workloads also run "
                               f"on {', '.join(targets)}; give --target DIR to choose"))
    if len(results) == 1:
        plan = dict(results[0].plan)
    else:
        listed = ", ".join(Path(s).name for s in sources)
        plan = {"name": "imported", "description": _one_line(f"imported from {listed}")[:500]}
    plan.pop("targets", None)
    plan.pop("workloads", None)
    if targets:
        plan["targets"] = targets
    plan["workloads"] = workloads
    parse_plan(plan, "<merged import>")
    return plan, notes


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
            text = _read_text(path)
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
