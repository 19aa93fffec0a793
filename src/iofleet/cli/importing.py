"""`iofleet import`: HCIBench/vdbench parameter files and fio job files → one plan.

A thin shell over iofleet.importers: the plan goes to stdout (or -o FILE),
the notes to stderr, one `note: ...` line each. Errors are raised as
IofleetError for the caller's `user_errors` wrapper (this module cannot
import cli.main: main imports it).
"""

from pathlib import Path
from typing import List, Optional

import typer

from ..errors import PlanError
from ..plan.expand import expand
from ..plan.load import parse_plan
from .output import write_output

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.


def import_command(
    files: List[Path] = typer.Argument(..., metavar="FILE",
                                       help="vdbench parameter files (as HCIBench writes them) or fio job files."),
    output: Optional[Path] = typer.Option(None, "-o", "--output",
                                          help="Write the plan to this file instead of printing it."),
):
    """Convert HCIBench/vdbench and fio job files into one plan.

    Every workload of every file becomes a workload of the plan; what could not
    be carried over, and what was assumed, is printed as `note:` lines on stderr
    (and kept as comments at the top of the plan). Commands, includes and
    ${VAR} expansions in the files are refused, never carried.
    """
    from ..importers import import_file, merge_results, plan_yaml
    results, problems = [], []
    for f in files:
        try:
            results.append(import_file(f))
        except PlanError as exc:
            problems += exc.problems
    if problems:
        raise PlanError(problems)
    plan, notes = merge_results(results, [str(f) for f in files])
    tests = len(expand(parse_plan(plan, "<imported plan>")))
    kinds = ", ".join(f"{f.name} ({r.kind})" for f, r in zip(files, results))
    header = [f"iofleet plan imported from {kinds}",
              "check the notes, then: iofleet validate PLAN; iofleet run PLAN"
              + ("" if plan.get("targets") else " --target DIR")]
    header += [f"note: {n}" for n in notes]
    text = plan_yaml(plan, header)
    for n in notes:
        typer.echo(f"note: {n}", err=True)
    if output is None:
        typer.echo(text, nl=False)
        return
    write_output(output, text)
    workloads = len(plan["workloads"])
    typer.echo(f"Wrote {output}: {workloads} workload{'s' if workloads != 1 else ''}, "
               f"{tests} test{'s' if tests != 1 else ''}, {len(notes)} note{'s' if len(notes) != 1 else ''}. "
               f"Check it with: iofleet validate {output}", err=True)
