"""`iofleet run` (and `run --resume`) and `iofleet easy-run`: running tests
with a live progress display, then the summary and the exit code."""

import shlex
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import IofleetError
from ..plan.easy import Durations
from ..plan.params import EASY_RUN
from ..studies.kinds import STUDIES
from .common import (
    EXIT_FAILED, EXIT_INTERRUPTED, DataDir, DestroyOpt, TargetOpt, WideOpt, check_label, checked_targets, console,
    plan_with_targets, print_table, stop_on_signals, study_command, table_width, user_errors,
)
from .table_options import own_options, table_options

# The studies, the store and the report are imported by the commands that use
# them: every `iofleet` command imports this module, and `iofleet run` starts
# its hosts sooner without what only Easy Run needs.


@user_errors
def run(
    plan_path: Optional[Path] = typer.Argument(None, metavar="PLAN", show_default=False,
                                               help="Plan file (YAML), or a plain fio job file."),
    target: Optional[List[Path]] = TargetOpt,
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the run (for comparisons)."),
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers to run on at once."),
    destroy_data: Optional[List[str]] = DestroyOpt,
    resume: Optional[int] = typer.Option(None, "--resume", metavar="RUN",
                                         help="Run the unfinished tests of a stopped or crashed run, with its "
                                              "stored plan and targets; PLAN, --target and --hosts are optional "
                                              "(checked against the run; --hosts where its inventory moved)."),
    wide: bool = WideOpt,
):
    """Run a plan's tests here or on a fleet, then print the summary.

    The tests run on this machine, or on every host of an inventory at once
    with --hosts. Ctrl-C stops the run and keeps the finished tests; `--resume
    RUN` runs the rest."""
    from ..fleet.inventory import load_inventory
    from ..report.summary import summary_table
    from ..results.store import Store, default_data_dir
    from ..studies.run import run_plan
    from .progress import TerminalProgress
    check_label(label)
    if resume is not None:
        return _resume(resume, plan_path, target, data_dir, label, hosts, destroy_data, wide)
    if plan_path is None:
        raise IofleetError("give the PLAN to run (or --resume RUN to finish a stopped run)")
    plan, plan_text = plan_with_targets(plan_path, target, destroy_data)
    fleet = load_inventory(hosts).select(plan.hosts) if hosts else None
    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        with TerminalProgress(console) as progress:
            outcome = run_plan(plan, plan_text, store, hosts=fleet, label=label,
                               observer=progress, stop=stop, inventory=hosts)
        print_table(summary_table(store.get_run(outcome.run_id), table_width(wide)), wide)
        db = store.path
    finish(outcome, db, fleet, resumable=True)


def _resume(run_id, plan_path, target, data_dir, label, hosts, destroy_data, wide) -> None:
    """`run --resume RUN`: the study checks and holds the run, then runs what is left."""
    from ..report.summary import summary_table
    from ..results.store import Store, default_data_dir
    from ..studies.run import prepare_resume, resume_run
    from .progress import TerminalProgress
    if label is not None:
        raise IofleetError(f"a resumed run keeps its label; change it with `iofleet results label {run_id} LABEL`")
    plan = plan_with_targets(plan_path, target, destroy_data)[0] if plan_path else None
    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        todo = prepare_resume(store, run_id, plan=plan, targets=checked_targets(target), inventory=hosts,
                              destroy_data=destroy_data)
        console.print(todo.describe(), highlight=False, markup=False)
        with TerminalProgress(console) as progress:
            outcome = resume_run(store, todo, observer=progress, stop=stop)
        print_table(summary_table(store.get_run(outcome.run_id), table_width(wide)), wide)
        db = store.path
    finish(outcome, db, todo.hosts, resumable=True)


def resume_command(run_id: int, db: Path) -> str:
    """The command that resumes a run, with --data-dir when its store is not the default one."""
    from ..results.store import default_data_dir
    data_dir = db.parent
    same = data_dir.resolve() == default_data_dir(None).resolve()
    return f"iofleet run --resume {run_id}" + ("" if same else f" --data-dir {shlex.quote(str(data_dir))}")


def finish(outcome, db, fleet, resumable: bool = False) -> None:
    """The closing lines of a run and its exit code; a resumable run that
    stopped early says how to run the rest."""
    done = outcome.tests_ok
    console.print(
        f"Run {outcome.run_id} {outcome.status}: {done} of {outcome.tests_planned} tests ok. "
        f"Results: {db} (see `iofleet results show {outcome.run_id}`)"
    )
    if outcome.not_cleaned:
        left = ", ".join(outcome.not_cleaned)
        console.print(f"Removed iofleet's data files from {outcome.cleaned} host{'s' if outcome.cleaned != 1 else ''}"
                      f", not from {left} (lost during the run, or the removal failed): once back, `iofleet hosts "
                      f"check INVENTORY` finds them and `iofleet hosts clean INVENTORY` removes them (as does the "
                      f"next run there).", highlight=False, markup=False, soft_wrap=True)
    elif outcome.cleaned:
        what = "hosts" if fleet else "targets"
        console.print(f"Removed iofleet's data files from the {what}.")
    if resumable and outcome.status in ("interrupted", "failed", "partial"):
        console.print(f"Run its unfinished tests with: {resume_command(outcome.run_id, Path(db))}",
                      highlight=False, markup=False, soft_wrap=True)
    if outcome.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if not outcome.ok:
        raise typer.Exit(EXIT_FAILED)  # failed or partial


@study_command(EASY_RUN)
@user_errors
@table_options(EASY_RUN, Durations, after="hosts")
@own_options(STUDIES[EASY_RUN], after="destroy_data")
def easy_run_command(
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: run on all at once."),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the run (default easy-run)."),
    destroy_data: Optional[List[str]] = DestroyOpt,
    wide: bool = WideOpt,
    params: Optional[dict] = None,  # the table's options (table_options): --runtime, --ramp, --size, ...
    own: Optional[dict] = None,  # Easy Run's own (own_options): --no-probe
):
    """Measure the storage with no plan: four standard profiles.

    Easy Run sizes the working set and the load (jobs × iodepth) for the
    hosts, then measures each profile until steady."""
    from ..fleet.inventory import load_inventory
    from ..report.summary import summary_table
    from ..results.store import Store, default_data_dir
    from ..studies.study import Where
    from .progress import EachRunProgress
    check_label(label)
    study = STUDIES[EASY_RUN]
    settings = study.parse({**own, **params})
    fleet = load_inventory(hosts).hosts if hosts else None
    progress = EachRunProgress(console)

    def on_plan(plan_text, reasons):
        progress.close()
        console.print("Easy Run chose:", highlight=False)
        for r in reasons:
            console.print(f"  {r}", highlight=False, markup=False)

    targets = checked_targets(target)
    if settings.probe_first:
        console.print("Easy Run probes jobs × iodepth first: 4k random reads in short cells "
                      "(--no-probe guesses instead)", highlight=False)
    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        try:
            outcome = study.start(Where(targets, fleet, label, store, progress, stop, destroy_data), settings,
                                on_plan=on_plan)
        finally:
            progress.close()
        if outcome.profiles is None:  # the probe was stopped
            finish(outcome.last, store.path, fleet)
        print_table(summary_table(store.get_run(outcome.last.run_id), table_width(wide)), wide)
        db = store.path
    finish(outcome.last, db, fleet, resumable=True)
