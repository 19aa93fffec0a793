"""Easy Run: a sound plan from what the hosts are, with nothing else given.

The rules (docs/easy-run.md gives the reasoning) aim for a result bound by
the storage, not by the client: the jobs × iodepth that a short probe
measured to give the most IOPS (studies.easy_run runs it; this module stays
pure and takes its answer as `Load`), or, without a probe, the old rule of
thumb from the CPU count and the device type; a working set far larger than
any small cache, and tests that end when steady.
"""

from dataclasses import dataclass

from ..errors import IofleetError
from .params import EASY_RUN
from .settings import plan_entries, settings_fields, study_params
from .units import format_bytes, format_duration

GiB = 1024**3
MiB = 1024**2

# The four standard profiles (HCIBench's Easy Run set).
PROFILES = (
    {"name": "rand-read-4k", "description": "4k random, 100 % read", "bs": "4k", "read_pct": 100, "random_pct": 100},
    {"name": "rand-mixed-4k", "description": "4k random, 70 % read", "bs": "4k", "read_pct": 70, "random_pct": 100},
    {"name": "rand-mixed-8k", "description": "8k random, 50 % read", "bs": "8k", "read_pct": 50, "random_pct": 100},
    {"name": "seq-write-256k", "description": "256k sequential, 100 % write", "bs": "256k", "read_pct": 0,
     "random_pct": 0},
)

MAX_JOBS = 8
PROBE_JOBS_UNKNOWN = 4  # most jobs a probe tries when the CPU count is not visible
OUTSTANDING_FLASH = 32  # outstanding IOs per host for random IO on flash (or unknown)
OUTSTANDING_DISK = 8  # on spinning disks, deeper queues only add latency
OUTSTANDING_SEQ = 8  # large sequential writes: a few in flight fill the device
WORKING_SET_SHARE = 0.10  # of the smallest target's free space
WORKING_SET_MIN = 1 * GiB
WORKING_SET_MAX = 32 * GiB
WORKING_SET_UNKNOWN = 4 * GiB


@dataclass
class HostFacts:
    """What Easy Run needs to know of a host; None where it cannot be seen."""

    name: str
    cpus: int | None = None
    memory_bytes: int | None = None
    free_bytes: int | None = None  # the smallest target's free space
    rotational: bool | None = None  # spinning disk under the target


@dataclass
class Load:
    """Jobs × iodepth per host for the random profiles, as a probe measured
    it; `why` says what was measured (one line of the reasons).

    When the probe kept its data for the profiles (studies.easy_run), the
    working set it measured on and why it is that size come with it: the
    profiles take it as it is (the free space now counts the probe's own
    files), and `data` (studies.saturate.SweepData) is what holds it."""

    jobs: int
    iodepth: int
    why: str
    working_set: int | None = None
    working_set_why: str | None = None
    data: object | None = None
    # The probe's run and cells ({jobs, iodepth, iops}), recorded with the profiles' run: its diagnostics
    # never advise what the probe measured to be worse.
    probe_run: int | None = None
    probe_cells: list[dict] | None = None


@dataclass
class Durations(settings_fields("DurationsParams", EASY_RUN,
                                {name: p for name, p in study_params(EASY_RUN).items() if p.kind == "duration"})):
    """Each profile's durations: the table's easy-run rows that are
    durations, with Easy Run's defaults (a fixed `runtime`, or until steady
    when it is None). Its --size, the working set per host, is not a
    duration: it is Easy Run's to size (working_set_of)."""


def working_set_of(facts: list[HostFacts], working_set: int | None = None) -> tuple[int, str]:
    """The working set per host and the reason; an error when it does not
    fit the smallest free space (checked before anything runs)."""
    free = [f.free_bytes for f in facts if f.free_bytes is not None]
    if working_set is not None:
        total = working_set
        reason = f"working set: {format_bytes(total)} per host (given with --size)"
    elif free:
        share = int(min(free) * WORKING_SET_SHARE)
        total = min(max(share, WORKING_SET_MIN), WORKING_SET_MAX)
        reason = (f"working set: {format_bytes(total)} per host ({WORKING_SET_SHARE:.0%} of the smallest "
                  f"free space, {format_bytes(min(free))}, kept within {format_bytes(WORKING_SET_MIN)}–"
                  f"{format_bytes(WORKING_SET_MAX)}); direct IO, so the page cache is not measured")
    else:
        total = WORKING_SET_UNKNOWN
        reason = f"working set: {format_bytes(total)} per host (free space not visible)"
    if free and min(free) < total * 1.1:
        raise IofleetError(f"not enough free space for Easy Run's working set of {format_bytes(total)} per host "
                           f"(smallest free: {format_bytes(min(free))}); free some space or give a smaller --size")
    return total, reason


def probe_max_jobs(facts: list[HostFacts]) -> int:
    """The most jobs per host a probe tries: the smallest host's CPUs (one
    job per CPU can still add IOPS), at most MAX_JOBS."""
    cpus = [f.cpus for f in facts if f.cpus]
    return max(1, min(min(cpus), MAX_JOBS)) if cpus else PROBE_JOBS_UNKNOWN


def file_size(total: int, jobs: int) -> int:
    """Each job's file: the working set split over the jobs, whole MiB."""
    return max(MiB, total // jobs // MiB * MiB)


def rule_of_thumb(facts: list[HostFacts]) -> tuple[int, int, list[str]]:
    """Jobs and iodepth guessed from the CPU count and the device type
    (easy-run --no-probe), with the reasons."""
    reasons = []
    cpus = [f.cpus for f in facts if f.cpus]
    if cpus:
        jobs = max(1, min(min(cpus) // 2, MAX_JOBS))
        reasons.append(f"jobs per host: {jobs} (rule of thumb, not measured: half of the smallest host's "
                       f"{min(cpus)} CPUs, at most {MAX_JOBS}, leaving CPU for the kernel's IO path)")
    else:
        jobs = 2
        reasons.append("jobs per host: 2 (rule of thumb, not measured: CPU count not visible)")
    spinning = any(f.rotational for f in facts)
    outstanding = OUTSTANDING_DISK if spinning else OUTSTANDING_FLASH
    iodepth = max(1, outstanding // jobs)
    kinds = {"spinning disk" if f.rotational else "flash" if f.rotational is False
             else "device type unknown: flash assumed" for f in facts}
    reasons.append(f"iodepth: {iodepth} per job, {iodepth * jobs} outstanding IOs per host for random IO "
                   f"(rule of thumb, not measured: {', '.join(sorted(kinds))})")
    return jobs, iodepth, reasons


def easy_plan(facts: list[HostFacts], targets: list[str], durations: Durations,
              working_set: int | None = None, load: Load | None = None) -> tuple[dict, list[str]]:
    """The plan (plain data for parse_plan) and one line per choice saying why.
    Every host runs the same plan, so the smallest host decides. `load`: the
    jobs × iodepth a probe measured; without it, the rule of thumb."""
    if load is not None:
        jobs, iodepth = load.jobs, load.iodepth
        reasons = [load.why]
    else:
        jobs, iodepth, reasons = rule_of_thumb(facts)
    seq_depth = max(1, OUTSTANDING_SEQ // jobs)
    # Large sequential writes fill a device's bandwidth with a few IOs in
    # flight; probing them too would cost a second probe of writes.
    reasons.append(f"sequential writes: iodepth {seq_depth} per job, {seq_depth * jobs} outstanding IOs per host "
                   f"(fixed: a few large IOs in flight fill a device's bandwidth)")

    kept = load is not None and load.working_set is not None
    total, why_total = (load.working_set, load.working_set_why) if kept else working_set_of(facts, working_set)
    reasons.append(why_total)
    per_file = file_size(total, jobs)
    if kept:
        reasons.append(f"files: {jobs} per host (one per job) of {format_bytes(per_file)}: random data the probe "
                       f"prepared and kept for the profiles, used as it is (or extended at the end where the "
                       f"probe's files were smaller) unless it changed since")
    else:
        reasons.append(f"files: {jobs} per host (one per job) of {format_bytes(per_file)}, "
                       f"prepared with random data before the first profile")

    defaults: dict = {"jobs": jobs, "iodepth": iodepth, "size": per_file, "direct": True,
                      **plan_entries(durations.table_values(), text=False)}
    if durations.runtime is not None:
        reasons.append(f"each profile: {format_duration(durations.ramp)} warm-up, then "
                       f"{format_duration(durations.runtime)} measured (--runtime)")
    else:
        reasons.append(f"each profile: {format_duration(durations.ramp)} warm-up, then until steady (SNIA PTS: "
                       f"5 rounds of {format_duration(durations.round)}), at most "
                       f"{format_duration(durations.max_runtime)}")
    workloads = []
    for profile in PROFILES:
        w = dict(profile)
        if profile["random_pct"] == 0:
            w["iodepth"] = seq_depth
        workloads.append(w)
    plan = {
        "name": "easy-run",
        "description": "Easy Run: the four standard profiles, sized for these hosts",
        "targets": targets,
        "prepare": "random",
        "defaults": defaults,
        "workloads": workloads,
    }
    return plan, reasons
