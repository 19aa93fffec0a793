"""The bench scripts' statistics and goal lines (bench/common.py), and their
figures from constructed test results (no fio here: the benches run it)."""

import math
import re
import statistics
from types import SimpleNamespace

import pytest

from bench.common import (
    bootstrap_median_ci, fmt_interval, log_t_interval, result_line, window_iops, write_section,
)
from bench.early_stop import iops_difference_pct, plan_of, render as early_render, summarise
from bench.easy_vs_best import best_cell, easy_figures, grid_plan, render as easy_render
from bench.saturate_vs_grid import render as saturate_render
from iofleet.plan import parse_plan
from iofleet.plan.easy import PROFILES
from iofleet.plan.expand import expand, prepare_tiers

RESULT = re.compile(r"^Result: ([a-z0-9-]+) = (\S+)$", re.M)


def results_of(text: str) -> dict[str, float]:
    found = RESULT.findall(text)
    assert len(found) == len({k for k, _ in found}), "each goal once"
    return {k: float(v) for k, v in found}


# ---------------------------------------------------------------- statistics

def test_bootstrap_interval_is_repeatable_and_holds_the_median():
    ratios = [0.97, 1.01, 0.99, 1.02, 0.95, 1.00, 0.98, 1.03, 0.96, 1.01]
    ci = bootstrap_median_ci(ratios)
    assert ci == bootstrap_median_ci(ratios)  # fixed seed
    assert min(ratios) <= ci[0] <= statistics.median(ratios) <= ci[1] <= max(ratios)
    assert ci[0] < ci[1]


def test_bootstrap_interval_narrows_with_agreeing_pairs():
    wide = bootstrap_median_ci([0.8, 1.2, 0.9, 1.1, 1.0, 0.85, 1.15, 0.95, 1.05, 1.0])
    narrow = bootstrap_median_ci([0.99, 1.01, 1.0, 1.0, 0.995, 1.005, 1.0, 0.998, 1.002, 1.0])
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 5


def test_intervals_need_three_values():
    assert bootstrap_median_ci([1.0, 2.0]) is None
    assert log_t_interval([1.0, 2.0]) is None
    assert fmt_interval(None) == "n/a (too few repeats)"


def test_log_t_interval_is_the_t_interval_of_the_log_ratios():
    ratios = [0.9, 1.0, 1.2]
    logs = [math.log(r) for r in ratios]
    half = 4.302652729911275 * statistics.stdev(logs) / math.sqrt(3)  # t(0.975, 2 degrees of freedom)
    lo, hi = log_t_interval(ratios)
    assert lo == pytest.approx(math.exp(statistics.fmean(logs) - half))
    assert hi == pytest.approx(math.exp(statistics.fmean(logs) + half))
    assert log_t_interval([0.5, 0.5, 0.5]) == pytest.approx((0.5, 0.5))


def test_result_line_has_exactly_the_goal_form():
    assert result_line("overhead-ratio", 0.98765) == "Result: overhead-ratio = 0.988"
    assert result_line("early-stop-steady-share", float("nan")) == "Result: early-stop-steady-share = nan"
    with pytest.raises(ValueError):
        result_line("Overhead ratio", 1.0)


def test_write_section_replaces_only_its_own_section(tmp_path):
    f = tmp_path / "B.md"
    write_section("## Harness overhead\n\nold", "## Harness overhead", f)
    write_section("## Harness overhead at scale\n\nother", "## Harness overhead at scale", f)
    write_section("## Harness overhead\n\nnew", "## Harness overhead", f)
    text = f.read_text()
    assert text.startswith("# Benchmarks")
    assert "old" not in text and "new" in text and "other" in text
    assert text.count("## Harness overhead\n") == 1


def test_window_iops_falls_back_to_the_whole_test():
    whole = {"all": {"iops": 100.0}, "methodology": {}}
    assert window_iops(whole) == 100.0
    assert window_iops(whole | {"methodology": {"window": {"all": {"ios": 10, "iops": 90.0}}}}) == 90.0
    assert window_iops(whole | {"methodology": {"window": None}}) == 100.0


# ---------------------------------------------------------------- early stop vs fixed time

def _args(**kw):
    base = dict(repeats=2, size="256m", round=2, ramp=2, max_runtime=30, iodepth=8, jobs=1, target="scratch")
    return SimpleNamespace(**base | kw)


def _measured(profile, mode, repeat, seconds, early=False, steady=False, iops=1000.0, window=None):
    return {"profile": profile, "mode": mode, "repeat": repeat, "seconds": seconds, "wall": seconds + 3,
            "early": early, "stopped_at_s": seconds if early else None, "steady": steady, "reason": "",
            "iops": iops, "window_iops": window}


def _early_tests():
    tests = []
    for r in (1, 2):
        for i, p in enumerate(PROFILES):
            early = i < 3  # three stop early, one of them not steady (the bug the goal forbids)
            tests.append(_measured(p["name"], "steady", r, 12.0 if early else 30.0, early=early,
                                   steady=early and i != 2, iops=1100.0, window=1050.0))
            tests.append(_measured(p["name"], "fixed", r, 30.0, iops=1000.0 * r))
    return tests


def test_early_stop_plan_pairs_each_profile_in_alternating_order():
    for first in (True, False):
        plan = parse_plan(plan_of(_args(), first), "bench")
        specs = expand(plan)
        assert len(specs) == 2 * len(PROFILES)
        untils = [s.until for s in specs]
        assert untils[:2] == (["steady", "time"] if first else ["time", "steady"])
        assert {s.jobs for s in specs} == {1} and {s.iodepth for s in specs} == {8}


def test_summarise_shares_and_time_ratio():
    s = summarise(_early_tests())
    assert s["early"] == 6 and s["early_steady"] == 4
    assert s["share"] == pytest.approx(4 / 6)
    assert s["time_ratio"] == pytest.approx((3 * 12 + 30) / (4 * 30))
    none_early = [t | {"early": False} for t in _early_tests()]
    assert math.isnan(summarise(none_early)["share"])


def test_iops_difference_uses_the_steady_window():
    steady = _measured("x", "steady", 1, 12, iops=1100.0, window=1050.0)
    fixed = _measured("x", "fixed", 1, 30, iops=1000.0)
    assert iops_difference_pct(steady, fixed) == pytest.approx(5.0)
    assert iops_difference_pct(steady | {"window_iops": None}, fixed) == pytest.approx(10.0)


def test_early_stop_section_has_both_goal_lines_and_per_repeat_differences():
    text = early_render(_args(), _early_tests(), [200.0, 210.0])
    assert results_of(text) == {"early-stop-steady-share": pytest.approx(0.667, abs=1e-3),
                                "early-stop-time-ratio": pytest.approx(0.55)}
    assert "+5.0, -47.5" in text  # rand-read-4k: window 1050 vs fixed 1000, then vs 2000


# ---------------------------------------------------------------- Easy Run and saturate vs the grid

def test_grid_plan_covers_every_cell_on_the_same_working_set():
    size = 1024**3
    specs = expand(parse_plan(grid_plan(size, 8, 2, "auto"), "bench"))
    assert sorted((s.jobs, s.iodepth) for s in specs) == [(j, d) for j in (1, 2) for d in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert {s.jobs * s.size for s in specs} == {size}
    assert {(s.runtime, s.ramp, s.until) for s in specs} == {(8, 2, "time")}
    assert prepare_tiers(specs) == [(2, size // 2), (1, size)]  # file 0 at full size, file 1 at half


def _run(label, tests, created="2026-11-24T00:00:00+00:00", ended="2026-11-24T00:01:30+00:00", id_=1):
    return {"id": id_, "label": label, "created_at": created, "ended_at": ended, "tests": tests}


def test_easy_figures_take_the_4k_profile_window_and_the_probe_time():
    probe = _run("easy-run probe", [{}] * 7, ended="2026-11-24T00:01:10+00:00")
    test = {"workload": "rand-read-4k", "params": {"jobs": 2, "iodepth": 16}, "all": {"iops": 900.0},
            "methodology": {"early_stop": {"stopped_at_s": 12.0}, "steady": {"iops": {"steady": True}},
                            "window": {"all": {"ios": 5, "iops": 950.0}}}}
    other = {"workload": "rand-mixed-4k", "params": {"jobs": 2, "iodepth": 16}, "all": {"iops": 1.0}}
    e = easy_figures([probe, _run("easy-run", [other, test], id_=2)])
    assert (e["iops"], e["jobs"], e["iodepth"], e["early"], e["steady"]) == (950.0, 2, 16, True, True)
    assert (e["probe_s"], e["probe_tests"], e["run_id"]) == (70.0, 7, 2)


def _cells(top):
    cells = {(j, d): 500.0 + d for j in (1, 2) for d in (1, 2, 4, 8, 16, 32, 64, 128)}
    cells[(2, 32)] = top
    return cells


def test_easy_section_ratio_is_to_the_best_cell():
    grids = [{"cells": _cells(1000.0), "wall_s": 300.0}, {"cells": _cells(1200.0), "wall_s": 310.0}]
    easies = [{"iops": 950.0, "jobs": 2, "iodepth": 32, "early": True, "steady": True, "probe_s": 60.0,
               "probe_tests": 8}, {"iops": 1080.0, "jobs": 1, "iodepth": 8, "early": False, "steady": False,
                                   "probe_s": None, "probe_tests": 0}]
    a = SimpleNamespace(repeats=2, size="1g", ramp=2, round=2, max_runtime=30, grid_runtime=8, grid_ramp=2,
                        engine="auto", grid_data=None)
    text = easy_render(a, grids, easies, [200.0, 220.0])
    assert best_cell(grids[0]["cells"]) == ((2, 32), 1000.0)
    assert results_of(text) == {"easy-run-vs-best": pytest.approx((0.95 + 0.9) / 2)}
    assert "| **1,000** |" in text


def test_saturate_section_ratios():
    grids = [{"cells": _cells(1000.0), "wall_s": 400.0, "prepare_s": 10.0, "engine": "auto", "runtime": 8, "ramp": 2}]
    sweeps = [{"iops": 990.0, "jobs": 2, "iodepth": 32, "runs": 2, "ties": [(2, 64)], "cells": 9, "tests": 11,
               "wall_s": 100.0, "prepare_s": 5.0, "stopped": ["jobs 2: IOPS stopped growing"]}]
    a = SimpleNamespace(repeats=1, size="1g", grid_data=None)
    text = saturate_render(a, grids, sweeps, reused=0)
    assert results_of(text) == {"saturate-iops-ratio": pytest.approx(0.99), "saturate-time-ratio": 0.25}
    assert "2 × 64" in text and "jobs 2: IOPS stopped growing" in text
    assert "0.244" in text  # without preparation: 95 / 390
