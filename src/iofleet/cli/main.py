"""The terminal front door: thin typer commands over the studies and stores.

Errors a user can cause are printed as one line each, without a traceback,
with a non-zero exit code.
"""

import contextlib
import signal
import threading
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import IofleetError
from ..fio.command import fio_version
from ..fleet.check import check_hosts, clean_hosts, problem_lines
from ..fleet.devices import REMOTE_UNSEEN
from ..fleet.inventory import load_inventory
from ..plan import expand
from ..plan import reference
from ..plan.expand import data_per_target_set, expand_mixed, tests_table
from ..importers import load_plan_source
from ..plan.load import check_targets, with_destroy_data, with_targets
from ..plan.model import is_device_path
from ..plan.params import AUTO_ENGINES, PARAMS, RUN_PARAMS
from ..plan.units import format_bytes, format_duration, format_size
from ..analysis.diagnostics import diagnose
from ..analysis.saturation import parse_slo
from ..report.saturation import saturation_report
from ..report.summary import diagnostics_lines, methodology_notes, summary_table
from ..results.store import Store, default_data_dir
from ..plan.easy import Durations
from ..studies.easy_run import easy_run, probe
from ..studies.jobfiles import write_jobfiles
from ..studies.run import RunObserver, estimate_seconds, prepare_resume, resume_run, run_plan
from ..studies.saturate import Sweep, run_saturate
from ..studies.scale import ScaleStep, parse_steps, run_scale
from .common import EXIT_FAILED, EXIT_INTERRUPTED, DataDir, check_label, console, err_console, user_errors
from .progress import TerminalProgress, fmt_lat_ms
from .compare import compare_command
from .importing import import_command
from .model import model_command
from .results import diagnose_command, report_command, results_app
from .serve import serve_command
from .server import DEFAULT_BIND, serve_fio

app = typer.Typer(
    help="iofleet: how fast is this storage, really, and why? (fio-based benchmarking)",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
app.add_typer(results_app, name="results")
hosts_app = typer.Typer(help="The fleet's hosts (fio servers).", no_args_is_help=True)
app.add_typer(hosts_app, name="hosts")

# parser=str: typer's Path('') would be '.', the current directory; the text is checked as a plan's targets.
TargetOpt = typer.Option(None, "--target", "-t", parser=str, metavar="PATH", help="Directory, or one block device (/dev/X), to test "
                                                       "(repeatable); replaces the plan's targets.")
DestroyOpt = typer.Option(None, "--destroy-data", metavar="/dev/X",
                          help="A device target whose data may be destroyed (repeatable): allows one that holds a "
                               "filesystem, partition table or other signature; never a mounted or in-use one.")


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
    jobfiles: Optional[Path] = typer.Option(None, "--jobfiles", metavar="DIR",
                                            help="Write the fio job file of each test, as it would run, to DIR."),
):
    """Check a plan and list the tests it expands into."""
    plan, _ = _plan_with_targets(plan_path, target)
    specs = expand(plan)
    timed = specs
    columns, rows = tests_table(specs)
    table = Table(title=f"{plan.name}: {len(specs)} tests", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("test")
    for name in columns:
        table.add_column(PARAMS[name].label, justify="left" if PARAMS[name].kind == "choice" else "right")
    for i, row in enumerate(rows, 1):
        table.add_row(str(i), row["id"], *(row[name] for name in columns))
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
    else:
        console.print(
            f"Estimated duration: {format_duration(estimate_seconds(timed))}; "
            f"data files: {format_bytes(data_per_target_set(specs))} "
            f"(created under <target>/iofleet/, removed afterwards"
            f"{'' if not plan.keep_files else ' — no: keep_files is set'})"
        )
    if jobfiles is not None:
        written = write_jobfiles(plan, jobfiles)
        console.print(f"Wrote {len(written)} fio job file{'s' if len(written) != 1 else ''} to {jobfiles} "
                      f"(engine auto is written as {AUTO_ENGINES[0]}, the first it tries; "
                      f"`iofleet import FILE` reads one back as the same test)", highlight=False, soft_wrap=True)


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
    check_label(label)
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
    check_label(label)
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
    console.print(f"{sum(c.ok for c in checks)} of {len(checks)} hosts ready.")
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
    for title, where, table_params in reference.TABLES:
        table = Table(title=f"{title} ({where})", title_justify="left")
        for col in reference.COLUMNS:
            table.add_column(col)
        for p in table_params.values():
            table.add_row(*reference.row(p))
        console.print(table)


app.command("report")(report_command)


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


app.command("diagnose")(diagnose_command)


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
    check_label(label)
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
    findings = diagnose(run.to_dict())
    if findings:
        console.print(Text("Diagnostics:", style="bold"))
        for line, style in diagnostics_lines(findings):
            console.print(Text(line, style=style or ""))
    _finish(outcome.run, db, fleet)


def main():  # pragma: no cover
    app()
