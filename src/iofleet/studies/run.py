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


def _place(plan: Plan, hosts: list[Host] | None) -> tuple[LocalPlace | FleetPlace, list]:
    """Where the plan runs, and its tests in run order."""
    if plan.mixed:
        if not hosts:
            raise IofleetError(f"plan {plan.name!r} is mixed (workloads side by side on host groups); "
                               f"run it on a fleet with --hosts INVENTORY")
        groups = host_groups(hosts, {w.name: w.hosts for w in plan.workloads})
        return FleetPlace(hosts, groups, clear_cache=plan.clear_cache), expand_mixed(plan)
    if hosts:
        return FleetPlace(hosts, clear_cache=plan.clear_cache), expand(plan)
    if not plan.targets:
        raise IofleetError(
            f"plan {plan.name!r} has no targets; add `targets:` to the plan or give --target DIR")
    return LocalPlace([Path(t).resolve() for t in plan.targets], clear_cache=plan.clear_cache), expand(plan)


class RunSession:
    """One stored run, its tests run one at a time: the plan's own list
    (run_plan) or tests chosen as results come in (the saturate sweep).

        with RunSession(plan, text, store, specs=…) as session:
            result = session.run(spec)   # until session.done
    """

    def __init__(self, plan: Plan, plan_text: str, store: Store, *, specs: list, hosts: list[Host] | None = None,
                 label: str | None = None, observer: RunObserver | None = None,
                 stop: threading.Event | None = None, place=None):
        self.plan, self.store = plan, store
        self.observer = observer or RunObserver()
        self.stop = stop or threading.Event()
        self.place = place or _place(plan, hosts)[0]
        self.specs = specs  # planned, or (a sweep) what preparation must cover
        self.place.prepare()
        self.run_id = store.create_run(
            plan_name=plan.name, plan_text=plan_text, label=label or plan.label, source="run",
            fio_version=fio_version(), host_facts=host_facts() | self.place.describe(), tests_planned=len(specs),
        )
        self.outcome = RunOutcome(run_id=self.run_id, status="complete", tests_planned=len(specs))
        self.done = False  # stopped by the user, an error (on_error: stop) or lost hosts
        self._caches = None
        self._prepared = False
        self.methodology: dict = {}  # what was done before the tests (stored with the run)

    def __enter__(self) -> "RunSession":
        plan = self.plan
        self.observer.run_started(self.run_id, self.specs, estimate_seconds(self.specs))
        try:
            self._caches = self.place.cache_sizes(plan.cache_size)
            method = {"prepare": None, "clear_cache": plan.clear_cache, "measure": plan.measure,
                      "percentile": plan.percentile}
            if plan.prepare != "none" and self.specs:
                with tempfile.TemporaryDirectory(prefix="iofleet-prepare-") as tmp:
                    prepared = self.place.prepare_data(self.specs, plan.prepare, plan.prepare_passes,
                                                       plan.prepare_bs, Path(tmp), self.stop, self.observer.preparing)
                method["prepare"] = prepared.to_dict()
                self._prepared = True
            self.methodology = method
            self.store.set_run_methodology(self.run_id, method)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def run(self, spec: TestSpec | MixedStep) -> "TestOutcome":
        """Run and store one test; sets `done` when the run must not go on."""
        index = len(self.outcome.tests)
        result = _run_test(index, spec, self.place, self.store, self.run_id, self.observer, self.stop,
                           prepared=self._prepared, caches=self._caches or {})
        self.outcome.tests.append(result)
        self.observer.test_finished(index, spec, result)
        if result.status == "interrupted" or self.stop.is_set():
            self.done = True
        elif result.status == "failed" and self.plan.on_error == "stop":
            self.done = True
        elif result.lost:
            if self.plan.on_host_loss == "stop" or len(result.lost) == len(self.place.hosts):
                self.done = True
            else:
                self.place.drop(result.lost)
        return result

    def __exit__(self, *exc) -> None:
        outcome = self.outcome
        if not self.plan.keep_files:
            outcome.cleaned = self.place.cleanup()
        statuses = {t.status for t in outcome.tests}
        if self.stop.is_set() or "interrupted" in statuses:
            outcome.status = "interrupted"
        elif "failed" in statuses or len(outcome.tests) < outcome.tests_planned:
            outcome.status = "failed"
        elif "partial" in statuses:
            outcome.status = "partial"
        self.store.finish_run(self.run_id, outcome.status)


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
    place, specs = _place(plan, hosts)
    with RunSession(plan, plan_text, store, specs=specs, place=place, label=label,
                    observer=observer, stop=stop) as session:
        for spec in specs:
            if session.done or session.stop.is_set():
                break
            session.run(spec)
    return session.outcome


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
