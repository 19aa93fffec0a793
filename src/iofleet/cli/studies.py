"""`iofleet saturate` and `iofleet scale`: the studies that run many cells
or steps, each with its own progress line, then their verdict."""

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..plan.params import SATURATE
from ..plan.units import format_size
from ..studies.kinds import STUDIES
from ..studies.saturate import Sweep
from ..units import format_value
from .common import (
    EXIT_FAILED, EXIT_INTERRUPTED, DataDir, DestroyOpt, TargetOpt, WideOpt, check_label, checked_targets, console,
    plan_with_targets, print_table, stop_on_signals, study_command, study_show, table_width, user_errors,
)
from .run import finish
from .table_options import own_options, table_options

if TYPE_CHECKING:  # annotations only
    from ..studies.scale import ScaleStep

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


def _scale_step_line(step: "ScaleStep") -> str:
    where = f"step {step.number}/{step.of}: {len(step.hosts)} host{'s' if len(step.hosts) > 1 else ''}"
    run = f"run {step.run_id}" if step.run_id is not None else "no run"
    a = step.aggregate.all if step.aggregate else None
    if step.ok and a:
        return (f"[green]ok[/]      {where} ({run}): {a.iops:,.0f} IOPS, {a.bw_bytes_s / 1e6:,.1f} MB/s, "
                f"mean {format_value(a.lat_mean_ns, 'ns', with_unit=True)}, "
                f"p99 {format_value(a.percentiles_ns.get('p99'), 'ns', with_unit=True)}")
    colour = "yellow" if step.status in ("interrupted", "partial") else "red"
    return f"[{colour}]{step.status}[/] {where} ({run}): {step.error or 'no result'}"


@study_command("scale")
@user_errors
def scale(
    plan_path: Path = typer.Argument(..., metavar="PLAN", help="Plan file (YAML) with one test, or pick one with --test."),
    hosts: Path = typer.Option(..., "--hosts", help="Inventory of fio servers; step k uses its first k hosts."),
    steps: Optional[str] = typer.Option(None, "--steps", help="Host counts to run, e.g. 1,2,4,8 (default: 1, 2, … all)."),
    test: Optional[str] = typer.Option(None, "--test", help="The plan's test to run (an id from `iofleet validate`)."),
    data_dir: Optional[str] = DataDir,
    wide: bool = WideOpt,
):
    """Run one test on 1, 2, … hosts to find where IOPS stop growing."""
    from ..fleet.inventory import load_inventory
    from ..results.store import Store, default_data_dir
    from ..studies.scale import parse_steps, run_scale
    from .progress import StepProgress
    plan, plan_text = plan_with_targets(plan_path, None)
    fleet = load_inventory(hosts).select(plan.hosts)
    wanted = parse_steps(steps) if steps is not None else None
    progress = StepProgress(console)

    def on_step(step: "ScaleStep"):
        progress.close()
        console.print(_scale_step_line(step), highlight=False)

    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        try:
            outcome = run_scale(plan, plan_text, store, fleet, steps=wanted, test_id=test,
                                observer=progress, stop=stop, on_step=on_step)
        finally:
            progress.close()
        db = store.path
    _print_scaling(outcome, plan.name, wide)
    console.print(f"Results: {db} (each step is a run: `iofleet results show RUN`)")
    if outcome.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if not outcome.ok:
        raise typer.Exit(EXIT_FAILED)  # a step failed or lost a host


def _print_scaling(outcome, plan_name: str, wide: bool) -> None:
    """The steps' table, the verdict and why the study stopped."""
    from ..report.fit import fit_table, left_out_line
    result = outcome.scaling
    table = Table(title=f"Scaling of {outcome.test_id} ({plan_name}) on up to {outcome.available} hosts",
                  title_justify="left")
    for col in ("hosts", "status", "IOPS", "MB/s", "mean ms", "p99 ms", "growth %", "IOPS/host", "run"):
        table.add_column(col, justify="left" if col == "status" else "right")

    def num(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    for step, row in zip(outcome.steps, result.rows):
        mark = " ◀ saturation" if row is result.saturation else ""
        table.add_row(str(row.hosts), "ok" if step.ok else step.status, num(row.iops, ",.0f"),
                      num(row.mb_s, ",.1f"), num(row.mean_ms, ".3f"), num(row.p99_ms, ".3f"),
                      num(row.growth_pct, "+.1f") + mark, num(row.iops_per_host, ",.0f"),
                      str(step.run_id) if step.run_id is not None else "-")
    width = table_width(wide)
    dropped, _ = fit_table(table, width, ("hosts", "status", "IOPS", "MB/s", "p99 ms", "growth %"), name=None)
    print_table(table, wide)
    if dropped:
        console.print(left_out_line(dropped, False, width), style="dim", highlight=False)
    console.print(result.verdict(), highlight=False)
    for note in outcome.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    if outcome.stopped:
        console.print(f"[yellow]Study {outcome.status}:[/] {outcome.stopped}", highlight=False)


@study_show(SATURATE)
def print_saturation(run, wide: bool) -> None:
    """A saturate sweep's cells, grid and verdicts, as `results show` prints them."""
    from ..report.saturation import saturation_report, sweep_of_run
    sweep = sweep_of_run(run)
    if sweep is not None:
        report = saturation_report(*sweep, f"Saturation sweep of run {run.id}")
        print_table(fitted_sweep(report, sweep[0], table_width(wide)), wide)


def fitted_sweep(report, sat, width: int | None):
    """A saturation report fitted to the terminal: its cells keep jobs,
    iodepth, IOPS, MB/s, p99, the target's column and the marks."""
    from ..report.fit import fit_group
    keep = ("jobs", "iodepth", "IOPS", "MB/s", "p99 ms", "") + ((sat.slo.text,) if sat.slo else ())
    return fit_group(report, width, keep, ("Little", "runs", "OIO fleet", "OIO/host", "mean ms"), only_first=True)


@study_command(SATURATE)
@user_errors
@table_options(SATURATE, Sweep, after="hosts")
@own_options(STUDIES[SATURATE], after="hosts")
def saturate(
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: every cell runs on all."),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the run (default saturate)."),
    destroy_data: Optional[List[str]] = DestroyOpt,
    wide: bool = WideOpt,
    params: Optional[dict] = None,  # the table's options (table_options): --bs, --size, --round, ...
    own: Optional[dict] = None,  # the sweep's own (own_options): --slo, --max-jobs, ...
):
    """Sweep jobs × iodepth to find the knee and the most IOPS.

    Outstanding IO doubles until IOPS stop growing; the sweep finds the knee,
    the best configuration and the most IOPS under a latency target (--slo)."""
    from ..analysis.diagnostics import diagnose
    from ..fleet.inventory import load_inventory
    from ..report.saturation import saturation_report
    from ..report.summary import diagnostics_lines, methodology_notes
    from ..results.store import Store, default_data_dir
    from ..studies.study import Where
    from .progress import TerminalProgress
    check_label(label)
    study = STUDIES[SATURATE]
    sweep = study.parse({**own, **params})
    fleet = load_inventory(hosts).hosts if hosts else None
    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        with TerminalProgress(console) as progress:
            outcome = study.start(Where(checked_targets(target), fleet, label, store, progress, stop, destroy_data), sweep)
        run = store.get_run(outcome.run_id)
        db = store.path
    title = (f"Run {outcome.run_id} · saturation of {format_size(sweep.bs)} {sweep.read_pct}% read "
             f"{'random' if sweep.random_pct == 100 else f'{sweep.random_pct}% random'}"
             + (f" on {outcome.hosts} hosts" if outcome.hosts > 1 else ""))
    print_table(fitted_sweep(saturation_report(outcome.result, outcome.hosts, title), outcome.result,
                             table_width(wide)), wide)
    for line in outcome.stopped:
        console.print(f"  sweep: {line}", highlight=False, markup=False)
    for line, style in methodology_notes(run):
        console.print(Text(line, style=style or ""))
    findings = diagnose(run)
    if findings:
        console.print(Text("Diagnostics:", style="bold"))
        for line, style in diagnostics_lines(findings):
            console.print(Text(line, style=style or ""))
    finish(outcome.run, db, fleet)
