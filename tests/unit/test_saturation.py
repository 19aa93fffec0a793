"""Saturation analysis on a recorded real run: a 4k random-read matrix of
jobs 1, 2 × iodepth 1, 4, 16, 64 on this project's VM (fixture recorded
with `iofleet run` and `iofleet results export --format json`)."""

import copy
import json
from pathlib import Path

import pytest

from iofleet.analysis.little import little_ratio, outstanding_io
from iofleet.analysis.saturation import (
    Cell, best_cell, bisect_bracket, cells_of, find_knee, frontier, parse_slo, saturation, saturation_of_run,
    slo_best,
)
from iofleet.errors import IofleetError
from iofleet.plan import parse_plan
from iofleet.plan.expand import expand, with_load
from iofleet.studies.saturate import Sweep, doubling, sweep_plan

FIXTURE = Path(__file__).parent.parent / "fixtures" / "saturate" / "matrix-4k-randread.json"


@pytest.fixture
def run():
    return json.loads(FIXTURE.read_text())


def cell(oio, iops, jobs=1, slo_ok=None, lat=100.0):
    return Cell(test=f"j{jobs}-qd{oio // jobs}", seq=0, jobs=jobs, iodepth=oio // jobs, hosts=1, outstanding=oio,
                iops=iops, mb_s=iops * 4096 / 1e6, lat_mean_us=lat, lat_p99_us=lat * 2, little=1.0, slo_ok=slo_ok)


def test_slo_parsing():
    assert parse_slo("p99<=2ms") == parse_slo(" p99 <= 2000us ")
    slo = parse_slo("mean<0.5ms")
    assert (slo.metric, slo.limit_us, slo.strict, slo.text) == ("mean", 500.0, True, "mean<500us")
    assert parse_slo("p99.9<=1s").limit_us == 1e6
    assert not slo.met(500.0) and slo.met(499.9) and parse_slo("mean<=0.5ms").met(500.0)
    assert not slo.met(None)  # an unknown percentile is no pass
    for bad in ("p99=2ms", "p98<=2ms", "p99<=2", "p99<=0ms", "", "latency<=2ms"):
        with pytest.raises(IofleetError, match="--slo .*like 'p99<=2ms'|above zero"):
            parse_slo(bad)


def test_cells_carry_outstanding_io_and_littles_law(run):
    cells = cells_of(run)
    assert [(c.jobs, c.iodepth, c.outstanding) for c in cells][:4] == [(1, 1, 1), (2, 1, 2), (1, 4, 4), (2, 4, 8)]
    for c, t in zip(cells, run["tests"]):
        # Recomputed by hand: IOPS × mean latency ÷ (fio jobs × iodepth).
        assert c.little == pytest.approx(t["all"]["iops"] * t["all"]["lat_mean_us"] / 1e6 / outstanding_io(t))
        assert c.little_ok  # on this VM the law holds within 1 %
    broken = copy.deepcopy(run["tests"][3])
    broken["all"]["lat_mean_us"] *= 0.7  # as if a third of the queue sat unsubmitted
    assert little_ratio(broken) == pytest.approx(0.7 * little_ratio(run["tests"][3]))
    assert not Cell(**{**cells[3].__dict__, "little": little_ratio(broken)}).little_ok
    psync = copy.deepcopy(run["tests"][6]) | {"params": run["tests"][6]["params"] | {"engine_used": "psync"}}
    assert outstanding_io(psync) == 1  # one job, iodepth means nothing to a sync engine


def test_knee_is_where_iops_stop_growing(run):
    cells = cells_of(run)
    assert [c.outstanding for c in frontier(cells)] == [1, 2, 4, 8, 16, 32, 64, 128]
    knee = find_knee(cells)
    # 64 → 128 outstanding IOs gained under 1 % IOPS while latency doubled.
    assert (knee.jobs, knee.iodepth) == (1, 64)
    # Still growing at the last level: no knee, rather than a guess.
    growing = [c for c in cells if c.outstanding <= 32]
    assert find_knee(growing) is None
    assert find_knee([cell(1, 10), cell(2, 20), cell(4, 40), cell(8, 80)]) is None
    assert find_knee([cell(1, 10), cell(2, 19), cell(4, 36), cell(8, 60), cell(16, 63), cell(32, 64)]).outstanding == 8


def test_best_configuration_is_the_least_oio_near_the_peak(run):
    best = best_cell(cells_of(run))
    # 187,254 IOPS at 64 is 99 % of the 188,676 at 128: half the IOs in flight, half the latency.
    assert (best.jobs, best.iodepth) == (1, 64)
    assert best_cell([cell(1, 60), cell(2, 96), cell(4, 101)]).outstanding == 2


def test_slo_answer_and_bisection_bracket(run):
    slo = parse_slo("p99<=300us")
    cells = cells_of(run, slo)
    assert [c.slo_ok for c in cells] == [True] * 5 + [False] * 3
    top = slo_best(cells)
    assert (top.jobs, top.iodepth) == (1, 16)
    low, high = bisect_bracket(cells)
    assert (low.iodepth, high.iodepth) == (16, 64)  # the same jobs, nearest pass and fail
    # After bisection measured iodepth 40 passing, the bracket narrows to 40..64.
    mid = cell(40, 150_000, slo_ok=True)
    low, high = bisect_bracket(cells + [mid])
    assert (low.iodepth, high.iodepth) == (40, 64)
    # Adjacent depths leave nothing to bisect; no pass, no answer.
    assert bisect_bracket([cell(4, 10, slo_ok=True), cell(5, 12, slo_ok=False)]) is None
    assert slo_best([cell(1, 10, slo_ok=False)]) is None and best_cell([cell(1, 10, slo_ok=False)]) is None


def test_saturation_of_a_stored_sweep(run):
    assert saturation_of_run(run) is None  # a plain run is not a sweep
    run["methodology"] = {"saturate": {"slo": "p99<=300us"}}
    sat = saturation_of_run(run)
    assert sat.slo.text == "p99<=300us" and sat.slo_best.iodepth == 16 and sat.knee.iodepth == 64
    assert saturation(run).slo_best is None


def test_doubling_axes_and_the_sweep_plan():
    assert doubling(1) == [1]
    assert doubling(16) == [1, 2, 4, 8, 16]
    assert doubling(24) == [1, 2, 4, 8, 16, 24]
    sweep = Sweep(bs=8192, read_pct=70, size=16 * 1024**2, runtime=2, ramp=0, slo=parse_slo("p99<=2ms"))
    data, text = sweep_plan(sweep, [1, 2], [1, 2, 4], ["/tmp/x"])
    assert "p99<=2ms" in text.splitlines()[1]
    specs = expand(parse_plan(data, "saturate"))
    assert specs[0].jobs == specs[0].iodepth == 1  # the sweep starts from it
    assert sorted((s.jobs, s.iodepth) for s in specs) == [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4)]
    assert {(s.bs, s.read_pct, s.size, s.runtime, s.ramp) for s in specs} == {(8192, 70, 16 * 1024**2, 2, 0)}
    cell_spec = with_load(specs[0], 1, 12)
    assert cell_spec.id == "8k-r70-rand-j1-qd12" and cell_spec.iodepth == 12
