"""vdbench parameter files, as HCIBench writes them, imported as plans.

sd= (storage), wd= (workload) and rd= (run) definitions become workloads:
one per run definition and workload it runs, one job per sd, vdbench's
threads per sd as iodepth, for-loops as a matrix. What vdbench does that
iofleet cannot is noted; commands and $variables are refused.
"""

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import PlanError
from ..plan.params import PARAMS
from ..plan.units import parse_duration
from .common import Workload, add_target, check, finish, fmt, meaningful_lines, sanitize_name, unique
from .hcibench import apply_name_values, hcibench_name_values
from .notes import INFO, REFUSED, UNSUPPORTED, ImportResult, Notes, Skip, shown

def _ratio_pct(ratio: str, what: str) -> tuple[int, bool]:
    """vdbench's N:1 ratio (compratio, dedupratio) → % of data that can go."""
    try:
        r = float(ratio)
    except ValueError:
        raise Skip("not a number") from None
    if r < 1:
        raise Skip("a ratio is at least 1")
    exact = 100 - 100 / r
    return round(exact), abs(exact - round(exact)) > 1e-9


# HCIBench names its files `[prefix-]vdb-8vmdk-100ws-4k-70rdpct-100randompct-4threads`,
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


def _lex_vdbench(text: str, src: str, notes: Notes):
    general: dict = {}
    defs: list[_VdbDef] = []
    problems = []
    for n, line in meaningful_lines(text, "*#/"):
        pairs = _vdb_split(line)
        if pairs is None:
            problems.append(f"{src}: line {n}: unbalanced parentheses or quotes in {shown(line)}; "
                            f"close every '(' and quote")
            continue
        for i, pair in enumerate(pairs):
            key, sep, value = pair.partition("=")
            key = key.strip().lower()
            if not sep or not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
                problems.append(f"{src}: line {n}: {shown(pair)} is not keyword=value; "
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


def _vdb_dangerous(key: str, value, line: int, owner: str, notes: Notes) -> bool:
    values = value if isinstance(value, list) else [value]
    if key in _VDB_REFUSED:
        notes.add(REFUSED, f"line {line} {owner}{key}={shown(value)}",
                  f"refused: {_VDB_REFUSED[key]}; iofleet never runs or reads what a parameter file names",
                  "remove it")
        return True
    if any("$" in v for v in values):
        notes.add(REFUSED, f"line {line} {owner}{key}={shown(value)}",
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
    return int(check("random_pct", v, f"seekpct={shown(value)}")), ""


_VDB_SD_KEYS = {"lun", "size", "threads", "openflags", "hitarea", "range", "host", "hd"}
_VDB_WD_KEYS = {"sd", "xfersize", "rdpct", "seekpct", "range", "openflags", "skew", "rhpct", "whpct",
                "iorate", "host", "hd", "hitarea"}
_VDB_RD_KEYS = {"wd", "iorate", "elapsed", "warmup", "interval", "threads", "forthreads", "forxfersize",
                "forrdpct", "forseekpct", "xfersize", "rdpct", "seekpct", "openflags", "pause", "format",
                "distribution"}


def _vdb_unknown(d: _VdbDef, allowed: set, notes: Notes) -> None:
    for key, (value, line) in d.params.items():
        if key not in allowed:
            notes.add(UNSUPPORTED, f"line {line} {d.kind}={d.name} {key}={shown(value)}",
                      f"{key} is not carried over (iofleet has no equivalent)",
                      "check the imported plan does what you need")


def import_vdbench(path: Path, text: str) -> ImportResult:
    src = str(path)
    notes = Notes(src)
    general, defs = _lex_vdbench(text, src, notes)
    _refuse_dangerous(general, defs, notes)
    content = _general_content(general, notes)
    tables = _definition_tables(defs, src, notes)
    targets = _targets(tables, notes)
    if not tables["rd"]:
        raise PlanError([f"{src}: has no rd= (run definition); a vdbench file needs at least one, "
                         f"e.g. rd=run1,wd=wd1,iorate=max,elapsed=60"])
    workloads = _run_workloads(path, tables, general, content, notes)
    return finish(path, "vdbench", workloads, targets, notes)


def _refuse_dangerous(general: dict, defs: list, notes: Notes) -> None:
    """Refuse what runs commands or substitutes variables, everywhere."""
    for key, (value, line) in list(general.items()):
        if _vdb_dangerous(key, value, line, "", notes):
            del general[key]
    for d in defs:
        for key, (value, line) in list(d.params.items()):
            if _vdb_dangerous(key, value, line, f"{d.kind}={d.name} ", notes):
                del d.params[key]


def _general_content(general: dict, notes: Notes) -> dict:
    """The general parameters: compratio and dedupratio become values of
    every workload; the rest is noted."""
    content: dict = {}
    for key, (value, line) in general.items():
        where = f"line {line} {key}={shown(value)}"
        if key in _VDB_SILENT_GENERAL:
            continue
        if key in ("compratio", "dedupratio"):
            pname = "compress_pct" if key == "compratio" else "dedupe_pct"
            try:
                pct, rounded = _ratio_pct(str(value), key)
            except Skip as exc:
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
    return content


def _definition_tables(defs: list, src: str, notes: Notes) -> dict[str, dict[str, _VdbDef]]:
    """Definitions by kind and name, with `xd=default` applied to those that
    follow; what is not carried over is noted."""
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
    for kind, allowed in (("sd", _VDB_SD_KEYS), ("wd", _VDB_WD_KEYS), ("rd", _VDB_RD_KEYS)):
        for d in tables[kind].values():
            _vdb_unknown(d, allowed, notes)
    return tables


def _targets(tables: dict, notes: Notes) -> list[str]:
    """A file lun's directory becomes a target; raw devices are not carried."""
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
            notes.add(INFO, f"line {d.line} sd={d.name} lun={shown(lun)}",
                      "not an absolute path; not carried over", "give --target DIR")
    for parent, sd_luns in files.items():
        where = f"{_sd_range(sd_luns)} lun={_luns(sd_luns)}"
        add_target(parent, targets, notes, where)
        if parent in targets:
            notes.add(INFO, where, f"the files' directory {parent} becomes a target; iofleet writes its own "
                      f"files under {parent}/iofleet/, never the sd files themselves")
    if devices:
        notes.add(INFO, f"{_sd_range(devices)} lun={_luns(devices)}",
                  "raw device targets are not carried over; each sd becomes one job with its own "
                  "file in a target directory", "give --target DIR")
    return targets


def _run_workloads(path: Path, tables: dict, general: dict, content: dict, notes: Notes) -> list[Workload]:
    """One workload per run definition and workload definition it runs."""
    file_name, name_values = hcibench_name_values(path)
    workloads: list[Workload] = []
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
                      f"wd={shown(wd_ref)} names no defined wd; this run is not imported")
            continue
        if len(wd_names) > 1:
            notes.add(UNSUPPORTED, f"line {rd.line} rd={rd.name}",
                      f"runs {', '.join(wd_names)} at the same time (skew); iofleet runs them one after "
                      f"the other, as separate workloads", "use a mixed plan (docs/fleet.md) to run them at once")
        for wd_name in wd_names:
            wd = tables["wd"][wd_name]
            raw_name = rd.name if len(wd_names) == 1 else f"{rd.name}-{wd_name}"
            name = unique(sanitize_name(raw_name, f"run{len(workloads) + 1}"), taken)
            w = Workload(name=name, where=f"rd={rd.name}" + ("" if len(wd_names) == 1 else f" wd={wd_name}"))
            try:
                _vdb_workload(w, rd, wd, tables, general, content, notes)
            except Skip as exc:
                notes.add(UNSUPPORTED, exc.where or w.where, f"{exc.problem}; workload {name} is not imported")
                continue
            if name_values:
                apply_name_values(w, file_name, name_values, notes)
            _vdb_defaults(w, rp, notes)
            taken.add(name)
            workloads.append(w)
    return workloads


def _sd_range(items: list) -> str:
    return items[0][0] if len(items) == 1 else f"{items[0][0]}..{items[-1][0]}"


def _luns(items: list) -> str:
    return ", ".join(shown(lun) for _, lun in items[:4]) + (", ..." if len(items) > 4 else "")


def _vdb_pick(key: str, *sources):
    """First of rd / wd / sd / general that sets `key`: (value, where) or (None, None)."""
    for label, params in sources:
        if key in params:
            return params[key][0], label
    return None, None


def _vdb_workload(w: Workload, rd: _VdbDef, wd: _VdbDef, tables, general, content, notes: Notes):
    rp, wp = rd.params, wd.params
    sd_names = _vdb_resolve(wp["sd"][0], tables["sd"], "sd") if "sd" in wp else list(tables["sd"])
    if not sd_names:
        raise Skip(f"sd={shown(wp.get('sd', ('', 0))[0])} names no defined sd", f"wd={wd.name}")
    sds = [tables["sd"][n] for n in sd_names]
    w.fixed["jobs"] = check("jobs", len(sds), f"{len(sds)} sds")
    w.fixed.update(content)
    sources = [(f"rd={rd.name}", rp), (f"wd={wd.name}", wp)]
    _vdb_patterns(w, rp, sources, notes)
    _vdb_threads(w, rd, sds, notes)
    _vdb_range(w, sources, sds, notes)
    _vdb_size_and_flags(w, sources, sds, general, notes)
    _vdb_not_carried(wd, sources, notes)
    _vdb_rate(w, sources, notes)
    _vdb_time(w, rd, notes)
    w.fixed["engine"] = "auto"


def _vdb_patterns(w: Workload, rp: dict, sources: list, notes: Notes) -> None:
    """Transfer size, read and seek percentages: rd for-loops → matrix."""
    for_keys = (("forxfersize", "xfersize", "bs"), ("forrdpct", "rdpct", "read_pct"),
                ("forseekpct", "seekpct", "random_pct"))
    for for_key, key, pname in for_keys:
        if for_key in rp:
            raw = rp[for_key][0]
            if pname == "random_pct":
                vals = [_vdb_seek(v)[0] for v in (raw if isinstance(raw, list) else [raw])]
            else:
                vals = _vdb_for_values(raw, lambda v, p=pname, k=for_key: check(p, v, f"{k}={shown(raw)}"))
            if len(vals) == 1:
                w.fixed[pname] = vals[0]
            else:
                w.matrix[pname] = vals
            continue
        value, label = _vdb_pick(key, *sources)
        if value is None:
            continue
        if isinstance(value, list):
            raise Skip(f"{key}={shown(value)}: a distribution of {key} values within "
                        f"one run is not supported (iofleet runs one {pname} per test); use for{key}= for one "
                        f"test per value", label)
        if pname == "random_pct":
            w.fixed[pname], info = _vdb_seek(value)
            if info:
                notes.add(UNSUPPORTED, f"{label} seekpct={value}", info)
        else:
            w.fixed[pname] = check(pname, value, f"{label} {key}={shown(value)}")


def _vdb_threads(w: Workload, rd: _VdbDef, sds: list, notes: Notes) -> None:
    """Threads: outstanding IOs per sd → iodepth (one job per sd)."""
    rp = rd.params
    if "forthreads" in rp:
        raw = rp["forthreads"][0]
        vals = _vdb_for_values(raw, lambda v: check("iodepth", v, f"forthreads={shown(raw)}"))
        if len(vals) == 1:
            w.fixed["iodepth"] = vals[0]
        else:
            w.matrix["iodepth"] = vals
    elif "threads" in rp:
        w.fixed["iodepth"] = check("iodepth", rp["threads"][0], f"rd={rd.name} threads")
    else:
        per_sd = [(sd.name, sd.params["threads"][0]) for sd in sds if "threads" in sd.params]
        if per_sd:
            values = {str(v) for _, v in per_sd}
            first_name, first = per_sd[0]
            if len(values) > 1 or len(per_sd) < len(sds):
                notes.add(UNSUPPORTED, w.where, f"the sds have different threads= ({', '.join(sorted(values))}"
                          f"{', some none' if len(per_sd) < len(sds) else ''}); iofleet gives every job the "
                          f"same iodepth: {first} (from {first_name})")
            w.fixed["iodepth"] = check("iodepth", first, f"sd={first_name} threads")


def _vdb_range(w: Workload, sources: list, sds: list, notes: Notes) -> None:
    """Working set: range=(0,N) in % of each sd."""
    rng, label = _vdb_pick("range", *sources, *[(f"sd={sd.name}", sd.params) for sd in sds[:1]])
    if rng is not None:
        lo_hi = rng if isinstance(rng, list) else [rng]
        try:
            if len(lo_hi) == 1:
                lo, hi = 0, int(lo_hi[0])
            else:
                lo, hi = int(lo_hi[0]), int(lo_hi[1])
        except (ValueError, IndexError):  # IndexError: range=()
            notes.add(UNSUPPORTED, f"{label} range={shown(rng)}",
                      "an absolute range is not carried over; iofleet gives the working set in % of each file")
        else:
            if lo:
                notes.add(UNSUPPORTED, f"{label} range={shown(rng)}",
                          f"the IO region starts at {lo} % in vdbench; iofleet's working set is the first "
                          f"{hi - lo} % of each file")
            w.fixed["working_set_pct"] = check("working_set_pct", hi - lo, f"{label} range")
        if len({str(sd.params.get("range", ("", 0))[0]) for sd in sds}) > 1:
            notes.add(UNSUPPORTED, w.where, "the sds have different range=; iofleet uses one working set for all")


def _vdb_size_and_flags(w: Workload, sources: list, sds: list, general: dict, notes: Notes) -> None:
    """Size per job, and direct IO from openflags."""
    sizes = [(sd.name, sd.params["size"][0]) for sd in sds if "size" in sd.params]
    if sizes:
        w.fixed["size"] = check("size", sizes[0][1], f"sd={sizes[0][0]} size")
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


def _vdb_rate(w: Workload, sources: list, notes: Notes) -> None:
    """iorate=N (vdbench's total rate) is iofleet's rate_iops; a curve or a list is not carried."""
    rate, label = _vdb_pick("iorate", *sources)
    if rate is None or str(rate).lower() == "max":
        return
    if isinstance(rate, list) or not str(rate).isdigit():
        hint = "; `iofleet curve` runs latency against load" if str(rate).lower() == "curve" else ""
        notes.add(UNSUPPORTED, f"{label} iorate={shown(rate)}",
                  f"only a fixed iorate is carried over (as rate_iops){hint}")
        return
    w.fixed["rate_iops"] = check("rate_iops", int(rate), f"{label} iorate={shown(rate)}")


def _vdb_not_carried(wd: _VdbDef, sources: list, notes: Notes) -> None:
    """Cache-hit simulation: noted, never carried."""
    wp = wd.params
    for key in ("rhpct", "whpct"):
        if key in wp and str(wp[key][0]) not in ("0", ""):
            notes.add(UNSUPPORTED, f"wd={wd.name} {key}={wp[key][0]}",
                      "vdbench's cache-hit simulation is not carried over")
    if "skew" in wp:
        notes.add(INFO, f"wd={wd.name} skew={wp['skew'][0]}", "skew is not carried over")


def _vdb_time(w: Workload, rd: _VdbDef, notes: Notes) -> None:
    rp = rd.params
    if "elapsed" in rp:
        w.fixed["runtime"] = check("runtime", rp["elapsed"][0], f"rd={rd.name} elapsed")
    if "warmup" in rp:
        w.fixed["ramp"] = check("ramp", rp["warmup"][0], f"rd={rd.name} warmup")
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


def _vdb_defaults(w: Workload, rp: dict, notes: Notes) -> None:
    """vdbench's own defaults for what neither the file nor its name gives."""
    for pname, key in (("bs", "xfersize"), ("read_pct", "rdpct"), ("random_pct", "seekpct"),
                       ("iodepth", "threads"), ("runtime", "elapsed")):
        if not w.has(pname):
            w.fixed[pname] = PARAMS[pname].parse(_VDB_DEFAULTS[key])
            notes.add(INFO, w.where, f"{key} not given: vdbench's default {_VDB_DEFAULTS[key]} gives "
                      f"{pname}: {fmt(pname, w.fixed[pname])}")
    if not w.has("ramp"):
        interval = rp.get("interval", ("1", 0))[0]
        try:
            w.fixed["ramp"] = parse_duration(interval)
        except ValueError:
            w.fixed["ramp"] = 1
        notes.add(INFO, w.where, f"warmup not given: vdbench leaves out only its first interval, so "
                  f"ramp: {fmt('ramp', w.fixed['ramp'])}")
    if not w.has("working_set_pct"):
        w.fixed["working_set_pct"] = 100
    if not w.has("size"):
        notes.add(INFO, w.where, f"no size= on the sds: each job's file is iofleet's default "
                  f"{fmt('size', PARAMS['size'].default)}",
                  "set size: to the disk size (HCIBench: size_data_disk) to test the same data")


