"""Typed test spec → fio job file.

Never glued from user text: only options from the allow-list below can be
written, every value is checked against the character set fio takes as
plain data, and names and paths are re-checked here even though the plan
model already validated them (defence in depth: fio job files can run
commands through options such as exec_prerun, and expand ${VAR}).
"""

import re
from pathlib import Path

from ..errors import FioError
from ..plan.expand import TestSpec
from ..plan.names import NAME_RE, PATH_RE
from ..plan.params import ENGINES, PARAMS, fio_options, params_from_fio
from ..plan.target_kinds import KIND_FIO_OPTIONS, fio_option_kind

# Every option iofleet may write. exec_prerun, exec_postrun, ioscheduler,
# include and anything else not listed can never reach a job file.
ALLOWED_OPTIONS = frozenset(
    """ioengine direct directory filename_format size bs rw rwmixread
    percentage_random iodepth numjobs time_based runtime ramp_time
    lat_percentiles group_reporting log_avg_msec write_iops_log write_bw_log
    write_lat_log per_job_logs log_unix_epoch create_only unlink invalidate
    stonewall buffer_compress_percentage dedupe_percentage
    refill_buffers zero_buffers loops end_fsync filename allow_file_create
    offset offset_increment verify verify_pattern rate rate_iops
    file_append""".split()
) | KIND_FIO_OPTIONS  # each target kind's own (a device's filename, an RBD image's pool, ...)
_TEST_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}\Z")  # \Z: `$` would pass "id\n"
_SAFE_VALUE_RE = re.compile(r"^[A-Za-z0-9_./+@,=~ -]*\Z")
# Data files live in iofleet's own sub-directory of each target (fio creates
# it) and are named by fio's job number, so every test of a run reuses, and
# never duplicates, the same files, on the local host and on fio servers.
DATA_DIR_NAME = "iofleet"
DATA_FILE_FORMAT = DATA_DIR_NAME + "/iofleet-data.$jobnum.$filenum"  # fio's keywords, not user text
PROBE_FILE = DATA_DIR_NAME + "/iofleet-probe"
LOG_PREFIX = "series"
# The warm-up runs as its own fio job group, logged like the measured part
# (fio logs nothing during ramp_time), so the per-second series is whole.
WARMUP_JOB = "iofleet-warmup"
WARMUP_LOG_PREFIX = "warmup"
# The comment line carrying iofleet's own values (see iofleet_line).
IOFLEET_LINE = "; iofleet: "
LOG_INTERVAL_MS = 1000  # one averaged sample per second in each log
# The per-second logs asked of fio: file kind → (iofleet metric, factor from
# fio's unit: the bw log is in KiB/s).
LOG_METRICS = {"iops": ("iops", 1.0), "bw": ("bw_bytes_s", 1024.0), "lat": ("lat_ns", 1.0)}
# What the device check reads: the first MiB must read back as zeros for a
# device to count as blank on a host where blkid cannot be run.
BLANK_CHECK_BYTES = 1024 * 1024


# Where a job's IO goes: job-file options made by the functions below (a
# target kind, fleet/targets/, picks its own).
Where = list[tuple[str, object]]


def _option(key: str, value) -> str:
    if key not in ALLOWED_OPTIONS:
        raise FioError(f"internal: fio option {key!r} is not on iofleet's allow-list")
    if isinstance(value, bool):
        text = "1" if value else "0"
    elif isinstance(value, int):
        text = str(value)
    elif key in KIND_FIO_OPTIONS:
        # Where a target kind's IO goes (fio splits filename at ':'): its kind checks it.
        kind = fio_option_kind(key)
        try:
            text = kind.check_fio(key, value)
        except ValueError:
            raise FioError(f"refused {kind.short} {value!r}: unsafe characters for a fio job file") from None
    elif key == "filename_format" and value in (DATA_FILE_FORMAT, PROBE_FILE):
        text = value  # '$' here is fio's file-name keyword, set by iofleet
    elif key == "ioengine" and (value not in ENGINES or value == "auto"):
        # (ioengine=external:LIB.so would load a library)
        raise FioError(f"refused to write fio option ioengine={value!r}: not one of iofleet's engines")
    elif isinstance(value, str) and _SAFE_VALUE_RE.match(value.replace(":", "") if key == "directory" else value):
        # ':' only ever joins directories that were each checked alone.
        text = value
    else:
        raise FioError(f"refused to write fio option {key}={value!r}: unsafe characters")
    return f"{key}={text}"


def _directory_value(targets: list[Path]) -> str:
    dirs = []
    for d in targets:
        text = str(d)
        if not PATH_RE.match(text) or ":" in text:
            raise FioError(f"refused target path {text!r}: unsafe characters for a fio job file")
        dirs.append(text)
    return ":".join(dirs)  # fio spreads the job files across ':'-separated dirs


def directory_where(targets: list[Path]) -> Where:
    """iofleet's files in the target directories, named by job number."""
    return [("directory", _directory_value(targets)), ("filename_format", DATA_FILE_FORMAT)]


def directory_probe(target: Path, section: str = "probe") -> Where:
    """A probe file of its own in one target directory, removed after."""
    name = PROBE_FILE if section == "probe" else f"{PROBE_FILE}.{section}"
    return [("directory", _directory_value([target])), ("filename_format", name), ("rw", "randrw"),
            ("unlink", True)]  # leaves nothing behind, locally or on a fio server


def device_where(path: str, stride: int = 0) -> Where:
    """A device's regions: job N's starts at N x stride. On a device fio may
    never create a file: a device that is gone must not become a file in /dev."""
    opts: Where = [("filename", path), ("allow_file_create", False)]
    return opts + ([("offset_increment", stride)] if stride else [])


def iofleet_line(spec: TestSpec, engine: str, hosts: int = 1) -> str:
    """The comment that states what the job file's fio options cannot (a
    working set smaller than the file, until: steady and its round, engine:
    auto, a rate shared with other hosts or rounded up per job), or "". Read
    back by the importer, so a job file of `iofleet validate --jobfiles`
    imports as the same test."""
    values = spec.values()
    stated = {name: p.default for name, p in PARAMS.items()}
    stated.update(params_from_fio(dict(fio_options(values | {"engine": engine}, hosts)) | {"runtime": spec.longest_s},
                                 strict=False))  # a value the table refuses (a 512-byte working set) goes in the line
    stated["ramp"] = spec.ramp  # its warm-up job group
    own = {name: PARAMS[name].format(v) for name, v in values.items() if stated.get(name) != v}
    return IOFLEET_LINE + " ".join(f"{name}={text}" for name, text in own.items()) if own else ""


def render_test(spec: TestSpec, where: Where, engine: str, clear_cache: bool = True, hosts: int = 1) -> str:
    """The job file for one test. `engine` is the resolved engine (not auto);
    `hosts`: how many hosts run it at once (they share its rate).

    With a warm-up, two job groups: the warm-up for `ramp` seconds, then
    (stonewall) the measured part. fio starts the second as the first ends
    (a gap of about 0.1 s while the jobs reopen their files)."""
    if not _TEST_ID_RE.match(spec.id) or not NAME_RE.match(spec.workload) or spec.id == WARMUP_JOB:
        raise FioError(f"refused test name {spec.id!r}: unsafe characters for a fio job file")
    if engine not in ENGINES or engine == "auto":
        raise FioError(f"internal: engine {engine!r} must be resolved before rendering")
    common: list[tuple[str, object]] = [
        *where,
        *fio_options(spec.values() | {"engine": engine}, hosts),
        ("time_based", True),
        # Total latency (submission + completion) with its histogram, so
        # percentiles can be merged exactly across jobs and hosts.
        ("lat_percentiles", True),
        ("log_avg_msec", LOG_INTERVAL_MS),
        ("per_job_logs", True),
        # Wall-clock times in the logs, so hosts' series can be lined up
        # (start skew and overlap of a fleet test).
        ("log_unix_epoch", True),
    ]

    def logs(prefix):
        return [("write_iops_log", prefix), ("write_bw_log", prefix), ("write_lat_log", prefix)]

    sections = []
    if spec.ramp:
        sections.append((WARMUP_JOB, [*common, ("runtime", spec.ramp), ("invalidate", clear_cache),
                                      ("group_reporting", False), *logs(WARMUP_LOG_PREFIX)]))
    measured = [*common, ("runtime", spec.longest_s), *logs(LOG_PREFIX)]
    if spec.ramp:
        measured += [("stonewall", True), ("invalidate", False)]  # keep what the warm-up warmed
    else:
        measured.append(("invalidate", clear_cache))
    # until: steady ends when iofleet's own SNIA rule says so (fio/status.py),
    # not by fio's steadystate check, which judges the slope alone, per host.
    measured.append(("group_reporting", False))
    sections.append((spec.id, measured))
    return _render_sections(f"iofleet test {spec.id} (workload {spec.workload})", sections,
                            iofleet_line(spec, engine, hosts))


def render_prepare(tiers: list[tuple[int, int]], where: Where, engine: str, direct: bool,
                   mode: str, passes: int, bs: int, append: bool = False) -> str:
    """Preparation: write the data files sequentially, `passes` times, with
    random (incompressible) data or zeros. `tiers` are (jobs, bytes per
    file) pairs: files 0..jobs-1 get that many bytes (fio names a job's
    files by its clone number, so the tests find exactly these files).
    `append`: each tier's bytes go after each file's end (fio's
    file_append), leaving what the files hold (kept data extended)."""
    if mode not in ("random", "zero"):
        raise FioError(f"internal: preparation mode {mode!r}")
    sections = []
    for i, (jobs, size) in enumerate(tiers):
        options: list[tuple[str, object]] = [
            ("ioengine", engine),
            ("direct", direct),
            *where,
            ("size", size),
            ("numjobs", jobs),
            ("bs", bs),
            ("rw", "write"),
            ("iodepth", 8),
            ("loops", passes),
            ("refill_buffers", True) if mode == "random" else ("zero_buffers", True),
            ("end_fsync", True),
        ]
        if append:
            options.append(("file_append", True))
        if i:
            options.append(("stonewall", True))
        sections.append((f"prepare{i}", options))
    what = "extension" if append else "preparation"
    return _render_sections(f"iofleet {what} ({mode} data, {passes} passes)", sections)


def render_layout(spec: TestSpec, targets: list[Path]) -> str:
    """A job that only creates the data files at their full size, so a test
    whose working set is a part of each file finds the whole file there."""
    options: list[tuple[str, object]] = [
        ("directory", _directory_value(targets)),
        ("filename_format", DATA_FILE_FORMAT),
        ("size", spec.size),
        ("numjobs", spec.jobs),
        ("create_only", True),
    ]
    return _render(f"iofleet layout for {spec.id}", "layout", options)


def render_probe(where: Where, engine: str, direct: bool, section: str = "probe") -> str:
    """A tiny job that checks an engine and direct IO work on a target,
    where the target's probe_where says (a device or image is only read:
    nothing is written before preparation). Another `section` (probes side
    by side in one job file, fleet/check.py) gets a file of its own."""
    where = where if any(k == "rw" for k, _ in where) else [*where, ("rw", "randread")]
    options: list[tuple[str, object]] = [
        ("ioengine", engine),
        ("direct", direct),
        *where,
        ("size", 256 * 1024),
        ("bs", 4096),
        ("iodepth", 2),
        ("runtime", 1),
    ]
    return _render(f"iofleet probe of {engine}", section, options)


def _data_file_reads(targets: list[Path]) -> list[tuple[str, object]]:
    """Each job reads the first 4 KiB of its data file and never creates one
    (a missing file: fio says so and reads nothing), so the bytes read tell
    which files exist, through a fio server too."""
    return [("ioengine", "psync"), ("directory", _directory_value(targets)), ("filename_format", DATA_FILE_FORMAT),
            ("allow_file_create", False), ("rw", "read"), ("bs", 4096), ("size", 4096)]


def render_cleanup(targets: list[Path], jobs: int) -> str:
    """A job that removes iofleet's data files of jobs 0 .. `jobs`-1 (used
    where iofleet cannot remove files itself: on fio servers); each job
    that read 4 KiB had a file there."""
    return _render("iofleet cleanup", "cleanup", [*_data_file_reads(targets), ("numjobs", jobs), ("unlink", True)])


def render_leftover_check(targets: list[Path]) -> str:
    """Read-only: does job 0's data file exist on a host's targets (left by
    a run that could not clean up there)? Section `leftover`."""
    return _render("iofleet leftover check (read-only)", "leftover", _data_file_reads(targets))


def render_target_check(targets: list[Path]) -> str:
    """One tiny write job per target (sections t0, t1, ...), removed after:
    proves each target exists and is writable, through a fio server too."""
    common: list[tuple[str, object]] = [
        ("ioengine", "psync"),
        ("filename_format", PROBE_FILE),
        ("size", 64 * 1024),
        ("bs", 4096),
        ("rw", "write"),
        ("unlink", True),
    ]
    sections = [(f"t{i}", [*common, ("directory", _directory_value([t]))]) for i, t in enumerate(targets)]
    return _render_sections("iofleet target check", sections)


def render_device_check(device: str, needed: int | None) -> str:
    """Read-only checks of a device through a fio server, which can ship no
    data back: section `blank` reads the first MiB and fails (EILSEQ) unless
    it is all zeros (fio's verify_pattern on a read job); section `end`
    reads the last 4 KiB the plan's regions need, and reads nothing when
    the device is smaller (fio stops at a device's end)."""
    common: list[tuple[str, object]] = [("ioengine", "psync"), *device_where(device), ("rw", "read")]
    sections = [("blank", [*common, ("bs", 64 * 1024), ("size", BLANK_CHECK_BYTES), ("verify", "pattern"),
                           ("verify_pattern", 0)])]
    if needed:
        sections.append(("end", [*common, ("bs", 4096), ("size", 4096), ("offset", max(0, needed - 4096))]))
    return _render_sections("iofleet device check (read-only)", sections)


def _render(comment: str, section: str, options: list[tuple[str, object]]) -> str:
    return _render_sections(comment, [(section, options)])


def _render_sections(comment: str, sections: list[tuple[str, list[tuple[str, object]]]], line: str = "") -> str:
    lines = [f"; {comment}".replace("\n", " "), "; generated by iofleet"] + ([line] if line else [])
    for section, options in sections:
        if not _TEST_ID_RE.match(section):
            raise FioError(f"refused job name {section!r}: unsafe characters for a fio job file")
        lines.append(f"[{section}]")
        lines += [_option(k, v) for k, v in options]
    return "\n".join(lines) + "\n"
