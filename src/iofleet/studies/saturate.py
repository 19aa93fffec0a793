"""The `saturate` study: sweep outstanding IO (jobs × iodepth per host,
doubling) until IOPS stop growing or the latency target breaks, then bisect
iodepth between the last passing and the first failing step. Every cell is
a test of one stored run, so the sweep is a run like any other."""

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..analysis.little import SYNC_ENGINES
from ..analysis.saturation import Cell, Saturation, Slo, bisect_bracket, cells_of, saturation
from ..errors import IofleetError
from ..fleet.check import require_ready
from ..fleet.inventory import Host
from ..plan import parse_plan
from ..plan.expand import expand, with_load
from ..plan.units import format_duration, format_size
from ..report.saturation import fmt_ms
from ..results.export import run_to_dict
from ..results.store import Store
from .easy_run import remote_facts
from .run import RunObserver, RunOutcome, RunSession

# Without a CPU count for the fleet's hosts, the jobs axis goes up to this.
DEFAULT_MAX_JOBS = 4


@dataclass
class Sweep:
    """What to sweep: the IO (block size, read and random share), the cells'
    durations and file size, the axes' upper bounds and when to stop."""

    bs: int = 4096
    read_pct: int = 100
    random_pct: int = 100
    size: int = 1024**3  # each job's file
    runtime: int = 30
    ramp: int = 5
    # Not io_uring: fio 3.33's io_uring engine inflates latency at iodepths
    # that are not powers of two, which bisection measures (docs/saturate.md).
    engine: str = "libaio"
    direct: bool = True
    prepare: str = "random"
    max_jobs: int | None = None  # default: CPUs of the (smallest) host
    max_iodepth: int = 256
    min_gain_pct: float = 10.0  # a doubling that gains less has stopped growing
    slo: Slo | None = None
    bisect: int = 3  # most bisection steps

    def to_dict(self) -> dict:
        return {"bs": self.bs, "read_pct": self.read_pct, "random_pct": self.random_pct,
                "min_gain_pct": self.min_gain_pct, "slo": self.slo.text if self.slo else None,
                "bisect": self.bisect}


@dataclass
class SaturateOutcome:
    run: RunOutcome
    result: Saturation
    hosts: int
    stopped: list[str] = field(default_factory=list)  # why each row, and the sweep, ended

    @property
    def run_id(self) -> int:
        return self.run.run_id


def doubling(top: int) -> list[int]:
    """1, 2, 4, … up to top (and top itself when it is not a power of 2)."""
    out = [1]
    while out[-1] * 2 <= top:
        out.append(out[-1] * 2)
    return out + ([top] if out[-1] != top else [])


def _max_jobs(sweep: Sweep, hosts: list[Host] | None) -> int:
    if sweep.max_jobs:
        return sweep.max_jobs
    if not hosts:
        return os.cpu_count() or 1
    cpus = [remote_facts(h).cpus for h in hosts]
    known = [c for c in cpus if c]
    return min(known) if len(known) == len(cpus) else DEFAULT_MAX_JOBS


def sweep_plan(sweep: Sweep, jobs: list[int], iodepths: list[int], targets: list[str],
               destroy_data: list[str] = ()) -> tuple[dict, str]:
    """The sweep as a plan (the whole grid; the study runs part of it)."""
    workload = {"name": "saturate", "bs": format_size(sweep.bs), "read_pct": sweep.read_pct,
                "random_pct": sweep.random_pct, "size": format_size(sweep.size),
                "runtime": format_duration(sweep.runtime), "ramp": format_duration(sweep.ramp),
                "engine": sweep.engine, "direct": sweep.direct,
                "matrix": {"jobs": jobs, "iodepth": iodepths}}
    data = {"name": "saturate", **({"targets": targets} if targets else {}),
            **({"destroy_data": [str(d) for d in destroy_data]} if destroy_data else {}), "prepare": sweep.prepare,
            "workloads": [workload]}
    target = f", target {sweep.slo.text}" if sweep.slo else ""
    text = (f"# iofleet saturate: an adaptive sweep of this grid. Each jobs row doubles iodepth until IOPS\n"
            f"# gain < {sweep.min_gain_pct:g}% per step{target}; rows stop when more jobs do not help.\n"
            + yaml.safe_dump(data, sort_keys=False))
    return data, text


def run_saturate(
    store: Store,
    sweep: Sweep,
    *,
    targets: list[Path] | None = None,
    hosts: list[Host] | None = None,
    label: str | None = None,
    observer: RunObserver | None = None,
    stop: threading.Event | None = None,
    destroy_data: list[str] | None = None,
) -> SaturateOutcome:
    """Sweep outstanding IO on `targets` here or on every host of `hosts`,
    one stored run whose tests are the cells, then analyse it. `destroy_data`
    names devices whose data may be destroyed."""
    if hosts:
        require_ready(hosts, what="sweep")
        names = []
    elif targets:
        names = [str(Path(t).resolve()) for t in targets]
    else:
        raise IofleetError("saturate needs a place to test: --target DIR (or --hosts INVENTORY)")
    jobs_axis = doubling(_max_jobs(sweep, hosts))
    depth_axis = doubling(sweep.max_iodepth)
    data, text = sweep_plan(sweep, jobs_axis, depth_axis, names, destroy_data or ())
    plan = parse_plan(data, "saturate")
    grid = expand(plan)  # the most the sweep can run; preparation covers its widest row
    base = grid[0]
    gain = 1 + sweep.min_gain_pct / 100
    stopped: list[str] = []

    with RunSession(plan, text, store, specs=grid, hosts=hosts,
                    label=label or "saturate", observer=observer, stop=stop) as session:
        store.set_run_methodology(session.run_id, session.methodology | {"saturate": sweep.to_dict()})

        engine = None
        cells: list[Cell] = []  # every cell measured, as the analysis sees it

        def measure(jobs: int, depth: int) -> Cell | None:
            nonlocal engine
            result = session.run(with_load(base, jobs, depth))
            if result.status not in ("ok", "partial"):
                stopped.append(f"{result.spec.id} {result.status}: {result.error}; the sweep stopped there")
                session.done = True
                return None
            # Only the test just stored: the run's earlier tests are in `cells`.
            doc = run_to_dict(store.get_run(session.run_id, from_seq=len(session.outcome.tests) - 1))
            engine = doc["tests"][-1]["params"].get("engine_used")
            new = cells_of(doc, sweep.slo)
            if not new:
                stopped.append(f"{result.spec.id} measured no IO; the sweep stopped there")
                session.done = True
                return None
            cells.extend(new)
            return new[0]

        best: Cell | None = None  # the most IOPS so far (under the target)
        for jobs in jobs_axis:
            # More jobs matter where fewer saturated: start one level of
            # outstanding IO below the best so far, not at iodepth 1 again.
            start = max((d for d in depth_axis if best and jobs * d <= best.per_host // 2), default=1)
            row: list[Cell] = []
            for depth in (d for d in depth_axis if d >= start):
                if session.done or session.stop.is_set():
                    break
                cell = measure(jobs, depth)
                if cell is None:
                    break
                row.append(cell)
                if cell.slo_ok is False:
                    stopped.append(f"jobs {jobs}: iodepth {depth} broke the target "
                                   f"({sweep.slo.metric} {fmt_ms(cell.slo_value_us)} ms)")
                    break
                if len(row) > 1 and cell.iops < row[-2].iops * gain:
                    stopped.append(f"jobs {jobs}: iodepth {row[-2].iodepth}→{depth} gained "
                                   f"{100 * (cell.iops / row[-2].iops - 1):+.1f}% IOPS "
                                   f"(< {sweep.min_gain_pct:g}%)")
                    break
                if engine in SYNC_ENGINES:
                    stopped.append(f"jobs {jobs}: the {engine} engine keeps one IO "
                                   f"per job in flight; only jobs are swept")
                    break
            else:
                stopped.append(f"jobs {jobs}: reached --max-iodepth {sweep.max_iodepth}")
            if session.done or session.stop.is_set() or not row:
                break
            passing = [c for c in row if c.slo_ok is not False]
            if not passing:
                stopped.append(f"jobs {jobs} breaks the target already at iodepth {row[0].iodepth}: "
                               f"more jobs only add latency")
                break
            top = max(passing, key=lambda c: c.iops)
            if best and top.iops < best.iops * gain:
                stopped.append(f"jobs {jobs}: at most {top.iops:,.0f} IOPS, not {sweep.min_gain_pct:g}% above "
                               f"the {best.iops:,.0f} of fewer jobs: more jobs do not help")
                break
            if best is None or top.iops > best.iops:
                best = top
        else:
            stopped.append(f"reached --max-jobs {jobs_axis[-1]}")

        # Bisection on iodepth between the last passing and first failing step.
        for _ in range(sweep.bisect if sweep.slo else 0):
            if session.done or session.stop.is_set():
                break
            bracket = bisect_bracket(cells)
            if bracket is None:
                break
            low, high = bracket
            measure(low.jobs, (low.iodepth + high.iodepth) // 2)
        session.outcome.tests_planned = len(session.outcome.tests)
        store.update_run(session.run_id, tests_planned=len(session.outcome.tests))
        store.set_run_methodology(session.run_id, session.methodology | {
            "saturate": sweep.to_dict() | {"stopped": stopped}})

    doc = run_to_dict(store.get_run(session.run_id))
    return SaturateOutcome(run=session.outcome, result=saturation(doc, sweep.slo),
                           hosts=len(hosts) if hosts else 1, stopped=stopped)

