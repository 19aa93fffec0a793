"""The `curve` study: latency against load. It takes the most IOPS of one
IO (block size, read and random share) from a saturate sweep, run here
first (a run of its own) or stored (`from_run`), then runs fixed-rate tests
at shares of it, on the sweep's best jobs × iodepth, as ONE stored run whose
tests carry `params.rate_iops` (the test's total over hosts and jobs).

A sweep run here keeps its data for the fixed-rate tests, whose
preparation covers the same files and so finds them kept (fleet/targets/kept.py):
the data is written once, and removed at the curve's end (unless
keep_files)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from dataclasses import replace as copy_with
from typing import TYPE_CHECKING, Callable

import yaml

from ..analysis.curve import DEFAULT_POINTS, CurveResult, curve_of_run, curve_record, even_loads, load_rule
from ..analysis.saturation import saturation_of_run
from ..errors import IofleetError
from ..plan import parse_plan
from ..plan.params import CURVE, IO_PARAMS, PARAMS, RUN_PARAMS
from ..plan.settings import plan_entries, settings_fields, study_params
from .saturate import Sweep, discard_quietly, place_names, run_saturate
from .study import Where

if TYPE_CHECKING:  # imported when the study runs: `iofleet --help` shows Curve's defaults without them
    from ..results.store import Store
    from .run import RunOutcome

MAX_POINTS = 50  # a day's worth of 30-minute points; more is a typo
MAX_LOAD_PCT = 1000.0  # a load beyond the maximum shows the wall; ten times it is a typo


@dataclass
class Curve(settings_fields("CurveParams", CURVE, study_params(CURVE, own_default=True))):
    """What to measure: each point's time (the table's curve rows with a
    default of the curve's own), the loads (`points` evenly spaced, or
    `loads` in % of the most IOPS), where the maximum comes from
    (`from_run`: a stored saturate run; else a sweep run first), and the
    sweep's settings, whose IO (bs, read and random share), file size,
    engine and preparation are the curve's too."""

    points: int = DEFAULT_POINTS
    loads: list[float] | None = None
    from_run: int | None = None
    sweep: Sweep = field(default_factory=Sweep)

    def __post_init__(self):
        if not 1 <= self.points <= MAX_POINTS:
            raise IofleetError(f"--points {self.points}: allowed 1 to {MAX_POINTS}")
        for pct in self.loads or ():
            if not 0 < pct <= MAX_LOAD_PCT:
                raise IofleetError(f"--loads {pct:g}: a load is a share of the most IOPS above 0 and at most "
                                   f"{MAX_LOAD_PCT:g} %, e.g. --loads 10,50,90,120")

    def load_list(self) -> list[float]:
        return list(self.loads) if self.loads else even_loads(self.points)


def parse_loads(text: str | None) -> list[float] | None:
    """--loads 10,50,90,120 → [10.0, 50.0, 90.0, 120.0] (the web form's text too)."""
    if text is None:
        return None
    try:
        loads = [float(part.strip().rstrip("%")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise IofleetError(f"--loads {text}: give shares of the most IOPS in %, comma-separated, "
                           f"e.g. --loads 10,50,90,120") from None
    if not loads:
        raise IofleetError("--loads: give at least one share of the most IOPS, e.g. --loads 50")
    return sorted(set(loads))


@dataclass
class CurveOutcome:
    run: RunOutcome  # the curve's run (its fixed-rate tests), or the sweep's when it was stopped
    result: CurveResult | None  # None: stopped before the curve ran
    hosts: int
    max_run_id: int | None = None  # the saturate run that found the maximum, when this study ran it


def stored_maximum(store: Store, run_id: int, curve: Curve, given: set[str]) -> tuple:
    """(jobs, iodepth, IOPS, the sweep's IO) of a stored saturate run; the
    IO options given here must be the sweep's."""
    stored = store.get_run(run_id)
    sat = saturation_of_run(stored)
    if sat is None:
        raise IofleetError(f"--from-run {run_id}: run {run_id} is not a saturate run; give one "
                           f"(`iofleet results list`) or leave --from-run out to sweep first")
    if sat.peak is None:
        raise IofleetError(f"--from-run {run_id}: its sweep measured no IO; sweep again without --from-run")
    swept = stored.methodology.saturate
    for name in IO_PARAMS:
        if name in given and getattr(curve.sweep, name) != getattr(swept, name):
            option = "--" + name.replace("_", "-")
            raise IofleetError(f"{option} {PARAMS[name].format(getattr(curve.sweep, name))}: run {run_id} swept "
                               f"{PARAMS[name].format(getattr(swept, name))}; leave {option} out (the curve takes the "
                               f"sweep's) or sweep again without --from-run")
    io = {name: getattr(swept, name) for name in IO_PARAMS}
    return sat.peak.jobs, sat.peak.iodepth, sat.peak.iops, io


def curve_plan(curve: Curve, io: dict, jobs: int, iodepth: int, rates: list[int], targets: list[str],
               destroy_data: list[str], engine: str, max_iops: float, rule: str,
               swept_here: bool = False) -> tuple[dict, str]:
    """The fixed-rate tests as a plan: one workload, a matrix of rate_iops.
    `swept_here`: the sweep just before prepared the data for them (its
    kept data is used whatever reuse_data says of older runs' data)."""
    # The sweep's file size, engine and the rest; the points' own durations; the swept IO.
    values = {**curve.sweep.table_values(), **curve.table_values(), "engine": engine}
    rest = {name: value for name, value in values.items() if name not in IO_PARAMS}
    workload = {"name": "curve", **plan_entries(io), "jobs": jobs, "iodepth": iodepth, **plan_entries(rest),
                "matrix": {"rate_iops": rates}}
    data = {"name": "curve", **({"targets": targets} if targets else {}),
            **({"destroy_data": list(destroy_data)} if destroy_data else {}), **plan_entries(values, RUN_PARAMS),
            **curve.sweep.kept(reuse_data=curve.sweep.reuse_data or swept_here), "workloads": [workload]}
    text = (f"# iofleet curve: latency against load at fixed rates up to the most IOPS, {max_iops:,.0f}\n"
            f"# (jobs {jobs} × iodepth {iodepth} per host); {rule}.\n" + yaml.safe_dump(data, sort_keys=False))
    return data, text


def fixed_rate_plan(curve: Curve, io: dict, jobs: int, iodepth: int, max_iops: float, targets: list[str],
                    destroy_data: list[str], swept_here: bool = False) -> tuple[dict, str, str]:
    """The curve's fixed-rate tests at its loads of `max_iops` as a plan
    (data, text; one test per distinct rate), and the rule that placed them."""
    loads = curve.load_list()
    rule = load_rule(loads, bool(curve.loads))
    rates = sorted({max(1, round(max_iops * pct / 100)) for pct in loads})
    data, text = curve_plan(curve, io, jobs, iodepth, rates, targets, destroy_data, curve.sweep.engine, max_iops,
                            rule, swept_here=swept_here)
    return data, text, rule


def run_curve(where: Where, curve: Curve, *, given: set[str] = frozenset(),
              on_maximum: Callable[[str], None] | None = None) -> CurveOutcome:
    """Find the most IOPS (or take it from `curve.from_run`), then run the
    curve's fixed-rate tests as one stored run. `given`: the IO options the
    user set (checked against a stored sweep's); `on_maximum(line)`: says
    where the maximum is, before the curve runs."""
    from ..fleet.places import place_for
    from .run import RunSession
    store, hosts, observer, destroy_data = where.store, where.hosts, where.observer, where.destroy_data
    stop = where.stop or threading.Event()
    # A sweep run first checks the hosts itself.
    names = place_names(hosts, where.targets, "curve", checking="curve" if curve.from_run is not None else None)
    max_run, shared = None, None
    if curve.from_run is not None:
        jobs, iodepth, max_iops, io = stored_maximum(store, curve.from_run, curve, set(given))
        source = f"saturate run {curve.from_run}"
    else:
        sweep = curve.sweep
        swept = run_saturate(copy_with(where, label=where.label or "curve", stop=stop), sweep, keep_for_next=True)
        max_run, peak, shared = swept.run_id, swept.result.peak, swept.data
        if stop.is_set():  # stopped during the sweep: no curve; the sweep's run says so
            discard_quietly(shared, observer)
            return CurveOutcome(swept.run, None, len(hosts) if hosts else 1, max_run)
        if peak is None:
            raise IofleetError(f"the sweep for the maximum (run {max_run}) measured no IO; no curve was run "
                               f"(see `iofleet results show {max_run}`)")
        jobs, iodepth, max_iops, io = peak.jobs, peak.iodepth, peak.iops, {
            name: getattr(sweep, name) for name in IO_PARAMS}
        source = f"saturate run {max_run}"
    try:
        data, text, rule = fixed_rate_plan(curve, io, jobs, iodepth, max_iops, names, destroy_data or [],
                                           swept_here=shared is not None)
        if on_maximum:
            on_maximum(f"most IOPS: {max_iops:,.0f} at jobs {jobs} × iodepth {iodepth} per host ({source}); "
                       f"the curve runs {len(curve.load_list())} fixed-rate tests: {rule}")
        plan = parse_plan(data, "curve")
        place, specs = place_for(plan, hosts)
        if shared is not None:
            shared.adopt_into(place)  # iofleet's directory the sweep made goes at the curve's end
        record = curve_record(CurveResult(max_iops, jobs, iodepth, source, rule, io))
        session = RunSession(plan, text, store, specs=specs, place=place, label=where.label or "curve",
                             observer=observer, stop=stop, prepare_for=shared.covers if shared is not None else None)
    except BaseException:
        discard_quietly(shared, observer)  # the fixed-rate tests do not start: the sweep's data goes
        raise
    with session:
        store.set_run_methodology(session.run_id, copy_with(session.methodology, curve=record))
        for spec in specs:
            if session.done or session.stop.is_set():
                break
            session.run(spec)
    result = curve_of_run(store.get_run(session.run_id))
    return CurveOutcome(session.outcome, result, len(hosts) if hosts else 1, max_run)
