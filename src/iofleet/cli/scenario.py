"""`iofleet scenario FILE (--target DIR | --hosts INV)`: a background load
at a fixed rate with timed faults; the summary, each fault's impact and
recovery, and the hosts lost."""

from pathlib import Path
from typing import List, Optional

import typer

from ..errors import IofleetError
from ..units import escaped
from .common import (EXIT_FAILED, EXIT_INTERRUPTED, DataDir, TargetOpt, WideOpt, check_label, checked_targets,
                     console, print_table, stop_on_signals, study_command, table_width, user_errors)

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


def _said(record: dict) -> None:
    """One line as a fault is applied or undone."""
    who = record["host"] or "local"
    if record.get("error") and not record["undone"]:
        line = f"event {record['index'] + 1}: {record['fault']} on {who} failed: {record['error']}"
    elif record["undone"]:
        line = (f"event {record['index'] + 1}: {record['fault']} on {who} undone"
                + (f" at {record['undone_s']:.1f} s" if record["undone_s"] is not None else "")
                + _late(record, "undo_late_s")
                + (f" (failed: {record['undo_error']})" if record.get("undo_error") else ""))
    else:
        line = (f"event {record['index'] + 1}: {record['fault']} on {who} applied at {record['applied_s']:.1f} s"
                + _late(record, "late_s"))
    _print(line)


def _print(line: str) -> None:
    """A line that may hold the user's text (a command, a pattern, an error quoting them): as written,
    its control characters escaped."""
    console.print(escaped(line), highlight=False, markup=False, soft_wrap=True)


def _late(record: dict, key: str) -> str:
    return f" ({record[key]:.1f} s late; bound {record['late_bound_s']:g} s)" if record.get(key) else ""


@study_command("scenario")
@user_errors
def scenario_command(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario file (YAML): name, load and events."),
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers (with `ssh:` for faults)."),
    yes: bool = typer.Option(False, "--yes", help="Run the scenario's commands (`run`'s command and undo, "
                                                  "process-kill's restart) on its hosts (shown first)."),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the run."),
    wide: bool = WideOpt,
):
    """Run a load at a fixed rate while hosts, links, devices or processes fail.

    The load runs for its runtime; each event's fault is applied at its
    time (seconds into the measured part) and undone at its end and at any
    exit. Prints the baseline, each fault's impact and recovery."""
    from ..fleet.inventory import load_inventory
    from ..plan.load import read_plan_text, yaml_data
    from ..plan.scenario import parse_scenario
    from ..report.summary import summary_table
    from ..results.store import Store, default_data_dir
    from ..studies.scenario import check_scenario, clear_left_faults, run_scenario
    from .progress import TerminalProgress
    check_label(label)
    if bool(target) == bool(hosts):
        raise IofleetError("give where the scenario runs: --target DIR (this host) or --hosts INVENTORY")
    text = read_plan_text(file, "scenario")
    scenario = parse_scenario(yaml_data(text, str(file)), str(file))
    targets = checked_targets(target)
    fleet = load_inventory(hosts).hosts if hosts else None
    faults = check_scenario(scenario, str(file), fleet, str(targets[0].resolve()) if targets else None, yes)
    for line in clear_left_faults(fleet, str(hosts) if hosts else None):  # a killed scenario's (docs/scenarios.md)
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(f"Scenario {scenario.name}: {len(scenario.events)} events", highlight=False)
    for e in scenario.events:
        _print(f"  {e.describe()}")
    if scenario.watch:
        _print(f"  {scenario.watch.describe()}")
    with stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        with TerminalProgress(console) as progress:
            out = run_scenario(scenario, text, str(file), store, faults, targets=targets, hosts=fleet,
                               label=label, observer=progress, stop=stop, on_event=_said)
        run = store.get_run(out.run.run_id)
        print_table(summary_table(run, table_width(wide)), wide)
        from ..report.scenario import scenario_lines, scenario_record  # here: it imports plotly (~0.3 s)
        record = scenario_record(run.methodology)
        for line in scenario_lines(record) if record else []:
            _print(line)
        db = store.path
    _print(f"Run {out.run.run_id} {out.run.status}. Results: {db} (see `iofleet results show {out.run.run_id}`)")
    if out.run.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if not out.ok:
        raise typer.Exit(EXIT_FAILED)
