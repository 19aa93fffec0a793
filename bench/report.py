"""Report at scale: `iofleet report RUN -o FILE.html` and `iofleet results
show RUN --format json` on the run bench/ingest.py stored (64 hosts × 24
tests × 600 per-second samples). Writes seconds (median of 3), the peak
memory (RSS) of the `iofleet report` command and the report's size to
BENCHMARKS.md, with the goal line `Result: report-64-peak-rss-mib = N`.

    make bench                      # or, after bench/ingest.py:
    .venv/bin/python bench/report.py [--data-dir scratch/bench-ingest] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import machine, profile_table, result_line, spread, write_section  # noqa: E402

SECTION = "## Report at scale"
PROFILE_SECTION = "## Report at scale: profile"
GOAL_S = 5.0
GOAL_RSS_MIB = 500


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def report_once(data: Path, out: Path) -> dict:
    """What `iofleet report` does once the program is loaded, each step
    timed (run_report_html reads each test's series as it draws its chart)."""
    from iofleet.report.html import run_report_html
    from iofleet.results.store import Store

    steps = {}
    t0 = time.perf_counter()
    with Store.open(data) as store:
        run_id = store.latest_run_id()
        steps["get_run"], run = timed(lambda: store.get_run(run_id))
        steps["run_report_html"], html = timed(lambda: run_report_html(run, store.run_series(run)))
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


def cli(args: list[str]) -> tuple[float, int]:
    """Seconds and peak RSS (bytes, from wait4) of one iofleet command in a
    new process (interpreter start and imports included)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "iofleet", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"iofleet {' '.join(args)} failed: {err.decode(errors='replace').strip()}")
    return seconds, usage.ru_maxrss * 1024  # Linux: KiB


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
the report alone — get_run, run_report_html (reading each test's series), writing the file — made a second time in the
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
                  f"(get_run {r['get_run']:.2f}, html {r['run_report_html']:.2f}), "
                  f"results show json {r['show_json']:.2f} s", flush=True)
        run_id = runs[0]["run_id"]
        report_cli = []
        for i in range(a.repeats):
            report_cli.append(cli(["report", str(run_id), "-o", str(out), "--data-dir", str(a.data_dir)]))
            print(f"iofleet report {i + 1}/{a.repeats}: {report_cli[-1][0]:.2f} s, "
                  f"peak RSS {report_cli[-1][1] / 2**20:.0f} MiB", flush=True)
        show_cli = [cli(["results", "show", str(run_id), "--format", "json", "--data-dir", str(a.data_dir)])
                    for _ in range(a.repeats)]
    text = section_text(a, runs, report_cli, show_cli)
    write_section(text, SECTION)
    print(text)


def section_text(a, runs: list[dict], report_cli: list[tuple], show_cli: list[tuple]) -> str:
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "run_id"}
    run_id = runs[0]["run_id"]
    verdict = "meets" if med["report"] < GOAL_S else "misses"
    rss = [m / 2**20 for _, m in report_cli]
    rss_med, (rss_lo, rss_hi) = statistics.median(rss), spread(rss)
    rss_verdict = "meets" if rss_med < GOAL_RSS_MIB else "misses"
    rows = "\n".join(
        f"| {i + 1} | {r['get_run']:.2f} | {r['run_report_html']:.2f} | {r['report']:.2f} "
        f"| {r['show_json']:.2f} | {c:.2f} | {m / 2**20:.0f} | {sh:.2f} |"
        for i, (r, (c, m), (sh, _)) in enumerate(zip(runs, report_cli, show_cli)))
    return f"""{SECTION}

Command: `make bench` (= `.venv/bin/python bench/report.py --repeats {a.repeats}`, after bench/ingest.py)
Measured {machine()}.

The run stored by bench/ingest.py (64 hosts × 24 tests × 600 s). "report" is what `iofleet report
{run_id} -o report.html` does once the program is loaded: `Store.get_run`, `run_report_html` (summary,
steady state, diagnostics, 5 overview charts and per test its per-second, per-round latency, per-host
and percentile charts, plotly.js inline; each test's per-second series read from the store as its
chart is drawn) and writing the file; "show json" is `results show {run_id} --format json` (get_run,
`Run.to_dict`, json.dumps). The `iofleet report` columns are the whole command in a new process
(Python start-up and imports included): its seconds and its peak RSS (wait4's ru_maxrss of the
process), the goal's figure.

| repeat | get_run (s) | run_report_html (s) | report (s) | show json (s) | `iofleet report` (s) | `iofleet report` peak RSS (MiB) | `results show --format json` (s) |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{rows}

**Median: the report takes {med['report']:.2f} s ({statistics.median(c for c, _ in report_cli):.2f} s as a
command), and the file is {med['report_bytes'] / 1e6:.1f} MB** (goal < {GOAL_S:.0f} s: {verdict} it);
**`iofleet report` peaks at {rss_med:.0f} MiB RSS** (spread {rss_lo:.0f}-{rss_hi:.0f} MiB; goal
< {GOAL_RSS_MIB} MiB: {rss_verdict} it); `results show --format json` takes {med['show_json']:.2f} s
({statistics.median(sh for sh, _ in show_cli):.2f} s as a command) for {med['json_bytes'] / 1e6:.1f} MB of JSON.

Before issue 19 the same command peaked at 1,039 MiB (2026-11-24, on bench/ingest.py's run of
then): every test's series were read at once into Python lists (~535 MB for 11,520 series of 600
samples), every chart was kept as a plotly figure object until the page was rendered (~225 MB),
and the document the charts read carried every host's merged histograms (~150 MB) though only each
test's own are drawn. Now `Store.run_series` reads a test's series when its chart asks for them,
each chart is kept as its JSON, and only each test's histograms are in the document; the page is
the same byte for byte (but for its time stamp). What is left is mostly `get_run` (every job's
histogram decoded, ~170 MB) and plotly.

{result_line("report-64-peak-rss-mib", rss_med)}
"""


if __name__ == "__main__":
    main()
