"""The terminal front door: thin typer commands over the studies and stores.

Errors a user can cause are printed as one line each, without a traceback,
with a non-zero exit code.
"""

import contextlib
import functools
import json
import signal
import sys
import threading
from pathlib import Path
from typing import List, Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import IofleetError
from ..fio.command import fio_version
from ..fleet.check import check_hosts, clean_hosts, problem_lines
from ..fleet.devices import REMOTE_UNSEEN
from ..fleet.inventory import load_inventory
from ..plan import expand
from ..plan.expand import data_per_target_set, expand_mixed
from ..plan.imports import load_plan_source
from ..plan.load import check_targets, with_destroy_data, with_targets
from ..plan.model import check_name, is_device_path
from ..plan.params import PARAMS, RUN_PARAMS
from ..plan.units import format_bytes, format_duration, format_size
from ..analysis.diagnostics import RULES, SEVERITIES, Thresholds, diagnose
from ..analysis.saturation import parse_slo
from ..report.bundle import run_bundle
from ..report.html import run_report_html, run_report_md
from ..report.saturation import saturation_report, sweep_of_run
from ..report.summary import diagnostics_lines, methodology_notes, summary_table
from ..results.export import run_to_csv, run_to_dict
from ..results.ingest import import_outputs
from ..results.recover import check_store, recover_store
from ..results.store import Store, default_data_dir
from ..plan.easy import Durations
from ..studies.easy_run import easy_run, probe
from ..studies.run import RunObserver, estimate_seconds, prepare_resume, resume_run, run_plan
from ..studies.saturate import Sweep, run_saturate
from ..studies.scale import ScaleStep, parse_steps, run_scale
from .progress import TerminalProgress, fmt_lat_ms
from .compare import compare_command
from .importing import import_command
from .model import model_command
from .output import write_output
from .serve import serve_command
from .server import DEFAULT_BIND, serve_fio

app = typer.Typer(
    help="iofleet: how fast is this storage, really, and why? (fio-based benchmarking)",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
results_app = typer.Typer(help="Browse, export and import stored results.", no_args_is_help=True)
app.add_typer(results_app, name="results")
hosts_app = typer.Typer(help="The fleet's hosts (fio servers).", no_args_is_help=True)
app.add_typer(hosts_app, name="hosts")

console = Console()
if not console.is_terminal:
    console = Console(width=200)  # logs and pipes: never wrap a table row
err_console = Console(stderr=True)

DataDir = typer.Option(None, "--data-dir", help="Results directory (default: $IOFLEET_DATA or ./iofleet-data).")
# parser=str: typer's Path('') would be '.', the current directory; the text is checked as a plan's targets.
TargetOpt = typer.Option(None, "--target", "-t", parser=str, metavar="PATH", help="Directory, or one block device (/dev/X), to test "
                                                       "(repeatable); replaces the plan's targets.")
DestroyOpt = typer.Option(None, "--destroy-data", metavar="/dev/X",
                          help="A device target whose data may be destroyed (repeatable): allows one that holds a "
                               "filesystem, partition table or other signature; never a mounted or in-use one.")

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def user_errors(fn):
    """Print iofleet's own errors as one line each and exit non-zero."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except IofleetError as exc:
            for line in str(exc).splitlines() or ["error"]:
                err_console.print(Text.assemble(("error:", "red"), " ", line), highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


@contextlib.contextmanager
def _stop_on_signals():
    """Ctrl-C or SIGTERM sets the yielded event: the study stops fio, which
    still writes its results, and finished tests are kept."""
    stop = threading.Event()

    def on_signal(signum, frame):
        if not stop.is_set():
            err_console.print("[yellow]Stopping: waiting for fio to finish writing its results…[/]")
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _targets(target: Optional[List[str]]) -> Optional[List[Path]]:
    """--target values, checked as a plan's targets are (refused in one line)."""
    return [Path(t) for t in check_targets(target)] if target else None


def _plan_with_targets(plan_path: Path, targets: Optional[List[Path]], destroy_data: Optional[List[str]] = None):
    """The plan (a YAML plan, or a plain fio job file imported unchanged),
    its text to store, and what the import noted."""
    plan, text, notes = load_plan_source(plan_path)
    if targets:
        plan = with_targets(plan, targets)
    if destroy_data:
        plan = with_destroy_data(plan, destroy_data)
    for note in notes:
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    return plan, text


@app.command()
@user_errors
def validate(
    plan_path: Path = typer.Argument(..., metavar="PLAN", help="Plan file (YAML), or a plain fio job file."),
    target: Optional[List[Path]] = TargetOpt,
):
    """Check a plan and list the tests it expands into."""
    plan, _ = _plan_with_targets(plan_path, target)
    specs = expand(plan)
    timed = specs
    table = Table(title=f"{plan.name}: {len(specs)} tests", title_justify="left")
    for col in ("#", "test", "bs", "read %", "random %", "jobs", "iodepth", "size",
                "working set", "ramp", "runtime", "engine", "direct"):
        table.add_column(col, justify="left" if col in ("test", "engine") else "right")
    for i, s in enumerate(specs, 1):
        name = s.id if s.repeats == 1 else f"{s.id} ({s.repeat}/{s.repeats})"
        table.add_row(str(i), name, format_size(s.bs), str(s.read_pct), str(s.random_pct),
                      str(s.jobs), str(s.iodepth), format_size(s.size), f"{s.working_set_pct}%",
                      format_duration(s.ramp),
                      f"steady, ≤{format_duration(s.max_runtime)}" if s.until == "steady" else format_duration(s.runtime),
                      s.engine,
                      "yes" if s.direct else "no")
    console.print(table)
    if plan.mixed:
        steps = expand_mixed(plan)
        console.print(f"Mixed plan: the workloads run at the same time, each on its host group, in "
                      f"{len(steps)} step{'s' if len(steps) > 1 else ''}:")
        for i, step in enumerate(steps, 1):
            console.print(f"  {i}. " + "  +  ".join(
                f"{w.name} on {','.join(f'{k}={v}' for k, v in w.hosts.items())}: {step.groups[w.name].id}"
                for w in plan.workloads), highlight=False, markup=False)
        timed = steps
    targets = plan.targets or ["(none yet: give --target DIR when running)"]
    console.print(f"Targets: {', '.join(targets)}")
    if any(is_device_path(t) for t in plan.targets):
        sized = "as given" if plan.sets("size") else "no size given: the device shared by the jobs"
        console.print(f"Estimated duration: {format_duration(estimate_seconds(timed))}; on the device each job "
                      f"writes its own region of `size` bytes ({sized}); nothing to remove afterwards")
        return
    console.print(
        f"Estimated duration: {format_duration(estimate_seconds(timed))}; "
        f"data files: {format_bytes(data_per_target_set(specs))} "
        f"(created under <target>/iofleet/, removed afterwards"
        f"{'' if not plan.keep_files else ' — no: keep_files is set'})"
    )


@app.command()
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
):
    """Run a plan's tests on this machine (or on a fleet with --hosts) and print the summary."""
    _check_label(label)
    if resume is not None:
        return _resume(resume, plan_path, target, data_dir, label, hosts, destroy_data)
    if plan_path is None:
        raise IofleetError("give the PLAN to run (or --resume RUN to finish a stopped run)")
    plan, plan_text = _plan_with_targets(plan_path, target, destroy_data)
    fleet = load_inventory(hosts).select(plan.hosts) if hosts else None
    with _stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        with TerminalProgress(console) as progress:
            outcome = run_plan(plan, plan_text, store, hosts=fleet, label=label,
                               observer=progress, stop=stop, inventory=hosts)
        console.print(summary_table(store.get_run(outcome.run_id)))
        db = store.path
    _finish(outcome, db, fleet)


def _resume(run_id, plan_path, target, data_dir, label, hosts, destroy_data) -> None:
    """`run --resume RUN`: the study checks and holds the run, then runs what is left."""
    if label is not None:
        raise IofleetError(f"a resumed run keeps its label; change it with `iofleet results label {run_id} LABEL`")
    plan = _plan_with_targets(plan_path, target, destroy_data)[0] if plan_path else None
    with _stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        todo = prepare_resume(store, run_id, plan=plan, targets=_targets(target), inventory=hosts,
                              destroy_data=destroy_data)
        console.print(todo.describe(), highlight=False, markup=False)
        with TerminalProgress(console) as progress:
            outcome = resume_run(store, todo, observer=progress, stop=stop)
        console.print(summary_table(store.get_run(outcome.run_id)))
        db = store.path
    _finish(outcome, db, todo.hosts)


def _finish(outcome, db, fleet) -> None:
    """The closing lines of a run and its exit code."""
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
    if outcome.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if not outcome.ok:
        raise typer.Exit(EXIT_FAILED)  # failed or partial


@app.command("easy-run")
@user_errors
def easy_run_command(
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: run on all at once."),
    runtime: Optional[str] = typer.Option(None, help="Measure each profile this long instead of until steady."),
    max_runtime: Optional[str] = typer.Option(None, "--max-runtime", help="Longest a profile may measure (default 30m)."),
    ramp: Optional[str] = typer.Option(None, help="Warm-up of each profile (default 1m)."),
    round_: Optional[str] = typer.Option(None, "--round", help="Steady-state round (default 1m; 5 rounds = window)."),
    size: Optional[str] = typer.Option(None, help="Working set per host (default: 10% of free space, 1–32 GiB)."),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the run (default easy-run)."),
    destroy_data: Optional[List[str]] = DestroyOpt,
    no_probe: bool = typer.Option(False, "--no-probe", help="Guess jobs × iodepth from CPUs and device type instead "
                                                            "of measuring them (saves the probe's ~1–2 min)."),
):
    """Measure the storage with nothing else given: sized for the hosts, four standard profiles."""
    _check_label(label)
    durations = Durations()
    for name, value in (("runtime", runtime), ("max_runtime", max_runtime), ("ramp", ramp), ("round", round_)):
        if value is not None:
            try:
                setattr(durations, name, PARAMS[name].parse(value))
            except ValueError as exc:
                raise IofleetError(f"--{name.replace('_', '-')} {value}: {exc}") from None
    try:
        working_set = PARAMS["size"].parse(size) if size is not None else None
    except ValueError as exc:
        raise IofleetError(f"--size {size}: {exc}") from None
    fleet = load_inventory(hosts).hosts if hosts else None

    def on_plan(plan_text, reasons):
        console.print("Easy Run chose:", highlight=False)
        for r in reasons:
            console.print(f"  {r}", highlight=False, markup=False)

    targets = _targets(target)
    with _stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        load = None
        if not no_probe:
            console.print("Easy Run probes jobs × iodepth first: 4k random reads in short cells "
                          "(--no-probe guesses instead)", highlight=False)
            with TerminalProgress(console, sweep=True) as progress:
                probed = probe(store, targets=targets, hosts=fleet, durations=durations, working_set=working_set,
                               label=label, observer=progress, stop=stop, destroy_data=destroy_data)
            if stop.is_set() or probed.outcome.run.status == "interrupted":
                _finish(probed.outcome.run, store.path, fleet)
            if probed.load is None:
                why = "; ".join(probed.outcome.stopped) or "no cell measured any IO"
                raise IofleetError(f"easy-run: the probe (run {probed.run_id}) measured nothing: {why}; "
                                   f"see `iofleet results show {probed.run_id}`, or give --no-probe")
            load = probed.load
        with TerminalProgress(console) as progress:
            outcome = easy_run(store, targets=targets, hosts=fleet, durations=durations, working_set=working_set,
                               label=label, observer=progress, stop=stop, on_plan=on_plan,
                               destroy_data=destroy_data, load=load)
        console.print(summary_table(store.get_run(outcome.run_id)))
        db = store.path
    _finish(outcome, db, fleet)


@app.command()
@user_errors
def server(
    bind: str = typer.Option(DEFAULT_BIND, "--bind", help="ADDRESS[:PORT] to listen on (fio's default port 8765)."),
):
    """Start `fio --server` the way iofleet expects, on a host of the fleet."""
    serve_fio(bind, echo=lambda line: err_console.print(line, markup=False, highlight=False, soft_wrap=True))


@hosts_app.command("check")
@user_errors
def hosts_check(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML)."),
):
    """Check every host: fio server reachable, same fio version, targets writable, free space."""
    hosts = load_inventory(inventory).hosts
    version = fio_version()
    with console.status(f"Checking {len(hosts)} host{'s' if len(hosts) > 1 else ''}…"):
        checks = check_hosts(hosts, version)
    table = Table(title=f"{inventory}: {len(hosts)} hosts · controller {version}", title_justify="left")
    for col in ("host", "address", "fio server", "fio", "target", "writable", "free", "metrics"):
        table.add_column(col)
    for c in checks:
        server = "[green]reachable[/]" if c.reachable else "[red]unreachable[/]"
        fio = c.fio_version or "?"
        if c.fio_version and c.fio_version != version:
            fio = f"[red]{fio}[/]"
        metrics = {"none": "none", "ok": "[green]ok[/]"}.get(c.metrics, "[red]unreachable[/]")
        for i, t in enumerate(c.targets):
            writable = "?" if not c.fio_version or c.fio_version != version or not t.checked else (
                "[green]yes[/]" if not t.problem else "[red]no[/]")
            if t.device:
                writable = t.device.summary
            free = format_bytes(t.free_bytes) if t.free_bytes is not None else "n/a"
            first = i == 0
            table.add_row(c.host.name if first else "", c.host.address if first else "",
                          server if first else "", fio if first else "", t.path, writable, free,
                          metrics if first else "")
    console.print(table)
    problems = problem_lines(checks)
    for line in problems:
        err_console.print(Text.assemble(("error:", "red"), " ", line), highlight=False, soft_wrap=True)
    for c in checks:
        if c.metrics not in ("none", "ok"):
            err_console.print(f"note: host {c.host.name}: metrics endpoint {c.host.metrics}: {c.metrics}",
                              markup=False, highlight=False, soft_wrap=True)
        for t in c.targets:
            if t.device and t.device.summary != "no":
                err_console.print(f"note: host {c.host.name}: target {t.path} is a block device; a run writes to it "
                                  f"only when the plan's destroy_data (or --destroy-data) names it: {REMOTE_UNSEEN}",
                                  markup=False, highlight=False, soft_wrap=True)
        if c.leftovers:
            err_console.print(f"note: host {c.host.name}: iofleet's data files from an earlier run are left on "
                              f"target {c.host.targets[0]} (a run that lost this host could not remove them); "
                              f"`iofleet hosts clean {inventory}` removes them, as does the next run's clean-up",
                              markup=False, highlight=False, soft_wrap=True)
    ok = len(checks) - len({line.split(" (")[0] for line in problems})
    console.print(f"{ok} of {len(checks)} hosts ready.")
    if problems:
        raise typer.Exit(EXIT_FAILED)


@hosts_app.command("clean")
@user_errors
def hosts_clean(
    inventory: Path = typer.Argument(..., metavar="INVENTORY", help="Inventory file (YAML)."),
):
    """Remove iofleet's data files that runs left on the hosts' targets (e.g. on a host lost during a run)."""
    hosts = load_inventory(inventory).hosts
    with console.status(f"Removing iofleet's data files from {len(hosts)} host{'s' if len(hosts) > 1 else ''}…"):
        removed, problems = clean_hosts(hosts)
    for name, count in removed.items():
        console.print(f"{name}: {count} data file{'s' if count != 1 else ''} removed", highlight=False, markup=False)
    for line in problems:
        err_console.print(Text.assemble(("error:", "red"), " ", line), highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(EXIT_FAILED)


app.command("import")(user_errors(import_command))
app.command("model")(user_errors(model_command))
app.command("compare")(user_errors(compare_command))
app.command("serve")(user_errors(serve_command))


@app.command()
def params():
    """List the parameters a plan may set, with defaults and fio options."""
    fixed = ", ".join(name for name, p in PARAMS.items() if not p.in_matrix)
    for title, table_params in (
            (f"Workload parameters (under defaults: or a workload; any but {fixed} may be a list "
             f"under `matrix:`)", PARAMS),
            ("Run settings (top level of the plan)", RUN_PARAMS)):
        table = Table(title=title, title_justify="left")
        for col in ("parameter", "default", "allowed", "fio option", "meaning"):
            table.add_column(col)
        for p in table_params.values():
            allowed = ", ".join(p.choices) if p.choices else (
                "true/false" if p.kind == "bool" else p.allowed().removeprefix("allowed: "))
            table.add_row(p.name, "none" if p.default is None else p.format(p.default), allowed, p.fio, p.help)
        console.print(table)


def _check_label(label: Optional[str]) -> None:
    """A label given on the command line follows the rule of plans and the web API."""
    if label is not None:
        try:
            check_name(label)
        except ValueError as exc:
            raise IofleetError(f"label {label!r}: {exc}") from None


@results_app.command("label")
@user_errors
def results_label(
    run_id: int = typer.Argument(..., metavar="RUN", help="Run number."),
    label: str = typer.Argument(..., metavar="LABEL", help="e.g. raid1-vm-encryption; runs sharing a label are "
                                                           "the repeats of one configuration for `compare`."),
    data_dir: Optional[str] = DataDir,
):
    """Label a stored run (replacing its label)."""
    _check_label(label)
    with Store.open(default_data_dir(data_dir)) as store:
        store.update_run(run_id, label=label)
    console.print(f"Run {run_id} is labelled {label}.")


@results_app.command("list")
@user_errors
def results_list(data_dir: Optional[str] = DataDir):
    """List stored runs, newest first."""
    with Store.open(default_data_dir(data_dir)) as store:
        runs = store.list_runs()
        path = store.path
    if not runs:
        console.print(f"No runs in {path} yet: start one with `iofleet run PLAN --target DIR`.")
        return
    table = Table(title=f"Runs in {path}", title_justify="left")
    for col in ("run", "created (UTC)", "plan", "label", "source", "status", "tests ok/planned"):
        table.add_column(col)
    stale = []
    for r in runs:
        counts = r["tests_by_status"]
        status = r["status"]
        if status == "running" and r["held_by"] is None:
            status = "running (stale)"  # its process is gone: a crash
            stale.append(str(r["id"]))
        table.add_row(str(r["id"]), str(r["created_at"]), r["plan_name"], r.get("label") or "",
                      r["source"], status, f"{counts.get('ok', 0)}/{r['tests_planned']}")
    console.print(table)
    if stale:
        console.print(f"running (stale): no process runs it any more (it crashed or was killed); "
                      f"`iofleet run --resume {stale[-1]}` runs its unfinished tests.", highlight=False)


@results_app.command("check")
@user_errors
def results_check(data_dir: Optional[str] = DataDir):
    """Check the results database for damage (SQLite's integrity check) and which runs still read."""
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
    """Copy every run of a damaged store that can still be read (tests, figures, files) into a new store."""
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


def _load_run(store: Store, run_id: Optional[int]):
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
    data_dir: Optional[str] = DataDir,
):
    """Show a run's summary table, or every figure as JSON."""
    if fmt not in ("table", "json"):
        raise IofleetError(f"--format {fmt!r}: use table or json")
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
    if fmt == "json":
        sys.stdout.write(json.dumps(run_to_dict(run), indent=2) + "\n")
    else:
        console.print(summary_table(run))
        _print_saturation(run)


def _print_saturation(run: dict) -> None:
    """A saturate sweep's cells, grid and verdicts (other runs: nothing)."""
    sweep = sweep_of_run(run_to_dict(run))
    if sweep is not None:
        console.print(saturation_report(*sweep, f"Saturation sweep of run {run['id']}"))


@app.command("report")
@user_errors
def report_command(
    run_id: Optional[int] = typer.Argument(None, metavar="RUN", help="Run number (default: latest)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="File to write (default: report-RUN.html, or stdout for md)."),
    fmt: str = typer.Option("html", "--format", "-f", help="html (self-contained, with charts) or md (Markdown)."),
    data_dir: Optional[str] = DataDir,
):
    """Write a run's report: one HTML file with the tables and charts (opens offline), or Markdown for tickets."""
    if fmt not in ("html", "md"):
        raise IofleetError(f"--format {fmt!r}: use html or md")
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
        text = run_report_html(run, store.run_series(run)) if fmt == "html" else run_report_md(run)
    if fmt == "md" and output is None:
        sys.stdout.write(text)
        return
    output = output or Path(f"report-{run['id']}.html")
    write_output(output, text)
    err_console.print(f"Wrote {output} ({len(text.encode()) / 1e6:.1f} MB)")


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
    """Export a run's figures as CSV (one row per test) or JSON, or everything as a zip bundle."""
    if fmt not in ("csv", "json", "zip"):
        raise IofleetError(f"--format {fmt!r}: use csv, json or zip")
    with Store.open(default_data_dir(data_dir)) as store:
        run = _load_run(store, run_id)
        if fmt == "zip":
            output = output or Path(f"iofleet-run-{run['id']}.zip")
            data = run_bundle(store, run)
            write_output(output, data)
            err_console.print(f"Wrote {output} ({len(data) / 1e6:.1f} MB)")
            return
    text = run_to_csv(run) if fmt == "csv" else json.dumps(run_to_dict(run), indent=2) + "\n"
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
    data_dir: Optional[str] = DataDir,
):
    """Store existing fio JSON outputs (single host or client/server) as a run."""
    with Store.open(default_data_dir(data_dir)) as store:
        run_id = import_outputs(store, files, label=label)
        run = store.get_run(run_id)
        console.print(summary_table(run))
        console.print(f"Imported {len(files)} file(s) as run {run_id} in {store.path}")


class _StepProgress(RunObserver):
    """A fresh progress display for each step of a study (one test per run)."""

    def __init__(self, console: Console):
        self.console = console
        self.bar: TerminalProgress | None = None

    def run_started(self, run_id, specs, estimate_s):
        self.close()
        self.bar = TerminalProgress(self.console).__enter__()
        self.bar.run_started(run_id, specs, estimate_s)

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        if self.bar:
            self.bar.preparing(done_bytes, total_bytes, elapsed_s, hosts)

    def test_started(self, index, spec):
        if self.bar:
            self.bar.test_started(index, spec)

    def test_phase(self, index, spec, phase):
        if self.bar:
            self.bar.test_phase(index, spec, phase)

    def test_live(self, index, spec, live):
        if self.bar:
            self.bar.test_live(index, spec, live)

    def test_finished(self, index, spec, result):
        self.close()  # the step's own line says how it went

    def close(self):
        if self.bar:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _scale_step_line(step: ScaleStep) -> str:
    where = f"step {step.number}/{step.of}: {len(step.hosts)} host{'s' if len(step.hosts) > 1 else ''}"
    run = f"run {step.run_id}" if step.run_id is not None else "no run"
    a = step.aggregate.all if step.aggregate else None
    if step.ok and a:
        return (f"[green]ok[/]      {where} ({run}): {a.iops:,.0f} IOPS, {a.bw_bytes_s / 1e6:,.1f} MB/s, "
                f"mean {fmt_lat_ms(a.lat_mean_ns)} ms, p99 {fmt_lat_ms(a.percentiles_ns.get('p99'))} ms")
    colour = "yellow" if step.status in ("interrupted", "partial") else "red"
    return f"[{colour}]{step.status}[/] {where} ({run}): {step.error or 'no result'}"


@app.command()
@user_errors
def scale(
    plan_path: Path = typer.Argument(..., metavar="PLAN", help="Plan file (YAML) with one test, or pick one with --test."),
    hosts: Path = typer.Option(..., "--hosts", help="Inventory of fio servers; step k uses its first k hosts."),
    steps: Optional[str] = typer.Option(None, "--steps", help="Host counts to run, e.g. 1,2,4,8 (default: 1, 2, … all)."),
    test: Optional[str] = typer.Option(None, "--test", help="The plan's test to run (an id from `iofleet validate`)."),
    data_dir: Optional[str] = DataDir,
):
    """Run one test on 1, 2, … hosts at once and find where the fleet's IOPS stop growing."""
    plan, plan_text = _plan_with_targets(plan_path, None)
    fleet = load_inventory(hosts).select(plan.hosts)
    wanted = parse_steps(steps) if steps is not None else None
    progress = _StepProgress(console)

    def on_step(step: ScaleStep):
        progress.close()
        console.print(_scale_step_line(step), highlight=False)

    with _stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        try:
            outcome = run_scale(plan, plan_text, store, fleet, steps=wanted, test_id=test,
                                observer=progress, stop=stop, on_step=on_step)
        finally:
            progress.close()
        db = store.path

    result = outcome.scaling
    table = Table(title=f"Scaling of {outcome.test_id} ({plan.name}) on up to {outcome.available} hosts",
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
    console.print(table)
    console.print(result.verdict(), highlight=False)
    for note in outcome.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    if outcome.stopped:
        console.print(f"[yellow]Study {outcome.status}:[/] {outcome.stopped}", highlight=False)
    console.print(f"Results: {db} (each step is a run: `iofleet results show RUN`)")
    if outcome.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if not outcome.ok:
        raise typer.Exit(EXIT_FAILED)  # a step failed or lost a host


@app.command("diagnose")
@user_errors
def diagnose_command(
    run_id: Optional[int] = typer.Argument(None, metavar="RUN", help="Run number (default: latest)."),
    threshold: Optional[List[str]] = typer.Option(None, "--threshold", help="Change a threshold: NAME=VALUE "
                                                  "(repeatable), e.g. read_latency_ms=10; see --rules."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
    rules: bool = typer.Option(False, "--rules", help="List the rules and their thresholds, and exit."),
    data_dir: Optional[str] = DataDir,
):
    """Say what is wrong with a run's set-up or results, with the numbers and what to change."""
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
    findings = diagnose(run_to_dict(run), limits)
    if fmt == "json":
        sys.stdout.write(json.dumps([f.to_dict() for f in findings], indent=2) + "\n")
        return
    if not findings:
        console.print(f"Run {run['id']}: no findings ({len(RULES)} rules checked, {len(run['tests'])} tests).")
        return
    table = Table(title=f"Diagnostics of run {run['id']} · {run['plan_name']}", title_justify="left",
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
    console.print(table)
    counts = [f"{n} {s}" for s in SEVERITIES if (n := sum(1 for f in findings if f.severity == s))]
    console.print(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}: {', '.join(counts)}.")


def _option(name: str, param, value):
    """A command-line value parsed by the parameter table (units, bounds)."""
    try:
        return param.parse(value)
    except ValueError as exc:
        raise IofleetError(f"--{name} {value}: {exc}") from None


@app.command()
@user_errors
def saturate(
    target: Optional[List[Path]] = TargetOpt,
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="Inventory of fio servers: every cell runs on all."),
    bs: str = typer.Option("4k", "--bs", help="Block size."),
    read_pct: str = typer.Option("100", "--read-pct", help="Share of reads, % (0 = all writes)."),
    random_pct: str = typer.Option("100", "--random-pct", help="Share of random IO, % (0 = sequential)."),
    slo: Optional[str] = typer.Option(None, "--slo", help="Latency target, e.g. 'p99<=2ms' or 'mean<500us'."),
    size: str = typer.Option("1g", "--size", help="Each job's data file."),
    round_: str = typer.Option("1s", "--round", help="Each cell measures until steady: 5 rounds of this."),
    max_runtime: str = typer.Option("10s", "--max-runtime", help="The longest a cell measures when not steady."),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="Measure each cell this fixed time instead."),
    ramp: str = typer.Option("1s", "--ramp", help="Warm-up of each cell."),
    max_jobs: Optional[int] = typer.Option(None, "--max-jobs", help="Most jobs per host (default: its CPUs)."),
    max_iodepth: int = typer.Option(256, "--max-iodepth", help="Most outstanding IOs per job."),
    min_gain: float = typer.Option(10.0, "--min-gain", help="A doubling gaining fewer % IOPS has stopped growing."),
    bisect: int = typer.Option(3, "--bisect", help="Most bisection steps toward the target."),
    repeats: int = typer.Option(3, "--repeats", help="Most runs of a cell whose verdict is within noise."),
    noise: float = typer.Option(8.0, "--noise", help="Run-to-run IOPS noise, % (a single run is ± half)."),
    engine: str = typer.Option("libaio", "--engine", help="fio IO engine (see docs/saturate.md for why not io_uring)."),
    prepare: str = typer.Option("random", "--prepare", help="Write the files first: random, zero or none."),
    data_dir: Optional[str] = DataDir,
    label: Optional[str] = typer.Option(None, help="Label stored with the run (default saturate)."),
    destroy_data: Optional[List[str]] = DestroyOpt,
):
    """Sweep outstanding IO (jobs × iodepth, doubling) to find the knee, the best configuration and the most IOPS under a latency target."""
    _check_label(label)
    sweep = Sweep(
        bs=_option("bs", PARAMS["bs"], bs), read_pct=_option("read-pct", PARAMS["read_pct"], read_pct),
        random_pct=_option("random-pct", PARAMS["random_pct"], random_pct),
        size=_option("size", PARAMS["size"], size), round=_option("round", PARAMS["round"], round_),
        max_runtime=_option("max-runtime", PARAMS["max_runtime"], max_runtime),
        runtime=_option("runtime", PARAMS["runtime"], runtime) if runtime is not None else None,
        ramp=_option("ramp", PARAMS["ramp"], ramp), engine=_option("engine", PARAMS["engine"], engine),
        prepare=_option("prepare", RUN_PARAMS["prepare"], prepare),
        max_jobs=_option("max-jobs", PARAMS["jobs"], max_jobs) if max_jobs is not None else None,
        max_iodepth=_option("max-iodepth", PARAMS["iodepth"], max_iodepth),
        min_gain_pct=min_gain, slo=parse_slo(slo) if slo is not None else None, bisect=bisect,
        repeats=repeats, noise_pct=noise)
    if not 0 < min_gain < 1000:
        raise IofleetError(f"--min-gain {min_gain}: give a share above 0, e.g. 10 (%)")
    if not 0 <= bisect <= 10:
        raise IofleetError(f"--bisect {bisect}: allowed 0 to 10 steps")
    if not 1 <= repeats <= 10:
        raise IofleetError(f"--repeats {repeats}: allowed 1 to 10 runs of a cell")
    if not 0 <= noise < 100:
        raise IofleetError(f"--noise {noise}: give a share from 0 to 99, e.g. 8 (%)")
    if sweep.runtime is None and sweep.max_runtime < 5 * sweep.round:
        raise IofleetError(f"--max-runtime {max_runtime}: shorter than the steady-state window (5 rounds of "
                           f"--round {round_}); raise --max-runtime or shorten --round")
    fleet = load_inventory(hosts).hosts if hosts else None
    with _stop_on_signals() as stop, Store.open(default_data_dir(data_dir)) as store:
        with TerminalProgress(console, sweep=True) as progress:
            outcome = run_saturate(store, sweep, targets=_targets(target), hosts=fleet, label=label,
                                   observer=progress, stop=stop, destroy_data=destroy_data)
        run = store.get_run(outcome.run_id)
        db = store.path
    title = (f"Run {outcome.run_id} · saturation of {format_size(sweep.bs)} {sweep.read_pct}% read "
             f"{'random' if sweep.random_pct == 100 else f'{sweep.random_pct}% random'}"
             + (f" on {outcome.hosts} hosts" if outcome.hosts > 1 else ""))
    console.print(saturation_report(outcome.result, outcome.hosts, title))
    for line in outcome.stopped:
        console.print(f"  sweep: {line}", highlight=False, markup=False)
    for line, style in methodology_notes(run):
        console.print(Text(line, style=style or ""))
    findings = diagnose(run_to_dict(run))
    if findings:
        console.print(Text("Diagnostics:", style="bold"))
        for line, style in diagnostics_lines(findings):
            console.print(Text(line, style=style or ""))
    _finish(outcome.run, db, fleet)


def main():  # pragma: no cover
    app()
