"""The `run` study: expand a plan, run each test with fio on the local host,
parse, aggregate, store, and report progress through an observer.

Plain data in and out, so the CLI and (later) the web UI share it.
"""

import os
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import FioError, ImportFormatError, IofleetError
from ..fio.command import error_line, fio_version, run_command
from ..fio.jobfile import LOG_PREFIX, render_layout, render_test
from ..fio.parse import parse_log, parse_output
from ..fleet.local import CpuSampler, TargetDirs, host_facts, resolve_engine
from ..fleet.runner import FioRun, LiveFigures, run_fio
from ..plan.expand import TestSpec, expand
from ..plan.model import Plan
from ..results.aggregate import aggregate
from ..results.model import Aggregate, Series
from ..results.store import Store

# fio needs a moment beyond ramp + runtime to lay out files and write its
# results; past this margin a test is stopped as hung.
TIMEOUT_MARGIN_S = 120
# Per-second log files fio writes: metric name and the factor to iofleet's unit.
_LOGS = {"iops": ("iops", 1.0), "bw": ("bw_bytes_s", 1024.0), "lat": ("lat_ns", 1.0)}


class RunObserver:
    """Progress callbacks; every method is optional."""

    def run_started(self, run_id: int, specs: list[TestSpec], estimate_s: float) -> None: ...
    def test_started(self, index: int, spec: TestSpec, engine: str) -> None: ...
    def test_phase(self, index: int, spec: TestSpec, phase: str) -> None: ...
    def test_live(self, index: int, spec: TestSpec, live: LiveFigures) -> None: ...
    def test_finished(self, index: int, spec: TestSpec, result: "TestOutcome") -> None: ...


@dataclass
class TestOutcome:
    __test__ = False
    spec: TestSpec
    status: str  # ok | failed | interrupted
    error: str | None
    aggregate: Aggregate | None
    test_pk: int | None = None


@dataclass
class RunOutcome:
    run_id: int
    status: str  # complete | failed | interrupted
    tests: list[TestOutcome] = field(default_factory=list)
    tests_planned: int = 0
    data_dir: Path | None = None
    removed_files: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "complete"


def estimate_seconds(specs: list[TestSpec]) -> float:
    """Planned duration: warm-up + runtime of every test, plus ~2 s of fio start-up."""
    return float(sum(s.ramp + s.runtime + 2 for s in specs))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_plan(
    plan: Plan,
    plan_text: str,
    store: Store,
    *,
    targets: list[Path] | None = None,
    label: str | None = None,
    observer: RunObserver | None = None,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Run every test of the plan, one after the other, storing each as it ends."""
    observer = observer or RunObserver()
    stop = stop or threading.Event()
    targets = [Path(t).resolve() for t in (targets or plan.target_paths())]
    if not targets:
        raise IofleetError(
            f"plan {plan.name!r} has no targets; add `targets:` to the plan or give --target DIR"
        )
    specs = expand(plan)
    version = fio_version()
    dirs = TargetDirs(targets)
    dirs.prepare()

    facts = host_facts() | {"targets": [str(t) for t in targets]}
    run_id = store.create_run(
        plan_name=plan.name, plan_text=plan_text, label=label, source="run",
        fio_version=version, host_facts=facts, tests_planned=len(specs),
    )
    outcome = RunOutcome(run_id=run_id, status="complete", tests_planned=len(specs))
    observer.run_started(run_id, specs, estimate_seconds(specs))
    engines: dict[tuple[str, bool], str] = {}
    try:
        for index, spec in enumerate(specs):
            if stop.is_set():
                break
            result = _run_test(index, spec, targets, engines, store, run_id, observer, stop)
            outcome.tests.append(result)
            observer.test_finished(index, spec, result)
            if result.status == "interrupted" or stop.is_set():
                break
            if result.status == "failed" and plan.on_error == "stop":
                break
    finally:
        if not plan.keep_files:
            outcome.removed_files = len(dirs.cleanup())
        statuses = {t.status for t in outcome.tests}
        if stop.is_set() or "interrupted" in statuses:
            outcome.status = "interrupted"
        elif "failed" in statuses or len(outcome.tests) < len(specs):
            outcome.status = "failed"
        store.finish_run(run_id, outcome.status)
    return outcome


def _run_test(index, spec, targets, engines, store, run_id, observer, stop) -> TestOutcome:
    started = _now()
    key = (spec.engine, spec.direct)
    try:
        if key not in engines:
            observer.test_phase(index, spec, "checking the IO engine")
            engines[key] = resolve_engine(targets[0], spec.engine, spec.direct)
        engine = engines[key]
    except FioError as exc:
        return _store_failure(store, run_id, index, spec, started, str(exc))
    observer.test_started(index, spec, engine)

    with tempfile.TemporaryDirectory(prefix="iofleet-test-") as tmp:
        work = Path(tmp)
        artifacts: dict[str, bytes] = {}
        if spec.working_set_pct < 100:
            observer.test_phase(index, spec, "laying out data files")
            (work / "layout.fio").write_text(render_layout(spec, targets))
            layout = run_fio(run_command(str(work / "layout.fio"), None), work, stop)
            if layout.returncode != 0 and not layout.stopped:
                return _store_failure(store, run_id, index, spec, started,
                                      error_line(layout.stderr, layout.stdout))
        jobfile = render_test(spec, targets, engine)
        (work / "job.fio").write_text(jobfile)
        artifacts["job.fio"] = jobfile.encode()
        observer.test_phase(index, spec, "warm-up" if spec.ramp else "measuring")

        def on_live(live: LiveFigures):
            observer.test_live(index, spec, live)

        with CpuSampler() as cpu:
            fio = run_fio(run_command(str(work / "job.fio")), work, stop, on_live,
                          timeout_s=spec.ramp + spec.runtime + TIMEOUT_MARGIN_S)
        host_cpu = cpu.summary(skip_s=spec.ramp, until_s=fio.wall_s)
        for f in sorted(work.glob(f"{LOG_PREFIX}_*.log")):
            artifacts[f.name] = f.read_bytes()
        if fio.final_output:
            artifacts["fio-output.json"] = fio.final_output.encode()
        if fio.stderr:
            artifacts["fio-stderr.txt"] = fio.stderr.encode()
        status, error, parsed = _judge(fio)
        series = _read_series(work) if parsed else []

    jobs = parsed.jobs if parsed else []
    agg = aggregate(jobs) if jobs else None
    test_pk = store.save_test(
        run_id, seq=index,
        spec={"id": spec.id, "workload": spec.workload, "repeat": spec.repeat,
              "params": spec.params()},
        status=status, error=error, started_at=started, ended_at=_now(),
        jobs=jobs, aggregate=agg, host_cpu=host_cpu,
        disks=parsed.disks if parsed else [], series=series, artifacts=artifacts,
    )
    return TestOutcome(spec=spec, status=status, error=error, aggregate=agg, test_pk=test_pk)


def _judge(fio: FioRun):
    """Status, error line and parsed output of a finished fio process."""
    parsed = None
    if fio.final_output:
        try:
            parsed = parse_output(fio.final_output)
        except ImportFormatError as exc:
            return "failed", f"fio's output could not be read: {exc}", None
    if fio.stopped:
        reason = "stopped by the user" if not fio.killed else "stopped and killed (fio did not exit)"
        return "interrupted", reason, parsed
    job_errors = [j for j in (parsed.jobs if parsed else []) if j.error]
    if fio.returncode != 0 or parsed is None or job_errors:
        line = error_line(fio.stderr, fio.stdout)
        if job_errors and line == "fio failed without a message":
            line = f"fio job error {job_errors[0].error} ({_errno_name(job_errors[0].error)})"
        return "failed", line, parsed
    return "ok", None, parsed


def _errno_name(code: int) -> str:
    try:
        return os.strerror(code)
    except ValueError:
        return "unknown error"


def _read_series(work: Path) -> list[Series]:
    """Per-second series from fio's logs: series_<kind>.<job>.log."""
    out = []
    for kind, (metric, factor) in _LOGS.items():
        for f in sorted(work.glob(f"{LOG_PREFIX}_{kind}.*.log")):
            job_index = int(f.name.split(".")[-2]) - 1  # fio numbers jobs from 1
            for direction, (t_ms, values) in parse_log(f.read_text()).items():
                out.append(Series(host="local", job_index=job_index, metric=metric,
                                  direction=direction, t_ms=t_ms,
                                  values=[v * factor for v in values]))
    return out


def _store_failure(store, run_id, index, spec, started, error) -> TestOutcome:
    pk = store.save_test(
        run_id, seq=index,
        spec={"id": spec.id, "workload": spec.workload, "repeat": spec.repeat,
              "params": spec.params()},
        status="failed", error=error, started_at=started, ended_at=_now(),
        jobs=[], aggregate=None, host_cpu=None, disks=[], series=[], artifacts={},
    )
    return TestOutcome(spec=spec, status="failed", error=error, aggregate=None, test_pk=pk)
