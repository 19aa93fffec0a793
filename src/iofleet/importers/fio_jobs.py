"""fio job files imported as plans.

Each job section becomes a workload (sections of one job group with the same
IO become one workload, numjobs summed); its values are read by walking the
parameter table (Param.read_fio), as a fio output's options are. Options
that run commands, read other files or expand variables are refused (noted,
never carried); options whose IO iofleet cannot reproduce are noted.

iofleet's own job files (`iofleet validate --jobfiles`) import as the same
test: the `[iofleet-warmup]` job group is the ramp of the group after it,
and the `; iofleet: name=value ...` comment states what fio's options cannot
(its values win).
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PlanError
from ..fio import joblex
from ..fio.jobfile import DATA_FILE_FORMAT, IOFLEET_LINE, WARMUP_JOB
from ..fio.joblex import Option, Section
from ..plan.params import ENGINES, FIO_RW, PARAMS, SPEC_PARAMS, FioOptionError
from ..plan.target_kinds import KIND_FIO_OPTIONS, TARGET_NAMES
from .common import Workload, add_kind_target, add_target, finish, fmt, sanitize_name, unique
from .hcibench import apply_name_values, hcibench_name_values
from .notes import INFO, REFUSED, UNSUPPORTED, ImportResult, Notes, Skip, one_line, shown

# The options the parameter table reads, and those that shape the plan (targets, groups, names).
_STRUCTURE = {"time_based", "directory", "filename", "description", "stonewall", "wait_for"} | \
    KIND_FIO_OPTIONS | {  # (a target kind's: an RBD image's pool=, rbdname=, ...)
    # a device's layout, as iofleet writes it: one region per job (not carried, as the device)
    "offset_increment", "allow_file_create"}
_FIO_HANDLED = {key for p in PARAMS.values() for key in p.fio_keys} | _STRUCTURE
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
    "rate": "fio's other rate settings are not carried over; iofleet paces with rate_iops / rate_mbps "
            "(fio's linear pacing)", "thinktime": "iofleet runs at full speed",
    "flow": "iofleet runs at full speed", "verify": "data verification is not supported",
    "do_verify": "data verification is not supported", "experimental_verify": "data verification is not supported",
    "iodepth_": "fio's batch submission settings are not supported",
    "zone": "zoned IO is not supported", "offset": "IO offsets are not supported",
}
# A workload with one of these is left out: no single bs describes it.
_FIO_SKIP = {"bssplit": "a block-size split", "bsrange": "a block-size range",
             "blocksize_range": "a block-size range", "bs_unaligned": "unaligned block sizes"}
_FIO_NAME_KEYWORDS = re.compile(r"\$(jobnum|jobname|filenum|clientuid)\b")


def _where(opt: Option) -> str:
    """An option as a note locates it: line 12 [job] bs=4k."""
    text = opt.key if opt.value is None else f"{opt.key}={shown(opt.value)}"
    return f"line {opt.line} [{opt.section}] {text}"


def _fio_bool(opt: Option) -> bool:
    if opt.value is None:
        return True
    v = opt.value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise Skip("expected 0 or 1", _where(opt))


def _lex(text: str, src: str, notes: Notes) -> joblex.JobFile:
    """The job file's sections; `include` refused, broken lines one error each."""
    lexed = joblex.lex(text)
    for n, line in lexed.includes:
        notes.add(REFUSED, f"line {n} {shown(line)}",
                  "refused: `include` reads another job file; iofleet never reads what a job file names",
                  "paste the options you need into this file")
    problems = [f"{src}: line {bad.line}: option {shown(bad.text)} is outside any [section]; "
                f"put it under [global] or a job section" if bad.outside else
                f"{src}: line {bad.line}: {shown(bad.text)} is neither a [section] header nor an "
                f"option=value line; check the line" for bad in lexed.bad]
    if problems:
        raise PlanError(problems)
    if not any(s.name != "global" for s in lexed.sections):
        raise PlanError([f"{src}: has no job section, only [global]; add a job section such as [randread]"])
    return lexed


def _own_values(lexed: joblex.JobFile, src: str) -> dict:
    """The values iofleet's own comment line states (`; iofleet: size=1g
    working_set_pct=50`), each checked by the table's rules."""
    start = IOFLEET_LINE.strip()  # "; iofleet:"
    values, problems = {}, []
    for n, comment in lexed.comments:
        if not comment.startswith(start):
            continue
        for item in comment.removeprefix(start).split():
            name, sep, text = item.partition("=")
            if not sep or name not in SPEC_PARAMS:
                problems.append(f"{src}: line {n}: {shown(item)} in the `{start}` comment is not "
                                f"name=value with a test parameter ({', '.join(SPEC_PARAMS)}); fix or remove it")
                continue
            p = PARAMS[name]
            raw = {"true": True, "false": False}.get(text, text) if p.kind == "bool" else text
            try:
                values[name] = p.parse(raw)
            except ValueError as exc:
                problems.append(f"{src}: line {n}: {name}={shown(text)} in the `{start}` comment: {exc}")
    if problems:
        raise PlanError(problems)
    return values


def _fio_classify(opt: Option, notes: Notes) -> bool:
    """Note what is not carried; True if the option is kept for conversion."""
    key, value = opt.key, opt.value or ""
    refused = _FIO_REFUSED.get(key) or next(
        (why for p, why in _FIO_REFUSED_PREFIXES.items() if key.startswith(p)), None)
    if refused:
        notes.add(REFUSED, _where(opt), f"refused: {refused}; iofleet never runs or reads what a job file names",
                  "remove it")
        return False
    if key == "ioengine" and (value.lower() == "exec" or value.lower().startswith("external")):
        notes.add(REFUSED, _where(opt), "refused: this engine runs a program or loads a library", "remove it")
        return False
    checked = _FIO_NAME_KEYWORDS.sub("", value) if key in ("filename", "filename_format") else value
    if "$" in checked:
        what = "expands an environment variable" if "${" in value else "is a fio $-expression"
        notes.add(REFUSED, _where(opt), f"refused: {what}, which iofleet never evaluates", "write the value itself")
        return False
    if key == "filename":
        return _fio_filename(opt, notes)
    if key in _FIO_HANDLED or key in _FIO_SKIP:
        return True
    if key in _FIO_SILENT or key.startswith(_FIO_SILENT_PREFIXES):
        return False
    if key == "filename_format" and value == DATA_FILE_FORMAT:
        return False  # iofleet's own job file: its own data files
    if key in ("kb_base", "unit_base"):
        if value.strip() not in ("", "1024", "0", "8"):
            notes.add(UNSUPPORTED, _where(opt), "iofleet reads sizes as binary (kb_base=1024)",
                      "write sizes such as 4KiB or 1GiB and remove it")
        return False
    if key in _FIO_INFO:
        notes.add(INFO, _where(opt), f"not carried over: {_FIO_INFO[key]}")
        return False
    why = next((why for p, why in _FIO_UNSUPPORTED_PREFIXES.items() if key.startswith(p)), None)
    notes.add(UNSUPPORTED, _where(opt),
              f"not carried over: {why or 'iofleet has no equivalent, so the IO would differ'}",
              "remove it to run this file, or import it and adjust the plan")
    return False


def _fio_filename(opt: Option, notes: Notes) -> bool:
    parts = [p for p in re.split(r"(?<!\\):", opt.value or "") if p]
    devices, outside = [], []
    for p in parts:
        if p.startswith("/dev/") or p.startswith("\\\\.\\"):
            devices.append(p)
        elif "/" in p or "\\" in p or p.startswith(".."):
            outside.append(p)
    if outside:
        notes.add(REFUSED, _where(opt), "refused: names a file outside iofleet's own directory; iofleet only "
                  "writes its own files under a target", "use directory=DIR (or --target DIR) instead")
        return False
    if devices:
        opt.value = ":".join(devices)
        return True
    notes.add(INFO, _where(opt), "not carried over: iofleet names its own data files")
    return False


@dataclass
class _FioJob:
    section: str
    line: int
    fixed: dict = field(default_factory=dict)  # parameter values (internal units), but jobs
    numjobs: int = 1
    dirs: list = field(default_factory=list)
    devices: list = field(default_factory=list)
    kind_target: tuple | None = None  # (kind, target, its section's settings, where): e.g. an ioengine=rbd job's
    stonewall: bool = False
    description: str = ""
    timed: bool | None = None  # time_based given: its value; not given: None
    skip: Skip | None = None


def _fio_job(section: str, line: int, opts: dict[str, Option], own: dict, notes: Notes) -> _FioJob:
    job = _FioJob(section, line)
    try:
        for key, why in _FIO_SKIP.items():
            if key in opts:
                raise Skip(f"{why} is not supported (iofleet runs one bs per test)", _where(opts[key]))
        _table_values(job, opts, own, notes)
        _structure(job, opts, notes)
    except Skip as exc:
        job.skip = exc
    return job


def _table_values(job: _FioJob, opts: dict[str, Option], own: dict, notes: Notes) -> None:
    """Every parameter the table reads from fio's options, but those
    iofleet's own comment states (`own`, they win); Skip (at the option)
    when a value is unusable."""
    rw = opts.get("rw")
    base, _, modifier = (rw.value or "").strip().lower().partition(":") if rw else ("", "", "")
    if modifier and base in FIO_RW:
        notes.add(UNSUPPORTED, _where(rw), f"the ':{modifier}' offset modifier is not carried over")
    # In file order: of direct= and buffered=, the later wins (as in fio).
    options = {o.key: o.value for o in sorted(opts.values(), key=lambda o: o.line)}
    for name, p in PARAMS.items():
        if name in own:
            continue
        try:
            value = p.read_fio(options)
        except FioOptionError as exc:
            opt = opts.get(exc.option)
            raise Skip(exc.problem, _where(opt) if opt else f"[{job.section}]") from None
        if value is None:
            continue
        if name == "jobs":
            job.numjobs = value  # summed over the sections of one workload
        else:
            job.fixed[name] = value
    engine = (opts["ioengine"].value or "").strip().lower() if "ioengine" in opts else "auto"
    if engine not in ENGINES and "engine" not in own:
        notes.add(UNSUPPORTED, _where(opts["ioengine"]), f"engine {shown(engine)} is not one of iofleet's "
                  f"({', '.join(ENGINES)}); imported as engine: auto")


def _structure(job: _FioJob, opts: dict[str, Option], notes: Notes) -> None:
    """What is not a parameter: time_based, targets, groups, the description."""
    if "time_based" in opts:
        job.timed = _fio_bool(opts["time_based"])
    if "directory" in opts:
        for d in re.split(r"(?<!\\):", opts["directory"].value or ""):
            if d:
                job.dirs.append((d, _where(opts["directory"])))
    if "filename" in opts:
        job.devices += [(d, _where(opts["filename"])) for d in (opts["filename"].value or "").split(":")]
    for kind in TARGET_NAMES:
        given = {k: opts[k].value or "" for k in kind.fio_options if k in opts}
        found = kind.from_fio(given) if given else None
        if found:
            job.kind_target = (kind, *found, _where(opts[next(iter(given))]))
    for key, why in (("offset_increment", "IO offsets are not supported"),
                     ("allow_file_create", "iofleet has no equivalent, so the IO would differ")):
        if key in opts and not job.devices:  # on a device: its layout, noted with the device
            notes.add(UNSUPPORTED, _where(opts[key]), f"not carried over: {why}",
                      "remove it to run this file, or import it and adjust the plan")
    if "stonewall" in opts:
        job.stonewall = _fio_bool(opts["stonewall"])
    if "wait_for" in opts:
        job.stonewall = True
        notes.add(INFO, _where(opts["wait_for"]), "iofleet runs it after every section before it, "
                  "as with stonewall")
    if "description" in opts:
        job.description = one_line(opts["description"].value or "").strip("\"'")[:200]


def import_fio(path: Path, text: str) -> ImportResult:
    src = str(path)
    notes = Notes(src)
    lexed = _lex(text, src, notes)
    own = _own_values(lexed, src)
    groups = _warm_ups(_groups(_jobs(lexed.sections, own, notes)))
    for job in (j for group in groups for j in group):
        job.fixed.update({k: v for k, v in own.items() if k != "jobs"})  # iofleet's own values win
        job.numjobs = own.get("jobs", job.numjobs)
    file_name, name_values = hcibench_name_values(path)
    workloads: list[Workload] = []
    targets: list[str] = []
    sections: dict = {}  # target kinds' plan sections (an RBD image's client: `ceph:`)
    taken: set[str] = set()
    for group in groups:
        for cluster in _clusters(group, notes):
            workloads.append(_fio_workload(cluster, taken, targets, sections, notes))
    for w in workloads:
        if name_values:
            apply_name_values(w, file_name, name_values, notes)
        _fio_defaults(w, notes)
    dirs_per_workload = {tuple(w.dirs) for w in workloads}
    if len(dirs_per_workload) > 1 and targets:
        notes.add(INFO, "directory", f"targets belong to the whole plan in iofleet: every workload runs on "
                  f"{', '.join(targets)}")
    return finish(path, "fio", workloads, targets, notes, sections)


def _jobs(sections: list[Section], own: dict, notes: Notes) -> list[_FioJob]:
    """One job per job section, with the [global] options before it."""
    # Classify every option line once (a [global] option is noted once).
    kept: dict[int, bool] = {}
    for s in sections:
        for o in s.options:
            kept[id(o)] = _fio_classify(o, notes)
    jobs: list[_FioJob] = []
    glob: dict[str, Option] = {}
    for s in sections:
        options = {o.key: o for o in s.options if kept[id(o)]}
        if s.name == "global":
            glob.update(options)
            continue
        # A warm-up group's own runtime is the ramp: the comment's runtime is the measured one's.
        stated = {k: v for k, v in own.items() if k != "runtime" or s.name != WARMUP_JOB}
        jobs.append(_fio_job(s.name, s.line, {**glob, **options}, stated, notes))
    return jobs


def _groups(jobs: list[_FioJob]) -> list[list[_FioJob]]:
    """fio runs every job of a group at the same time; stonewall starts a new group."""
    groups: list[list[_FioJob]] = []
    for j in jobs:
        if not groups or j.stonewall:
            groups.append([])
        groups[-1].append(j)
    return groups


def _warm_ups(groups: list[list[_FioJob]]) -> list[list[_FioJob]]:
    """iofleet's warm-up job group is no workload of its own: its runtime is
    the ramp of the group after it."""
    out: list[list[_FioJob]] = []
    ramp = None
    for i, group in enumerate(groups):
        warm_up = group[0]
        if (len(group) == 1 and warm_up.section == WARMUP_JOB and not warm_up.skip and i + 1 < len(groups)
                and "runtime" in warm_up.fixed):
            ramp = warm_up.fixed["runtime"]
            continue
        if ramp is not None:
            for j in group:
                j.fixed["ramp"] = ramp
            ramp = None
        out.append(group)
    return out


def _clusters(group: list[_FioJob], notes: Notes) -> list[list[_FioJob]]:
    """The jobs of one group with the same IO, each cluster one workload."""
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
    return clusters


def _fio_workload(cluster: list[_FioJob], taken: set, targets: list, sections: dict, notes: Notes) -> Workload:
    first = cluster[0]
    if len(cluster) == 1:
        raw = first.section
    else:
        stems = {re.sub(r"[-_.]?\d+$", "", j.section) for j in cluster}
        raw = stems.pop() if len(stems) == 1 and len(next(iter(stems), "")) >= 2 else first.section
    name = unique(sanitize_name(raw, f"job{len(taken) + 1}"), taken)
    taken.add(name)
    where = f"[{first.section}]" if len(cluster) == 1 else f"[{first.section}]..[{cluster[-1].section}]"
    if name != raw:
        notes.add(INFO, where, f"workload named {name} (plan names use letters, digits, '.', '_', '-')")
    w = Workload(name=name, where=where, fixed=dict(first.fixed), description=first.description)
    jobs = sum(j.numjobs for j in cluster)
    w.fixed["jobs"] = jobs
    if len(cluster) > 1:
        notes.add(INFO, where, f"{len(cluster)} sections with the same IO run at the same time in fio: "
                  f"one workload {name} with jobs={jobs} (numjobs summed), each job with its own file")
    for j in cluster:
        for d, dwhere in j.dirs:
            add_target(d, targets, notes, dwhere)
            if d not in w.dirs:
                w.dirs.append(d)
    for j in cluster:
        if j.kind_target:
            add_kind_target(*j.kind_target, targets, sections, notes)
    devices = [d for j in cluster for d, _ in j.devices]
    if devices:
        listed = ", ".join(devices[:4]) + (", ..." if len(devices) > 4 else "")
        notes.add(INFO, f"{where} filename={listed}", "raw device targets are not carried over; each job "
                  "gets its own file in a target directory", "give --target DIR")
    if any(j.timed is False or (j.timed is None and "runtime" in j.fixed) for j in cluster):
        notes.add(INFO, where, "time_based is not set: fio stops once size is done, or at runtime; iofleet is "
                  "always time based and runs the full runtime")
    return w


def _fio_defaults(w: Workload, notes: Notes) -> None:
    """fio's own defaults for what the job file leaves out."""
    if not w.has("read_pct"):
        w.fixed.update(read_pct=100, random_pct=0)
        notes.add(INFO, w.where, "rw not set: fio's default is a sequential read (read_pct: 100, random_pct: 0)")
    for pname, p in PARAMS.items():
        if p.fio_default is not None:
            w.fixed.setdefault(pname, p.fio_default)
    if not w.has("direct"):
        w.fixed["direct"] = False
        notes.add(INFO, w.where, "direct not set: fio's default is buffered IO; imported as direct: false")
    if not w.has("engine"):
        w.fixed["engine"] = "psync"
        notes.add(INFO, w.where, "ioengine not set: fio's default on Linux is psync; imported as engine: psync")
    if not w.has("runtime"):
        notes.add(INFO, w.where, f"runtime not set: fio runs until size is done; iofleet is time based and "
                  f"uses its default runtime {fmt('runtime', PARAMS['runtime'].default)}", "set runtime")
    if not w.has("size"):
        notes.add(INFO, w.where, f"size not set (or in %): each job's file is iofleet's default "
                  f"{fmt('size', PARAMS['size'].default)}", "set size")
    if not w.has("working_set_pct"):
        w.fixed["working_set_pct"] = 100


