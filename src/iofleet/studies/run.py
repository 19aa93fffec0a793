"""The `run` study: expand a plan, run each test on the local host or on a
fleet of fio servers, aggregate, store, and report progress through an
observer. Plain data in and out, so the CLI and the web UI share it."""

import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..analysis.methodology import cache_verdict, judge_steady, test_totals, window_figures
from ..analysis.skew import measure_skew
from ..errors import FioError, IofleetError
from ..fio.command import fio_version
from ..fio.jobfile import LOG_INTERVAL_MS
from ..fleet.execute import FleetPlace, LocalPlace, Measured
from ..fleet.inventory import Host, host_groups
from ..fleet.local import host_facts
from ..fleet.runner import LiveFigures
from ..plan.expand import MixedStep, TestSpec, expand, expand_mixed
from ..plan.model import Plan
from ..results.aggregate import aggregate
from ..results.model import Aggregate
from ..results.store import Store


class RunObserver:
    """Progress callbacks; every method is optional."""

    def run_started(self, run_id: int, specs: list[TestSpec | MixedStep], estimate_s: float) -> None: ...
    def preparing(self, done_bytes: float | None, total_bytes: int, elapsed_s: float, hosts: dict | None) -> None: ...
    def test_started(self, index: int, spec: TestSpec) -> None: ...
    def test_phase(self, index: int, spec: TestSpec, phase: str) -> None: ...
    def test_live(self, index: int, spec: TestSpec, live: LiveFigures) -> None: ...
    def test_finished(self, index: int, spec: TestSpec, result: "TestOutcome") -> None: ...


@dataclass
class TestOutcome:
    __test__ = False
    spec: TestSpec
    status: str  # ok | failed | interrupted | partial
    error: str | None
    aggregate: Aggregate | None
    test_pk: int | None = None
    lost: list[str] = field(default_factory=list)


@dataclass
class RunOutcome:
    run_id: int
    status: str  # complete | failed | interrupted | partial
    tests: list[TestOutcome] = field(default_factory=list)
    tests_planned: int = 0
    cleaned: int = 0  # data files removed (local) or hosts cleaned (fleet)

    @property
    def ok(self) -> bool:
        return self.status == "complete"


def estimate_seconds(specs: list[TestSpec]) -> float:
    """Planned duration (the longest): warm-up + runtime of every test, plus ~2 s of fio start-up."""
    return float(sum(s.ramp + s.longest_s + 2 for s in specs))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_plan(
    plan: Plan,
    plan_text: str,
    store: Store,
    *,
    hosts: list[Host] | None = None,
    label: str | None = None,
    observer: RunObserver | None = None,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Run every test of the plan, one after the other, storing each as it
    ends: on the plan's targets here, or on `hosts` (fio servers) at once."""
    observer = observer or RunObserver()
    stop = stop or threading.Event()
    if plan.mixed:
        if not hosts:
            raise IofleetError(f"plan {plan.name!r} is mixed (workloads side by side on host groups); "
                               f"run it on a fleet with --hosts INVENTORY")
        groups = host_groups(hosts, {w.name: w.hosts for w in plan.workloads})
        place = FleetPlace(hosts, groups, clear_cache=plan.clear_cache)
        specs = expand_mixed(plan)
    elif hosts:
        place = FleetPlace(hosts, clear_cache=plan.clear_cache)
        specs = expand(plan)
    else:
        if not plan.targets:
            raise IofleetError(
                f"plan {plan.name!r} has no targets; add `targets:` to the plan or give --target DIR")
        place = LocalPlace([Path(t).resolve() for t in plan.targets], clear_cache=plan.clear_cache)
        specs = expand(plan)
    version = fio_version()
    place.prepare()

    run_id = store.create_run(
        plan_name=plan.name, plan_text=plan_text, label=label, source="run",
        fio_version=version, host_facts=host_facts() | place.describe(), tests_planned=len(specs),
    )
    outcome = RunOutcome(run_id=run_id, status="complete", tests_planned=len(specs))
    observer.run_started(run_id, specs, estimate_seconds(specs))
    caches = place.cache_sizes(plan.cache_size)
    try:
        method = {"prepare": None, "clear_cache": plan.clear_cache}
        if plan.prepare != "none" and specs:
            with tempfile.TemporaryDirectory(prefix="iofleet-prepare-") as tmp:
                prepared = place.prepare_data(specs, plan.prepare, plan.prepare_passes, plan.prepare_bs,
                                              Path(tmp), stop, observer.preparing)
            method["prepare"] = prepared.to_dict()
        store.set_run_methodology(run_id, method)
        for index, spec in enumerate(specs):
            if stop.is_set():
                break
            result = _run_test(index, spec, place, store, run_id, observer, stop,
                               prepared=method["prepare"] is not None, caches=caches)
            outcome.tests.append(result)
            observer.test_finished(index, spec, result)
            if result.status == "interrupted" or stop.is_set():
                break
            if result.status == "failed" and plan.on_error == "stop":
                break
            if result.lost:
                if plan.on_host_loss == "stop" or len(result.lost) == len(place.hosts):
                    break
                place.drop(result.lost)
    finally:
        if not plan.keep_files:
            outcome.cleaned = place.cleanup()
        statuses = {t.status for t in outcome.tests}
        if stop.is_set() or "interrupted" in statuses:
            outcome.status = "interrupted"
        elif "failed" in statuses or len(outcome.tests) < len(specs):
            outcome.status = "failed"
        elif "partial" in statuses:
            outcome.status = "partial"
        store.finish_run(run_id, outcome.status)
    return outcome


def _methodology(m: Measured, by_host: dict[str, TestSpec], prepared: bool, caches: dict) -> dict:
    """Steady-state verdicts, the measurement window's figures, what was
    done to the caches and, per host, cache or capacity test."""
    first = next(iter(by_host.values()), None)
    round_s = first.round if first else 60
    totals = test_totals(m.series)
    verdicts = judge_steady(totals, round_s)
    until = {s.until for s in by_host.values()}
    out = {
        "steady": {k: v.to_dict() for k, v in verdicts.items()},
        "until": "steady" if "steady" in until else "time",
        "window": window_figures(totals, verdicts["iops"]) if "steady" in until else None,
        "fio_steady": {j.host: j.steady_attained for j in m.jobs if j.steady_attained is not None} or None,
        "prepared": prepared,
        "cache": m.cache,
        "working_set": {},
    }
    for host, s in by_host.items():
        stated, source, ram = caches.get(host, (None, "", None))
        if stated is None and not s.direct:
            stated, source = ram, "host RAM (buffered IO)"
        out["working_set"][host] = cache_verdict(s.jobs * s.working_set, stated, source)
    measured_from = [min(x.t_ms) - LOG_INTERVAL_MS for x in m.series if x.phase == "measured" and x.t_ms]
    out["measured_from_ms"] = min(measured_from) if measured_from else None
    return out


def _run_test(index, spec, place, store, run_id, observer, stop, prepared=False, caches=None) -> TestOutcome:
    started = _now()
    observer.test_started(index, spec)
    with tempfile.TemporaryDirectory(prefix="iofleet-test-") as tmp:
        try:
            m = place.run_test(
                spec, Path(tmp), stop,
                phase=lambda text: observer.test_phase(index, spec, text),
                on_live=lambda live: observer.test_live(index, spec, live))
        except FioError as exc:
            m = Measured("failed", str(exc))
    agg = aggregate(m.jobs) if m.jobs else None
    fleet = None
    if isinstance(place, FleetPlace):
        runtime = {}
        for j in m.jobs:
            runtime[j.host] = max(runtime.get(j.host, 0), j.runtime_ms)
        skew = measure_skew([x for x in m.series if x.phase == "measured"], runtime)
        ran = place.specs_by_host(spec)
        fleet = {"hosts": [h.name for h in place.hosts if h.name in ran], "skew": skew.to_dict() if skew else None}
        if place.groups:
            fleet["groups"] = {g: {"hosts": [h for h in names if h in ran], "test": spec.groups[g].id}
                               for g, names in place.groups.items()}
    by_host = place.specs_by_host(spec) if isinstance(place, FleetPlace) else {"local": spec}
    method = _methodology(m, by_host, prepared, caches or {})
    test_pk = store.save_test(
        run_id, seq=index,
        spec={"id": spec.id, "workload": spec.workload, "repeat": spec.repeat,
              "params": spec.params() | {"engine_used": m.engine}},
        status=m.status, error=m.error, started_at=started, ended_at=_now(),
        jobs=m.jobs, aggregate=agg, host_cpu=m.host_cpu, disks=m.disks,
        series=m.series, artifacts=m.artifacts,
        host_metrics=m.host_metrics, controller=m.controller, fleet=fleet, methodology=method,
    )
    return TestOutcome(spec=spec, status=m.status, error=m.error, aggregate=agg, test_pk=test_pk,
                       lost=m.lost)
