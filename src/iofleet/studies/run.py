"""The `run` study: expand a plan, run each test on the local host or on a
fleet of fio servers, aggregate, store, and report progress through an
observer. Plain data in and out, so the CLI and the web UI share it."""

import json
import threading
from dataclasses import dataclass
from dataclasses import replace as copy_with
from datetime import datetime, timezone
from pathlib import Path

from ..analysis.methodology import (EARLY_STOP_RULE, cache_verdict, judge_rounds, judge_steady, latency_rounds,
                                    status_window, steady_now, test_totals, window_figures)
from ..analysis.diagnostics.targets import setup_warnings
from ..analysis.skew import measure_skew
from ..errors import FioError, IofleetError
from ..fio.command import fio_version
from ..fio.jobfile import LOG_INTERVAL_MS
from ..fleet.places import place_for
from ..fleet.inventory import Host, load_inventory
from ..fleet.targets.kept import KeptData
from ..fleet.local import host_facts
from ..fleet.places.base import Measured, Place
from ..fleet.targets.lock import holder_facts
from ..fleet.fio_link.workdir import reclaim, work_dir
from ..plan.expand import MixedStep, TestSpec
from ..plan.load import parse_plan_text, with_destroy_data, with_targets
from ..plan.model import Plan
from ..plan.params import RUN_PARAMS
from ..results.aggregate import aggregate
from ..results.methodology import (EarlyStop, FleetRecord, HostGroup, PrepareRecord, ResumeRecord, RunMethodology,
                                    TestMethodology)
from ..results.model import TestInfo, TestRecord
from ..results.store import FINISHED_TEST_STATUSES, Store
from .events import RunObserver, RunOutcome, TestOutcome, estimate_seconds
from .live_state import Publisher
from .network import last_network_check


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunSession:
    """One stored run, its tests run one at a time: the plan's own list
    (run_plan) or tests chosen as results come in (the saturate sweep).

        with RunSession(plan, text, store, specs=…) as session:
            result = session.run(spec)   # until session.done
    """

    def __init__(self, plan: Plan, plan_text: str, store: Store, *, specs: list, hosts: list[Host] | None = None,
                 label: str | None = None, observer: RunObserver | None = None,
                 stop: threading.Event | None = None, place: Place | None = None, resumable: bool = False,
                 inventory: Path | None = None, resume: "Resume | None" = None, sweep: bool = False,
                 prepare_for: list | None = None):
        """`resumable`: store what `run --resume` needs (with the inventory's
        path for a fleet); `resume`: go on with that stopped run (its tests
        to run are `specs`) instead of creating one; `sweep`: `specs` is the
        most a sweep may run (its published progress says so);
        `prepare_for`: tests of a run before this one whose data files the
        preparation covers too (a sweep's, kept for this run: the same
        preparation finds them kept, fleet/targets/kept.py)."""
        self.plan, self.store = plan, store
        # Every run publishes its live state to the data directory, for a web UI that did not start it.
        # The front door holding the study may make it (RunObserver.publisher); a sweep's planned tests are
        # an upper bound.
        publisher = observer.publisher(plan.name, label or plan.label, sweep) if observer is not None else None
        if publisher is None:
            publisher = Publisher(store.data_dir, observer, plan.name, label or plan.label, sweep=sweep)
        else:
            publisher.follow(observer)
        self.observer = self.publisher = publisher
        self.stop = stop or threading.Event()
        self.place = place or place_for(plan, hosts)[0]
        self.specs = specs  # planned (or what remains of a resumed run), or (a sweep) what preparation must cover
        self.prepare_for = list(prepare_for or [])
        self.resume = resume
        reclaim()  # scratch directories of iofleet processes that were killed (-9) before
        # The targets are this run's from here to the end of __exit__
        # (fleet/targets/lock.py): locked before anything is written or checked.
        self.place.prepare(holder_facts(data_dir=str(store.data_dir), run=resume.run_id if resume else None))
        try:
            self.place.check_targets(specs + self.prepare_for)
            if resume is None:
                self.run_id = store.create_run(
                    plan_name=plan.name, plan_text=plan_text, label=label or plan.label, source="run",
                    fio_version=fio_version(), host_facts=host_facts() | self.place.describe(),
                    tests_planned=len(specs), resume=self.place.resume_record(inventory) if resumable else None,
                )
                for lock in self.place.locks:
                    lock.note(run=self.run_id)  # for the message another run gets
                self.outcome = RunOutcome(run_id=self.run_id, status="complete", tests_planned=len(specs))
            else:
                self.place.adopt(resume.record)
                self.run_id = resume.run_id
                store.reopen_run(self.run_id)
                self.outcome = RunOutcome(run_id=self.run_id, status="complete", tests_planned=len(resume.specs),
                                          kept=dict(resume.kept))
        except BaseException:
            try:
                self.place.cleanup()
            finally:
                self.place.release()
            raise
        self.done = False  # stopped by the user, an error (on_error: stop) or lost hosts
        self._caches = None
        self._prepared = False
        self._data_whole = False  # preparation ended (not stopped): kept data can be recorded as prepared
        self.kept = KeptData(store.data_dir, reuse=plan.reuse_data)
        self.methodology = RunMethodology()  # what was done before the tests (stored with the run)

    def __enter__(self) -> "RunSession":
        plan = self.plan
        self.observer.run_started(self.run_id, self.resume.specs if self.resume else self.specs,
                                  estimate_seconds(self.specs))
        try:
            described = self.place.describe()
            for line in setup_warnings(host_facts() | described):
                self.observer.warning(line)
            self._caches = self.place.cache_sizes(plan.cache_size)
            method = RunMethodology(prepare=None, **{name: getattr(plan, name) for name, p in RUN_PARAMS.items()
                                                     if p.recorded})
            if plan.prepare != "none" and self.specs:
                with work_dir("iofleet-prepare-") as tmp:
                    prepared = self.place.prepare_data(self.specs + self.prepare_for, plan.prepare,
                                                       plan.prepare_passes, plan.prepare_bs, Path(tmp), self.stop,
                                                       self.observer.preparing, self.kept)
                method.prepare = PrepareRecord.from_dict(prepared.to_dict())
                self._prepared = True  # kept data used as it is counts as prepared too
                self._data_whole = not self.stop.is_set()
            # A fleet's last network check, for its diagnostics (a host that lags on a slow link).
            method.network = last_network_check(self.store, described.get("hosts") or [])
            if self.resume is not None:
                method = self.resume.methodology_with(method, [self.resume.specs[i].id for i in self.resume.todo])
            self.methodology = method
            self.store.set_run_methodology(self.run_id, method)
        except BaseException as exc:
            self.__exit__(None, None, None)
            left = self.outcome.not_cleaned
            if left and isinstance(exc, IofleetError):  # say so, as a finished run's summary does
                exc.args = (f"{exc}; iofleet's data files are left on {', '.join(left)}: once back, `iofleet "
                            f"hosts clean INVENTORY` removes them (as does the next run there)",)
            raise
        return self

    def run(self, spec: TestSpec | MixedStep, seq: int | None = None) -> TestOutcome:
        """Run and store one test (as test `seq` of the run: a resume's);
        sets `done` when the run must not go on."""
        index = len(self.outcome.tests) if seq is None else seq
        result = _run_test(index, spec, self.place, self.store, self.run_id, self.observer, self.stop,
                           prepared=self._prepared, caches=self._caches or {}, replace=self.resume is not None,
                           explain=self._explain)
        self.outcome.tests.append(result)
        self.observer.test_finished(index, spec, result)
        if result.status == "interrupted" or self.stop.is_set():
            self.done = True
        elif result.status == "failed" and self.plan.on_error == "stop":
            self.done = True
        elif result.lost and (self.plan.on_host_loss == "stop" or not self.place.drop(result.lost)):
            self.done = True  # on_host_loss: stop, or no host left (drop goes on without the lost ones)
        return result

    def _explain(self, error: str) -> str:
        """A failed test's error, with what the place knows of its cause
        (here: which target ran out of space)."""
        return self.place.explain(error, self.resume.specs if self.resume else self.specs)

    def __exit__(self, *exc) -> None:
        try:
            self._finish()
        finally:
            self.place.release()  # the targets are free once their clean-up has ended

    def _finish(self) -> None:
        outcome = self.outcome
        if not self.plan.keep_files:
            self.observer.cleaning()
            outcome.cleaned = self.place.cleanup()
            outcome.not_cleaned = list(self.place.not_cleaned)
        try:  # what the targets now hold, for the next run's preparation (fleet/targets/kept.py)
            self.place.record_data(self.kept, self.run_id, keep=self.plan.keep_files and self._data_whole)
        except OSError as exc:
            self.observer.warning(f"cannot update {self.kept.path} ({exc.strerror}): fix its permissions, or "
                                  f"give the next run reuse_data: false")
        # A resumed run ends as if it had run straight through: its kept tests count.
        statuses = {t.status for t in outcome.tests} | set(outcome.kept.values())
        if self.stop.is_set() or "interrupted" in statuses:
            outcome.status = "interrupted"
        elif "failed" in statuses or len(outcome.tests) + len(outcome.kept) < outcome.tests_planned:
            outcome.status = "failed"
        elif "partial" in statuses:
            outcome.status = "partial"
        self.publisher.ended(outcome.status)  # before the run lock is let go
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
    inventory: Path | None = None,
    resumable: bool = True,
) -> RunOutcome:
    """Run every test of the plan, one after the other, storing each as it
    ends: on the plan's targets here, or on `hosts` (fio servers) at once.
    `inventory`: where `hosts` came from, stored so that `run --resume`
    finds them again; `resumable=False` for a plan that is not stored as
    it runs (a scaling step)."""
    place, specs = place_for(plan, hosts)
    with RunSession(plan, plan_text, store, specs=specs, place=place, label=label, observer=observer, stop=stop,
                    resumable=resumable, inventory=inventory) as session:
        for spec in specs:
            if session.done or session.stop.is_set():
                break
            session.run(spec)
    return session.outcome


def _methodology(m: Measured, by_host: dict[str, TestSpec], prepared: bool, caches: dict) -> TestMethodology:
    """Steady-state verdicts, the measurement window's figures, what was
    done to the caches and, per host, cache or capacity test. A test iofleet
    ran is judged on its status rounds (fio/status.py), with the rule that
    could end it early; results without them (an older fio output) on the
    per-second logs."""
    first = next(iter(by_host.values()), None)
    round_s = first.round if first else 60
    until = {s.until for s in by_host.values()}
    rounds = {h: r for h, r in m.rounds.items() if h not in m.lost}
    if m.ended_early_s is not None and rounds:
        # Judged on exactly the rounds that ended it: a round may close while fio stops.
        # A round's span is the first host's (methodology.round_means), as the early stop counted it.
        k = sum(r.end_ms <= m.ended_early_s * 1000 + 0.5 for r in next(iter(rounds.values())))
        rounds = {h: r[:k] for h, r in rounds.items()}
    if rounds and all(rounds.values()):
        verdicts = judge_rounds(rounds, round_s)
        window = status_window(rounds, verdicts["iops"], {h.host: h.series for h in m.host_metrics},
                               measured_from_s=first.ramp if first else 0)
        per_round, source = latency_rounds(rounds, round_s), "fio status"
    else:
        totals = test_totals(m.series)
        verdicts = judge_steady(totals, round_s)
        window = window_figures(totals, verdicts["iops"]) if "steady" in until else None
        per_round, source = None, "fio logs"
    out = TestMethodology(
        steady=dict(verdicts), rounds_source=source, until="steady" if "steady" in until else "time",
        early_stop=EarlyStop(stopped_at_s=m.ended_early_s, rule=EARLY_STOP_RULE) if m.ended_early_s else None,
        window=window, latency_rounds=per_round, prepared=prepared, cache=m.cache,
        round_spread_s=None if m.round_spread_s is None else round(m.round_spread_s, 3), live_note=m.live_note)
    for host, s in by_host.items():
        stated, source, ram = caches.get(host, (None, "", None))
        if stated is None and not s.direct:
            stated, source = ram, "host RAM (buffered IO)"
        out.working_set[host] = cache_verdict(s.jobs * s.working_set, stated, source)
    # The first IOPS interval, as the skew windows count it (fio stamps its logs a ms apart at times).
    measured_from = [min(x.t_ms) - LOG_INTERVAL_MS for x in m.series
                     if x.phase == "measured" and x.metric == "iops" and x.t_ms]
    out.measured_from_ms = min(measured_from) if measured_from else None
    return out


def _skew(m: Measured) -> dict | None:
    """How far apart the hosts that ran a test together ended (analysis.skew)."""
    runtime = {}
    for j in m.jobs:
        runtime[j.host] = max(runtime.get(j.host, 0), j.runtime_ms)
    skew = measure_skew([x for x in m.series if x.phase == "measured"], runtime)
    return skew.to_dict() if skew else None


def _run_test(index, spec, place: Place, store, run_id, observer, stop, prepared=False, caches=None, replace=False,
              explain=None) -> TestOutcome:
    started = _now()
    observer.test_started(index, spec)
    with work_dir("iofleet-test-") as tmp:
        try:
            m = place.run_test(
                spec, Path(tmp), stop,
                phase=lambda text: observer.test_phase(index, spec, text),
                on_live=lambda live: observer.test_live(index, spec, live),
                steady_now=lambda per_host: steady_now(per_host, spec.round))
        except FioError as exc:
            m = Measured("failed", str(exc))
    if m.live_note:
        observer.warning(f"test {spec.id}: {m.live_note}")
    # The raw files are compressed on a thread while the test is summed up.
    artifacts = store.start_artifacts(run_id, index, spec.id, m.artifacts or {})
    try:
        return _save(index, spec, place, store, run_id, m, started, artifacts, prepared, caches, replace, explain)
    except BaseException:
        artifacts.undo()  # its save never came (or failed and undid it already)
        raise


def _save(index, spec, place: Place, store, run_id, m: Measured, started, artifacts, prepared, caches, replace,
          explain) -> TestOutcome:
    """Sum up a measured test and store it."""
    if m.status == "failed" and m.error and explain:
        m.error = explain(m.error)
    agg = aggregate(m.jobs) if m.jobs else None
    hosts = place.hosts_record(spec)
    fleet = None
    if hosts is not None:  # hosts that ran together: how far apart they ended
        groups = hosts.get("groups")
        fleet = FleetRecord(hosts=hosts["hosts"], skew=_skew(m), groups=None if groups is None else {
            g: HostGroup(hosts=info["hosts"], test=info["test"]) for g, info in groups.items()})
    method = _methodology(m, place.specs_by_host(spec), prepared, caches or {})
    test_pk = store.save_test(
        run_id, seq=index,
        test=TestInfo(id=spec.id, workload=spec.workload, repeat=spec.repeat,
                      params=spec.params() | {"engine_used": m.engine}),
        status=m.status, error=m.error, started_at=started, ended_at=_now(),
        jobs=m.jobs, aggregate=agg, host_cpu=m.host_cpu, disks=m.disks,
        series=m.series, artifacts=artifacts,
        host_metrics=m.host_metrics, controller=m.controller, fleet=fleet, methodology=method, replace=replace,
    )
    return TestOutcome(spec=spec, status=m.status, error=m.error, aggregate=agg, test_pk=test_pk,
                       lost=m.lost, window=method.window if method.until == "steady" else None,
                       ended_early_s=m.ended_early_s)


# ---- resuming a stopped run ----------------------------------------------

@dataclass
class Resume:
    """A stopped run, checked and held by this process, ready to go on
    where it stopped (prepare_resume, then resume_run)."""

    run_id: int
    plan: Plan
    plan_text: str
    specs: list  # every test of the run, in run order
    todo: list[int]  # the seqs to run: tests not stored, or stored failed or interrupted
    kept: dict[int, str]  # seq → status of the finished tests (ok, partial), kept as they are
    again: dict[int, str]  # seq → status of the stored results that run again (and are replaced)
    hosts: list[Host] | None
    place: Place
    record: dict
    methodology: RunMethodology | None  # the run's, before this resume

    def describe(self) -> str:
        """One line: what is kept and what runs now."""
        n = len(self.specs)
        counts = ", ".join(f"{sum(s == st for s in self.kept.values())} {st}" for st in FINISHED_TEST_STATUSES
                           if st in self.kept.values()) or "none"
        todo = ", ".join(f"{i + 1}/{n} {self.specs[i].id}"
                         + (f" (stored {self.again[i]}: runs again)" if i in self.again else "") for i in self.todo)
        todo = todo or "none (all are stored: only the run's status is set)"
        return (f"Resuming run {self.run_id} ({self.plan.name}): {len(self.kept)} of {n} tests kept ({counts}); "
                f"running {len(self.todo)}: {todo}")

    def methodology_with(self, method: RunMethodology, tests: list[str]) -> RunMethodology:
        """The run's methodology, with this resume added: when, which tests,
        what was replaced and what preparation wrote again."""
        entry = ResumeRecord(at=_now(), tests=tests, prepare=method.prepare,
                             replaced={self.specs[i].id: status for i, status in self.again.items()})
        base = self.methodology or method  # killed before its methodology was stored: this one
        return copy_with(base, resumes=[*(base.resumes or []), entry])


def _same_test(stored: TestRecord, spec) -> bool:
    params = {k: v for k, v in stored.params.items() if k != "engine_used"}
    return (stored.id == spec.id and stored.repeat == spec.repeat
            and params == json.loads(json.dumps(spec.params())))


def prepare_resume(store: Store, run_id: int, *, plan: Plan | None = None, targets: list[Path] | None = None,
                   inventory: Path | None = None, destroy_data: list[str] | None = None) -> Resume:
    """Check that a stopped run (interrupted, failed, or left `running` by
    a crash) can go on, and hold it. The stored plan is run; `plan`, when
    given, must be the same. Targets and hosts are the run's own; given
    again (`targets`, `inventory`) they must be the same. A fleet run
    needs its inventory again when its path was not stored or is gone."""
    what = f"run {run_id}"
    run = store.get_run(run_id)
    if run.source != "run":
        raise IofleetError(f"{what} was imported from fio outputs; only runs iofleet measured can be resumed")
    if run.status == "complete":
        raise IofleetError(f"{what} is complete ({run.tests_planned} of {run.tests_planned} tests ok); "
                           f"there is nothing to resume")
    if run.resume is None:
        raise IofleetError(f"{what} cannot be resumed: it is a step of a saturate sweep or a scaling study, which "
                           f"choose their tests as results come in (or an older iofleet made it); start a new run")
    store.claim_run(run_id)  # another process running it: refused here
    try:
        return _check_resume(store, store.get_run(run_id), plan, targets, inventory, destroy_data)
    except BaseException:
        store.release_run(run_id)
        raise


def _check_resume(store, run, given: Plan | None, targets, inventory, destroy_data) -> Resume:
    run_id, record = run.id, run.resume
    what = f"run {run_id}"
    if run.status == "complete":
        raise IofleetError(f"{what} is complete; there is nothing to resume")
    version = fio_version()
    if run.fio_version and run.fio_version != version:
        raise IofleetError(f"{what} was measured with {run.fio_version}, and this host now has {version}: a "
                           f"run's figures come from one fio version; start a new run")
    plan = parse_plan_text(run.plan_text or "", f"{what}'s stored plan")
    if given is not None:
        ignore = {"targets", "destroy_data"}
        mine, theirs = plan.model_dump(exclude=ignore), given.model_dump(exclude=ignore)
        changed = [k for k in mine if mine[k] != theirs.get(k)]
        if changed:
            raise IofleetError(f"plan {given.name!r} differs from the plan {what} was started with "
                               f"({', '.join(changed)}); resume without PLAN to go on with the stored plan, or "
                               f"start a new run")
    if destroy_data:
        plan = with_destroy_data(plan, destroy_data)
    hosts = None
    if "hosts" in record:  # a fleet run
        if targets:
            raise IofleetError(f"{what} ran on a fleet: --target does not apply; give --hosts INVENTORY if needed")
        path = inventory or (Path(record["inventory"]) if record.get("inventory") else None)
        names = ", ".join(record["hosts"])
        if path is None:
            raise IofleetError(f"{what} ran on a fleet (hosts {names}); give its inventory again: "
                               f"iofleet run --resume {run_id} --hosts INVENTORY")
        if not Path(path).exists():
            raise IofleetError(f"{what} ran on hosts {names} of {path}, which is gone; give the inventory again: "
                               f"iofleet run --resume {run_id} --hosts INVENTORY")
        hosts = load_inventory(Path(path)).select(plan.hosts)
        now = {h.name: list(h.targets) for h in hosts}
        if now != record["hosts"]:
            raise IofleetError(f"{what} ran on hosts {names} (with their targets); {path} now gives "
                               f"{', '.join(now) or 'none'}: a run's tests all run on the same hosts; give --hosts "
                               f"with the same hosts and targets, or start a new run")
    else:
        if inventory:
            raise IofleetError(f"{what} ran on this host's targets, not on a fleet; resume it without --hosts")
        stored = record["targets"]
        if targets and [str(Path(t).resolve()) for t in targets] != stored:
            raise IofleetError(f"{what} ran on {', '.join(stored)}; --target {' '.join(map(str, targets))} is "
                               f"another place: a run's tests all run on the same targets; resume without "
                               f"--target, or start a new run")
        was, here = run.host_facts.get("hostname"), host_facts()["hostname"]
        if was and was != here:
            raise IofleetError(f"{what} ran on host {was} and this is {here}; resume it there")
        plan = with_targets(plan, stored, f"{what}'s targets")
    place, specs = place_for(plan, hosts)
    if len(specs) != run.tests_planned:
        raise IofleetError(f"{what}'s tests no longer match its plan: it planned {run.tests_planned} tests and "
                           f"the plan now gives {len(specs)}; start a new run")
    for t in run.tests:
        seq = t.seq
        if seq >= len(specs) or not _same_test(t, specs[seq]):
            now = specs[seq].id if seq < len(specs) else "nothing"
            raise IofleetError(f"{what}'s tests no longer match its plan: test {seq + 1} is stored as {t.id} "
                               f"and the plan now gives {now} there; start a new run")
    stored_status = {t.seq: t.status for t in run.tests}
    kept = {i: st for i, st in stored_status.items() if st in FINISHED_TEST_STATUSES}
    again = {i: st for i, st in stored_status.items() if st not in FINISHED_TEST_STATUSES}
    todo = [i for i in range(len(specs)) if i not in kept]
    if not todo and run.status != "running":
        raise IofleetError(f"{what} is {run.status}: every test is stored ok or partial; there is nothing to "
                           f"resume")
    store.discard_orphan_artifacts(run_id)
    return Resume(run_id=run_id, plan=plan, plan_text=run.plan_text, specs=specs, todo=todo, kept=kept,
                  again=again, hosts=hosts, place=place, record=record, methodology=run.methodology)


def resume_run(store: Store, resume: Resume, *, observer: RunObserver | None = None,
               stop: threading.Event | None = None) -> RunOutcome:
    """Run the unfinished tests of a run held by prepare_resume, each as
    its own test of the run (its seq), and set the run's status as if it
    had run straight through."""
    try:
        session = RunSession(resume.plan, resume.plan_text, store, specs=[resume.specs[i] for i in resume.todo],
                             place=resume.place, observer=observer, stop=stop, resume=resume)
    except BaseException:
        store.release_run(resume.run_id)
        raise
    with session:
        for seq in resume.todo:
            if session.done or session.stop.is_set():
                break
            session.run(resume.specs[seq], seq=seq)
    return session.outcome
