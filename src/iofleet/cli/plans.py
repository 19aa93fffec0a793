"""`iofleet validate` and `iofleet params`: what a plan will run, and what a plan may set."""

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.text import Text
from rich.table import Table

from ..plan import reference
from ..plan.params import AUTO_ENGINES, PARAMS
from ..plan.units import format_bytes, format_duration
from .common import (EXIT_FAILED, TargetOpt, WideOpt, console, plan_with_targets, print_table, table_width,
                     user_errors)

if TYPE_CHECKING:  # annotations only
    from ..studies.preview import PlanPreview

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


@user_errors
def validate(
    plan_path: Path = typer.Argument(..., metavar="PLAN", help="Plan file (YAML), or a plain fio job file."),
    target: Optional[List[Path]] = TargetOpt,
    jobfiles: Optional[Path] = typer.Option(None, "--jobfiles", metavar="DIR",
                                            help="Write the fio job file of each test, as it would run, to DIR."),
    wide: bool = WideOpt,
):
    """Check a plan and list the tests it expands into.

    With --target, also make the checks a run makes before its first test
    (as the web's Validate): targets, room for the data, fio."""
    from ..report.fit import fit_table, left_out_line
    from ..studies.jobfiles import write_jobfiles
    from ..studies.preview import preview_plan
    plan, _ = plan_with_targets(plan_path, target)
    preview = preview_plan(plan)
    table = Table(title=f"{plan.name}: {len(preview.specs)} tests", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("test")
    for name in preview.columns:
        table.add_column(PARAMS[name].label, justify="left" if PARAMS[name].kind == "choice" else "right")
    for i, row in enumerate(preview.rows, 1):
        table.add_row(str(i), row["id"], *(row[name] for name in preview.columns))
    width = table_width(wide)
    # The test id spells the parameters: those columns go first when the terminal is narrow.
    dropped, shortened = fit_table(table, width, ("#", "test"))
    print_table(table, wide)
    left_out = left_out_line(dropped, shortened, width) if width else None
    if left_out:
        console.print(left_out, style="dim", highlight=False)
    _print_costs(preview)
    for note in preview.notes:  # e.g. a rate rounded up per job
        console.print(f"Note: {note}", highlight=False, soft_wrap=True)
    if jobfiles is not None:
        written = write_jobfiles(plan, jobfiles)
        console.print(f"Wrote {len(written)} fio job file{'s' if len(written) != 1 else ''} to {jobfiles} "
                      f"(engine auto is written as {AUTO_ENGINES[0]}, the first it tries; "
                      f"`iofleet import FILE` reads one back as the same test)", highlight=False, soft_wrap=True)
    if target:
        _check_targets(plan)


def _check_targets(plan) -> None:
    """The run's own checks before its first test, one line each; exit 1 when one fails."""
    from ..results.store import default_data_dir
    from ..studies.preflight import preflight
    checks = preflight(plan, None, str(default_data_dir(None)))
    console.print("Checks a run makes before its first test:", highlight=False)
    for c in checks:
        console.print(f"  {'✓' if c.ok else '✗'} {c.name}: {c.detail}", style=None if c.ok else "red",
                      highlight=False, markup=False)
    if not all(c.ok for c in checks):
        raise typer.Exit(EXIT_FAILED)


def _print_costs(preview: "PlanPreview") -> None:
    """A mixed plan's steps, the targets, the duration and the data files."""
    plan = preview.plan
    if preview.steps:
        steps = preview.steps
        console.print(f"Mixed plan: the workloads run at the same time, each on its host group, in "
                      f"{len(steps)} step{'s' if len(steps) > 1 else ''}:")
        for i, step in enumerate(steps, 1):
            console.print(f"  {i}. " + "  +  ".join(
                f"{w.name} on {','.join(f'{k}={v}' for k, v in w.hosts.items())}: {step.groups[w.name].id}"
                for w in plan.workloads), highlight=False, markup=False)
    targets = plan.targets or ["(none yet: give --target DIR when running)"]
    console.print(f"Targets: {', '.join(targets)}")
    duration = format_duration(preview.estimate_s)
    if preview.on_device:
        sized = "as given" if plan.sets("size") else "no size given: the device shared by the jobs"
        console.print(f"Estimated duration: {duration}; on the device each job "
                      f"writes its own region of `size` bytes ({sized}); nothing to remove afterwards")
    else:
        console.print(
            f"Estimated duration: {duration}; "
            f"data files: {format_bytes(preview.data_bytes)} "
            f"(created under <target>/iofleet/, removed afterwards"
            f"{'' if not plan.keep_files else ' — no: keep_files is set'})"
        )


def params():
    """List plan and inventory parameters with their defaults."""
    for title, where, table_params in reference.TABLES:
        table = Table(title=f"{title} ({where})", title_justify="left")
        for col in reference.COLUMNS:  # a name is kept whole; long option names fold, never end in "…"
            table.add_column(col, no_wrap=col == "parameter", overflow="fold")
        for p in table_params.values():
            table.add_row(*reference.row(p))
        console.print(table)
    from ..fleet.kubernetes.settings import REFERENCE
    table = Table(title="Kubernetes inventory (the inventory's `kubernetes:` section; docs/kubernetes.md)",
                  title_justify="left")
    for col in ("key", "default", "allowed", "meaning"):
        table.add_column(col, no_wrap=col == "key", overflow="fold")
    for key, *cells in REFERENCE:
        table.add_row(*(Text(c) for c in (key, *cells)))
    console.print(table)
