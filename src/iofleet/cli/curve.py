"""`iofleet curve`: latency against load. The study (studies/curve.py) finds
the most IOPS and runs the fixed-rate tests; this prints its progress, the
table (report/curve.py) and the closing lines."""

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..studies.curve import Curve
from ..studies.saturate import Sweep
from ..plan.params import PARAMS
from ..plan.units import format_duration, format_size
from .common import (DataDir, DestroyOpt, TargetOpt, WideOpt, check_label, checked_targets, console, print_table,
                     stop_on_signals, user_errors)
from .run import finish

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


@user_errors
def curve_command(
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: every test runs on all."),
    bs: Optional[str] = typer.Option(None, "--bs", help=f"Block size. \\[default: {format_size(Sweep.bs)}]"),
    read_pct: Optional[str] = typer.Option(None, "--read-pct", help=f"Share of reads, %. \\[default: {Sweep.read_pct}]"),
    random_pct: Optional[str] = typer.Option(None, "--random-pct",
                                             help=f"Share of random IO, %. \\[default: {Sweep.random_pct}]"),
    points: int = typer.Option(10, "--points", help="Loads evenly spaced up to the most IOPS: k/N of it, k = 1..N."),
    loads: Optional[str] = typer.Option(None, "--loads", help="Loads in % of the most IOPS instead, e.g. 10,50,90,120 "
                                        "(above 100 shows where the storage stops keeping up)."),
    size: Optional[str] = typer.Option(None, "--size", help=f"Each job's data file. \\[default: {format_size(Sweep.size)}]"),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="Each point's measured time (given: each sweep cell's "
                                          f"too, fixed instead of until steady). \\[default: {format_duration(Curve.runtime)}]"),
    ramp: Optional[str] = typer.Option(None, "--ramp", help="Warm-up of each point (given: of each sweep cell too). "
                                       f"\\[default: {format_duration(Curve.ramp)}]"),
    from_run: Optional[int] = typer.Option(None, "--from-run", metavar="RUN",
                                           help="Take the most IOPS from this stored saturate run instead of sweeping."),
    max_jobs: Optional[int] = typer.Option(None, "--max-jobs", help="Most jobs per host in the sweep (default: its CPUs)."),
    max_iodepth: Optional[int] = typer.Option(None, "--max-iodepth", help="Most outstanding IOs per job in the sweep. "
                                              f"\\[default: {Sweep.max_iodepth}]"),
    engine: Optional[str] = typer.Option(None, "--engine", help=f"fio IO engine. \\[default: {Sweep.engine}]"),
    prepare: Optional[str] = typer.Option(None, "--prepare", help="Write the files first: random, zero or none. "
                                          f"\\[default: {Sweep.prepare}]"),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the runs (default curve)."),
    destroy_data: Optional[List[str]] = DestroyOpt,
    wide: bool = WideOpt,
):
    """Latency against load: fixed-rate tests up to the most IOPS.

    Finds the most IOPS with a saturate sweep (or takes it from --from-run),
    then runs one test at each load, stored as one run; a point that does
    not reach its target rate is marked, with achieved/target."""
    from ..fleet.inventory import load_inventory
    from ..report.curve import curve_columns, curve_lines, curve_rows, curve_title
    from ..results.store import Store, default_data_dir
    from ..studies.curve import parse_loads, run_curve
    from ..studies.options import parse_option, sweep_from_options
    from .progress import EachRunProgress
    check_label(label)
    fixed = {"runtime": runtime, "ramp": ramp}
    sweep = sweep_from_options(bs=bs, read_pct=read_pct, random_pct=random_pct, size=size, engine=engine,
                               prepare=prepare, max_jobs=max_jobs, max_iodepth=max_iodepth, **fixed)
    timing = {name: parse_option(f"--{name}", PARAMS[name], value) for name, value in fixed.items() if value is not None}
    curve = Curve(points=points, loads=parse_loads(loads), from_run=from_run, sweep=sweep, **timing)
    given = {name for name, value in (("bs", bs), ("read_pct", read_pct), ("random_pct", random_pct)) if value}
    fleet = load_inventory(hosts).hosts if hosts else None
    progress = EachRunProgress(console)

    def on_maximum(line: str) -> None:
        progress.close()
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        try:
            outcome = run_curve(store, curve, targets=checked_targets(target), hosts=fleet, label=label,
                                observer=progress, stop=stop, destroy_data=destroy_data, given=given,
                                on_maximum=on_maximum)
        finally:
            progress.close()
        db = store.path
    result = outcome.result
    if result is None:  # stopped during the sweep
        finish(outcome.run, db, fleet)
        return
    table = Table(title=f"Run {outcome.run.run_id} · {curve_title(result)}", title_justify="left")
    columns = curve_columns(result)
    for col in columns:
        table.add_column(col, justify="left" if col == "" else "right")
    for row in curve_rows(result):
        table.add_row(*(row[col] for col in columns), style="yellow" if row[""] else None)
    print_table(table, wide)
    for line in curve_lines(result, outcome.hosts):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    finish(outcome.run, db, fleet)
