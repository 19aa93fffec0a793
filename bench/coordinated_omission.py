"""Coordinated omission, measured: a fixed-rate fio load (rate_iops, 70 % reads,
4k random, libaio iodepth 4, direct) on a loop device's ext4, its disk stalled
(blkio throttle at 1 byte/s) or slowed to 20 % of the rate for a while, with
every IO logged. Compares fio's latency (from issue) with each IO's wait from
its slot in fio's rate schedule, and both with what iofleet can know from
fio's status snapshots alone (bench/schedule_bounds.py). Root: it makes (and
removes) a loop device and a blkio cgroup. Writes its section of BENCHMARKS.md.

    make bench                      # or, as root:
    .venv/bin/python bench/coordinated_omission.py [--runtime 15] [--at 5] [--for 5] [--rate 1000]
    .venv/bin/python bench/coordinated_omission.py --record DIR [--jobs 1] [--runtime 12] ...

--record runs the first case only and keeps fio's output (stdout), job file,
per-IO logs and the fault's times in DIR (a unit-test fixture).

Per-IO truth. fio 3.33 logs no intended time, but its linear rate schedule is
known (backend.c usec_for_io): a job's n-th IO of a direction (n from 0) is
due n / rate after the job's start and never issued earlier. `write_iolog`
logs each IO as fio issues it (µs, in issue order), the latency log
(`log_avg_msec=0`, `log_offset=1`) each IO's latency; the two are matched by
direction and offset, in order. An IO's wait from its slot is then its issue
time + its latency − its slot, the jobs' start on the iolog's clock being
where the earliest IO was issued relative to its slot (fio's sleep overshoots
by ~0.06 ms, so the truth carries that too). Jobs are separate job sections
(`write_iolog` has no per-job file name), each with its share of the rate as
numjobs would give it. With rate_process=poisson the slots are random and not
logged: no truth there.
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import BENCHMARKS, command_line, fio_version, machine, progress, write_section  # noqa: E402
from bench.schedule_bounds import (  # noqa: E402
    backlog_drained_s, behind_schedule, schedule_lag, slot_waits, status_times, wait_percentiles_ms,
)
from iofleet.fio.parse import DocumentSplitter  # noqa: E402
from iofleet.fio.status import snapshot  # noqa: E402
from iofleet.plan.params import job_rate  # noqa: E402

SECTION = "## Coordinated omission: latency from the rate schedule"
BLKIO = Path("/sys/fs/cgroup/blkio")
READ_PCT = 70
SLOW_SHARE = 0.2  # the slowed disk does this share of the rate
DIRECTIONS = ("read", "write")


@dataclass
class Case:
    name: str
    jobs: int
    fault: str  # "stall" (1 byte/s) or "slow" (SLOW_SHARE of the rate, in IOPS)
    process: str = "linear"


CASES = [
    Case("stall, 1 job", 1, "stall"),
    Case("stall, 2 jobs", 2, "stall"),
    Case("20 %, 1 job", 1, "slow"),
    Case("20 %, 2 jobs", 2, "slow"),
    Case("stall, 1 job, poisson", 1, "stall", "poisson"),
]


# ---------------------------------------------------------------- the place


@contextmanager
def loop_ext4(work: Path, size_mib: int = 256):
    """An ext4 on a loop device over a sparse file in `work`: (mount point, device)."""
    image, mnt = work / "disk.img", work / "mnt"
    with open(image, "wb") as f:
        f.truncate(size_mib << 20)
    dev = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True,
                         text=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
        mnt.mkdir()
        subprocess.run(["mount", dev, str(mnt)], check=True)
        try:
            yield mnt, dev
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)
        image.unlink()


def process_tree(pid: int) -> list[int]:
    """A process and its descendants (fio's job processes are forked from it)."""
    out = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            out += process_tree(int(child))
    return out


@contextmanager
def blkio_throttle(dev: str, pid: int, limits: dict[str, int]):
    """fio's processes (pid and its children) in a blkio cgroup of their own with
    `limits` (throttle file → value) on `dev`; undone (limits lifted, processes
    moved back, cgroup removed) on the way out. Yields the monotonic time the
    fault began; the block's caller notes when it ends."""
    rdev = os.stat(dev).st_rdev
    device = f"{os.major(rdev)}:{os.minor(rdev)}"
    group = BLKIO / f"iofleet-bench-co-{os.getpid()}"
    group.mkdir()
    try:
        for name, value in limits.items():
            (group / f"blkio.throttle.{name}").write_text(f"{device} {value}\n")
        for p in process_tree(pid):
            (group / "cgroup.procs").write_text(f"{p}\n")
        yield
    finally:
        for name in limits:
            (group / f"blkio.throttle.{name}").write_text(f"{device} 0\n")
        for p in (group / "cgroup.procs").read_text().split():
            try:
                (BLKIO / "cgroup.procs").write_text(f"{p}\n")
            except ProcessLookupError:
                pass  # ended meanwhile
        group.rmdir()


# ---------------------------------------------------------------- one run


def job_file(case: Case, a, mnt: Path, out: Path) -> tuple[str, tuple[int, int]]:
    """The job file (one section per job, each with its own iolog) and each
    job's (reads, writes) per second."""
    rates = job_rate(a.rate, 1, case.jobs, READ_PCT)
    lines = ["[global]", "ioengine=libaio", "direct=1", "bs=4k", "rw=randrw", f"rwmixread={READ_PCT}",
             "iodepth=4", "size=32m", f"directory={mnt}", "time_based=1", f"runtime={a.runtime}",
             f"rate_iops={rates[0]},{rates[1]}", f"rate_process={case.process}", "lat_percentiles=1",
             "log_avg_msec=0", "log_offset=1", "per_job_logs=1"]
    for j in range(1, case.jobs + 1):
        lines += [f"[load{j}]", f"filename=co.{j}", f"write_lat_log={out}/load{j}", f"write_iolog={out}/load{j}.iolog"]
    return "\n".join(lines) + "\n", rates


@dataclass
class Run:
    case: Case
    out: Path
    rates: tuple[int, int]  # per job
    docs: list[dict]
    stdout: str
    fault_s: tuple[float, float]  # on fio's clock
    snapshots_in_fault: int


def run_case(case: Case, a, mnt: Path, dev: str, out: Path) -> Run:
    out.mkdir(parents=True, exist_ok=True)
    text, rates = job_file(case, a, mnt, out)
    (out / "job.fio").write_text(text)
    child = subprocess.Popen(["fio", str(out / "job.fio"), "--status-interval=1", "--output-format=json+"],
                             stdout=subprocess.PIPE, text=True)
    docs, lines, started = [], [], threading.Event()

    def read():
        splitter = DocumentSplitter()
        for line in child.stdout:
            lines.append(line)
            for d in splitter.feed(line):
                docs.append(json.loads(d))
                if snapshot(docs[-1]["jobs"]) is not None:
                    started.set()
    reader = threading.Thread(target=read)
    reader.start()
    try:
        if not started.wait(30):
            raise SystemExit("fio reported no IO within 30 s")
        first = next(d for d in docs if snapshot(d["jobs"]) is not None)
        start_ms = first["timestamp_ms"] - snapshot(first["jobs"]).t_ms  # the jobs' start, wall clock
        time.sleep(max(0.0, (start_ms / 1e3 + a.at) - time.time()))
        if case.fault == "stall":
            limits = {"read_bps_device": 1, "write_bps_device": 1}
        else:
            limits = {"read_iops_device": max(1, round(SLOW_SHARE * rates[0] * case.jobs)),
                      "write_iops_device": max(1, round(SLOW_SHARE * rates[1] * case.jobs))}
        with blkio_throttle(dev, child.pid, limits):
            began = time.time()
            before = len(docs)
            time.sleep(max(0.0, began + a.fault_for - time.time()))
            ended = time.time()
            during = len(docs) - before
    except BaseException:
        child.kill()  # our fio: not left running its load after a failure or Ctrl-C
        raise
    finally:
        child.wait()
        reader.join()
    if child.returncode:
        raise SystemExit(f"fio failed (exit {child.returncode}); its output is in {out}")
    return Run(case, out, rates, docs, "".join(lines), (began - start_ms / 1e3, ended - start_ms / 1e3), during)


# ---------------------------------------------------------------- per-IO truth


def per_io(out: Path, job: int, rates: tuple[int, int]) -> dict[str, dict[str, np.ndarray]]:
    """One job's IOs per direction, in issue order: due (s from the job's start),
    fio's latency (s), wait from the slot (s), completion (s)."""
    issued: dict[str, list[tuple[int, int]]] = {d: [] for d in DIRECTIONS}
    for line in open(out / f"load{job}.iolog"):
        f = line.split()
        if len(f) == 5 and f[2] in DIRECTIONS:  # usec file direction offset length
            issued[f[2]].append((int(f[0]), int(f[3])))
    latency: dict[str, dict[int, deque]] = {d: defaultdict(deque) for d in DIRECTIONS}
    (lat_log,) = out.glob(f"load{job}_lat.*.log")
    for line in open(lat_log):
        logged_ms, value, ddir, _, offset, *_ = (int(x) for x in line.split(","))
        latency[DIRECTIONS[ddir]][offset].append((value, logged_ms))
    result = {}
    for i, d in enumerate(DIRECTIONS):
        queue = latency[d]
        pairs = np.array([queue[off].popleft() if queue[off] else (np.nan, np.nan) for _, off in issued[d]])
        lat, logged_ms = pairs[:, 0] / 1e9, pairs[:, 1]
        issue = np.array([us for us, _ in issued[d]], dtype=float) / 1e6
        due = np.arange(len(issue)) / rates[i]
        start = np.min(issue - due)  # the job's start on the iolog's clock: no IO is issued before its slot
        done = ~np.isnan(lat)  # the last IOs may end without a latency (the job's end)
        completion = issue + lat - start
        result[d] = {"due": due[done], "fio": lat[done], "wait": (completion - due)[done],
                     "completion": completion[done],
                     # fio logs each latency at its completion, in whole ms since the job's start
                     "clock_error_ms": (completion * 1e3 - logged_ms)[done],
                     "unmatched": np.array([np.count_nonzero(~done) + sum(len(q) for q in queue.values())])}
    return result


def truth(run: Run) -> dict[str, dict[str, np.ndarray]]:
    """Every job's IOs per direction, as per_io gives them."""
    jobs = [per_io(run.out, j, run.rates) for j in range(1, run.case.jobs + 1)]
    return {d: {k: np.concatenate([j[d][k] for j in jobs]) for k in jobs[0][d]} for d in DIRECTIONS}


# ---------------------------------------------------------------- what the snapshots give


def snapshot_series(docs: list[dict]) -> tuple[list[float], dict[str, list[int]], list]:
    """(times, completed IOs per direction, snapshots) of the documents with measured IO."""
    times = status_times(docs)
    snaps = [snapshot(d["jobs"]) for d in docs]
    kept = [(t, s) for t, s in zip(times, snaps) if s is not None]
    return ([t for t, _ in kept], {d: [getattr(s, d).lat_n for _, s in kept] for d in DIRECTIONS},
            [s for _, s in kept])


def fio_plus_lag(times: list[float], completed: dict[str, list[int]], snaps: list, rates: dict[str, int],
                 from_s: float, to_s: float) -> np.ndarray:
    """The per-second estimate: each interval's mean fio latency plus the
    schedule lag at its end, for every slot completed in it (slot order)."""
    out = []
    for d in DIRECTIONS:
        lag = schedule_lag(times, completed[d], rates[d])
        c_prev, n_prev, sum_prev = 0, 0, 0.0
        for t, c, s, behind in zip(times, completed[d], snaps, lag):
            totals = getattr(s, d)
            n, total_ns = totals.lat_n - n_prev, totals.lat_sum_ns - sum_prev
            mean = total_ns / n / 1e9 if n else 0.0
            due = np.arange(c_prev, c) / rates[d]
            out.append(np.full(np.count_nonzero((due >= from_s) & (due < to_s)), behind + mean))
            c_prev, n_prev, sum_prev = c, totals.lat_n, totals.lat_sum_ns
    return np.concatenate(out)


# ---------------------------------------------------------------- figures


def ms3(p: dict) -> str:
    """'p50 / p99 / max' in ms, three significant figures."""
    return " / ".join("–" if p[k] is None else f"{p[k]:.3g}" if p[k] < 100 else f"{p[k]:,.0f}"
                      for k in ("p50", "p99", "max"))


def peak_iops(completions: np.ndarray, after_s: float, window_s: float = 0.01) -> float:
    """The most IOs completed in any `window_s` after `after_s`, as IOPS."""
    c = np.sort(completions[completions >= after_s])
    if not len(c):
        return 0.0
    ends = np.searchsorted(c, c + window_s, side="right")
    return float((ends - np.arange(len(c))).max()) / window_s


def figures(run: Run) -> dict:
    jobs = run.case.jobs
    rates = {d: run.rates[i] * jobs for i, d in enumerate(DIRECTIONS)}  # the host's schedule per direction
    times, completed, snaps = snapshot_series(run.docs)
    waits = [slot_waits(times, completed[d], rates[d]) for d in DIRECTIONS]
    a, b = run.fault_s
    linear = run.case.process == "linear"
    real = truth(run)
    rows = {}
    for span, (lo, hi) in (("whole run", (0.0, float("inf"))), ("due in the fault", (a, b))):
        chosen = {d: (real[d]["due"] >= lo) & (real[d]["due"] < hi) for d in DIRECTIONS}
        both = {k: np.concatenate([real[d][k][chosen[d]] for d in DIRECTIONS]) for k in ("fio", "wait")}
        est = behind_schedule(waits, lo, hi)
        rows[span] = {
            "ios": int(len(both["fio"])),
            "fio": wait_percentiles_ms(both["fio"]),
            "truth": wait_percentiles_ms(both["wait"]) if linear else None,
            "at_least": est["at_least_ms"], "at_most": est["at_most_ms"],
            "fio_plus_lag": wait_percentiles_ms(fio_plus_lag(times, completed, snaps, rates, lo, hi)),
            "waited_1s": (est["waited_at_least"], int(np.count_nonzero(both["wait"] >= 1.0)) if linear else None),
        }
    lags = {d: schedule_lag(times, completed[d], rates[d]) for d in DIRECTIONS}
    drained = [backlog_drained_s(times, completed[d], rates[d], b) for d in DIRECTIONS]
    backlog = [real[d]["completion"][real[d]["due"] < b] for d in DIRECTIONS]
    completions = np.concatenate([real[d]["completion"] for d in DIRECTIONS])
    return {
        "rows": rows,
        "max_lag_s": max(max(v) for v in lags.values()),
        "longest_wait_s": max(real[d]["wait"].max() for d in DIRECTIONS) if linear else None,
        "drained_s": None if None in drained else max(drained),
        "drained_truth_s": max(x.max() for x in backlog) if linear else None,
        "peak_iops": peak_iops(completions, b),
        "snapshots_in_fault": run.snapshots_in_fault,
        "unmatched": int(sum(real[d]["unmatched"].sum() for d in DIRECTIONS)),
        "clock_error_ms": np.concatenate([real[d]["clock_error_ms"] for d in DIRECTIONS]) if linear else None,
    }


def render(results: list[tuple[Run, dict]], a, argv: list[str]) -> str:
    def s(x, fmt="{:.2f}"):
        return "n/a" if x is None else fmt.format(x)
    lat = ["| case | IOs | fio's latency (from issue) | wait from the slot (per-IO truth) | snapshots: at least | "
           "snapshots: at most | snapshots: fio + lag per second |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    sched = ["| case | fault on fio's clock (s) | snapshots during it | max lag, snapshots (s) "
             "| longest wait, truth (s) | drained by, snapshots (s) | drained, truth (s) "
             "| catch-up peak (IOPS over 10 ms) | waited ≥ 1 s: snapshots (at least) / truth |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for run, f in results:
        for span, r in f["rows"].items():
            lat.append(f"| {run.case.name}: {span} | {r['ios']:,} | {ms3(r['fio'])} | "
                       f"{ms3(r['truth']) if r['truth'] else 'n/a (random slots)'} | {ms3(r['at_least'])} | "
                       f"{ms3(r['at_most'])} | {ms3(r['fio_plus_lag'])} |")
        w = f["rows"]["whole run"]["waited_1s"]
        sched.append(f"| {run.case.name} | {run.fault_s[0]:.2f}–{run.fault_s[1]:.2f} | {f['snapshots_in_fault']} | "
                     f"{f['max_lag_s']:.3f} | {s(f['longest_wait_s'], '{:.3f}')} | {s(f['drained_s'])} | "
                     f"{s(f['drained_truth_s'])} | {f['peak_iops']:,.0f} | {w[0]:,} / {s(w[1], '{:,}')} |")
    unmatched = sum(f["unmatched"] for _, f in results)
    errors = np.concatenate([f["clock_error_ms"] for _, f in results if f["clock_error_ms"] is not None])
    errors = (float(errors.min()), float(errors.max())) if len(errors) else (float("nan"),) * 2
    return f"""{SECTION}

Command: `sudo {command_line("bench/coordinated_omission.py", argv)}`
Measured {machine()}, {fio_version()}.

A 4k random load, {READ_PCT} % reads, libaio iodepth 4 per job, direct, at {a.rate:,} IOPS in all (fio's
`rate_iops=R,W` per job, `rate_process` linear unless said), {a.runtime} s on a loop device's ext4; from
{a.at} s for {a.fault_for} s its disk is stalled (blkio throttle at 1 byte/s) or slowed to
{SLOW_SHARE * 100:.0f} % of the rate (blkio IOPS throttle). Latencies in ms, p50 / p99 / max, over every IO and over the
IOs due during the fault (by their slot); reads and writes together. "Snapshots" use only fio's
status every second (`--status-interval=1`: each direction's completed IOs, at the time they were
read) and the rate (bench/schedule_bounds.py); the "fio + lag" column gives each second's mean fio
latency plus the schedule lag at the second's end to every IO completed in it.

{chr(10).join(lat)}

{chr(10).join(sched)}

Drained: when every IO due before the fault's end had completed; by the snapshots, the first status
time at which as many IOs had completed as slots were due by then (it happened since the one
before); by the truth, the last completion of those IOs. Poisson: the snapshots' figures are against
the mean schedule (n / rate), from which the random slots stray by about √n / rate. Check of the
per-IO truth: {unmatched} IOs of the iologs without a latency (or the reverse); each IO's completion
as rebuilt (issue + latency, on the start found from the slots) less the time fio's latency log gives
it (whole ms, truncated, since the job's start): {errors[0]:.2f} to {errors[1]:.2f} ms (0 to 1 when
the start is right, a little more when fio logs a completion late; linear runs).
"""


def record(run: Run, dest: Path) -> None:
    """Keep one run as a fixture: fio's stdout, job file, per-IO logs, fault times."""
    dest.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest / "fio-stdout.json.gz", "wt") as f:
        f.write(run.stdout)
    shutil.copy(run.out / "job.fio", dest / "job.fio")
    for log in sorted(run.out.glob("load*.iolog")) + sorted(run.out.glob("load*_lat.*.log")):
        with open(log, "rb") as src, gzip.open(dest / f"{log.name}.gz", "wb") as gz:
            shutil.copyfileobj(src, gz)
    (dest / "run.json").write_text(json.dumps({"fault_s": [round(x, 3) for x in run.fault_s],
                                               "fault": run.case.fault, "jobs": run.case.jobs,
                                               "rates_per_job": list(run.rates)}, indent=1) + "\n")


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", type=int, default=15, help="seconds per run")
    ap.add_argument("--at", type=float, default=5.0, help="the fault begins this many s into the run")
    ap.add_argument("--for", dest="fault_for", type=float, default=5.0, help="the fault lasts this many s")
    ap.add_argument("--rate", type=int, default=1000, help="IOPS in all (reads and writes, every job)")
    ap.add_argument("--jobs", type=int, default=1, help="with --record: jobs of the recorded run")
    ap.add_argument("--record", type=Path, help="run one stall and keep its files here (a fixture)")
    ap.add_argument("--benchmarks", type=Path, default=BENCHMARKS)
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench/coordinated_omission.py: run it as root (it makes a loop device and a blkio cgroup)")
    if not (BLKIO / "cgroup.procs").exists():
        sys.exit(f"bench/coordinated_omission.py: needs the blkio controller of cgroup v1 at {BLKIO}")
    if not 0 < a.at < a.at + a.fault_for < a.runtime:
        sys.exit("bench/coordinated_omission.py: the fault must begin and end inside the runtime")
    cases = [Case(f"stall, {a.jobs} job{'s' if a.jobs > 1 else ''}", a.jobs, "stall")] if a.record else CASES
    results = []
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-co-") as tmp, loop_ext4(Path(tmp)) as (mnt, dev):
        for case in cases:
            progress(f"{case.name}: {a.runtime} s ...")
            run = run_case(case, a, mnt, dev, Path(tmp) / f"run{len(results) + 1}")
            if a.record:
                record(run, a.record)
                progress(f"recorded in {a.record}")
                return
            results.append((run, figures(run)))
    text = render(results, a, argv)
    write_section(text, SECTION, a.benchmarks)
    print(text)


if __name__ == "__main__":
    main()
