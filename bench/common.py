"""Shared by the bench scripts: the machine line, BENCHMARKS.md sections,
the statistics every section reports (median, min-max, 95 % intervals),
the `Result: ID = NUMBER` goal lines, running iofleet commands with
progress lines, and cProfile tables."""

import json
import math
import os
import platform
import pstats
import random
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"
IOFLEET = [sys.executable, "-m", "iofleet"]
BOOTSTRAP_SEED = 17  # fixed: the same measurements always give the same interval
BOOTSTRAP_RESAMPLES = 10_000


def machine() -> str:
    """'2026-11-21 on vm (2 cores, 6.18.44-fc-v470), Python 3.11.7': when and where."""
    return (f"{datetime.now(timezone.utc):%Y-%m-%d} on {platform.node()} ({os.cpu_count()} cores, "
            f"{platform.release()}), Python {platform.python_version()}")


def fio_version() -> str:
    return subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()


def write_section(text: str, section: str, benchmarks: Path = BENCHMARKS) -> None:
    """Replace (or add) one section of the benchmarks file, keeping the others."""
    benchmarks = Path(benchmarks)
    old = (benchmarks.read_text() if benchmarks.exists() else
           "# Benchmarks\n\nMeasured with `make bench`; each section gives the command that produced it.\n")
    match = re.search(rf"^{re.escape(section)}$", old, re.M)  # the whole heading: not a longer one it begins
    if match:
        end = old.find("\n## ", match.start() + len(section))
        old = old[:match.start()].rstrip() + ("\n" + old[end:] if end >= 0 else "")
    benchmarks.write_text(old.rstrip() + "\n\n" + text.strip() + "\n")


def command_line(script: str, argv: list[str]) -> str:
    """The exact command that produced a section, as it can be typed again."""
    return " ".join([".venv/bin/python", script, *argv])


# ---------------------------------------------------------------- statistics

def median(values) -> float:
    return statistics.median(values)


def spread(values) -> tuple[float, float]:
    """(lowest, highest)."""
    return min(values), max(values)


def bootstrap_median_ci(values, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the median (fixed seed, so repeatable);
    None with fewer than 3 values, where resampling says nothing."""
    values = list(values)
    if len(values) < 3:
        return None
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    lo = meds[int(math.floor((1 - level) / 2 * resamples))]
    hi = meds[min(resamples - 1, int(math.ceil((1 + level) / 2 * resamples)) - 1)]
    return lo, hi


def log_t_interval(ratios, level: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval of the mean of log ratios, back-transformed (an
    interval of the geometric mean ratio); None with fewer than 3 ratios."""
    ratios = list(ratios)
    if len(ratios) < 3 or any(r <= 0 for r in ratios):
        return None
    from scipy.stats import t  # here: scipy is slow to import

    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    half = t.ppf((1 + level) / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def fmt_interval(ci: tuple[float, float] | None, fmt: str = "{:.3f}", why: str = "too few repeats") -> str:
    return f"[{fmt.format(ci[0])}, {fmt.format(ci[1])}]" if ci else f"n/a ({why})"


def fmt_spread(values, fmt: str = "{:.3f}", sep: str = "–") -> str:
    lo, hi = spread(values)
    return f"{fmt.format(lo)}{sep}{fmt.format(hi)}"


def result_line(goal_id: str, value: float) -> str:
    """The goal line, exactly `Result: ID = NUMBER` (nan when nothing could be measured)."""
    if not re.fullmatch(r"[a-z0-9-]+", goal_id):
        raise ValueError(f"goal id {goal_id!r}: lower-case words joined by '-'")
    return f"Result: {goal_id} = {'nan' if value is None or math.isnan(value) else f'{value:.3f}'}"


def verdict(value: float | None, goal: float, at_least: bool = True) -> str:
    if value is None or math.isnan(value):
        return "cannot tell (nothing measured)"
    ok = value >= goal if at_least else value <= goal
    return f"{'meets' if ok else 'misses'} it"


# ---------------------------------------------------------------- running iofleet

def progress(line: str) -> None:
    print(f"[{datetime.now():%H:%M:%S}] {line}", flush=True)


# iofleet's line for each finished test (shown as progress while a command runs).
TEST_DONE = re.compile(r"^(ok|failed|partial|interrupted)\s+\S+/")


def run_timed(args: list[str], what: str, log: Path | None = None) -> float:
    """Run one command (output to `log`, shown on failure), with a progress
    line before and after and one per finished test; its wall time in seconds."""
    progress(f"{what} ...")
    start = time.monotonic()
    out: list[str] = []
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        for line in child.stdout:
            out.append(line)
            if TEST_DONE.match(line):
                progress(f"  {line.rstrip()} ({time.monotonic() - start:.0f} s)")
    seconds = time.monotonic() - start
    text = "".join(out)
    if log:
        with open(log, "a") as f:
            f.write(f"$ {' '.join(args)}\n{text}\n")
    if child.returncode:
        sys.exit(f"{what} failed (exit {child.returncode}):\n{text[-5000:]}")
    progress(f"{what}: {seconds:.1f} s")
    return seconds


def iofleet(*args: str) -> list[str]:
    return [*IOFLEET, *args]


def run_json(data_dir: Path, run_id: int | None = None) -> dict:
    """A stored run as `iofleet results show N --format json` gives it."""
    out = subprocess.run(iofleet("results", "show", *([str(run_id)] if run_id else []), "--format", "json",
                                 "--data-dir", str(data_dir)), check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_ids(data_dir: Path) -> list[int]:
    """Every run id stored in a data directory, oldest first."""
    from iofleet.results.store import Store

    with Store.open(data_dir) as store:
        return sorted(r["id"] for r in store.list_runs())


def iso_seconds(start: str, end: str) -> float:
    """Seconds between two stored ISO-8601 times (whole seconds: their resolution)."""
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def window_iops(test: dict) -> float:
    """A test's IOPS from its measurement window when it has one with IO
    (until: steady), else the whole test's."""
    window = (test.get("methodology") or {}).get("window") or {}
    if (window.get("all") or {}).get("ios"):
        return window["all"]["iops"]
    return test["all"]["iops"]


def no_data_files(target: Path) -> list[Path]:
    """iofleet's data files left under a target (should be none)."""
    return sorted((target / "iofleet").glob("iofleet-data.*")) if (target / "iofleet").is_dir() else []


# ---------------------------------------------------------------- profiles

def _where(file: str, line: int, name: str) -> str:
    if file == "~":  # a built-in
        return name.strip("<>")
    if "site-packages" + os.sep in file:
        return f"{file.split('site-packages' + os.sep, 1)[1]}:{line} {name}"
    for base in (ROOT / "src", ROOT):
        if file.startswith(str(base) + os.sep):
            return f"{Path(file).relative_to(base)}:{line} {name}"
    return f"{Path(file).name}:{line} {name}"  # the standard library


def profile_table(stats_file: Path, top: int = 20) -> str:
    """The `top` functions of a cProfile dump by own time, as a Markdown table."""
    stats = pstats.Stats(str(stats_file))
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # (cc, nc, tt, ct, callers)
    lines = ["| own time (s) | with callees (s) | calls | function |", "| ---: | ---: | ---: | --- |"]
    for (file, line, name), (_, nc, tt, ct, _) in rows:
        lines.append(f"| {tt:.2f} | {ct:.2f} | {nc:,} | `{_where(file, line, name)}` |")
    return "\n".join(lines) + f"\n\nTotal under the profiler: {stats.total_tt:.1f} s."
