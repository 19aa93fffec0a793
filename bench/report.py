"""Report at scale: `iofleet report RUN -o FILE.html` and `iofleet results
show RUN --format json` on the run bench/ingest.py stored (64 hosts × 24
tests × 600 per-second samples). Writes seconds (median of 3) and the
report's size to BENCHMARKS.md.

    make bench                      # or, after bench/ingest.py:
    .venv/bin/python bench/report.py [--data-dir scratch/bench-ingest] [--repeats 3]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import machine, profile_table, write_section  # noqa: E402

SECTION = "## Report at scale"
PROFILE_SECTION = "## Report at scale: profile"
GOAL_S = 5.0


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def report_once(data: Path, out: Path) -> dict:
    """What `iofleet report` does once the program is loaded, each step timed."""
    from iofleet.report.html import run_report_html
    from iofleet.results.store import Store

    steps = {}
    t0 = time.perf_counter()
    with Store.open(data) as store:
        run_id = store.latest_run_id()
        steps["get_run"], run = timed(lambda: store.get_run(run_id))
        steps["run_series"], series = timed(lambda: store.run_series(run))
    steps["run_report_html"], html = timed(lambda: run_report_html(run, series))
    steps["write"], _ = timed(lambda: out.write_text(html))
    steps["report"] = time.perf_counter() - t0
    steps["report_bytes"], steps["run_id"] = len(html.encode()), run_id
    return steps


def show_once(data: Path) -> dict:
    """What `iofleet results show RUN --format json` does once loaded."""
    from iofleet.results.store import Store

    t0 = time.perf_counter()
    with Store.open(data) as store:
        doc = store.get_run(store.latest_run_id()).to_dict()
    text = json.dumps(doc, indent=2)
    return {"show_json": time.perf_counter() - t0, "json_bytes": len(text.encode())}


def in_process(data: Path, out: Path) -> dict:
    """Both, in this process (the store opened anew each time)."""
    return report_once(data, out) | show_once(data)


def cli(args: list[str]) -> float:
    """Seconds of one iofleet command in a new process (interpreter start and imports included)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "iofleet", *args], check=True, capture_output=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / "scratch" / "bench-ingest",
                    help="the results store bench/ingest.py kept")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", type=Path,
                    help="cProfile one report into this file and write its section of BENCHMARKS.md instead")
    a = ap.parse_args()
    if not (a.data_dir / "results.db").exists():
        raise SystemExit(f"no results store in {a.data_dir}: run bench/ingest.py first")
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-report-") as tmp:
        out = Path(tmp) / "report.html"
        if a.profile:
            import cProfile
            report_once(a.data_dir, out)  # plotly's lazy imports and the page cache, as in the timed repeats
            cProfile.runctx("report_once(a.data_dir, out)", globals(), locals(), str(a.profile))
            write_section(f"""{PROFILE_SECTION}

Command: `.venv/bin/python bench/report.py --profile {a.profile}` (after bench/ingest.py; cProfile of
the report alone — get_run, run_series, run_report_html, writing the file — made a second time in the
process, as the timed repeats after the first; not part of `make bench`)
Measured {machine()}.

Before the fixes (see the ingest's profile) the per-second chart of each test summed its samples
in a Python loop (`test_totals`, 9.6 s of 34.6 s under the profiler), every chart built its
plotly layout twice, and every test's per-host figures were merged from its jobs' histograms
three times (summary rows, straggler notes, `run_to_dict`; now once, `shared_by_host`). What is
left: plotly building, checking and copying ~75 figures (its template is deep-copied into each),
the per-host merges, decoding every job's histogram (`get_run`), reading 11,520 series into
Python lists and summing them per second for the charts.

Top 20 functions by own time:

{profile_table(a.profile, 20)}
""", PROFILE_SECTION)
            print(f"profile written to {a.profile} and BENCHMARKS.md")
            return
        runs = []
        for i in range(a.repeats):
            runs.append(in_process(a.data_dir, out))
            r = runs[-1]
            print(f"repeat {i + 1}/{a.repeats}: report {r['report']:.2f} s "
                  f"(get_run {r['get_run']:.2f}, run_series {r['run_series']:.2f}, html {r['run_report_html']:.2f}), "
                  f"results show json {r['show_json']:.2f} s", flush=True)
        run_id = runs[0]["run_id"]
        report_cli = [cli(["report", str(run_id), "-o", str(out), "--data-dir", str(a.data_dir)])
                      for _ in range(a.repeats)]
        show_cli = [cli(["results", "show", str(run_id), "--format", "json", "--data-dir", str(a.data_dir)])
                    for _ in range(a.repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "run_id"}
    verdict = "meets" if med["report"] < GOAL_S else "misses"
    rows = "\n".join(
        f"| {i + 1} | {r['get_run']:.2f} | {r['run_series']:.2f} | {r['run_report_html']:.2f} | {r['report']:.2f} "
        f"| {r['show_json']:.2f} | {c:.2f} | {s:.2f} |"
        for i, (r, c, s) in enumerate(zip(runs, report_cli, show_cli)))
    text = f"""{SECTION}

Command: `make bench` (= `.venv/bin/python bench/report.py --repeats {a.repeats}`, after bench/ingest.py)
Measured {machine()}.

The run stored by bench/ingest.py (64 hosts × 24 tests × 600 s). "report" is what `iofleet report
{run_id} -o report.html` does once the program is loaded: `Store.get_run`, `Store.run_series` (every
per-second series), `run_report_html` (summary, steady state, diagnostics, 5 overview charts and
per test its per-second, per-host and percentile charts, plotly.js inline) and writing the file;
"show json" is `results show {run_id} --format json` (get_run, `Run.to_dict`, json.dumps). The last two
columns are the whole commands in a new process (Python start-up and imports included).

| repeat | get_run (s) | run_series (s) | run_report_html (s) | report (s) | show json (s) | `iofleet report` (s) | `results show --format json` (s) |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{rows}

**Median: the report takes {med['report']:.2f} s ({statistics.median(report_cli):.2f} s as a command), and
the file is {med['report_bytes'] / 1e6:.1f} MB** (goal < {GOAL_S:.0f} s: {verdict} it);
`results show --format json` takes {med['show_json']:.2f} s ({statistics.median(show_cli):.2f} s as a command)
for {med['json_bytes'] / 1e6:.1f} MB of JSON.
"""
    write_section(text, SECTION)
    print(text)


if __name__ == "__main__":
    main()
