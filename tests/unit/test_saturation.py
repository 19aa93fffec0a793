"""Saturation analysis on a recorded real run: a 4k random-read matrix of
jobs 1, 2 × iodepth 1, 4, 16, 64 on this project's VM (fixture recorded
with `iofleet run` and `iofleet results export --format json`)."""

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from iofleet.analysis.little import little_ratio, outstanding_io
from iofleet.analysis.saturation import (
    Cell, best_cell, bisect_bracket, cells_of, find_knee, frontier, more_iops, near_limit, parse_slo, saturation,
    saturation_of_run, slo_best,
)
from iofleet.errors import IofleetError
from iofleet.plan import parse_plan
from iofleet.plan.expand import expand, with_load
from iofleet.report.saturation import verdict_lines
from iofleet.results.model import Run, TestRecord
from iofleet.studies.saturate import Sweep, doubling, ended_line, search, sweep_plan

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


def typed(t: dict) -> TestRecord:
    return TestRecord.from_dict(t)


def sweep_of(tests: list[TestRecord]) -> Run:
    """A run of these tests (a sweep's, without the sweep's record)."""
    return replace(Run.from_dict({}), tests=tests)


def test_cells_carry_outstanding_io_and_littles_law(run):
    cells = cells_of(Run.from_dict(run).tests)
    assert [(c.jobs, c.iodepth, c.outstanding) for c in cells][:4] == [(1, 1, 1), (2, 1, 2), (1, 4, 4), (2, 4, 8)]
    for c, t in zip(cells, run["tests"]):
        # Recomputed by hand: IOPS × mean latency ÷ (fio jobs × iodepth).
        assert c.little == pytest.approx(t["all"]["iops"] * t["all"]["lat_mean_us"] / 1e6 / outstanding_io(typed(t)))
        assert c.little_ok  # on this VM the law holds within 1 %
    broken = copy.deepcopy(run["tests"][3])
    broken["all"]["lat_mean_us"] *= 0.7  # as if a third of the queue sat unsubmitted
    assert little_ratio(typed(broken)) == pytest.approx(0.7 * little_ratio(typed(run["tests"][3])))
    assert not Cell(**{**cells[3].__dict__, "little": little_ratio(typed(broken))}).little_ok
    psync = copy.deepcopy(run["tests"][6]) | {"params": run["tests"][6]["params"] | {"engine_used": "psync"}}
    assert outstanding_io(typed(psync)) == 1  # one job, iodepth means nothing to a sync engine


def test_knee_is_where_iops_stop_growing(run):
    cells = cells_of(Run.from_dict(run).tests)
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
    best = best_cell(cells_of(Run.from_dict(run).tests))
    # 187,254 IOPS at 64 is 99 % of the 188,676 at 128: half the IOs in flight, half the latency.
    assert (best.jobs, best.iodepth) == (1, 64)
    assert best_cell([cell(1, 60), cell(2, 96), cell(4, 101)]).outstanding == 2


def test_slo_answer_and_bisection_bracket(run):
    slo = parse_slo("p99<=300us")
    cells = cells_of(Run.from_dict(run).tests, slo)
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
    assert saturation_of_run(Run.from_dict(run)) is None  # a plain run is not a sweep
    run["methodology"] = {"saturate": {"slo": "p99<=300us"}}
    sat = saturation_of_run(Run.from_dict(run))
    assert sat.slo.text == "p99<=300us" and sat.slo_best.iodepth == 16 and sat.knee.iodepth == 64
    assert saturation(Run.from_dict(run)).slo_best is None


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


# ---- repeats, window figures, noise and the search ------------------------

def exported(seq, jobs, depth, iops, p99_us=None, window=None, typed=True):
    """A minimal test of a cell, read from its export (results.model.TestRecord.to_dict)."""
    lat = jobs * depth / iops * 1e6  # Little's law holds exactly
    figures = {"ios": int(iops * 5), "iops": iops, "bw_mb_s": iops * 4096 / 1e6, "bw_bytes_s": iops * 4096,
               "lat_mean_us": lat, "lat_p99_us": p99_us if p99_us is not None else 2 * lat}
    t = {"id": f"4k-r100-rand-j{jobs}-qd{depth}", "seq": seq, "status": "ok", "fio_jobs": jobs, "hosts": {},
         "params": {"jobs": jobs, "iodepth": depth, "engine_used": "libaio"},
         "all": figures, "read": figures, "write": {"ios": 0}, "methodology": {}}
    if window is not None:
        t["methodology"]["window"] = window
    return TestRecord.from_dict(t) if typed else t


def test_repeats_are_one_cell_with_their_median_and_spread():
    tests = [exported(0, 1, 8, 100_000), exported(1, 1, 16, 150_000), exported(2, 1, 8, 90_000),
             exported(3, 1, 8, 120_000)]
    cells = cells_of(tests)
    assert [(c.iodepth, c.runs) for c in cells] == [(8, 3), (16, 1)]
    c8 = cells[0]
    assert c8.iops == 100_000 and c8.iops_runs == (100_000, 90_000, 120_000) and c8.band == (90_000, 120_000)
    assert c8.seq == 0 and c8.little == pytest.approx(1.0)
    # A single run's band is ± half the noise.
    assert cells[1].band == pytest.approx((150_000 * 0.96, 150_000 * 1.04))


def test_cells_use_the_window_figures_when_stored():
    whole = exported(0, 1, 8, 100_000, p99_us=900.0)
    win = exported(0, 1, 8, 80_000, p99_us=700.0, typed=False)
    with_window = exported(0, 1, 8, 100_000, p99_us=900.0, window={"start_s": 3, "end_s": 8, "steady": True,
                                                     "all": win["all"], "read": win["read"], "write": {"ios": 0}})
    slo = parse_slo("p99<=800us")
    (plain,) = cells_of([whole], slo)
    (windowed,) = cells_of([with_window], slo)
    assert plain.iops == 100_000 and windowed.iops == 80_000
    assert windowed.slo_value_us == 700.0 and windowed.slo_ok
    assert not plain.slo_ok and plain.slo_value_us == 900.0  # the whole test's
    assert windowed.little == pytest.approx(1.0)


def test_cells_within_noise_cannot_be_told_apart():
    # The bisection cells of issue 17 (2 jobs, p99 <= 1 ms), single runs:
    # 24 and 30 are within noise; 28 is clearly lower.
    slo = parse_slo("p99<=1ms")
    tests = [exported(0, 2, 24, 132_478, 900), exported(1, 2, 28, 111_996, 950), exported(2, 2, 30, 133_215, 980),
             exported(3, 2, 32, 140_000, 1100)]
    sat = saturation(sweep_of(tests), slo)
    assert (sat.peak.jobs, sat.peak.iodepth) == (2, 24)  # the least outstanding IO of the tied
    assert [c.iodepth for c in sat.ties] == [30] and sat.slo_best is sat.peak
    assert more_iops(sat.peak, next(c for c in sat.cells if c.iodepth == 28))
    # Repeats that do not overlap tell 30 apart from 24: it becomes the answer.
    tests += [exported(4, 2, 24, 128_000, 900), exported(5, 2, 30, 140_000, 980), exported(6, 2, 30, 139_000, 980),
              exported(7, 2, 24, 130_000, 900)]
    sat = saturation(sweep_of(tests), slo)
    assert (sat.peak.iodepth, sat.peak.runs, sat.ties) == (30, 3, [])
    lines = " ".join(line for line, _ in verdict_lines(sat, 1))
    assert "jobs 2 × iodepth 30" in lines and "median of 3 runs, 133,215–140,000" in lines
    assert "Cannot tell apart" not in lines


def test_a_target_is_met_only_when_every_run_meets_it():
    slo = parse_slo("p99<=1ms")
    tests = [exported(0, 1, 32, 100_000, 980), exported(1, 1, 32, 101_000, 1030), exported(2, 1, 32, 99_000, 990)]
    (c,) = cells_of(tests, slo)
    assert (c.slo_met_runs, c.slo_ok, c.slo_value_us) == (2, False, 990)
    assert near_limit(c, slo)  # the runs disagree
    far = cells_of([exported(0, 1, 4, 50_000, 500)], slo)[0]
    close = cells_of([exported(0, 1, 4, 50_000, 1070)], slo)[0]
    assert not near_limit(far, slo) and near_limit(close, slo)  # within 8 % above the limit


class ModelDisk:
    """A disk for the search: IOPS saturate with outstanding IO (ceiling
    `top`, half of it at `half` IOs in flight), p99 = 2 × mean latency;
    `wobble` scales given runs of a cell (noise)."""

    def __init__(self, top=200_000.0, half=16, wobble=None, slo=None):
        self.top, self.half, self.wobble, self.slo = top, half, wobble or {}, slo
        self.tests: list[TestRecord] = []

    def iops(self, jobs, depth):
        oio = jobs * depth
        return self.top * oio / (oio + self.half)

    def run_once(self, jobs, depth):
        k = sum(1 for t in self.tests if t.params["jobs"] == jobs and t.params["iodepth"] == depth)
        factor = self.wobble.get((jobs, depth), [])[k:k + 1] or [1.0]
        self.tests.append(exported(len(self.tests), jobs, depth, self.iops(jobs, depth) * factor[0]))
        return next(c for c in self.cells() if (c.jobs, c.iodepth) == (jobs, depth))

    def cells(self):
        return cells_of(self.tests, self.slo)

    def sweep(self, sweep, jobs=(1, 2), depths=(1, 2, 4, 8, 16, 32, 64, 128)):
        ended = search(sweep, list(jobs), list(depths), self.run_once, self.cells, lambda: False)
        sat = saturation(sweep_of(self.tests), self.slo)
        return sat, [ended_line(e, sat, sweep) for e in ended]


def test_search_measures_few_cells_of_the_grid():
    disk = ModelDisk(half=8)
    sat, lines = disk.sweep(Sweep(max_iodepth=128))
    # IOPS grow almost in step up to 4 IOs: the first row jumps 1 → 4 → 16;
    # jobs 2 starts at the outstanding IO of the answer so far.
    assert [(c.jobs, c.iodepth) for c in sat.cells] == [(1, 1), (1, 4), (1, 16), (1, 64), (1, 128), (2, 32)]
    grid_max = max(disk.iops(j, d) for j in (1, 2) for d in (1, 2, 4, 8, 16, 32, 64, 128))
    assert sat.peak.iops >= 0.95 * grid_max
    # 1 × 128 is 5.9 % above 1 × 64 (and 2 × 32): within a single run's
    # noise, so both were repeated until their bands parted.
    assert (sat.peak.jobs, sat.peak.iodepth, sat.peak.runs, sat.ties) == (1, 128, 2, [])
    assert len(disk.tests) == 9
    assert lines == ["jobs 1: iodepth 64→128 gained +5.9% IOPS per doubling (< 10%)",
                     "jobs 2 × iodepth 32: 177,778 IOPS, cannot be told apart from the 177,778 of jobs 1 × iodepth 64 "
                     "(same outstanding IO): more jobs do not help measurably"]


def test_search_repeats_the_answer_against_a_higher_cell_within_noise():
    # iodepth 128 measures 5.9 % above 64 once (within a run's noise, and
    # more than 3 runs can resolve), then 7 % below its first run.
    disk = ModelDisk(top=100_000, half=8, wobble={(1, 128): [1.0, 0.93, 0.94]})
    sat, lines = disk.sweep(Sweep(max_iodepth=128, repeats=3), jobs=(1,))
    runs = {c.iodepth: c.runs for c in sat.cells}
    # Repeated until the gap was too small for 3 runs to resolve.
    assert (runs[128], runs[64], runs[1]) == (2, 2, 1)
    assert (sat.peak.iodepth, [c.iodepth for c in sat.ties]) == (64, [128])
    text = " ".join(line for line, _ in verdict_lines(sat, 1))
    assert "Cannot tell apart from jobs 1 × iodepth 128 (90,824, median of 2 runs, 87,529–94,118)" in text
    # A gap that repeats could not resolve is not repeated for.
    flat = ModelDisk(top=100_000, half=8, wobble={(1, 128): [0.98]})
    sat, _ = flat.sweep(Sweep(max_iodepth=128, repeats=3), jobs=(1,))
    assert all(c.runs == 1 for c in sat.cells) and [c.iodepth for c in sat.ties] == [128]


def test_no_line_of_the_sweep_contradicts_its_answer():
    # Jobs 2 looks no better at first (one run within noise), then its
    # repeats tell it apart and it becomes the answer.
    disk = ModelDisk(top=100_000, half=4, wobble={(2, 16): [1.06, 1.14, 1.14]})
    sat, lines = disk.sweep(Sweep(max_iodepth=64, repeats=3))
    assert (sat.peak.jobs, sat.peak.iodepth) == (2, 16)
    assert not any("more jobs do not help" in line for line in lines), lines
    assert lines[-1] == ("jobs 2 × iodepth 16: within noise of jobs 1 × iodepth 32 when measured, so the sweep "
                         "tried no more jobs; repeats then put the answer at jobs 2")


def test_search_with_a_target_bisects_and_repeats_cells_on_the_limit():
    slo = parse_slo("p99<=1ms")
    disk = ModelDisk(top=100_000, half=8, slo=slo)  # p99 = 2 × oio / IOPS: 1 ms at 38 IOs
    sat, lines = disk.sweep(Sweep(max_iodepth=128, slo=slo, repeats=3, bisect=3), jobs=(1,))
    assert sat.slo_best is sat.peak and sat.peak.slo_ok and sat.peak.slo_value_us <= 1000
    for c in sat.cells:
        assert c.slo_ok == (c.slo_value_us <= 1000)
        assert c.runs == (3 if near_limit(c, slo) else 1)  # the model never disagrees with itself
    assert any(c.iodepth not in (1, 4, 16, 32, 64, 128) for c in sat.cells)  # bisection ran
    assert lines[0].startswith("jobs 1: iodepth") and "broke the target" in lines[0]


def test_a_row_that_reached_max_iodepth_still_growing_goes_on_with_more_jobs():
    # Still climbing at 1 × 128: more jobs are the way to more IOs in
    # flight, so jobs 2 starts at twice the outstanding IO (2 × 128).
    disk = ModelDisk(top=400_000, half=512)
    sat, lines = disk.sweep(Sweep(max_iodepth=128))
    assert [(c.jobs, c.iodepth) for c in sat.cells][-2:] == [(1, 128), (2, 128)]
    assert (sat.peak.jobs, sat.peak.iodepth) == (2, 128)
    assert lines == ["jobs 1: reached --max-iodepth 128 still growing: more jobs add outstanding IO",
                     "jobs 2: reached --max-iodepth 128 still growing: more jobs add outstanding IO",
                     "reached --max-jobs 2"]
    # With only a little growth left, the doubling by jobs ends the sweep.
    disk = ModelDisk(top=400_000, half=1)
    sat, lines = disk.sweep(Sweep(max_iodepth=8), depths=(1, 2, 4, 8))
    assert [(c.jobs, c.iodepth) for c in sat.cells] == [(1, 1), (1, 4), (1, 8), (2, 8)]
    assert lines == ["jobs 1: reached --max-iodepth 8 still growing: more jobs add outstanding IO",
                     "jobs 2: from jobs 1 × iodepth 8 to iodepth 8 gained +5.9% IOPS per doubling (< 10%)",
                     "reached --max-jobs 2"]


def test_why_lines_keep_the_figures_they_decided_on():
    # Seen on this VM under another load: 1 × 16 ended row 1 (32 gained
    # little), then its repeat for the answer came out far lower. The line
    # keeps the decision's figures and says what the repeat made of them.
    disk = ModelDisk(top=100_000, half=16, wobble={(1, 32): [0.8], (1, 16): [1.0, 0.4]})
    sat, lines = disk.sweep(Sweep(max_iodepth=32), depths=(1, 2, 4, 8, 16, 32))
    assert (sat.peak.jobs, sat.peak.iodepth) == (1, 32)
    assert lines[0] == ("jobs 1: iodepth 16→32 gained +6.7% IOPS per doubling (< 10%); repeated since, the figures "
                        "would not decide so: jobs 1 × iodepth 16 35,000 (median of 2 runs), jobs 1 × iodepth 32 "
                        "60,000 (median of 2 runs)")
    assert lines[1].startswith("jobs 2 × iodepth 8: 50,000 IOPS, cannot be told apart from the 50,000 of jobs 1 × "
                               "iodepth 16")
