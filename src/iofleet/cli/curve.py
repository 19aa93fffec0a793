"""`iofleet curve`: latency against load. The study (studies/curve.py) finds
the most IOPS and runs the fixed-rate tests; this prints its progress, the
table (report/curve.py) and the closing lines."""

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..plan.params import CURVE
from ..studies.curve import Curve
from ..studies.kinds import STUDIES
from ..studies.saturate import Sweep
from .common import (DataDir, DestroyOpt, TargetOpt, WideOpt, check_label, checked_targets, console, print_table,
                     stop_on_signals, study_command, study_show, user_errors)
from .run import finish
from .table_options import own_options, table_options

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


@study_command(CURVE)
@user_errors
@table_options(CURVE, Curve, Sweep, after="hosts")
@own_options(STUDIES[CURVE], after="hosts")
def curve_command(
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: every test runs on all."),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the runs (default curve)."),
    destroy_data: Optional[List[str]] = DestroyOpt,
    wide: bool = WideOpt,
    params: Optional[dict] = None,  # the table's options (table_options): --bs, --size, --runtime, ...
    own: Optional[dict] = None,  # the curve's own (own_options): --points, --loads, ...
):
    """Latency against load: fixed-rate tests up to the most IOPS.

    Finds the most IOPS with a saturate sweep (or takes it from --from-run),
    then runs one test at each load, stored as one run; a point that does
    not reach its target rate is marked, with achieved/target."""
    from ..fleet.inventory import load_inventory
    from ..results.store import Store, default_data_dir
    from ..studies.study import Where
    from .progress import EachRunProgress
    check_label(label)
    study = STUDIES[CURVE]
    settings = study.parse({**own, **params})
    fleet = load_inventory(hosts).hosts if hosts else None
    progress = EachRunProgress(console)

    def on_maximum(line: str) -> None:
        progress.close()
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        try:
            outcome = study.start(Where(checked_targets(target), fleet, label, store, progress, stop, destroy_data),
                                settings, on_maximum=on_maximum)
        finally:
            progress.close()
        db = store.path
    if outcome.result is None:  # stopped during the sweep
        finish(outcome.run, db, fleet)
        return
    print_curve(outcome.run.run_id, outcome.result, outcome.hosts, wide)
    finish(outcome.run, db, fleet)


@study_show(CURVE)
def show_curve(run, wide: bool) -> None:
    """A curve run's table and how its loads were chosen, as `iofleet curve` printed them."""
    from ..analysis.curve import curve_of_run
    result = curve_of_run(run)
    if result is not None:
        print_curve(run.id, result, len(run.host_facts.get("hosts", [])) or 1, wide)


def print_curve(run_id: int, result, hosts: int, wide: bool) -> None:
    """A curve run's table (a missed point in yellow) and how its loads were chosen."""
    from ..report.curve import curve_columns, curve_lines, curve_rows, curve_title
    table = Table(title=f"Run {run_id} · {curve_title(result)}", title_justify="left")
    columns = curve_columns(result)
    for col in columns:
        table.add_column(col, justify="left" if col == "reached" else "right")
    for row in curve_rows(result):
        table.add_row(*(row[col] for col in columns), style="yellow" if row["reached"] != "yes" else None)
    print_table(table, wide)
    for line in curve_lines(result, hosts):  # wrapped between words
        console.print(line, highlight=False, markup=False)
