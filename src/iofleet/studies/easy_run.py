"""The Easy Run study: look at the hosts, probe which jobs × iodepth gives
the most IOPS (a short saturate sweep), build the plan (plan.easy), run it.

The probe keeps its data files when it has its answer (saturate's
keep_for_next) and the profiles' run finds them kept (fleet/targets/kept.py):
as they are when the probe chose its widest row of jobs (the same working
set split over as many files), else extended — the profiles' fewer,
larger files are the probe's first ones with only their missing ends
written. The working set is written once, and removed at the profiles'
end. When the probe is stopped or the profiles do not start, the probe's
files are removed as the probe's own clean-up would have."""

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from ..analysis.saturation import Saturation
from ..errors import IofleetError
from ..fleet.places import place_for
from ..fleet.facts import fleet_facts, local_facts
from ..fleet.inventory import Host
from ..fleet.targets.kept import tail_tiers
from ..plan import parse_plan
from ..plan.easy import Durations, HostFacts, Load, easy_plan, file_size, probe_max_jobs, rule_of_thumb, working_set_of
from ..plan.expand import prepare_tiers
from .events import RunObserver, RunOutcome
from .run import RunSession
from .saturate import SaturateOutcome, Sweep, discard_quietly, run_saturate
from .study import Where


# The probe's cells: short, each judged steady on 1 s rounds (at most 10 s
# measured), never longer than the profiles themselves are asked to be.
PROBE_RAMP = 2
PROBE_ROUND = 1
PROBE_MAX_RUNTIME = 10
PROBE_MAX_IODEPTH = 256  # saturate's own default: deep enough for any one job


def survey(targets: list[Path] | None, hosts: list[Host] | None) -> tuple[list[HostFacts], list[str]]:
    """What the hosts are, and the plan's targets (none on a fleet: each host has its own)."""
    if hosts:
        return fleet_facts(hosts), []  # through SSH where the inventory gives it, else node_exporter
    if not targets:
        raise IofleetError("easy-run needs a place to test: --target DIR (or --hosts INVENTORY)")
    paths = [Path(t).resolve() for t in targets]
    return [local_facts(paths)], [str(p) for p in paths]


@dataclass
class Probe:
    """The probe's stored run (a saturate sweep of 4k random reads) and the
    jobs × iodepth it chose; `load` is None only when it was interrupted."""

    outcome: SaturateOutcome
    load: Load | None
    seconds: float

    @property
    def run_id(self) -> int:
        return self.outcome.run_id

    def discard_data(self, observer: RunObserver | None = None) -> None:
        """The profiles will not run: remove the data the probe kept for
        them (nothing when it kept none, or once removed)."""
        discard_quietly(self.outcome.data, observer)


def probe_sweep(facts: list[HostFacts], durations: Durations, working_set: int | None = None,
                max_iodepth: int = PROBE_MAX_IODEPTH, max_jobs: int | None = None) -> Sweep:
    """4k random reads (the profile Easy Run's headline figure is) over the
    same working set and engine as the run, in short steady-judged cells;
    `max_jobs`: the widest row (default: the smallest host's CPUs, at most 8)."""
    total, _ = working_set_of(facts, working_set)
    max_jobs = max_jobs or probe_max_jobs(facts)
    # A quick look (--runtime) probes in fixed-time cells as short as its profiles.
    cells = ({"runtime": max(1, min(PROBE_MAX_RUNTIME, durations.runtime))} if durations.runtime is not None else
             {"round": PROBE_ROUND, "max_runtime": min(PROBE_MAX_RUNTIME, durations.max_runtime)})
    return Sweep(bs=4096, read_pct=100, random_pct=100, size=file_size(total, max_jobs), engine="auto",
                 prepare="random", max_jobs=max_jobs, max_iodepth=max_iodepth, ramp=min(PROBE_RAMP, durations.ramp),
                 **cells)


def top_cell(result: Saturation):
    """The probe cell Easy Run chooses: the most IOPS (the median of its
    runs), with fewer IOs in flight on a tie; None when none measured IO."""
    if result.peak is None or not result.cells:
        return None
    return max(result.cells, key=lambda c: (c.iops, -c.per_host))


def choose_load(result: Saturation, run_id: int, hosts: int, facts: list[HostFacts],
                seconds: float) -> Load | None:
    """The probe cell with the most IOPS (the median of its runs): Easy
    Run's headline is the most the storage gives, and a cell with fewer IOs
    in flight that noise cannot tell from it (saturate's `peak`) is named in
    the reason, not chosen. None when no cell measured IO."""
    cells = result.cells
    top = top_cell(result)
    if top is None:
        return None
    runs = sum(c.runs for c in cells)
    counted = f"{len(cells)} probe cells" + (f" ({runs} runs)" if runs > len(cells) else "")
    summed = f"{hosts} hosts' summed " if hosts > 1 else ""
    why = (f"jobs × iodepth: {top.jobs} × {top.iodepth} per host, {top.per_host} outstanding IOs, for random IO "
           f"(measured: the most {summed}4k random-read IOPS of {counted}, {top.iops:,.0f}")
    peak = result.peak
    if peak is not top and peak.per_host < top.per_host:
        why += (f"; {peak.jobs} × {peak.iodepth} gave {peak.iops:,.0f}, within noise of it with fewer IOs "
                f"in flight (`iofleet saturate` prefers that one)")
    jobs, depth, _ = rule_of_thumb(facts)
    guess = next((c for c in cells if (c.jobs, c.iodepth) == (jobs, depth)), None)
    if guess is not None and guess is not top:
        why += f"; the rule of thumb's {jobs} × {depth} gave {guess.iops:,.0f}"
    return Load(top.jobs, top.iodepth, why + f"; probe run {run_id}, {seconds:.0f} s)", probe_run=run_id,
                probe_cells=[{"jobs": c.jobs, "iodepth": c.iodepth, "iops": c.iops} for c in cells])


def probe_label(label: str | None) -> str:
    """The probe run's label: the run's, with -probe (a label is at most 64 characters)."""
    return f"{(label or 'easy-run')[:58]}-probe"


def probe(where: Where, durations: Durations, *, working_set: int | None = None,
          max_iodepth: int = PROBE_MAX_IODEPTH, max_jobs: int | None = None) -> Probe:
    """Measure which jobs × iodepth gives the most 4k random-read IOPS: a
    short saturate sweep, stored as its own run, on all hosts at once (one
    setting for the fleet, from the fleet's summed IOPS). An interrupted
    probe is returned as it is; one that measured nothing is an error.
    The probe keeps its files for the profiles (`load.data`): give the
    load to easy_run, or call `discard_data()` when they will not run."""
    observer = where.observer
    facts, _ = survey(where.targets, where.hosts)
    sweep = probe_sweep(facts, durations, working_set, max_iodepth, max_jobs)
    total, why_total = working_set_of(facts, working_set)
    start = time.monotonic()
    outcome = run_saturate(replace(where, label=probe_label(where.label)), sweep,
                           keep_for_next=lambda result: top_cell(result) is not None)
    seconds = time.monotonic() - start
    load = choose_load(outcome.result, outcome.run_id, outcome.hosts, facts, seconds)
    interrupted = (where.stop is not None and where.stop.is_set()) or outcome.run.status == "interrupted"
    probed = Probe(outcome, load, seconds)
    if load is None or interrupted or not shares_files(outcome, load, total):
        # No profiles, or files the probe's cannot become: removed now, as the probe's own clean-up would have.
        probed.discard_data(observer)
    elif outcome.data is not None:
        load.working_set, load.working_set_why, load.data = total, why_total, outcome.data
    if load is None and not interrupted:
        why = "; ".join(outcome.stopped) or "no cell measured any IO"
        raise IofleetError(f"easy-run: the probe (run {outcome.run_id}) measured nothing: {why}; "
                           f"see `iofleet results show {outcome.run_id}`, or give --no-probe")
    return probed


def shares_files(outcome: SaturateOutcome, load: Load, total: int) -> bool:
    """The profiles' data files (`load.jobs` files splitting the working
    set) are the probe's kept files, as they are or extended at their end
    (fleet/targets/kept.py's tail_tiers): the probe's first `load.jobs` files, each
    as large or larger."""
    return outcome.data is not None and tail_tiers(
        prepare_tiers(outcome.data.covers), [(load.jobs, file_size(total, load.jobs))]) is not None


def easy_run(where: Where, durations: Durations, *, working_set: int | None = None, on_plan=None,
             load: Load | None = None, keep_files: bool = False) -> RunOutcome:
    """Choose the plan from what the hosts are, then run it like any plan.
    `load`: the jobs × iodepth a probe measured (probe(…).load); without it
    the rule of thumb from CPUs and device type. With the probe's data
    (`load.data`) the profiles use it (extended when their files are
    larger) and remove it at their end,
    or here when they cannot start. `on_plan(plan_text, reasons)` is called
    before the first test; `keep_files`: keep the data files after the run (a later
    run with the same preparation uses them, fleet/targets/kept.py)."""
    store, observer = where.store, where.observer
    shared = load.data if load is not None else None
    try:
        facts, target_names = survey(where.targets, where.hosts)
        data, reasons = easy_plan(facts, target_names, durations, working_set, load)
        if where.destroy_data:
            data["destroy_data"] = [str(d) for d in where.destroy_data]
        if keep_files:
            data["keep_files"] = True
        plan_text = "# chosen by iofleet easy-run:\n" + "".join(f"#   {r}\n" for r in reasons) + yaml.safe_dump(
            data, sort_keys=False)
        plan = parse_plan(data, "easy-run")
        if on_plan:
            on_plan(plan_text, reasons)
        place, specs = place_for(plan, where.hosts)
        if shared is not None:
            shared.adopt_into(place)  # iofleet's directory the probe made goes at the profiles' end
        session = RunSession(plan, plan_text, store, specs=specs, place=place, label=where.label or "easy-run",
                             observer=observer, stop=where.stop, resumable=True)
    except BaseException:
        discard_quietly(shared, observer)  # the profiles do not start: the probe's data goes
        raise
    with session:  # from here the run's own clean-up removes the data (or keeps it: keep_files)
        if load is not None and load.probe_cells:
            session.methodology.probe = {"run": load.probe_run, "bs": 4096, "read_pct": 100, "random_pct": 100,
                                         "cells": load.probe_cells}
            store.set_run_methodology(session.run_id, session.methodology)
        for spec in specs:
            if session.done or session.stop.is_set():
                break
            session.run(spec)
    return session.outcome


@dataclass
class EasyRunOutcome:
    """Easy Run's runs: the probe's (None with probe=False) and the
    profiles' (None when the probe was stopped)."""

    probe: Probe | None
    profiles: RunOutcome | None

    @property
    def last(self) -> RunOutcome:
        """The run the study ended with: the profiles', else the stopped probe's."""
        return self.profiles if self.profiles is not None else self.probe.outcome.run


def run_easy_run(where: Where, durations: Durations, *, working_set: int | None = None, on_plan=None,
                 probe_first: bool = True) -> EasyRunOutcome:
    """Easy Run as both front doors start it: the probe (unless
    `probe_first` is False: the rule of thumb instead), then the profiles
    with the load it chose; a stopped probe ends the study, its data removed."""
    where = replace(where, stop=where.stop or threading.Event())
    probed = None
    if probe_first:
        probed = probe(where, durations, working_set=working_set)
        if where.stop.is_set() or probed.outcome.run.status == "interrupted":
            probed.discard_data(where.observer)  # the data it kept for the profiles (stopped just as it ended)
            return EasyRunOutcome(probed, None)
    profiles = easy_run(where, durations, working_set=working_set, on_plan=on_plan,
                        load=probed.load if probed else None)
    return EasyRunOutcome(probed, profiles)
