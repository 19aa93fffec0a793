"""The `scenario` study: one background load at a fixed rate for its whole
runtime, and timed faults on hosts (fleet/control/faults.py), fired by a timeline
thread next to the running test. Each fault is undone at its end and at
any exit (the run's end, Ctrl-C, an error). The run is stored as a
one-test run; its methodology holds the scenario: the file, each event
(applied and undone times, errors), the per-second series and the impact
(analysis/impact.py)."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from dataclasses import replace as copy_with
from pathlib import Path

import yaml

from ..analysis.impact import Load, impact
from ..errors import IofleetError
from ..fleet.places import place_for
from ..fleet.control.faults import Fault, FaultError, plan_faults
from ..fleet.inventory import Host
from ..plan.scenario import Scenario
from ..results.methodology import ScenarioRecord
from ..results.store import Store
from ..units import escaped
from .events import RunObserver, RunOutcome
from .run import RunSession
from .watch import Watcher, shown, watch_host

# The longest start-up of fio (connect, fork, open files) believed: a longer one is not its start-up.
MAX_SHIFT_S = 3.0
# The phases a place reports just before fio starts the test (fleet/places/).
_STARTING = ("warm-up", "measuring", "running on")


@dataclass
class ScenarioOutcome:
    run: RunOutcome
    events: list[dict] = field(default_factory=list)  # what happened to each event
    impact: dict | None = None
    lost: list[str] = field(default_factory=list)  # hosts lost during the load
    downed: list[str] = field(default_factory=list)  # hosts a host-down event took down
    clock_shift_s: float = 0.0  # fio's clock behind the timeline's (clock_shift)
    watch: dict | None = None  # the storage's own account (studies/watch.py)

    @property
    def ok(self) -> bool:
        """The load ran, every fault was applied and undone, and a host lost is one a host-down event
        took down."""
        return self.run.status == "complete" or (
            self.run.status == "partial" and bool(self.lost) and set(self.lost) <= set(self.downed)
            and not any(e["error"] or e.get("undo_error") for e in self.events))


def check_scenario(scenario: Scenario, source: str, hosts: list[Host] | None, target: str | None,
                   yes: bool) -> list[Fault]:
    """Every fault on its host, checked before anything runs; the user's
    commands (`run`'s command and undo, process-kill's restart, the
    `watch:` command) need `yes` (the CLI shows them first)."""
    faults = plan_faults(scenario, source, hosts, target, secrets.token_hex(3))
    watch_host(scenario.watch, source, hosts)
    commands = [f"{e.host or 'this host'}{'' if key == 'command' else f' ({key})'}: {text}"
                for e, key, text in scenario.commands] + shown(scenario.watch)
    if commands and not yes:
        raise IofleetError(escaped(f"{source}: the scenario runs commands on hosts as root ({'; '.join(commands)}); "
                                   f"check them and run again with --yes"))
    return faults


class Timeline:
    """Fires the faults at their times, counted from the measured part's
    start (`begin`), until the test ends (`finish`, which undoes every
    fault still applied)."""

    def __init__(self, faults: list[Fault], stop: threading.Event, on_event=None):
        self.faults, self.stop, self.on_event = faults, stop, on_event or (lambda record: None)
        self.records = [{"index": i, "fault": f.event.fault, "host": f.event.host, "at_s": f.event.at,
                         "for_s": f.event.for_s, "command": f.event.command, "applied_s": None,
                         "undone_s": None, "error": None, "detail": {}} for i, f in enumerate(faults)]
        self._t0: float | None = None
        self._begun, self._over = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="iofleet-scenario", daemon=True)
        self._thread.start()

    def begin(self, delay_s: float) -> None:
        """fio starts now; its measured part `delay_s` later (the warm-up)."""
        if not self._begun.is_set():
            self._t0 = time.monotonic() + delay_s
            self._begun.set()

    def seconds_at(self, when: float | None) -> float | None:
        """A time.monotonic() reading on the timeline's clock (None before it began)."""
        return None if when is None or self._t0 is None else when - self._t0

    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 2)

    def _wait_until(self, t: float) -> bool:
        while not (self._over.is_set() or self.stop.is_set()):
            left = self._t0 + t - time.monotonic()
            if left <= 0:
                return True
            self._over.wait(min(left, 0.1))
        return False

    def _run(self) -> None:
        while not self._begun.wait(0.1):
            if self._over.is_set() or self.stop.is_set():
                return
        steps = sorted([(f.event.at, 0, i) for i, f in enumerate(self.faults)]
                       + [(f.event.end_s, 1, i) for i, f in enumerate(self.faults) if f.event.end_s is not None])
        for t, undo, i in steps:
            if not self._wait_until(t):
                return
            self._step(i, undo=bool(undo))

    def _step(self, i: int, undo: bool) -> None:
        fault, record = self.faults[i], self.records[i]
        if undo and not fault.in_place:
            return
        try:
            fault.undo() if undo else fault.apply()
        except (FaultError, OSError) as exc:
            record["error" if not undo else "undo_error"] = str(exc)
        else:
            record["undone_s" if undo else "applied_s"] = self._now() if self._t0 else None
            record["detail"] = fault.detail
        self.on_event(dict(record, undone=undo))

    def finish(self) -> None:
        """Stop firing and undo every fault still applied (host-down's fio
        server is started again here). Idempotent."""
        self._over.set()
        self._thread.join(timeout=60)
        for i, f in enumerate(self.faults):
            if f.in_place:
                self._step(i, undo=True)


class _Observer(RunObserver):
    """The caller's observer, and the measured part's start for the timeline."""

    def __init__(self, inner: RunObserver | None, timeline: Timeline):
        self.inner, self.timeline = inner or RunObserver(), timeline

    def watch(self, progress): self.inner.watch(progress)
    def run_started(self, *a): self.inner.run_started(*a)
    def preparing(self, *a): self.inner.preparing(*a)
    def test_started(self, *a): self.inner.test_started(*a)
    def test_live(self, *a): self.inner.test_live(*a)
    def cleaning(self): self.inner.cleaning()

    def test_phase(self, index, spec, phase):
        if phase.startswith(_STARTING):
            self.timeline.begin(spec.ramp)
        self.inner.test_phase(index, spec, phase)

    def test_finished(self, index, spec, result):
        self.timeline.finish()  # before the clean-up: every fault undone
        self.inner.test_finished(index, spec, result)


class _Recorder:
    """The place, keeping the test's measured record: its rounds, a lost
    host's up to its loss (fleet/fio_link/remote.py)."""

    def __init__(self, place):
        self._place, self.measured, self.returned_at = place, None, None

    def __getattr__(self, name):
        return getattr(self._place, name)

    def run_test(self, *args, **kwargs):
        self.measured = self._place.run_test(*args, **kwargs)
        self.returned_at = time.monotonic()
        return self.measured


def clock_shift(timeline_end_s: float | None, runtime_s: int) -> float:
    """Seconds by which fio's clock (the rounds') runs behind the
    timeline's: fio's jobs start a moment after fio is launched (its
    client connecting, files opened). The test's measured part ends on
    fio's clock at `runtime_s`, just before the place returns, which is
    `timeline_end_s` on the timeline's clock. At most MAX_SHIFT_S."""
    if timeline_end_s is None:
        return 0.0
    return round(min(MAX_SHIFT_S, max(0.0, timeline_end_s - runtime_s)), 2)


def _impact_events(records: list[dict], shift: float) -> list[dict]:
    """The spans the impact is measured on, on fio's clock: when each fault
    was applied and undone (its planned times where it was not)."""
    out = []
    for r in sorted(records, key=lambda r: r["at_s"]):
        if r["error"]:
            continue
        at = r["applied_s"] - shift if r["applied_s"] is not None else r["at_s"]
        end = None
        if r["for_s"] is not None:
            end = r["undone_s"] - shift if r["undone_s"] is not None else r["at_s"] + r["for_s"]
        out.append({"index": r["index"], "at_s": round(at, 2), "end_s": None if end is None else round(end, 2)})
    return out


def _load(scenario: Scenario, spec, hosts: int) -> Load:
    """The load's rate (IOs a second, all hosts) and IOs in flight per host."""
    rate = scenario.load.rate_iops
    if rate is None and scenario.load.rate_mbps is not None:
        rate = scenario.load.rate_mbps * 1_000_000 / spec.bs
    return Load(rate, spec.jobs * spec.iodepth, hosts)


def run_scenario(scenario: Scenario, scenario_text: str, source: str, store: Store, faults: list[Fault], *,
                 targets: list[Path] | None = None, hosts: list[Host] | None = None, label: str | None = None,
                 observer: RunObserver | None = None, stop: threading.Event | None = None,
                 on_event=None, keep_files: bool = False, reuse_data: bool = True) -> ScenarioOutcome:
    """Run the scenario's load with its faults (from check_scenario) and
    store it as a one-test run; `on_event(record)` as each fault is applied
    or undone. `keep_files`, `reuse_data`: the plan settings (fleet/targets/kept.py):
    keep the data files for a later run; use data an earlier run kept."""
    stop = stop or threading.Event()
    plan = scenario.plan(source, [str(t) for t in targets or []])
    if keep_files or not reuse_data:
        plan = plan.model_copy(update={"keep_files": keep_files, "reuse_data": reuse_data})
    place, specs = place_for(plan, hosts)
    recorder = _Recorder(place)
    timeline = Timeline(faults, stop, on_event)
    watcher = scenario.watch and Watcher(scenario.watch, watch_host(scenario.watch, source, hosts),
                                         lambda: timeline.seconds_at(time.monotonic()))
    try:
        plan_text = yaml.safe_dump(plan.model_dump(exclude_none=True, exclude_defaults=True), sort_keys=False)
        with RunSession(plan, plan_text, store, specs=specs, place=recorder, label=label,
                        observer=_Observer(observer, timeline), stop=stop) as session:
            result = session.run(specs[0])
            timeline.finish()
            if watcher:
                watcher.stop()
            out = ScenarioOutcome(session.outcome, timeline.records, lost=list(result.lost),
                                  downed=[f.event.host for f in faults if f.event.fault == "host-down" and f.applied])
            rounds = recorder.measured.rounds if recorder.measured else {}
            if not stop.is_set() and result.status in ("ok", "partial"):
                out.clock_shift_s = clock_shift(timeline.seconds_at(recorder.returned_at), specs[0].runtime)
            if rounds and any(rounds.values()):
                out.impact = impact(rounds, _impact_events(out.events, out.clock_shift_s),
                                    _load(scenario, specs[0], len(rounds)))
            if watcher:
                out.watch = watcher.record(out.clock_shift_s, _impact_events(out.events, out.clock_shift_s))
            store.set_run_methodology(session.run_id, copy_with(session.methodology, scenario=_record(
                scenario, scenario_text, source, out)))
    finally:
        timeline.finish()  # any exit: every fault undone
        if watcher:
            watcher.stop()
    return out


def _record(scenario: Scenario, text: str, source: str, out: ScenarioOutcome) -> ScenarioRecord:
    return ScenarioRecord(name=scenario.name, source=source, file=text, events=out.events, lost=out.lost,
                          downed=out.downed, clock_shift_s=out.clock_shift_s, impact=out.impact,
                          watch=out.watch)
