"""The one table of parameters.

Like fio's own option table (options.c), every parameter is defined once
here: its type, default, limits, help, label and unit, its CSV column, its
part of a test id and its fio option(s) in both directions. Plan validation
(model.py), test specs and matrix expansion (expand.py), job-file rendering
(iofleet.fio.jobfile), the fio job-file importer, ingest of fio outputs, the
CSV export, the web form, `iofleet params` and the parameter reference in
docs/plans.md (reference.py) all walk it, and so do the studies' settings
(Sweep, Curve, Easy Run's Durations: plan/settings.py), the plans they write
and their command-line options (cli/table_options.py): a new parameter, or
a new study setting, is one row here.
"""

from collections.abc import Callable, Mapping
from typing import Any

from .param import CURVE, EASY_RUN, SATURATE, FioOptionError, FioOptions, Param, StudyUse
from .target_kinds import KIND_ENGINES, KIND_ROWS
from .units import format_duration, format_size, whole_number

# Then the engines that drive one target kind only (rbd: an RBD image's, librbd).
ENGINES = ("auto", "io_uring", "libaio", "psync", "posixaio", "sync", *KIND_ENGINES)
# Tried in this order when engine is auto: the first that works on the target.
AUTO_ENGINES = ("io_uring", "libaio", "psync")

# ---- fio options in both directions -----------------------------------

def working_set(values: Mapping) -> int:
    """Bytes of each file that the IO touches, rounded down to whole blocks."""
    ws = values["size"] * values["working_set_pct"] // 100
    return max(values["bs"], ws - ws % values["bs"])


def pattern(random_pct: int) -> str:
    """The access pattern in a test id: rand, seq or randN."""
    return "rand" if random_pct == 100 else "seq" if random_pct == 0 else f"rand{random_pct}"


# fio's rw values → (share of reads or None for a mix, random?)
FIO_RW = {"read": (100, False), "write": (0, False), "randread": (100, True), "randwrite": (0, True),
          "rw": (None, False), "readwrite": (None, False), "randrw": (None, True)}


def _rw_value(values: Mapping) -> str:
    read = values["read_pct"]
    base = "read" if read == 100 else "write" if read == 0 else "rw"
    return f"rand{base}" if values["random_pct"] > 0 else base


def _text(options: FioOptions, key: str) -> str | None:
    """An option's text: None when not given, "" for a bare flag."""
    if key not in options:
        return None
    value = options[key]
    return "" if value is None else str(value).strip()


def _one(options: FioOptions, key: str) -> str | None:
    """A value fio could give per direction (read,write[,trim]): only one."""
    text = _text(options, key)
    if text is None:
        return None
    parts = {p.strip() for p in text.split(",") if p.strip()}
    if len(parts) > 1:
        raise FioOptionError(key, "different values per direction are not supported")
    return parts.pop() if parts else text


def _rw_mode(options: FioOptions) -> tuple[int | None, bool] | None:
    text = _text(options, "rw")
    if text is None:
        text = _text(options, "readwrite")  # fio's other name for it
    if text is None:
        return None
    base = text.lower().partition(":")[0]  # rw=randread:8 : the offset modifier is not carried
    if base not in FIO_RW:
        raise FioOptionError("rw", "only read, write, randread, randwrite, rw and randrw are supported")
    return FIO_RW[base]


def _read_pct_from_fio(options: FioOptions):
    mode = _rw_mode(options)
    if mode is None:
        return None
    if mode[0] is not None:
        return mode[0]
    if "rwmixread" in options:
        return _one(options, "rwmixread")
    if "rwmixwrite" in options:
        write = _one(options, "rwmixwrite")
        return 100 - whole_number(write) if whole_number(write) is not None else write
    return 50  # fio's default mix


def _random_pct_from_fio(options: FioOptions):
    mode = _rw_mode(options)
    if mode is None:
        return None
    if not mode[1]:
        return 0
    if "percentage_random" in options:
        return _one(options, "percentage_random")
    if "percentage_sequential" in options:
        seq = _one(options, "percentage_sequential")
        return 100 - whole_number(seq) if whole_number(seq) is not None else seq
    return 100


def _size_from_fio(options: FioOptions):
    text = _one(options, "size")
    return None if text is None or text.endswith("%") else text


def _working_set_from_fio(options: FioOptions):
    text = _one(options, "size")
    return text if text is not None and text.endswith("%") else None


def _flag(options: FioOptions, key: str) -> bool | None:
    text = _text(options, key)
    if text is None:
        return None
    if text.lower() in ("", "1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise FioOptionError(key, "expected 0 or 1")


def _direct_from_fio(options: FioOptions):
    # The later of direct= and buffered= wins, as in fio.
    key = next((k for k in reversed(list(options)) if k in ("direct", "buffered")), None)
    if key is None:
        return None
    flag = _flag(options, key)
    return flag if key == "direct" else not flag


def _engine_from_fio(options: FioOptions):
    text = _text(options, "ioengine")
    if text is None:
        return None
    return text.lower() if text.lower() in ENGINES else "auto"  # the importer says what it replaced


# ---- rates ---------------------------------------------------------------
# A rate is the test's total over every host and job. fio's rate options cap
# each job, and a single value caps reads and writes EACH (a 70 % read mix at
# rate_iops=100 does 100 reads and 100 writes a second), so the total is split
# evenly over hosts × jobs, rounded up per job, then by read_pct into
# `rate_iops=R,W` (fio then follows the two rates, not rwmixread).
MB = 10**6  # MB/s is 10^6 bytes/s, as everywhere in iofleet
RATE_OPTIONS = {"rate_iops": ("rate_iops", 1), "rate_mbps": ("rate", MB)}  # parameter → (fio option, unit)


def job_rate(total: int, hosts: int, jobs: int, read_pct: int) -> tuple[int, int]:
    """(reads, writes) per second of one job for a test's total rate. A mix
    gets at least 1 each way: fio takes a direction's 0 as no cap at all."""
    per_job = -(-total // (hosts * jobs))  # rounded up
    if read_pct == 100:
        return per_job, 0
    if read_pct == 0:
        return 0, per_job
    per_job = max(per_job, 2)
    reads = min(max(1, (per_job * read_pct + 50) // 100), per_job - 1)
    return reads, per_job - reads


def fio_rate(values: Mapping, name: str, hosts: int = 1) -> int | None:
    """What the test asks of fio in all, in IOPS or bytes/s: the plan's
    value, or more where it does not divide evenly; None: no such rate."""
    if values.get(name) is None:
        return None
    return sum(job_rate(values[name] * RATE_OPTIONS[name][1], hosts, values["jobs"], values["read_pct"])) \
        * hosts * values["jobs"]


def rate_note(values: Mapping, hosts: int = 1) -> str | None:
    """A line saying how a rate that does not divide evenly was rounded, or None."""
    for name, (_, unit) in RATE_OPTIONS.items():
        real = fio_rate(values, name, hosts)
        if real is None or real == values[name] * unit:
            continue
        reads, writes = job_rate(values[name] * unit, hosts, values["jobs"], values["read_pct"])
        what = "IOPS" if unit == 1 else "bytes/s"
        split = f"{reads}+{writes} {what} (reads+writes)" if reads and writes else f"{reads + writes} {what}"
        over = f"{hosts} hosts × {values['jobs']} jobs" if hosts > 1 else f"{values['jobs']} jobs"
        in_all = f"{real} IOPS" if unit == 1 else f"{real / unit:f}".rstrip("0") + " MB/s"
        return f"{name} {values[name]} over {over} is {split} per job: {in_all} in all (rounded up per job)"
    return None


def _rate_to_fio(name: str) -> Callable[[Mapping], list]:
    option, unit = RATE_OPTIONS[name]

    def to_fio(values: Mapping) -> list:
        if values.get(name) is None:
            return []
        reads, writes = job_rate(values[name] * unit, values.get("hosts", 1), values["jobs"], values["read_pct"])
        return [(option, f"{reads},{writes}" if reads and writes else str(reads or writes))]
    return to_fio


def _rate_from_fio(name: str) -> Callable[[FioOptions], Any]:
    """The test's total (one host) from a job's `rate_iops=R[,W]` and numjobs.
    A single value on a read/write mix caps each way: twice that in all, and
    fio then runs reads and writes 50/50 whatever rwmixread says, so rates
    that are not in the mix's ratio are refused (iofleet could not run that IO)."""
    option, unit = RATE_OPTIONS[name]

    def from_fio(options: FioOptions):
        text = _text(options, option)
        if text is None:
            return None
        parts = [p.strip() for p in text.split(",")]
        if len(parts) > 2 or not all(whole_number(p) is not None for p in parts if p):
            raise FioOptionError(option, "expected whole numbers: one value, or reads,writes (no suffixes, no trims)")
        per_way = [whole_number(p) if p else 0 for p in parts]
        mode = _rw_mode(options) or (100, True)
        if len(per_way) == 1:
            per_way *= 1 if mode[0] in (0, 100) else 2
        elif mode[0] in (0, 100):
            per_way = [per_way[0 if mode[0] == 100 else 1]]  # the other way does no IO
        if 0 in per_way and len(per_way) == 2:
            raise FioOptionError(option, "a rate on one way of a read/write mix leaves the other uncapped")
        read_pct = _read_pct_from_fio(options) if len(per_way) == 2 else None
        if read_pct is not None and whole_number(str(read_pct)) is not None and \
                abs(per_way[0] - sum(per_way) * int(read_pct) / 100) > 1:
            raise FioOptionError(option, f"reads {per_way[0]}, writes {per_way[1]} a second: fio follows these rates, "
                                 f"not the {read_pct}/{100 - int(read_pct)} read/write mix; give reads,writes in the "
                                 f"mix's ratio, e.g. {option}={sum(per_way) * int(read_pct) // 100},"
                                 f"{sum(per_way) - sum(per_way) * int(read_pct) // 100}")
        jobs = _one(options, "numjobs") or "1"
        total = sum(per_way) * (whole_number(jobs) if whole_number(jobs) is not None else 1)
        if total % unit:
            raise FioOptionError(option, f"{total} bytes/s in all is not a whole number of MB/s (10^6 bytes/s)")
        return total // unit
    return from_fio


def _rate_id(name: str, short: str) -> Callable[[Any], str]:
    return lambda v: f"{short}{v}" if v is not None else f"{short}max"


# A setting of the saturate sweep that a curve offers too (the option sets the curve's sweep).
_SWEPT = {SATURATE: StudyUse(), CURVE: StudyUse()}


def _same(name: str, key: str, only_if_set: bool = False) -> dict:
    """A parameter that is one fio option of the same value (written only
    when not 0, if `only_if_set`)."""
    return {"to_fio": lambda values: [(key, values[name])] if values[name] or not only_if_set else [],
            "from_fio": lambda options: _one(options, key), "fio_keys": (key,)}


PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("bs", "size", 4096, "block size of each IO (a multiple of 512 bytes)", "bs",
              minimum=512, maximum=128 * 1024**2, in_table=True, label="bs", unit="bytes", column="bs_bytes",
              fio_default=4096, studies=_SWEPT, **_same("bs", "bs")),
        Param("read_pct", "pct", 100, "share of IOs that are reads (0 = all writes)",
              "rw, rwmixread", minimum=0, maximum=100, in_table=True, label="read %", unit="%", column="read_pct",
              to_fio=lambda v: [("rw", _rw_value(v))] + ([("rwmixread", v["read_pct"])]
                                                         if 0 < v["read_pct"] < 100 else []),
              from_fio=_read_pct_from_fio, fio_keys=("rw", "rwmixread", "rwmixwrite"), studies=_SWEPT),
        Param("random_pct", "pct", 100, "share of IOs at random offsets (0 = sequential)",
              "rw, percentage_random", minimum=0, maximum=100, in_table=True, label="random %", unit="%", column="random_pct",
              to_fio=lambda v: [("percentage_random", v["random_pct"])] if 0 < v["random_pct"] < 100 else [],
              from_fio=_random_pct_from_fio, fio_keys=("rw", "percentage_random", "percentage_sequential"),
              studies=_SWEPT),
        Param("iodepth", "int", 1, "outstanding IOs per job (queue depth)", "iodepth",
              minimum=1, maximum=4096, in_table=True, label="iodepth", column="iodepth", fio_default=1,
              **_same("iodepth", "iodepth")),
        Param("jobs", "int", 1, "parallel jobs (HCIBench's \"threads\"), each with its own file", "numjobs",
              minimum=1, maximum=1024, in_table=True, label="jobs", column="jobs",
              **_same("jobs", "numjobs")),
        Param("size", "size", 1024**3, "size of each job's data file (on a device: its region)", "size",
              minimum=4096, maximum=1024**5, in_table=True, label="size", unit="bytes", column="size_bytes",
              id_part=lambda v: f"sz{format_size(v)}",
              # fio's size is the IO's region: the working set (the layout job makes the whole file)
              to_fio=lambda v: [("size", working_set(v))], from_fio=_size_from_fio, fio_keys=("size",),
              studies={**_SWEPT, EASY_RUN: StudyUse("Working set per host (default: 10% of free space, 1–32 GiB).",
                                                    default=None)}),
        Param("working_set_pct", "pct", 100, "share of each file that the IO touches",
              "size (of the file region)", minimum=1, maximum=100, label="working set %", unit="%",
              column="working_set_pct", id_part=lambda v: f"ws{v}", from_fio=_working_set_from_fio,
              fio_keys=("size",)),
        Param("runtime", "duration", 60, "measured time, after the warm-up",
              "runtime, time_based", minimum=1, maximum=30 * 86400, in_table=True, label="runtime", unit="s",
              column="runtime_s", id_part=lambda v: f"rt{format_duration(v)}",
              from_fio=lambda o: _one(o, "runtime"), fio_keys=("runtime",),  # rendered per job group (jobfile.py)
              studies={
                  SATURATE: StudyUse("Measure each cell this fixed time instead.", default=None),
                  # p99.9 needs thousands of IOs even at 10 % load
                  CURVE: StudyUse("Each point's measured time (given: each sweep cell's too, fixed instead of "
                                  "until steady).", default=10),
                  EASY_RUN: StudyUse("Measure each profile this long instead of until steady.", default=None)}),
        Param("ramp", "duration", 10, "warm-up before measuring; logged, excluded from every figure",
              "runtime of a warm-up job group", minimum=0, maximum=86400, in_table=True, label="ramp", unit="s",
              column="ramp_s", id_part=lambda v: f"ramp{format_duration(v)}",
              # (iofleet's own job files: the runtime of its warm-up group; the importer reads that)
              from_fio=lambda o: _one(o, "ramp_time"), fio_keys=("ramp_time",), fio_default=0, studies={
                  SATURATE: StudyUse("Warm-up of each cell.", default=1),
                  CURVE: StudyUse("Warm-up of each point (given: of each sweep cell too).", default=2),
                  EASY_RUN: StudyUse("Warm-up of each profile.", default=60)}),
        Param("engine", "choice", "auto",
              "IO engine; auto = first of io_uring, libaio, psync that works",
              "ioengine", choices=ENGINES, in_table=True, label="engine", column="engine", id_part=str,
              to_fio=lambda v: [("ioengine", v["engine"])], from_fio=_engine_from_fio,
              fio_keys=("ioengine",), studies={
                  # Not io_uring: fio 3.33's io_uring engine inflates latency at iodepths
                  # that are not powers of two, which bisection measures (docs/saturate.md).
                  SATURATE: StudyUse("fio IO engine (see docs/saturate.md for why not io_uring).", default="libaio"),
                  CURVE: StudyUse("fio IO engine.")}),
        Param("direct", "bool", True, "bypass the page cache (O_DIRECT)", "direct", label="direct",
              column="direct", id_part=lambda v: "direct" if v else "buffered",
              to_fio=lambda v: [("direct", v["direct"])], from_fio=_direct_from_fio,
              fio_keys=("direct", "buffered"), studies={SATURATE: StudyUse(False)}),
        Param("compress_pct", "pct", 0, "how compressible written data is (0 = not at all)",
              "buffer_compress_percentage", minimum=0, maximum=100, label="compress %", unit="%",
              column="compress_pct", id_part=lambda v: f"cmp{v}",
              **_same("compress_pct", "buffer_compress_percentage", True)),
        Param("dedupe_pct", "pct", 0, "share of written blocks that are duplicates",
              "dedupe_percentage", minimum=0, maximum=100, label="dedupe %", unit="%", column="dedupe_pct",
              id_part=lambda v: f"dd{v}",
              **_same("dedupe_pct", "dedupe_percentage", True)),
        Param("rate_iops", "int", None,
              "the test's total IOPS (all hosts and jobs), split evenly over them and by read_pct; "
              "none = as fast as it goes", "rate_iops (reads,writes per job)", minimum=1, maximum=10**8,
              label="rate IOPS", column="rate_iops", id_part=_rate_id("rate_iops", "iops"),
              to_fio=_rate_to_fio("rate_iops"), from_fio=_rate_from_fio("rate_iops"),
              fio_keys=("rate_iops",)),
        Param("rate_mbps", "int", None,
              "the test's total MB/s (10^6 bytes/s; all hosts and jobs), split like rate_iops; "
              "none = as fast as it goes", "rate (bytes/s, reads,writes per job)", minimum=1, maximum=10**6,
              label="rate MB/s", unit="MB/s", column="rate_mb_s", id_part=_rate_id("rate_mbps", "mbps"),
              to_fio=_rate_to_fio("rate_mbps"), from_fio=_rate_from_fio("rate_mbps"),
              fio_keys=("rate",)),
        *KIND_ROWS,  # each target kind's own (target_kinds/), e.g. rbd_cache
        Param("until", "choice", "time",
              "time = measure for `runtime`; steady = stop once steady (SNIA PTS), at most `max_runtime`",
              "(iofleet: its own SNIA rule ends the test)", choices=("time", "steady"), in_matrix=False,
              label="until", column="until", id_part=str),
        Param("max_runtime", "duration", 3600, "with until: steady, the longest a test may measure",
              "runtime", minimum=1, maximum=30 * 86400, in_matrix=False, label="max runtime", unit="s",
              column="max_runtime_s", studies={
                  # A sweep's cells are short on purpose, unlike a plan's tests: a sweep runs dozens of them.
                  SATURATE: StudyUse("The longest a cell measures when not steady.", default=10),
                  EASY_RUN: StudyUse("Longest a profile may measure.", default=30 * 60)}),
        Param("round", "duration", 60, "steady state: length of one round (5 rounds = the window)",
              "status_interval (snapshots each round)", minimum=1, maximum=86400, in_matrix=False,
              label="round", unit="s", column="round_s", studies={
                  SATURATE: StudyUse("Each cell measures until steady: 5 rounds of this.", default=1),
                  EASY_RUN: StudyUse("Steady-state round (5 rounds = window).", default=60)}),
        Param("repeat", "int", 1, "how many times each test runs", "(iofleet)",
              minimum=1, maximum=1000, in_matrix=False, label="repeats"),
    )
}

MATRIX_PARAMS = tuple(name for name, p in PARAMS.items() if p.in_matrix)
# What each IO is: a saturate sweep's IO, which its curve keeps.
IO_PARAMS = ("bs", "read_pct", "random_pct")
# What every test id shows, in this order (the rest only when a plan varies it).
ID_BASE = (*IO_PARAMS, "jobs", "iodepth")
# How a test ends, as a plan and a study's record state it: its `until`, then
# the durations that count for it (the rows' `until`).
UNTIL = {"time": ("runtime",), "steady": ("round", "max_runtime")}
# The parameters of one test (the `repeat` row is how many tests, not one's value).
SPEC_PARAMS = tuple(name for name in PARAMS if name != "repeat")

# Steady state (SNIA PTS): a window of this many rounds, whose rounds may
# differ by this share of the window's average (data excursion), and whose
# fitted line may change by this share across the window (slope excursion).
STEADY_WINDOW_ROUNDS = 5
STEADY_DATA_PCT = 20.0
STEADY_SLOPE_PCT = 10.0


def base_id(values: Mapping) -> str:
    """The part of a test id every test has: 4k-r70-rand-j1-qd16."""
    return (f"{format_size(values['bs'])}-r{values['read_pct']}-{pattern(values['random_pct'])}"
            f"-j{values['jobs']}-qd{values['iodepth']}")


def fio_options(values: Mapping, hosts: int = 1) -> list[tuple[str, Any]]:
    """The fio options a test's values become, in table order (runtime and
    ramp are job groups: the job file places them). `hosts`: how many hosts
    run the test at once (a rate is the test's total, shared by them)."""
    values = {**values, "hosts": hosts}
    return [option for p in PARAMS.values() if p.to_fio for option in p.to_fio(values)]


def params_from_fio(options: FioOptions, strict: bool = True) -> dict:
    """The parameters fio options state, validated. `strict`: a value iofleet
    cannot take raises FioOptionError; otherwise it is left out."""
    found = {}
    for name, p in PARAMS.items():
        try:
            value = p.read_fio(options)
        except FioOptionError:
            if strict:
                raise
            continue
        if value is not None:
            found[name] = value
    return found


# Settings of a whole run (plan top level), documented by `iofleet params`
# like the workload parameters above.
RUN_PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("prepare", "choice", "random",
              "before the first test, write every working set sequentially: random data, zeros, or none",
              "rw=write, refill_buffers | zero_buffers", choices=("random", "zero", "none"), in_matrix=False,
              studies={study: StudyUse("Write the files first: random, zero or none.") for study in _SWEPT}),
        Param("prepare_passes", "int", 2, "how many times preparation writes the working set", "loops",
              minimum=1, maximum=10, in_matrix=False),
        Param("prepare_bs", "size", 128 * 1024, "block size of the preparation writes", "bs",
              minimum=4096, maximum=16 * 1024**2, in_matrix=False),
        Param("clear_cache", "bool", True,
              "before each test: drop the page cache of iofleet's files and, as root, the kernel caches",
              "invalidate (+ /proc/sys/vm/drop_caches)", in_matrix=False, recorded=True),
        Param("cache_size", "size", None,
              "cache in front of the storage per host (e.g. an HCI cache tier): says cache or capacity test",
              "(iofleet)", minimum=0, maximum=1024**6, in_matrix=False),
        Param("measure", "choice", "capacity",
              "what the plan means to measure: the storage behind every cache (capacity) or a cache; "
              "the diagnostics warn when the working set says otherwise", "(iofleet)",
              choices=("capacity", "cache"), in_matrix=False, recorded=True),
        Param("percentile", "choice", "p99",
              "the latency percentile the plan asks about: shown in the summary beside p95, and checked "
              "against the IO count (enough IOs beyond it to be meaningful)", "lat_percentiles",
              choices=("p90", "p95", "p99", "p99.9"), in_matrix=False, recorded=True),
        Param("keep_files", "bool", False, "keep iofleet's data files after the run (a later run reuses them)",
              "(iofleet)", in_matrix=False),
        Param("reuse_data", "bool", True,
              "use data a run kept (keep_files) as that run's tests left it, instead of preparing it again, "
              "where the preparation would be the same; false: prepare it again", "(iofleet)", in_matrix=False),
        Param("on_error", "choice", "continue", "what a failed test does to the run: go on, or stop it",
              "(iofleet)", choices=("continue", "stop"), in_matrix=False),
        Param("on_host_loss", "choice", "continue",
              "a host lost during a test (its fio server gone): go on without it, or stop the run",
              "(iofleet)", choices=("continue", "stop"), in_matrix=False),
        Param("mixed", "bool", False,
              "run the workloads at the same time, each on its own host group (its `hosts:` labels)",
              "(iofleet)", in_matrix=False),
    )
}
