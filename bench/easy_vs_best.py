"""Easy Run vs the best grid cell: `iofleet easy-run` (its 4k random-read
profile's IOPS, window figures when until: steady) against the best cell of
an exhaustive jobs [1, 2] × iodepth [1 … 128] grid of fixed-time 4k
random-read tests on the same total working set, N repeats. Writes the ratio
(goal >= 0.95) to BENCHMARKS.md. The grid runs are kept in --grid-data (with
grid.json: run ids and wall times) for bench/saturate_vs_grid.py to reuse.

    make bench                      # or:
    .venv/bin/python bench/easy_vs_best.py --target DIR [--repeats 2] [--size 1g] [--grid-data DIR] [--benchmarks FILE]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import (  # noqa: E402
    BENCHMARKS, command_line, fio_version, fmt_interval, fmt_spread, iofleet, iso_seconds, log_t_interval, machine,
    median, no_data_files, progress, result_line, run_ids, run_json, run_timed, verdict, window_iops, write_section,
)
from iofleet.plan.units import format_size, parse_size  # noqa: E402

SECTION = "## Easy Run vs the best grid cell"
GOAL = 0.95
GRID_JOBS = (1, 2)
GRID_IODEPTHS = (1, 2, 4, 8, 16, 32, 64, 128)
GRID_FILE = "grid.json"  # in --grid-data: [{"run_id", "wall_s", "size", "engine", "runtime", "ramp"}]
PROFILE = "rand-read-4k"  # Easy Run's headline profile


# ---------------------------------------------------------------- the grid (also used by saturate_vs_grid.py)

def grid_plan(size: int, runtime: int, ramp: int, engine: str) -> dict:
    """Every jobs × iodepth cell, fixed time, on the same total working set:
    1 job reads one file of `size`, 2 jobs two files of size/2 (the first
    file is prepared at the full size and read in its first half)."""
    workloads = [{"name": f"grid-j{j}", "jobs": j, "size": format_size(size // j),
                  "matrix": {"iodepth": list(GRID_IODEPTHS)}} for j in GRID_JOBS]
    return {"name": "bench-grid", "prepare": "random",
            "defaults": {"bs": "4k", "read_pct": 100, "random_pct": 100, "direct": True, "engine": engine,
                         "runtime": f"{runtime}s", "ramp": f"{ramp}s"},
            "workloads": workloads}


def run_grid(target: Path, grid_data: Path, size: int, runtime: int, ramp: int, engine: str, what: str,
             log: Path) -> dict:
    """Run the whole grid once (one stored run in grid_data), note it in
    grid.json, and return its entry."""
    grid_data.mkdir(parents=True, exist_ok=True)
    plan = grid_data / "grid.yaml"
    plan.write_text(yaml.safe_dump(grid_plan(size, runtime, ramp, engine), sort_keys=False))
    wall = run_timed(iofleet("run", str(plan), "--target", str(target), "--data-dir", str(grid_data)), what, log)
    run_id = run_ids(grid_data)[-1]
    prepare = (run_json(grid_data, run_id).get("methodology") or {}).get("prepare") or {}
    entry = {"run_id": run_id, "wall_s": wall, "prepare_s": prepare.get("seconds"), "size": size,
             "engine": engine, "runtime": runtime, "ramp": ramp}
    index = grid_data / GRID_FILE
    entries = json.loads(index.read_text()) if index.exists() else []
    index.write_text(json.dumps(entries + [entry], indent=1))
    return entry


def stored_grids(grid_data: Path | None, size: int) -> list[dict]:
    """The grid runs noted in grid_data of this working set (oldest first)."""
    index = grid_data / GRID_FILE if grid_data else None
    if not index or not index.exists():
        return []
    return [e for e in json.loads(index.read_text()) if e["size"] == size]


def grid_cells(run: dict) -> dict[tuple[int, int], float]:
    """(jobs, iodepth) → IOPS of each fixed-time cell (the whole measured time)."""
    return {(t["params"]["jobs"], t["params"]["iodepth"]): t["all"]["iops"]
            for t in run["tests"] if t["status"] == "ok" and t["all"]["iops"]}


def best_cell(cells: dict[tuple[int, int], float]) -> tuple[tuple[int, int], float]:
    key = max(cells, key=cells.get)
    return key, cells[key]


def grid_table(cells_by_repeat: list[dict]) -> str:
    """Every grid cell's IOPS, one column per repeat."""
    n = len(cells_by_repeat)
    lines = ["| jobs × iodepth | " + " | ".join(f"grid {r + 1} (IOPS)" for r in range(n)) + " |",
             "| --- | " + " | ".join(["---:"] * n) + " |"]
    for j in GRID_JOBS:
        for d in GRID_IODEPTHS:
            vals = [c.get((j, d)) for c in cells_by_repeat]
            marks = ["" if v is None else (f"**{v:,.0f}**" if v == max(c.values()) else f"{v:,.0f}")
                     for v, c in zip(vals, cells_by_repeat)]
            lines.append(f"| {j} × {d} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- Easy Run

def easy_figures(runs: list[dict]) -> dict:
    """From the runs one `iofleet easy-run` stored (its probe's and its own):
    the 4k random-read profile's IOPS, its jobs × iodepth and the probe's time."""
    main = [r for r in runs if "probe" not in (r["label"] or "")][-1]
    probes = [r for r in runs if "probe" in (r["label"] or "")]
    test = next(t for t in main["tests"] if t["workload"] == PROFILE)
    m = test.get("methodology") or {}
    probe_cells = sum(len(p["tests"]) for p in probes)
    return {
        "iops": window_iops(test),
        "whole_iops": test["all"]["iops"],
        "jobs": test["params"]["jobs"],
        "iodepth": test["params"]["iodepth"],
        "early": m.get("early_stop") is not None,
        "steady": bool(((m.get("steady") or {}).get("iops") or {}).get("steady")),
        "probe_s": sum(iso_seconds(p["created_at"], p["ended_at"]) for p in probes if p["ended_at"]) if probes else None,
        "probe_tests": probe_cells,
        "run_s": iso_seconds(main["created_at"], main["ended_at"]) if main["ended_at"] else None,
        "run_id": main["id"],
    }


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, required=True, help="scratch directory on the storage to use")
    ap.add_argument("--repeats", type=int, default=2, help="pairs of (grid, easy-run), alternating in order")
    ap.add_argument("--size", default="1g", help="total working set (easy-run --size; the grid's, too)")
    ap.add_argument("--ramp", type=int, default=2, help="easy-run --ramp, s")
    ap.add_argument("--round", type=int, default=2, help="easy-run --round, s")
    ap.add_argument("--max-runtime", type=int, default=30, help="easy-run --max-runtime, s")
    ap.add_argument("--grid-runtime", type=int, default=8, help="each grid cell's fixed measured time, s")
    ap.add_argument("--grid-ramp", type=int, default=2, help="each grid cell's warm-up, s")
    ap.add_argument("--engine", default="auto", help="the grid's engine (auto: what Easy Run uses)")
    ap.add_argument("--grid-data", type=Path, help="keep the grid runs here (for bench/saturate_vs_grid.py)")
    ap.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file to write the section to")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats: at least 1")
    target = a.target.resolve()
    size = parse_size(a.size)
    cells_n = len(GRID_JOBS) * len(GRID_IODEPTHS)
    grid_min = cells_n * (a.grid_ramp + a.grid_runtime + 2) / 60
    easy_min = (150 + 4 * (a.ramp + a.max_runtime + 3)) / 60  # probe ~2 min, then 4 profiles at most
    progress(f"Easy Run vs the best grid cell: {a.repeats} repeats of a {cells_n}-cell grid (~{grid_min:.0f} min) "
             f"and an easy-run (at most ~{easy_min:.0f} min); about {a.repeats * (grid_min + easy_min):.0f} min")
    grids, easies, easy_walls = [], [], []
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp:
        tmp = Path(tmp)
        grid_data = a.grid_data.resolve() if a.grid_data else tmp / "grid"
        for r in range(a.repeats):
            def grid():
                grids.append(run_grid(target, grid_data, size, a.grid_runtime, a.grid_ramp, a.engine,
                                      f"repeat {r + 1}/{a.repeats}: grid of {cells_n} cells", tmp / "log.txt"))

            def easy():
                data = tmp / f"easy-{r + 1}"
                easy_walls.append(run_timed(
                    iofleet("easy-run", "--target", str(target), "--size", a.size, "--ramp", f"{a.ramp}s",
                            "--round", f"{a.round}s", "--max-runtime", f"{a.max_runtime}s", "--data-dir", str(data)),
                    f"repeat {r + 1}/{a.repeats}: easy-run", tmp / "log.txt"))
                easies.append(easy_figures([run_json(data, i) for i in run_ids(data)]))
                e = easies[-1]
                probe = "?" if e["probe_s"] is None else f"{e['probe_s']:.0f}"
                progress(f"  easy-run: {e['jobs']} × {e['iodepth']}, {e['iops']:,.0f} IOPS ({PROFILE}), probe {probe} s")

            for step in ((grid, easy) if r % 2 == 0 else (easy, grid)):  # alternate which runs first
                step()
            cells = grid_cells(run_json(grid_data, grids[-1]["run_id"]))
            (j, d), top = best_cell(cells)
            progress(f"  grid best: {j} × {d}, {top:,.0f} IOPS; easy-run / best = {easies[-1]['iops'] / top:.3f}")
            grids[-1]["cells"] = cells
    left = no_data_files(target)
    if left:
        sys.exit(f"data files left behind: {', '.join(map(str, left))}")
    text = render(a, grids, easies, easy_walls)
    write_section(text, SECTION, a.benchmarks)
    print(text)


def render(a, grids: list[dict], easies: list[dict], easy_walls: list[float]) -> str:
    rows, ratios, chosen_ratios = [], [], []
    for r, (g, e, wall) in enumerate(zip(grids, easies, easy_walls)):
        (j, d), top = best_cell(g["cells"])
        ratio = e["iops"] / top
        ratios.append(ratio)
        at_choice = g["cells"].get((e["jobs"], e["iodepth"]))
        if at_choice is not None:
            chosen_ratios.append(at_choice / top)
        probe = "?" if e["probe_s"] is None else f"{e['probe_s']:.0f} s ({e['probe_tests']} tests)"
        rows.append(f"| {r + 1} | {e['jobs']} × {e['iodepth']} | {e['iops']:,.0f} | "
                    f"{'ended early, ' if e['early'] else ''}{'steady' if e['steady'] else 'not steady'} | "
                    f"{j} × {d} | {top:,.0f} | {ratio:.3f} | "
                    f"{'' if at_choice is None else f'{at_choice:,.0f}'} | {wall:.0f} s | {probe} | {g['wall_s']:.0f} s |")
    cmd = command_line("bench/easy_vs_best.py", [
        "--target", "scratch", "--repeats", str(a.repeats), "--size", a.size, "--ramp", str(a.ramp),
        "--round", str(a.round), "--max-runtime", str(a.max_runtime), "--grid-runtime", str(a.grid_runtime),
        "--grid-ramp", str(a.grid_ramp), "--engine", a.engine] + (["--grid-data", "scratch/bench-grid"]
                                                                     if a.grid_data else []))
    value = median(ratios)
    return f"""{SECTION}

Command: `make bench` (= `{cmd}`)
Measured {machine()}, {fio_version()}.

`iofleet easy-run --target scratch --size {a.size} --ramp {a.ramp}s --round {a.round}s --max-runtime {a.max_runtime}s`
(its probe picks jobs × iodepth, then the four profiles run until steady): the IOPS of its {PROFILE}
profile (the measurement window's, `methodology.window.all.iops`), against the best cell of an
exhaustive grid of 4k random-read tests, jobs {list(GRID_JOBS)} × iodepth {list(GRID_IODEPTHS)}, each cell a fixed
{a.grid_runtime} s after {a.grid_ramp} s warm-up, engine {a.engine}, on the same total working set of {a.size}
(1 job: one file of {a.size}; 2 jobs: two files of half that), data prepared with random bytes, direct IO.
Each repeat runs one grid and one easy-run; which runs first alternates. Wall times are whole commands
(preparation and Python start-up included); the probe's time is its stored run's start to end (whole seconds).

| repeat | Easy Run's jobs × iodepth | Easy Run IOPS | its verdict | grid's best cell | its IOPS | ratio | grid IOPS at Easy Run's choice | easy-run wall | of which probe | grid wall |
| ---: | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |
""" + "\n".join(rows) + f"""

Ratio Easy Run / best grid cell: median {value:.3f}, min–max {fmt_spread(ratios)}, 95 % interval
{fmt_interval(log_t_interval(ratios))} (Student t on the mean of the log ratios, back-transformed; needs 3 repeats).
Grid IOPS at Easy Run's choice / grid's best (the choice alone, both from the same grid):
{", ".join(f"{x:.3f}" for x in chosen_ratios) or "n/a (Easy Run chose a cell outside the grid)"}.
Easy Run's wall time: median {median(easy_walls):.0f} s.

Every grid cell:

{grid_table([g["cells"] for g in grids])}

The best cell of a grid is the highest of {len(GRID_JOBS) * len(GRID_IODEPTHS)} noisy measurements (±8 % run to run
on this machine), so it is biased upward: a ratio slightly below 1 can be noise.

{result_line("easy-run-vs-best", value)}

Goal ≥ {GOAL}: the median {verdict(value, GOAL)}.
"""


if __name__ == "__main__":
    main()
