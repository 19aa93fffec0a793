"""Saturate vs the exhaustive grid: `iofleet saturate` (4k random read, jobs
up to 2, iodepth up to 128, its cells ending when steady) against the
exhaustive jobs [1, 2] × iodepth [1 … 128] grid of fixed-time cells that
bench/easy_vs_best.py ran (reused from --grid-data; run here when there is
none). Writes the IOPS ratio of saturate's answer to the grid's best (goal
>= 0.95) and the wall-time ratio (goal <= 0.30) to BENCHMARKS.md.

    make bench                      # or:
    .venv/bin/python bench/saturate_vs_grid.py --target DIR [--repeats 2] [--size 1g] [--grid-data DIR] [--benchmarks FILE]
"""

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import (  # noqa: E402
    BENCHMARKS, command_line, fio_version, fmt_interval, fmt_spread, iofleet, log_t_interval, machine, median,
    no_data_files, progress, result_line, run_ids, run_json, run_timed, verdict, write_section,
)
from bench.easy_vs_best import (  # noqa: E402
    GRID_IODEPTHS, GRID_JOBS, best_cell, grid_cells, grid_table, run_grid, stored_grids,
)
from iofleet.analysis.saturation import saturation_of_run  # noqa: E402
from iofleet.plan.units import format_size, parse_size  # noqa: E402
from iofleet.results.model import Run  # noqa: E402

SECTION = "## Saturate vs the exhaustive grid"
GOAL_IOPS = 0.95
GOAL_TIME = 0.30


def saturate_figures(run: dict, wall: float) -> dict:
    """Saturate's answer (its analysis' `peak`, as `iofleet saturate` prints
    it) from its stored run, and what the sweep cost."""
    sat = saturation_of_run(Run.from_dict(run))
    peak = sat.peak if sat else None
    prep = ((run.get("methodology") or {}).get("prepare") or {}).get("seconds")
    return {
        "run_id": run["id"],
        "wall_s": wall,
        "prepare_s": prep,
        "iops": peak.iops if peak else float("nan"),
        "jobs": peak.jobs if peak else None,
        "iodepth": peak.iodepth if peak else None,
        "runs": peak.runs if peak else 0,
        "ties": [(c.jobs, c.iodepth) for c in sat.ties] if sat else [],
        "cells": len(sat.cells) if sat else 0,
        "tests": len(run["tests"]),
        "stopped": ((run.get("methodology") or {}).get("saturate") or {}).get("stopped") or [],
    }


def cell_options(a) -> list[str]:
    """The saturate cell options given to this bench (none: saturate's defaults)."""
    return [x for opt in ("round", "max_runtime", "ramp") if getattr(a, opt, None)
            for x in (f"--{opt.replace('_', '-')}", getattr(a, opt))]


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, required=True, help="scratch directory on the storage to use")
    ap.add_argument("--repeats", type=int, default=2, help="saturate sweeps (each against its own grid run)")
    ap.add_argument("--size", default="1g", help="total working set: saturate gets --size half of it per job "
                                                 "file, so its 2-job cells cover it all")
    ap.add_argument("--grid-data", type=Path, help="grid runs stored by bench/easy_vs_best.py (else run here)")
    ap.add_argument("--grid-runtime", type=int, default=8, help="a grid run here: each cell's measured time, s")
    ap.add_argument("--grid-ramp", type=int, default=2, help="a grid run here: each cell's warm-up, s")
    ap.add_argument("--engine", default="auto", help="the engine of grid runs made here; saturate gets the grid's")
    for opt in ("--round", "--max-runtime", "--ramp"):  # saturate's own defaults unless given
        ap.add_argument(opt, help=f"saturate {opt} (default: saturate's)")
    ap.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file to write the section to")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats: at least 1")
    target = a.target.resolve()
    size = parse_size(a.size)
    reuse = stored_grids(a.grid_data.resolve() if a.grid_data else None, size)[-a.repeats:]
    cells_n = len(GRID_JOBS) * len(GRID_IODEPTHS)
    to_run = a.repeats - len(reuse)
    grid_min = to_run * cells_n * (a.grid_ramp + a.grid_runtime + 2) / 60
    progress(f"saturate vs the grid: {a.repeats} sweeps (~3 min each), reusing {len(reuse)} stored grid runs"
             + (f", running {to_run} more (~{grid_min:.0f} min)" if to_run else "")
             + f"; about {a.repeats * 3 + grid_min:.0f} min")
    sweeps, grids = [], []
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp:
        tmp = Path(tmp)
        grid_data = a.grid_data.resolve() if a.grid_data else tmp / "grid"
        for r in range(a.repeats):
            if r < len(reuse):
                grid = reuse[r]
            else:
                grid = run_grid(target, grid_data, size, a.grid_runtime, a.grid_ramp, a.engine,
                                f"repeat {r + 1}/{a.repeats}: grid of {cells_n} cells", tmp / "log.txt")
            grid["cells"] = grid_cells(run_json(grid_data, grid["run_id"]))
            grids.append(grid)
            data = tmp / f"saturate-{r + 1}"
            wall = run_timed(iofleet("saturate", "--target", str(target), "--size", format_size(size // 2),
                                     "--max-jobs", str(max(GRID_JOBS)), "--max-iodepth", str(max(GRID_IODEPTHS)),
                                     "--engine", grid["engine"], *cell_options(a), "--data-dir", str(data)),
                             f"repeat {r + 1}/{a.repeats}: saturate", tmp / "log.txt")
            sweeps.append(saturate_figures(run_json(data, run_ids(data)[-1]), wall))
            s, ((j, d), top) = sweeps[-1], best_cell(grid["cells"])
            progress(f"  saturate: {s['jobs']} × {s['iodepth']}, {s['iops']:,.0f} IOPS, {s['tests']} tests; grid best "
                     f"{j} × {d}, {top:,.0f} IOPS; IOPS ratio {s['iops'] / top:.3f}, time ratio "
                     f"{wall / grid['wall_s']:.3f}")
    left = no_data_files(target)
    if left:
        sys.exit(f"data files left behind: {', '.join(map(str, left))}")
    text = render(a, grids, sweeps, reused=len(reuse))
    write_section(text, SECTION, a.benchmarks)
    print(text)


def render(a, grids: list[dict], sweeps: list[dict], reused: int) -> str:
    rows, iops_ratios, time_ratios, bare_ratios, choice_ratios = [], [], [], [], []
    for r, (g, s) in enumerate(zip(grids, sweeps)):
        (j, d), top = best_cell(g["cells"])
        iops_ratios.append(s["iops"] / top)
        time_ratios.append(s["wall_s"] / g["wall_s"])
        at_choice = g["cells"].get((s["jobs"], s["iodepth"]))
        if at_choice is not None:
            choice_ratios.append(at_choice / top)
        if s["prepare_s"] is not None and g.get("prepare_s") is not None:
            bare_ratios.append((s["wall_s"] - s["prepare_s"]) / (g["wall_s"] - g["prepare_s"]))
        ties = ", ".join(f"{tj} × {td}" for tj, td in s["ties"]) or "none"
        rows.append(f"| {r + 1} | {s['jobs']} × {s['iodepth']} (runs: {s['runs']}) | {s['iops']:,.0f} | {ties} | "
                    f"{j} × {d} | {top:,.0f} | {iops_ratios[-1]:.3f} | "
                    f"{'' if at_choice is None else f'{at_choice:,.0f}'} | {s['cells']} cells, {s['tests']} tests | "
                    f"{s['wall_s']:.0f} s | {g['wall_s']:.0f} s | {time_ratios[-1]:.3f} |")
    cmd = command_line("bench/saturate_vs_grid.py", ["--target", "scratch", "--repeats", str(a.repeats), "--size", a.size,
                                                     *cell_options(a)]
                       + (["--grid-data", "scratch/bench-grid"] if a.grid_data else []))
    engine = grids[0]["engine"]
    stopped = "\n".join(f"- sweep {r + 1}: {line}" for r, s in enumerate(sweeps) for line in s["stopped"])
    iops_value, time_value = median(iops_ratios), median(time_ratios)
    grid_cfg = grids[0]
    return f"""{SECTION}

Command: `make bench` (= `{cmd}`{", after bench/easy_vs_best.py" if reused else ""})
Measured {machine()}, {fio_version()}.

`iofleet saturate --target scratch --size {format_size(parse_size(a.size) // 2)} --max-jobs {max(GRID_JOBS)} --max-iodepth {max(GRID_IODEPTHS)} --engine {engine}{"".join(" " + x for x in cell_options(a))}`
(4k random read, its other settings at their defaults: cells end when steady, cells within noise repeated;
each job's file is half the {a.size} working set, so its 2-job cells cover all of it) against the exhaustive grid
of bench/easy_vs_best.py: jobs {list(GRID_JOBS)} × iodepth {list(GRID_IODEPTHS)}, fixed {grid_cfg['runtime']} s after
{grid_cfg['ramp']} s warm-up, same engine, same {a.size} working set{f" ({reused} of the {len(grids)} grid runs reused from that bench)" if reused else ""}.
IOPS ratio = the IOPS of saturate's answer (its analysis' `peak`, the median of its runs' window figures) /
the grid's best cell. Time ratio = saturate's wall time / the grid's, both whole commands including
their preparation (random data written first) and Python start-up.

| repeat | saturate's answer | its IOPS | cannot be told apart from | grid's best cell | its IOPS | IOPS ratio | grid IOPS at saturate's answer | saturate ran | saturate wall | grid wall | time ratio |
| ---: | --- | ---: | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |
""" + "\n".join(rows) + f"""

IOPS ratio: median {iops_value:.3f}, min–max {fmt_spread(iops_ratios)}, 95 % interval
{fmt_interval(log_t_interval(iops_ratios))}. Time ratio: median {time_value:.3f}, min–max
{fmt_spread(time_ratios)}, 95 % interval {fmt_interval(log_t_interval(time_ratios))} (Student t on the mean of
the log ratios, back-transformed; needs 3 repeats).
Grid IOPS at saturate's answer / grid's best (the choice alone, both from the same grid):
{", ".join(f"{x:.3f}" for x in choice_ratios) or "n/a"}.{f" Time ratio without preparation: {', '.join(f'{x:.3f}' for x in bare_ratios)}." if bare_ratios else ""}

Why each sweep stopped (saturate's own lines):

{stopped or "- (none stored)"}

Every grid cell:

{grid_table([g["cells"] for g in grids])}

The best cell of a grid is the highest of {len(GRID_JOBS) * len(GRID_IODEPTHS)} noisy measurements (±8 % run to run
on this machine), so it is biased upward; saturate's answer is the highest of its own cells, biased the same way.

{result_line("saturate-iops-ratio", iops_value)}

Goal ≥ {GOAL_IOPS}: the median {verdict(iops_value, GOAL_IOPS)}.

{result_line("saturate-time-ratio", time_value)}

Goal ≤ {GOAL_TIME}: the median {verdict(time_value, GOAL_TIME, at_least=False)}.
"""


if __name__ == "__main__":
    main()
