"""`iofleet results ...` (list, show, export, import, label, check, recover),
`iofleet report` and `iofleet diagnose`: stored runs in the terminal."""

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..errors import IofleetError
from ..results.store import RUN_STATUSES
from ..units import escaped
from .common import (
    EXIT_FAILED, STUDY_SHOWS, DataDir, WideOpt, check_label, console, err_console, print_table, table_width,
    user_errors,
)
from .output import write_output

if TYPE_CHECKING:  # annotations only
    from ..results.model import Run
    from ..results.store import Store

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.

results_app = typer.Typer(help="Browse, export and import stored results.", no_args_is_help=True)


@results_app.command("label")
@user_errors
def results_label(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run number."),
    label: str = typer.Argument(..., metavar="LABEL", help="e.g. raid1-vm-encryption; runs sharing a label are "
                                                           "the repeats of one configuration for `compare`."),
    data_dir: Optional[str] = DataDir,
):
    """Label a stored run (replacing its label)."""
    from ..results.store import Store, default_data_dir
    check_label(label)
    with Store.open(default_data_dir(data_dir)) as store:
        store.update_run(run_id, label=label)
    console.print(f"Run {run_id} is labelled {label}.")


@results_app.command("list")
@user_errors
def results_list(
    label: str = typer.Option("", help="Only runs whose label contains this text (any case)."),
    plan: str = typer.Option("", help="Only runs whose plan name contains this text (any case)."),
    status: str = typer.Option("", help=f"Only runs with this status: {', '.join(RUN_STATUSES)}."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", metavar="N", help="Only the newest N runs."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json (a list of runs, one object each)."),
    wide: bool = WideOpt,
    data_dir: Optional[str] = DataDir,
):
    """List stored runs, newest first."""
    from ..report.fit import fit_table, left_out_line
    from ..results.store import RunFilter, Store, default_data_dir
    if fmt not in ("table", "json"):
        raise IofleetError(f"--format {fmt!r}: use table or json")
    where = RunFilter(label=label, plan=plan, status=status, limit=limit)
    with Store.open(default_data_dir(data_dir)) as store:
        runs = store.list_runs(where)
        path = store.path
    if fmt == "json":  # an empty store or no match: []
        sys.stdout.write(json.dumps([r.to_dict() for r in runs], indent=2) + "\n")
        return
    if not runs and where != RunFilter():
        console.print(f"No run in {path} matches these filters; `iofleet results list` lists them all.")
        return
    if not runs:
        console.print(f"No runs in {path} yet: start one with `iofleet run PLAN --target DIR`.")
        return
    table = Table(title=f"Runs in {path}", title_justify="left")
    for col in ("run", "created (UTC)", "kind", "plan", "label", "status", "tests ok"):
        table.add_column(col)
    stale = []
    for r in runs:
        if r.stale:  # its process is gone: a crash
            stale.append(str(r.id))
        free = (Text(escaped(t or "")) for t in (r.plan_name, r.label))  # as written: no markup
        table.add_row(str(r.id), r.created_at[:16].replace("T", " "), r.kind, *free, _list_status(r),
                      f"{r.tests_by_status['ok']}/{r.tests_planned}")
    width = table_width(wide)
    dropped, _ = fit_table(table, width, ("run", "created (UTC)", "plan", "label", "status", "tests ok"),
                           ("kind",), name=None)
    print_table(table, wide)
    if dropped:
        console.print(left_out_line(dropped, False, width), style="dim", highlight=False)
    if stale:
        console.print(f"running (stale): no process runs it any more (it crashed or was killed); "
                      f"`iofleet run --resume {stale[-1]}` runs its unfinished tests.", highlight=False)


def _list_status(r) -> str:
    return "running (stale)" if r.stale else r.status


@results_app.command("check")
@user_errors
def results_check(data_dir: Optional[str] = DataDir):
    """Check the results database for damage and which runs read.

    SQLite's integrity check, then each run read whole."""
    from ..results.recover import check_store
    from ..results.store import default_data_dir
    report = check_store(default_data_dir(data_dir))
    if report.ok:
        console.print(f"ok: {report.db} passed SQLite's integrity check; {len(report.readable)} runs read whole.",
                      highlight=False)
        return
    console.print(f"{report.db} is damaged.", highlight=False)
    if report.problems:
        console.print("SQLite's integrity check found:", highlight=False)
        for line in report.problems:
            console.print(f"  {line}", highlight=False, markup=False)
    if report.unlisted:
        console.print(f"No run can be read: {report.unlisted}.", highlight=False, markup=False)
    else:
        console.print(f"Runs that read whole: {', '.join(map(str, report.readable)) or 'none'}.", highlight=False)
        for run_id, why in report.unreadable.items():
            console.print(f"Run {run_id} cannot be read: {why}.", highlight=False, markup=False)
        console.print(f"Copy the runs that read to a new store with `iofleet results recover --data-dir "
                      f"{report.db.parent}` (the damaged file is not changed).", highlight=False, markup=False,
                      soft_wrap=True)
    raise typer.Exit(EXIT_FAILED)


@results_app.command("recover")
@user_errors
def results_recover(
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="NEWDIR",
                                          help="New data directory for the runs that can be read "
                                               "(default: DATA_DIR-recovered)."),
    data_dir: Optional[str] = DataDir,
):
    """Copy the runs of a damaged store that still read into a new one.

    Every run that can still be read (tests, figures, files) is copied."""
    from ..results.recover import recover_store
    from ..results.store import default_data_dir
    report = recover_store(default_data_dir(data_dir), output)
    for run_id, why in report.lost.items():
        console.print(f"lost: run {run_id}: {why}", highlight=False, markup=False)
    if report.unlisted:
        console.print(f"lost: every run: {report.unlisted}", highlight=False, markup=False)
    if report.missing_files:
        console.print(f"note: {report.missing_files} tests' artifact directories were not on disk", highlight=False)
    lost = ", ".join(map(str, report.lost)) or ("all" if report.unlisted else "none")
    console.print(f"Recovered {len(report.saved)} runs ({', '.join(map(str, report.saved)) or 'none'}) from "
                  f"{report.source} into {report.target}; lost: {lost}.", highlight=False, markup=False, soft_wrap=True)
    console.print(f"{report.source} is unchanged; use the new store with --data-dir {report.target.parent}",
                  highlight=False, markup=False, soft_wrap=True)
    if report.lost or report.unlisted:
        raise typer.Exit(EXIT_FAILED)


def file_size(n: int) -> str:
    """A written file's size as people read it: 812 bytes, 14.2 kB, 5.0 MB (10^3, 10^6)."""
    if n < 1000:
        return f"{n} bytes"
    return f"{n / 1e3:.1f} kB" if n < 1e6 else f"{n / 1e6:.1f} MB"


def _load_run(store: "Store", run_id: Optional[int]):
    if run_id is None:
        run_id = store.latest_run_id()
        if run_id is None:
            raise IofleetError(f"no runs in {store.path} yet; start one with `iofleet run`")
    return store.get_run(run_id)


@results_app.command("show")
@user_errors
def results_show(
    run_id: Optional[int] = typer.Argument(None, metavar="RUN", help="Run number (default: latest)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    wide: bool = WideOpt,
    data_dir: Optional[str] = DataDir,
):
    """Show a run's summary table, or every figure as JSON."""
    from ..report.summary import summary_table
    from ..results.model import run_to_json
    from ..results.store import Store, default_data_dir
    if fmt not in ("table", "json"):
        raise IofleetError(f"--format {fmt!r}: use table or json")
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
    if fmt == "json":
        sys.stdout.write(run_to_json(run))
    else:
        print_table(summary_table(run, table_width(wide)), wide)
        # The study's own tables (its record's, an imported run's too), as its command printed them.
        shown = STUDY_SHOWS.get(run.methodology.study if run.methodology is not None else None)
        if shown is not None:
            shown(run, wide)


@user_errors
def report_command(
    run_id: Optional[int] = typer.Argument(None, metavar="RUN", help="Run number (default: latest)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="File to write (default: report-RUN.html, or stdout for md)."),
    fmt: str = typer.Option("html", "--format", "-f", help="html (self-contained, with charts) or md (Markdown)."),
    data_dir: Optional[str] = DataDir,
):
    """Write a run's report: self-contained HTML, or Markdown.

    The HTML report is one file with the tables and charts (it opens offline);
    Markdown is for tickets."""
    from ..results.store import Store, default_data_dir
    if fmt not in ("html", "md"):
        raise IofleetError(f"--format {fmt!r}: use html or md")
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
        from ..report.html import run_report_html, run_report_md  # here: plotly takes ~0.3 s to import
        text = run_report_html(run, store.run_series(run)) if fmt == "html" else run_report_md(run)
    if fmt == "md" and output is None:
        sys.stdout.write(text)
        return
    output = output or Path(f"report-{run.id}.html")
    write_output(output, text)
    err_console.print(f"Wrote {output} ({file_size(len(text.encode()))})")


@results_app.command("export")
@user_errors
def results_export(
    run_id: Optional[int] = typer.Argument(None, metavar="RUN", help="Run number (default: latest)."),
    fmt: str = typer.Option("csv", "--format", "-f", help="csv, json, or zip (report, summary, tables, raw fio "
                                                          "outputs, job files and logs in one file)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="File to write (default: stdout; zip: iofleet-run-RUN.zip)."),
    data_dir: Optional[str] = DataDir,
):
    """Export a run as CSV or JSON, or everything as a zip bundle.

    CSV has one row per test; JSON every figure; the zip the report, tables,
    raw fio outputs, job files and logs."""
    from ..results.model import run_to_csv, run_to_json
    from ..results.store import Store, default_data_dir
    if fmt not in ("csv", "json", "zip"):
        raise IofleetError(f"--format {fmt!r}: use csv, json or zip")
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
        if fmt == "zip":
            output = output or Path(f"iofleet-run-{run.id}.zip")
            from ..report.bundle import run_bundle  # here: it imports plotly (~0.3 s)
            data = run_bundle(store, run)
            write_output(output, data)
            err_console.print(f"Wrote {output} ({file_size(len(data))})")
            return
    text = run_to_csv(run) if fmt == "csv" else run_to_json(run)
    if output:
        write_output(output, text)
        err_console.print(f"Wrote {output}")
    else:
        sys.stdout.write(text)


@results_app.command("import")
@user_errors
def results_import(
    files: List[Path] = typer.Argument(..., metavar="FIO_OUTPUT.json...", help="fio json or json+ output files."),
    label: Optional[str] = typer.Option(None, help="Label stored with the run."),
    wide: bool = WideOpt,
    data_dir: Optional[str] = DataDir,
):
    """Store existing fio JSON outputs as a run.

    Single-host outputs and fio client/server outputs both work."""
    from ..report.summary import summary_table
    from ..results.ingest import import_outputs
    from ..results.store import Store, default_data_dir
    with Store.open(default_data_dir(data_dir)) as store:
        run_id = import_outputs(store, files, label=label)
        run = store.get_run(run_id)
        print_table(summary_table(run, table_width(wide)), wide)
        console.print(f"Imported {len(files)} file(s) as run {run_id} in {store.path}")


@user_errors
def diagnose_command(
    run_id: Optional[int] = typer.Argument(None, metavar="RUN", help="Run number (default: latest)."),
    threshold: Optional[List[str]] = typer.Option(None, "--threshold", help="Change a threshold: NAME=VALUE "
                                                  "(repeatable), e.g. read_latency_ms=10; see --rules."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    rules: bool = typer.Option(False, "--rules", help="List the rules and their thresholds, and exit."),
    data_dir: Optional[str] = DataDir,
):
    """Say what is wrong with a run and what to change.

    Each finding gives the rule, the numbers it saw and the change to make."""
    from ..analysis.diagnostics import RULES, SEVERITIES, Thresholds, diagnose
    from ..results.store import Store, default_data_dir
    if fmt not in ("table", "json"):
        raise IofleetError(f"--format {fmt!r}: use table or json")
    limits = Thresholds().with_overrides(threshold or [])
    if rules:
        table = Table(title="Diagnostics rules (docs/diagnostics.md)", title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("rule", "severity", "fires when"):
            table.add_column(col)
        for rule in RULES:
            table.add_row(rule.name, rule.severity, rule.describe(limits))
        console.print(table)
        return
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
    findings = diagnose(run, limits)
    if fmt == "json":
        sys.stdout.write(json.dumps([f.to_dict() for f in findings], indent=2) + "\n")
        return
    if not findings:
        console.print(f"Run {run.id}: no findings ({len(RULES)} rules checked, {len(run.tests)} tests).")
        return
    table = Table(title=f"Diagnostics of run {run.id} · {run.plan_name}", title_justify="left",
                  box=box.SIMPLE_HEAD)
    for col in ("severity", "test", "host", "finding", "evidence", "change"):
        table.add_column(col, overflow="fold")
    titles = {r.name: r.title for r in RULES}
    colour = {"critical": "red", "warning": "yellow", "info": ""}
    rows: dict[tuple, list[str]] = {}  # the same finding for several tests is one row
    for f in findings:
        rows.setdefault((f.severity, f.host or "", f.rule, f.evidence, f.change), []).append(f.test or "(run)")
    for (severity, host, rule, evidence, change), tests in rows.items():
        table.add_row(Text(severity, style=colour[severity]), ", ".join(tests), host, titles[rule], evidence, change)
    from ..report.fit import natural_width, wrapped
    if natural_width(table) <= console.width:
        console.print(table)
    else:  # narrower: one block per finding, wrapped between words, never inside one
        console.print(Text(str(table.title), style="bold"))
        for (severity, host, rule, evidence, change), tests in rows.items():
            where = ", ".join(tests) + (f" on {host}" if host else "")
            console.print(Text.assemble((f"[{severity}]", colour[severity]), f" {titles[rule]} — ",
                                        escaped(where)))
            for what, line in (("evidence", evidence), ("change", change)):
                console.print("\n".join(wrapped(f"{what}: {escaped(line)}", console.width)), markup=False,
                              highlight=False, soft_wrap=True)
    counts = [f"{n} {s}" for s in SEVERITIES if (n := sum(1 for f in findings if f.severity == s))]
    console.print(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}: {', '.join(counts)}.")
