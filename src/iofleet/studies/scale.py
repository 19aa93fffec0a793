"""The `scale` study ("clone, benchmark, clone until it chokes"): one test of
a plan on the first 1, 2, … k hosts of the inventory, each step its own run,
then the fleet's IOPS growth per step and the saturation point."""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..analysis.scaling import Scaling, scaling
from ..errors import IofleetError
from ..fleet.check import require_ready
from ..fleet.places import place_class
from ..fleet.inventory import Host
from ..plan.expand import TestSpec, expand
from ..plan.model import Plan
from ..results.model import Aggregate
from ..results.store import Store
from .events import RunObserver
from .run import run_plan

# How many test ids an error message lists before "and N more".
LISTED_IDS = 5


@dataclass
class ScaleStep:
    number: int  # 1-based position in the study
    of: int  # steps planned
    hosts: list[str]  # names of the hosts it ran on (the first k of the inventory)
    run_id: int | None  # None when the run could not start
    status: str  # the run's: complete | failed | partial | interrupted
    aggregate: Aggregate | None  # the fleet's figures (a partial test's cover fewer hosts)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "complete"


@dataclass
class ScaleOutcome:
    test_id: str
    available: int  # hosts the inventory (and the plan's selector) offers
    planned: list[int]  # host counts of the steps
    steps: list[ScaleStep] = field(default_factory=list)
    status: str = "complete"  # complete | failed | partial | interrupted
    stopped: str | None = None  # why the study ended before its last step
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    @property
    def scaling(self) -> Scaling:
        """Growth and saturation over the steps; only complete steps count
        (a partial step's figures cover fewer hosts than it says)."""
        return scaling([(len(s.hosts), s.aggregate if s.ok else None) for s in self.steps])


def parse_steps(text: str) -> list[int]:
    """'1,2,4,8' → [1, 2, 4, 8] (checked against the fleet by run_scale)."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts):
        raise IofleetError(f"--steps {text}: give host counts as whole numbers separated by commas, e.g. 1,2,4,8")
    return [int(p) for p in parts]


def check_steps(steps: list[int] | None, available: int, selected: bool = False) -> list[int]:
    """The steps to run: 1..available by default, else increasing counts of
    at least 1 and at most `available`."""
    if steps is None:
        return list(range(1, available + 1))
    shown = ",".join(map(str, steps))
    if not steps:
        raise IofleetError("--steps: give at least one host count, e.g. 1,2,4")
    if steps[0] < 1:
        raise IofleetError(f"--steps {shown}: host counts start at 1")
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise IofleetError(f"--steps {shown}: give the host counts in increasing order, each once")
    if steps[-1] > available:
        where = "the plan's `hosts:` selector leaves" if selected else "the inventory has"
        raise IofleetError(f"--steps {shown}: {where} {available} host{'s' if available != 1 else ''}")
    return steps


def select_test(plan: Plan, test_id: str | None) -> tuple[Plan, TestSpec, list[str]]:
    """Narrow the plan to one test: (a plan whose only workload has that
    test's parameters fixed, the test as the full plan names it, notes)."""
    if plan.mixed:
        raise IofleetError(f"plan {plan.name!r} is mixed (workloads at once on host groups); "
                           f"a scaling study runs one test on growing numbers of hosts")
    specs = expand(plan)
    ids = list(dict.fromkeys(s.id for s in specs))
    listed = ", ".join(ids[:LISTED_IDS]) + (
        f" (and {len(ids) - LISTED_IDS} more: see `iofleet validate PLAN`)" if len(ids) > LISTED_IDS else "")
    if test_id is None:
        if len(ids) > 1:
            raise IofleetError(f"plan {plan.name!r} expands to {len(ids)} tests and a scaling study "
                               f"runs one: pass --test ID with one of {listed}")
        test_id = ids[0]
    elif test_id not in ids:
        raise IofleetError(f"--test {test_id}: plan {plan.name!r} has no such test; its tests: {listed}")
    spec = next(s for s in specs if s.id == test_id)
    notes = []
    if spec.repeats > 1:
        notes.append(f"workload {spec.workload!r} asks for {spec.repeats} repeats; "
                     f"each step ran the test once")
    source = next(w for w in plan.workloads if w.name == spec.workload)
    workload = {"name": spec.workload, "description": source.description, **spec.params()}
    narrowed = Plan.model_validate(
        plan.model_dump(exclude_none=True) | {"defaults": {}, "workloads": [workload]})
    (only,) = expand(narrowed)
    assert only.params() == spec.params(), (only, spec)
    return narrowed, spec, notes


def run_scale(plan: Plan, plan_text: str, store: Store, hosts: list[Host], **kw) -> ScaleOutcome:
    """The scaling study (_run_scale) with its hosts up throughout: a
    Kubernetes inventory's pods are created once, each step uses its first k."""
    with place_class(hosts).hosts_up(hosts):
        return _run_scale(plan, plan_text, store, hosts, **kw)


def _run_scale(
    plan: Plan,
    plan_text: str,
    store: Store,
    hosts: list[Host],
    steps: list[int] | None = None,
    test_id: str | None = None,
    observer: RunObserver | None = None,
    stop: threading.Event | None = None,
    on_step: Callable[[ScaleStep], None] | None = None,
) -> ScaleOutcome:
    """Run one test of the plan on the first k hosts for each k of `steps`
    (default 1, 2, …, all), each step a run of its own, and stop early on
    Ctrl-C (`stop`) or at a step that failed or lost a host."""
    stop = stop or threading.Event()
    if not hosts:
        raise IofleetError("a scaling study runs on a fleet: give an inventory of fio servers (--hosts)")
    narrowed, spec, notes = select_test(plan, test_id)
    planned = check_steps(steps, len(hosts), selected=bool(plan.hosts))
    outcome = ScaleOutcome(test_id=spec.id, available=len(hosts), planned=planned, notes=notes)

    # Every host the study will use must be ready before the first step:
    # finding a dead host at step 8 after an hour of steps 1-7 helps no one.
    require_ready(hosts[:planned[-1]], what="step")

    for number, k in enumerate(planned, 1):
        if stop.is_set():
            break
        used = hosts[:k]
        header = (f"# iofleet scale: test {spec.id} of this plan, step {number}/{len(planned)} "
                  f"on {k} of {len(hosts)} hosts\n")
        try:
            run = run_plan(narrowed, header + plan_text, store, hosts=used, resumable=False,
                           label=f"scale {k}/{len(hosts)} hosts", observer=observer, stop=stop)
        except IofleetError as exc:  # a host went away since the check
            step = ScaleStep(number, len(planned), [h.name for h in used], None, "failed", None,
                             str(exc).replace("\n", "; "))
        else:
            test = run.tests[0] if run.tests else None
            error = test.error if test else ("stopped before the test started" if stop.is_set() else None)
            step = ScaleStep(number, len(planned), [h.name for h in used], run.run_id, run.status,
                             test.aggregate if test else None, error)
        outcome.steps.append(step)
        if on_step:
            on_step(step)
        if not step.ok:
            break

    last = outcome.steps[-1] if outcome.steps else None
    if stop.is_set() or (last and last.status == "interrupted"):
        outcome.status = "interrupted"
        outcome.stopped = f"stopped by the user after {_done(outcome)}"
    elif last and not last.ok:
        outcome.status = "partial" if last.status == "partial" else "failed"
        what = "failed" if last.status == "failed" else f"was {last.status}"
        outcome.stopped = (f"step {last.number} ({len(last.hosts)} hosts) {what}"
                           f"{': ' + last.error if last.error else ''}; the study stopped there")
    return outcome


def _done(outcome: ScaleOutcome) -> str:
    done = sum(1 for s in outcome.steps if s.ok)
    return f"{done} of {len(outcome.planned)} step{'s' if len(outcome.planned) != 1 else ''}"
