"""Configuration comparisons on recorded real runs (tests/fixtures/compare):
% changes, rankings and winners checked against plain arithmetic on the
figures in the JSON files, and the verdicts of the noise rule."""

import copy
import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from iofleet.analysis.compare import (BASELINE, BETTER, NOT_ENOUGH, WITHIN_NOISE, WORSE, Config, compare,
                                      default_metrics, judge)
from iofleet.errors import IofleetError
from iofleet.report.compare import (comparison_csv, comparison_json, comparison_markdown, comparison_report,
                                    fmt_change)
from iofleet.results.store import Store
from iofleet.studies.compare import load_configs, resolve

FIXTURES = Path(__file__).parent.parent / "fixtures" / "compare"
READ, WRITE, MIXED = "4k-r100-rand-j1-qd4", "4k-r0-rand-j1-qd4", "4k-r70-rand-j1-qd4"
RUNS = {"libaio-qd4": [1, 4, 7], "psync": [2, 5, 8], "libaio-qd4-again": [3, 6, 9], "libaio-qd4-repeat": [10]}


def run(i: int) -> dict:
    return json.loads((FIXTURES / f"run{i}.json").read_text())


def config(name: str) -> Config:
    return Config(name, [run(i) for i in RUNS[name]])


def figures(name: str, test: str, get) -> list[float]:
    """The samples by hand: every ok test with that id, in every run of the config."""
    return [get(t) for i in RUNS[name] for t in run(i)["tests"] if t["id"] == test and t["status"] == "ok"]


def iops(t):
    return t["all"]["iops"]


def mean(xs):
    return sum(xs) / len(xs)


@pytest.fixture(scope="module")
def cmp():
    return compare([config("libaio-qd4"), config("psync"), config("libaio-qd4-again")], "libaio-qd4")


def test_fixtures_are_what_the_readme_says():
    assert [run(i)["label"] for i in range(1, 11)] == ["libaio-qd4", "psync", "libaio-qd4-again"] * 3 + [
        "libaio-qd4-repeat"]
    assert all(run(i)["status"] == "complete" for i in range(1, 11))
    assert [t["params"]["engine"] for t in run(2)["tests"]] == ["psync", "psync"]


def test_percent_change_of_the_means(cmp):
    base, sync = figures("libaio-qd4", READ, iops), figures("psync", READ, iops)
    assert len(base) == len(sync) == 3
    cell = cmp.tests[0].row("iops").cell("psync")
    assert cmp.tests[0].label == READ
    assert cell.samples == sync and cell.n == 3 and cell.mean == pytest.approx(mean(sync))
    assert cell.pct_change == pytest.approx(100 * (mean(sync) - mean(base)) / mean(base))
    lat = lambda t: t["write"]["lat_mean_us"]  # noqa: E731
    wb, ws = figures("libaio-qd4", WRITE, lat), figures("psync", WRITE, lat)
    assert cmp.tests[1].row("write_lat_mean").cell("psync").pct_change == pytest.approx(
        100 * (mean(ws) - mean(wb)) / mean(wb))
    assert cmp.tests[0].row("iops").cell("libaio-qd4").verdict == BASELINE


def test_the_numbers_in_the_readme(cmp):
    # 4k random read IOPS: baseline runs 1, 4, 7 = 51,661.7, 54,969.0, 62,074.5 (mean 56,235.0);
    # psync 17,637.2, 19,207.9, 17,351.8 (mean 18,065.6): 100 × (18,065.6 − 56,235.0) / 56,235.0 = −67.87 %;
    # again 54,724.6, 57,535.7, 59,170.4 (mean 57,143.6): +1.62 %.
    read = cmp.tests[0].row("iops")
    assert read.cell("libaio-qd4").mean == pytest.approx(56235.0, abs=0.1)
    assert read.cell("psync").pct_change == pytest.approx(-67.87, abs=0.01)
    assert read.cell("libaio-qd4-again").pct_change == pytest.approx(1.62, abs=0.01)
    # Write mean latency: baseline 75.8, 74.8, 89.1 µs (79.9), psync 52.4, 60.2, 56.4 (56.3): −29.47 %, better.
    write = cmp.tests[1].row("write_lat_mean").cell("psync")
    assert write.pct_change == pytest.approx(-29.47, abs=0.01) and write.verdict == BETTER


def test_welch_p_value_by_hand(cmp):
    a, b = figures("libaio-qd4", READ, iops), figures("psync", READ, iops)
    va = sum((x - mean(a)) ** 2 for x in a) / 2
    vb = sum((x - mean(b)) ** 2 for x in b) / 2
    se2 = va / 3 + vb / 3
    t = (mean(b) - mean(a)) / math.sqrt(se2)
    df = se2 ** 2 / ((va / 3) ** 2 / 2 + (vb / 3) ** 2 / 2)  # Welch–Satterthwaite
    cell = cmp.tests[0].row("iops").cell("psync")
    assert cell.p_value == pytest.approx(2 * stats.t.sf(abs(t), df))


def test_bootstrap_interval_agrees_with_scipys_percentile_bootstrap(cmp):
    a, b = figures("libaio-qd4", READ, iops), figures("psync", READ, iops)
    cell = cmp.tests[0].row("iops").cell("psync")
    ref = stats.bootstrap((np.array(b), np.array(a)), lambda y, x, axis=-1: 100 * (y.mean(axis) - x.mean(axis))
                          / x.mean(axis), method="percentile", n_resamples=10000, random_state=1).confidence_interval
    assert cell.ci_low <= cell.pct_change <= cell.ci_high
    assert cell.ci_low == pytest.approx(ref.low, abs=3) and cell.ci_high == pytest.approx(ref.high, abs=3)
    again = compare([config("libaio-qd4"), config("psync")], "libaio-qd4").tests[0].row("iops").cell("psync")
    assert (again.ci_low, again.ci_high) == (cell.ci_low, cell.ci_high)  # fixed seed: reproducible


def test_psync_is_really_slower(cmp):
    cell = cmp.tests[0].row("iops").cell("psync")
    assert cell.p_value < 0.05 and cell.ci_high < -1
    assert cell.verdict == WORSE


def test_the_same_configuration_again_is_within_noise(cmp):
    for t in cmp.tests:
        cell = t.row("iops").cell("libaio-qd4-again")
        assert cell.verdict == WITHIN_NOISE
        assert cell.p_value >= 0.05 or cell.ci_low <= 1 <= cell.ci_high or cell.ci_low <= -1 <= cell.ci_high


def test_noise_rule():
    # Significant (p < 0.05) but the whole interval lies within ±1 %: within noise.
    a, b = [1000.0, 1001.0, 1002.0, 1001.0], [1005.0, 1006.0, 1005.5, 1006.5]
    j = judge(a, b, noise_pct=1.0, resamples=2000, seed=1)
    assert j.p_value < 0.05 and -1 < j.ci_low <= j.ci_high < 1 and j.reason == WITHIN_NOISE
    # The same difference with a 0.1 % threshold is real.
    assert judge(a, b, noise_pct=0.1, resamples=2000, seed=1).real
    # A 10 % gain with a wide spread: interval outside ±1 % would need p < 0.05 as well.
    j = judge([100.0, 140.0, 60.0], [110.0, 150.0, 70.0], noise_pct=1.0, resamples=2000, seed=1)
    assert j.p_value > 0.05 and j.reason == WITHIN_NOISE
    assert judge([5.0, 5.0, 5.0], [6.0, 6.0, 6.0], 1.0, 1000, 1).real  # no spread at all


def test_latency_lower_is_better_cpu_too():
    lat = [m for m in default_metrics() if m.name == "read_lat_mean"][0]
    assert not lat.higher_is_better
    a, b = [100.0, 101.0, 99.0], [50.0, 51.0, 49.0]
    c = compare([Config("a", [_fake_run(1, a)]), Config("b", [_fake_run(2, b)])], "a")
    assert c.tests[0].row("read_lat_mean").cell("b").verdict == BETTER
    assert c.tests[0].row("iops").cell("b").verdict == BETTER  # the fake IOPS follow 1/latency
    assert c.tests[0].row("cpu").cell("b").verdict == WORSE  # and b's CPU is 10 points higher
    assert [p.config for p in c.tests[0].row("cpu").ranking] == ["a", "b"]
    assert [p.config for p in c.tests[0].row("read_lat_mean").ranking] == ["b", "a"]


def _fake_run(run_id: int, lat_us: list[float], status: str = "complete") -> dict:
    """A run like run 10 (3 repeats of the read test) with given mean latencies: a variant of a
    recorded run, for the direction of latency verdicts."""
    doc = copy.deepcopy(run(10))
    doc["id"], doc["status"] = run_id, status
    doc["tests"] = [t for t in doc["tests"] if t["id"] == READ]
    for t, lat in zip(doc["tests"], lat_us):
        t["read"]["lat_mean_us"] = t["all"]["lat_mean_us"] = lat
        t["read"]["iops"] = t["all"]["iops"] = 4e6 / lat
        t["host_cpu_avg_pct"] = 30.0 + lat / 100 + (10 if run_id == 2 else 0)
    return doc


def test_rankings_and_winners(cmp):
    means = {n: mean(figures(n, READ, iops)) for n in ("libaio-qd4", "psync", "libaio-qd4-again")}
    ranking = cmp.tests[0].row("iops").ranking
    assert [p.config for p in ranking] == sorted(means, key=means.get, reverse=True)
    assert ranking[0].rank == 1 and ranking[0].tie is None
    # The two libaio configurations are within noise of each other: they share first place.
    assert {ranking[0].config, ranking[1].config} == {"libaio-qd4", "libaio-qd4-again"}
    assert ranking[1].tie == WITHIN_NOISE and ranking[1].rank == 1
    assert ranking[2].config == "psync" and ranking[2].tie is None and ranking[2].rank == 3
    row = next(w for w in cmp.winners() if w["test"] == READ and w["metric"] == "iops")
    assert [sorted(p["configs"]) for p in row["places"]] == [["libaio-qd4", "libaio-qd4-again"], ["psync"]]
    assert cmp.wins()["iops"]["libaio-qd4"] >= 1 and cmp.wins()["iops"]["psync"] == 0


def test_one_run_each_is_not_enough_repeats():
    c = compare([Config("run 1", [run(1)]), Config("run 2", [run(2)])], "run 1")
    cell = c.tests[0].row("iops").cell("run 2")
    a, b = iops(run(1)["tests"][0]), iops(run(2)["tests"][0])
    assert cell.verdict == NOT_ENOUGH and cell.pct_change == pytest.approx(100 * (b - a) / a)
    assert cell.ci_low is None and cell.p_value is None
    assert c.tests[0].row("iops").ranking[1].tie == NOT_ENOUGH
    assert "not enough repeats" in fmt_change(cell)


def test_repeats_within_one_run_are_samples_and_unmatched_tests_are_listed():
    c = compare([config("libaio-qd4"), config("libaio-qd4-repeat")], "libaio-qd4")
    cell = c.tests[0].row("iops").cell("libaio-qd4-repeat")
    rep = [iops(t) for t in run(10)["tests"] if t["id"] == READ]
    assert [t["repeat"] for t in run(10)["tests"] if t["id"] == READ] == [1, 2, 3]
    assert cell.n == 3 and cell.samples == rep and cell.ci_low is not None
    assert [t.label for t in c.tests] == [READ, WRITE]
    assert c.unmatched == [{"key": {"bs": 4096, "read_pct": 70, "random_pct": 100, "jobs": 1, "iodepth": 4},
                            "label": MIXED, "configs": ["libaio-qd4-repeat"]}]
    assert "unmatched: 4k-r70-rand-j1-qd4" in comparison_markdown(c)


def test_only_ok_tests_count_and_partial_runs_are_labelled():
    partial = run(7)
    partial["status"] = "partial"  # variant: the third baseline run cut short, its write test failed
    partial["tests"][1]["status"] = "failed"
    c = compare([Config("libaio-qd4", [run(1), run(4), partial]), config("psync")], "libaio-qd4")
    assert c.configs[0].partial and not c.configs[1].partial
    assert c.tests[1].row("iops").cell("libaio-qd4").n == 2
    assert c.tests[1].row("iops").cell("psync").verdict == NOT_ENOUGH
    assert c.excluded == [{"config": "libaio-qd4", "run": 7, "test": WRITE, "repeat": 1, "status": "failed"}]
    assert "libaio-qd4 (partial)" in comparison_markdown(c)
    assert c.to_dict()["configs"][0]["partial"] is True


def test_match_on_fewer_keys_and_ambiguity():
    c = compare([config("libaio-qd4"), config("psync")], "libaio-qd4", match=("read_pct",))
    assert [t.key for t in c.tests] == [{"read_pct": 100}, {"read_pct": 0}]
    with pytest.raises(IofleetError, match=r"^--match bs: run 1 of libaio-qd4 has several tests with bs=4096 "
                                           r"\(4k-r0-rand-j1-qd4, 4k-r100-rand-j1-qd4\); add parameters"):
        compare([config("libaio-qd4"), config("libaio-qd4-repeat")], "libaio-qd4", match=("bs",))


@pytest.mark.parametrize("kwargs, message", [
    ({"baseline": "nope"}, "--baseline nope: not one of the configurations"),
    ({"baseline": "psync", "match": ("bs", "colour")}, "--match bs,colour: no test has the parameter colour"),
    ({"baseline": "psync", "match": ()}, "--match: give at least one parameter"),
    ({"baseline": "psync", "noise_pct": -1}, "--noise -1: give a share of 0 % or more"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(IofleetError) as exc:
        compare([config("libaio-qd4"), config("psync")], **kwargs)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_bad_names_in_the_store(tmp_path):
    with Store.open(tmp_path) as store:
        with pytest.raises(IofleetError, match=r"^CONFIG 'x': no run has this label or id"):
            resolve(store, "x")
        with pytest.raises(IofleetError, match=r"^--baseline 4: no run 4 in "):
            load_configs(store, [], "4")


def test_renderings(cmp):
    cell = cmp.tests[0].row("iops").cell("psync")
    text = fmt_change(cell)
    assert text.startswith(f"{cell.pct_change:+.1f} % [{cell.ci_low:+.1f}, {cell.ci_high:+.1f}] p=")
    assert text.endswith(" worse")
    doc = json.loads(comparison_json(cmp))
    assert doc["baseline"] == "libaio-qd4" and doc["noise_pct"] == 1.0
    assert doc["tests"][0]["rows"][0]["cells"][1]["pct_change"] == cell.pct_change
    rows = list(csv.DictReader(io.StringIO(comparison_csv(cmp))))
    psync = next(r for r in rows if r["test"] == READ and r["metric"] == "iops" and r["config"] == "psync")
    assert float(psync["pct_change"]) == cell.pct_change and psync["verdict"] == WORSE and psync["rank"] == "3"
    md = comparison_markdown(cmp)
    assert "## IOPS (higher is better)" in md and "## Winners per test and metric" in md
    from rich.console import Console
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(comparison_report(cmp))
    out = console.export_text()
    assert "psync vs libaio-qd4" in out and text in out
