"""The `saturate` study: sweep outstanding IO (jobs × iodepth per host,
doubling, two doublings at once while IOPS grow in step) until IOPS stop
growing or the latency target breaks, then bisect iodepth between the last
passing and the first failing step. Cells end when steady; a cell whose
verdict is within noise is repeated. Every cell (and repeat) is a test of
one stored run, so the sweep is a run like any other."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import yaml

from ..analysis.little import SYNC_ENGINES
from ..analysis.saturation import (
    NOISE_PCT, Cell, Saturation, Slo, analyse, apart, bisect_bracket, cells_of, more_iops, near_limit, peak,
)
from ..errors import IofleetError
from ..plan import parse_plan
from ..plan.expand import expand, with_load
from ..plan.params import IO_PARAMS, RUN_PARAMS, SATURATE
from ..plan.settings import ending, plan_entries, settings_fields, study_params
from ..results.methodology import SaturateRecord
from ..units import format_value
from .study import Setting, Where

if TYPE_CHECKING:  # imported when the study runs: `iofleet --help` shows Sweep's defaults without them
    from ..fleet.inventory import Host
    from ..fleet.places.base import Place
    from ..results.model import TestRecord
    from ..results.store import Store
    from .run import RunObserver, RunOutcome

# The sweep's own settings (Sweep's fields that are no table row), declared once
# for its command's options, the Run page's fields and their checks (kinds/saturate.py).
SWEEP_SETTINGS = (
    Setting("slo", str, "Latency target, e.g. 'p99<=2ms' or 'mean<500us'.", words="none"),
    Setting("max_jobs", int, "Most jobs per host.", words="its CPUs", bounded_by="jobs"),
    Setting("max_iodepth", int, "Most outstanding IOs per job.", bounded_by="iodepth"),
    Setting("min_gain_pct", float, "A doubling gaining fewer % IOPS has stopped growing.", option="--min-gain",
            allowed=lambda v: 0 < v < 1000, why="give a share above 0, e.g. 10 (%)"),
    Setting("bisect", int, "Most bisection steps toward the target.", allowed=lambda v: 0 <= v <= 10,
            why="allowed 0 to 10 steps"),
    Setting("repeats", int, "Most runs of a cell whose verdict is within noise.", allowed=lambda v: 1 <= v <= 10,
            why="allowed 1 to 10 runs of a cell"),
    Setting("noise_pct", float, "Run-to-run IOPS noise, % (a single run is ± half).", option="--noise",
            allowed=lambda v: 0 <= v < 100, why="give a share from 0 to 99, e.g. 8 (%)"),
)
# Without a CPU count for the fleet's hosts, the jobs axis goes up to this.
DEFAULT_MAX_JOBS = 4
# A doubling that gained at least this share: IOPS still grow almost in
# step with the IOs in flight, so the row jumps two doublings at once.
FAST_GAIN = 0.40


@dataclass
class Sweep(settings_fields("SweepParams", SATURATE, study_params(SATURATE))):
    """What to sweep: the IO (block size, read and random share), the cells'
    durations and file size (the table's saturate rows, with the sweep's
    defaults: a cell measures until steady, 5 rounds of `round`, at most
    `max_runtime`, or a fixed `runtime`), the axes' upper bounds, when to
    stop and how sure a decision must be."""

    max_jobs: int | None = None  # default: CPUs of the (smallest) host
    max_iodepth: int = 256
    min_gain_pct: float = 10.0  # a doubling that gains less has stopped growing
    slo: Slo | None = None
    bisect: int = 3  # most bisection steps
    repeats: int = 3  # most runs of a cell whose decision is within noise
    noise_pct: float = NOISE_PCT  # a single run's IOPS are taken as ± half this
    # The plan's keep_files and reuse_data (fleet/targets/kept.py), for the sweep
    # and, in a curve, its fixed-rate tests.
    keep_files: bool = RUN_PARAMS["keep_files"].default
    reuse_data: bool = RUN_PARAMS["reuse_data"].default

    def record(self) -> SaturateRecord:
        """What the sweep's run stores of it (its methodology's `saturate`)."""
        return SaturateRecord(
            **{name: getattr(self, name) for name in IO_PARAMS}, min_gain_pct=self.min_gain_pct,
            slo=self.slo.text if self.slo else None, bisect=self.bisect, repeats=self.repeats,
            noise_pct=self.noise_pct, cell={**ending(self.table_values()), "ramp": self.ramp})

    def kept(self, reuse_data: bool | None = None) -> dict:
        """The plan's keep_files and reuse_data where not a plan's default."""
        reuse = self.reuse_data if reuse_data is None else reuse_data
        return {**({"keep_files": True} if self.keep_files else {}), **({"reuse_data": False} if not reuse else {})}


@dataclass
class SweepData:
    """A sweep's data files, kept on its targets for the run after it (a
    curve's fixed-rate tests, Easy Run's profiles): the run that prepared
    them, the tests its preparation covered and the place holding them.
    That run prepares for `covers` too (RunSession's prepare_for): the same
    preparation, so it finds the data as kept (fleet/targets/kept.py) and does not
    write it again; its clean-up removes it. `discard()` removes it when
    that run will not come (nothing when the user asked to keep it)."""

    run_id: int
    covers: list
    place: Place
    data_dir: Path
    keep_files: bool = False  # the user's: kept whatever comes
    discarded: bool = False

    def adopt_into(self, place: Place) -> None:
        """The next run's place takes over what the sweep's created
        (iofleet's directory on a target), to remove it at its end."""
        place.adopt(self.place.resume_record(None))

    def discard(self) -> None:
        """Remove the data as the sweep's own clean-up would have (once),
        with the targets locked as a run locks them."""
        from ..fleet.targets.kept import KeptData
        from ..fleet.targets.lock import holder_facts
        if self.discarded or self.keep_files:
            return
        self.discarded = True
        self.place.prepare(holder_facts(data_dir=str(self.data_dir), run=self.run_id))
        try:
            self.place.cleanup()
            self.place.record_data(KeptData(self.data_dir), self.run_id, keep=False)
        finally:
            self.place.release()


@dataclass
class SaturateOutcome:
    """A finished sweep: its stored run, its analysis (`result.peak` is the
    answer: the cell to use) and why each row, and the sweep, ended."""

    run: RunOutcome
    result: Saturation
    hosts: int
    stopped: list[str] = field(default_factory=list)
    data: SweepData | None = None  # kept for the run after it (run_saturate's keep_for_next)

    @property
    def run_id(self) -> int:
        return self.run.run_id


def doubling(top: int) -> list[int]:
    """1, 2, 4, … up to top (and top itself when it is not a power of 2)."""
    out = [1]
    while out[-1] * 2 <= top:
        out.append(out[-1] * 2)
    return out + ([top] if out[-1] != top else [])


def max_jobs_for(sweep: Sweep, hosts: list[Host] | None) -> int:
    from ..fleet.facts import fleet_facts
    if sweep.max_jobs:
        return sweep.max_jobs
    if not hosts:
        return os.cpu_count() or 1
    cpus = [f.cpus for f in fleet_facts(hosts)]
    known = [c for c in cpus if c]
    return min(known) if len(known) == len(cpus) else DEFAULT_MAX_JOBS


def sweep_plan(sweep: Sweep, jobs: list[int], iodepths: list[int], targets: list[str],
               destroy_data: list[str] = ()) -> tuple[dict, str]:
    """The sweep as a plan (the whole grid; the study runs part of it)."""
    values = sweep.table_values()
    workload = {"name": "saturate", **plan_entries(values), "matrix": {"jobs": jobs, "iodepth": iodepths}}
    data = {"name": "saturate", **({"targets": targets} if targets else {}),
            **({"destroy_data": [str(d) for d in destroy_data]} if destroy_data else {}),
            **plan_entries(values, RUN_PARAMS), **sweep.kept(), "workloads": [workload]}
    target = f", target {sweep.slo.text}" if sweep.slo else ""
    text = (f"# iofleet saturate: an adaptive sweep of this grid. Each jobs row raises iodepth until IOPS\n"
            f"# gain < {sweep.min_gain_pct:g}% per doubling{target}; rows stop when more jobs do not help;\n"
            f"# cells within {sweep.noise_pct:g}% noise of a decision are repeated (at most {sweep.repeats} runs).\n"
            + yaml.safe_dump(data, sort_keys=False))
    return data, text


def gain_per_doubling(low: Cell, high: Cell) -> float:
    """IOPS growth per doubling of outstanding IO from low to high, as a share."""
    doublings = math.log2(high.outstanding / low.outstanding)
    return (high.iops / low.iops) ** (1 / doublings) - 1 if doublings > 0 and low.iops > 0 else 0.0


def place_names(hosts: list[Host] | None, targets: list[Path] | None, study: str, checking: str | None) -> list[str]:
    """A study's plan targets: none on a fleet (its inventory names them),
    whose hosts are checked first unless `checking` is None; else the
    targets given, resolved."""
    from ..fleet.check import require_ready
    if hosts:
        if checking:
            require_ready(hosts, what=checking)
        return []
    if targets:
        return [str(Path(t).resolve()) for t in targets]
    raise IofleetError(f"{study} needs a place to test: --target DIR (or --hosts INVENTORY)")


def discard_quietly(data: SweepData | None, observer: RunObserver | None = None) -> None:
    """Remove a sweep's kept data (SweepData.discard) on the way out of a
    study that stops or fails: a problem doing so is a warning, not the
    error the study ends with. Returns None (no data kept any more)."""
    if data is None:
        return None
    try:
        data.discard()
    except Exception as exc:  # noqa: BLE001 - the study's own error (or stop) is what the user must see
        if observer is not None:
            observer.warning(f"the data files run {data.run_id} kept for the next run were not removed ({exc}); "
                             f"the next run on these targets removes them")
    return None


def files_can_be_kept(names: list[str], hosts: list[Host] | None) -> bool:
    """Every host's target holds data files that a later run can find as
    kept (fleet/targets/kept.py): directories, not a device's regions."""
    from ..fleet.targets import target_for
    return all(target_for(list(h.targets)).holds_files for h in hosts) if hosts else target_for(names).holds_files


def run_saturate(where: Where, sweep: Sweep, *,
                 keep_for_next: bool | Callable[[Saturation], bool] = False) -> SaturateOutcome:
    """Sweep outstanding IO on the targets here or on every host (`where`),
    one stored run whose tests are the cells (a repeat is a test of the
    same id), then analyse it. `keep_for_next`: a run after this one uses the sweep's
    data (or, a function of the analysis: will it?); a sweep that found its
    answer keeps it (`data`, on directory targets), and one stopped or
    without an answer removes it as any run does."""
    from .run import RunSession
    store, hosts, observer = where.store, where.hosts, where.observer
    names = place_names(hosts, where.targets, "saturate", checking="sweep")
    jobs_axis = doubling(max_jobs_for(sweep, hosts))
    depth_axis = doubling(sweep.max_iodepth)
    data, text = sweep_plan(sweep, jobs_axis, depth_axis, names, where.destroy_data or ())
    plan = parse_plan(data, "saturate")
    grid = expand(plan)  # the most the sweep can run; preparation covers its widest row
    slo, noise = sweep.slo, sweep.noise_pct
    keep_for_next = keep_for_next if files_can_be_kept(names, hosts) else False
    kept = None

    with RunSession(plan, text, store, specs=grid, hosts=hosts,
                    label=where.label or "saturate", observer=observer, stop=where.stop, sweep=True) as session:
        store.set_run_methodology(session.run_id, replace(session.methodology, saturate=sweep.record()))
        measured = _Cells(session, store, grid[0], slo, noise)
        ended = search(sweep, jobs_axis, depth_axis, measured.run_once, measured.cells, measured.halted,
                       sync=lambda: measured.engine in SYNC_ENGINES)
        session.outcome.tests_planned = len(session.outcome.tests)
        store.update_run(session.run_id, tests_planned=len(session.outcome.tests))
        result = analyse(measured.cells(), slo, noise)
        stopped = [*(ended_line(e, result, sweep) for e in ended), *measured.failures]
        # Kept for the next run only now, with the answer found: anything
        # before (a stop, an error) leaves the plan's keep_files to decide.
        if (result.peak is not None and not session.stop.is_set() and session.methodology.prepare
                and (keep_for_next(result) if callable(keep_for_next) else keep_for_next)):
            kept = SweepData(session.run_id, grid, session.place, store.data_dir, keep_files=plan.keep_files)
            session.plan = plan.model_copy(update={"keep_files": True})
        store.set_run_methodology(session.run_id, replace(session.methodology, saturate=replace(
            sweep.record(), stopped=stopped, kept_for_next_run=True if kept else None)))

    if kept is not None and session.stop.is_set():
        kept = discard_quietly(kept, observer)  # stopped as the sweep ended: no next run
    return SaturateOutcome(run=session.outcome, result=result, hosts=len(hosts) if hosts else 1, stopped=stopped,
                           data=kept)


class _Cells:
    """The sweep's cells as its run measures them: every test stored (a
    repeat is a test of the same id), and one more run of a cell; a cell
    that fails or measures no IO stops the sweep there (`failures`)."""

    def __init__(self, session, store: Store, base, slo, noise: float):
        self.session, self.store, self.base, self.slo, self.noise = session, store, base, slo, noise
        self.tests: list[TestRecord] = []
        self.failures: list[str] = []
        self.engine = None  # the engine fio used (the cells' last)

    def cells(self) -> list[Cell]:
        return cells_of(self.tests, self.slo, self.noise)

    def halted(self) -> bool:
        return self.session.done or self.session.stop.is_set()

    def cell_at(self, jobs: int, depth: int) -> Cell | None:
        return next((c for c in self.cells() if (c.jobs, c.iodepth) == (jobs, depth)), None)

    def _stopped(self, why: str) -> None:
        self.failures.append(f"{why}; the sweep stopped there")
        self.session.done = True

    def run_once(self, jobs: int, depth: int) -> Cell | None:
        done = self.cell_at(jobs, depth)
        spec = with_load(self.base, jobs, depth)
        if done:
            spec = replace(spec, repeat=done.runs + 1, repeats=done.runs + 1)
        result = self.session.run(spec)
        if result.status not in ("ok", "partial"):
            return self._stopped(f"{result.spec.id} {result.status}: {result.error}")
        # Only the test just stored: the run's earlier tests are in `tests`.
        run_id, seq = self.session.run_id, len(self.session.outcome.tests) - 1
        self.tests.append(self.store.get_run(run_id, from_seq=seq).tests[-1])
        self.engine = self.tests[-1].params.get("engine_used")
        cell = self.cell_at(jobs, depth)
        if cell is None or (done and cell.runs == done.runs):
            return self._stopped(f"{result.spec.id} measured no IO")
        return cell


def search(sweep: Sweep, jobs_axis: list[int], depth_axis: list[int],
           run_once: Callable[[int, int], Cell | None], cells: Callable[[], list[Cell]],
           halted: Callable[[], bool], sync: Callable[[], bool] = lambda: False) -> list[tuple]:
    """The sweep's choices: which cell to measure next (`run_once` measures
    one more run of jobs × iodepth and returns the cell with all its runs;
    `cells` gives every cell so far). Returns why each row, and the sweep,
    ended, as events for `ended_line` (holding the cells as they were)."""
    s = _Search(sweep, depth_axis, run_once, cells, halted, sync)
    for jobs in jobs_axis:
        row = s.row(jobs)
        if halted() or not row:
            break
        if s.ended and s.ended[-1][0] in ("no_help", "slo_first"):
            break  # more jobs than this do not help either
    else:
        s.ended.append(("max_jobs", jobs_axis[-1]))
    s.bisect()
    s.resolve_answer()
    return s.ended


@dataclass
class _Search:
    """The steps of `search`, sharing its arguments and the end events so far."""

    sweep: Sweep
    depth_axis: list[int]
    run_once: Callable[[int, int], Cell | None]
    cells: Callable[[], list[Cell]]
    halted: Callable[[], bool]
    sync: Callable[[], bool]
    ended: list[tuple] = field(default_factory=list)

    def measure(self, jobs: int, depth: int) -> Cell | None:
        """A cell, repeated while its target verdict is within noise."""
        slo = self.sweep.slo
        cell = self.run_once(jobs, depth)
        while cell and slo and near_limit(cell, slo) and cell.runs < self.sweep.repeats and not self.halted():
            cell = self.run_once(jobs, depth) or cell
        return cell

    def row(self, jobs: int) -> list[Cell]:
        """Raise iodepth at `jobs` until the row ends (its end event is
        appended to `ended`) or the sweep halts; the row's cells."""
        sweep, depth_axis, ended = self.sweep, self.depth_axis, self.ended
        best = peak(self.cells())[0]
        # More jobs matter where fewer saturated: a later row starts at the
        # outstanding IO of the answer so far, not at iodepth 1; after a row
        # that reached --max-iodepth still growing, at twice it (the way on).
        growing = bool(ended) and ended[-1][0] == "max_iodepth" and ended[-1][2]
        reach = best.per_host * (2 if growing else 1) if best else 1
        depth = max((d for d in depth_axis if jobs * d <= reach), default=1)
        prev = best if growing else None  # the step the row's first cell grows from
        row: list[Cell] = []
        while not self.halted():
            cell = self.measure(jobs, depth)
            if cell is None:
                break
            row.append(cell)
            if sweep.slo and cell.slo_ok is False:
                ended.append(("slo", jobs, cell) if prev else ("slo_first", jobs, cell, best))
                break
            if best is not None and prev is None and not more_iops(cell, best):
                ended.append(("no_help", jobs, cell, best))
                break
            gain = gain_per_doubling(prev, cell) if prev else None
            if gain is not None and gain < sweep.min_gain_pct / 100:
                ended.append(("gain", jobs, prev, cell))
                break
            if self.sync():
                ended.append(("sync", jobs))
                break
            if depth >= depth_axis[-1]:
                ended.append(("max_iodepth", jobs, gain is None or gain >= sweep.min_gain_pct / 100))
                break
            # Where IOPS still grow almost in step with the IOs in flight
            # (and from iodepth 1), the next doubling is sure to gain: skip it.
            fast = gain >= FAST_GAIN if gain is not None else depth == 1
            depth = min(depth * (4 if fast else 2), depth_axis[-1])
            prev = cell
        return row

    def bisect(self) -> None:
        """Bisection on iodepth between the last passing and first failing step."""
        for _ in range(self.sweep.bisect if self.sweep.slo else 0):
            bracket = None if self.halted() else bisect_bracket(self.cells())
            if bracket is None:
                break
            low, high = bracket
            self.measure(low.jobs, (low.iodepth + high.iodepth) // 2)

    def resolve_answer(self) -> None:
        """The answer against the cell with the most IOPS, when the two
        cannot be told apart: repeat both until they can, or each has its
        runs. A gap that even `repeats` runs of each could not resolve is
        left as is."""
        sweep = self.sweep
        resolvable = sweep.noise_pct / 100 / math.sqrt(sweep.repeats)
        while not self.halted():
            now = self.cells()
            answer, _ = peak(now)
            eligible = [c for c in now if c.slo_ok is not False]
            top = max(eligible, key=lambda c: c.iops) if eligible else None
            if answer is None or top is answer or top.iops < answer.iops * (1 + resolvable):
                break
            todo = [c for c in (answer, top) if c.runs < sweep.repeats]
            if not todo:
                break
            pick = min(todo, key=lambda c: c.runs)
            if self.measure(pick.jobs, pick.iodepth) is None:
                break


def ended_line(event: tuple, sat: Saturation, sweep: Sweep) -> str:
    """Why a row (or the sweep) ended: the decision in the figures it was
    made on (events hold the cells as they were), with what later repeats
    made of them, and never a claim the answer contradicts."""
    at = {(c.jobs, c.iodepth): c for c in sat.cells}

    def later(*cells: Cell) -> str:
        """What repeats made after the decision turned it into (called only
        when they would have decided otherwise)."""
        return "; repeated since, the figures would not decide so: " + ", ".join(
            f"jobs {c.jobs} × iodepth {c.iodepth} {now.iops:,.0f} (median of {now.runs} runs)"
            for c in cells if (now := at[(c.jobs, c.iodepth)]).runs > c.runs)

    kind, jobs = event[0], event[1]
    if kind == "gain":
        low, high = event[2], event[3]
        step = (f"iodepth {low.iodepth}→{high.iodepth}" if low.jobs == jobs else
                f"from jobs {low.jobs} × iodepth {low.iodepth} to iodepth {high.iodepth}")
        flipped = gain_per_doubling(at[(low.jobs, low.iodepth)], at[(jobs, high.iodepth)]) >= sweep.min_gain_pct / 100
        return (f"jobs {jobs}: {step} gained {100 * gain_per_doubling(low, high):+.1f}% "
                f"IOPS per doubling (< {sweep.min_gain_pct:g}%){later(low, high) if flipped else ''}")
    if kind == "slo":
        c = at[(jobs, event[2].iodepth)]
        return f"jobs {jobs}: iodepth {c.iodepth} broke the target ({_slo_value(c, sweep)})"
    if kind in ("no_help", "slo_first"):
        c, ref = event[2], event[3]
        first = f"jobs {jobs} × iodepth {c.iodepth}"
        if ref is None:
            return (f"{first} broke the target already ({_slo_value(c, sweep)}): more outstanding IO only "
                    f"adds latency")
        was = f"jobs {ref.jobs} × iodepth {ref.iodepth}"
        if kind == "slo_first":
            return (f"{first} broke the target ({_slo_value(c, sweep)}) at the outstanding IO where {was} met it: "
                    f"more jobs only add latency")
        if sat.peak is not None and sat.peak.jobs >= jobs:
            return (f"{first}: within noise of {was} when measured, so the sweep tried no more jobs; "
                    f"repeats then put the answer at jobs {sat.peak.jobs}")
        flipped = later(c, ref) if more_iops(at[(c.jobs, c.iodepth)], at[(ref.jobs, ref.iodepth)]) else ""
        if apart(c, ref):
            return (f"{first}: {c.iops:,.0f} IOPS, less than the {ref.iops:,.0f} of {was} "
                    f"(same outstanding IO): more jobs do not help{flipped}")
        return (f"{first}: {c.iops:,.0f} IOPS, cannot be told apart from the {ref.iops:,.0f} of {was} "
                f"(same outstanding IO): more jobs do not help measurably{flipped}")
    if kind == "sync":
        return f"jobs {jobs}: a sync engine keeps one IO per job in flight; only jobs are swept"
    if kind == "max_iodepth":
        return (f"jobs {jobs}: reached --max-iodepth {sweep.max_iodepth}"
                + (" still growing: more jobs add outstanding IO" if event[2] else ""))
    return f"reached --max-jobs {jobs}"


def _slo_value(c: Cell, sweep: Sweep) -> str:
    text = f"{sweep.slo.metric} {format_value(c.slo_value_us, 'us', with_unit=True)}"
    if c.runs > 1:
        text += f", median of {c.runs} runs, {c.slo_met_runs} met it"
    return text
