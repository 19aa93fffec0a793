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

from iofleet.analysis.compare import (BASELINE, BETTER, INCONCLUSIVE, NOT_ENOUGH, NOT_JUDGED, PASSED, REGRESSION,
                                      WITHIN_NOISE, WORSE, Config, NothingMatched, compare, default_metrics, gate, judge)
from iofleet.errors import IofleetError
from iofleet.report.compare import (compare_to_json, comparison_csv, comparison_json, comparison_markdown,
                                    comparison_report, comparison_tables, fmt_change, gate_lines)
from iofleet.report.junit import junit_xml
from iofleet.results.model import Run
from iofleet.results.store import Store
from iofleet.studies.compare import load_configs, resolve

FIXTURES = Path(__file__).parent.parent / "fixtures" / "compare"
READ, WRITE, MIXED = "4k-r100-rand-j1-qd4", "4k-r0-rand-j1-qd4", "4k-r70-rand-j1-qd4"
RUNS = {"libaio-qd4": [1, 4, 7], "psync": [2, 5, 8], "libaio-qd4-again": [3, 6, 9], "libaio-qd4-repeat": [10]}


def config_of(name: str, docs: list[dict]) -> Config:
    """A configuration of recorded runs' exports (changed here and there), read as typed runs."""
    return Config(name, [Run.from_dict(d) for d in docs])


def run(i: int) -> dict:
    return json.loads((FIXTURES / f"run{i}.json").read_text())


def config(name: str) -> Config:
    return config_of(name, [run(i) for i in RUNS[name]])


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
    c = compare([config_of("a", [_fake_run(1, a)]), config_of("b", [_fake_run(2, b)])], "a")
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
    c = compare([config_of("run 1", [run(1)]), config_of("run 2", [run(2)])], "run 1")
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


def test_imports_without_methodology_compare_their_whole_tests():
    """Variant: the runs as `results import` stores fio outputs, with no methodology."""
    docs = {name: [run(i) | {"methodology": None} for i in RUNS[name]] for name in ("libaio-qd4", "psync")}
    for doc in docs["libaio-qd4"] + docs["psync"]:
        for t in doc["tests"]:
            t["methodology"] = None
    c = compare([config_of(name, runs) for name, runs in docs.items()], "libaio-qd4")
    assert c.tests[0].row("iops").cell("psync").samples == figures("psync", READ, iops)


def test_only_ok_tests_count_and_partial_runs_are_labelled():
    partial = run(7)
    partial["status"] = "partial"  # variant: the third baseline run cut short, its write test failed
    partial["tests"][1]["status"] = "failed"
    c = compare([config_of("libaio-qd4", [run(1), run(4), partial]), config("psync")], "libaio-qd4")
    assert c.configs[0].partial and not c.configs[1].partial
    assert c.tests[1].row("iops").cell("libaio-qd4").n == 2
    assert c.tests[1].row("iops").cell("psync").verdict == NOT_ENOUGH
    assert c.excluded == [{"config": "libaio-qd4", "run": 7, "test": WRITE, "repeat": 1, "status": "failed"}]
    assert "libaio-qd4 (partial)" in comparison_markdown(c)
    assert compare_to_json(c)["configs"][0]["partial"] is True


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
    assert "## IOPS (higher is better)" in md and "| winner |" in md
    assert "Winners per test" not in md and "## Rankings" not in md  # one view: the winner column
    assert "| 4k-r100-rand-j1-qd4 | 56,235 | 18,066 | 57,144 |" in md
    assert md.count("libaio-qd4-again = libaio-qd4 |") == 4  # IOPS and MB/s of both tests: a tie, psync last
    assert "## Tests won per metric" in md
    from rich.console import Console
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(comparison_report(cmp))
    out = console.export_text()
    change, interval = text.removesuffix(" worse").split(" [")
    # The terminal shows a change over its interval and p-value, the verdict beside the change.
    assert "psync vs libaio-qd4" in out and f"{change} worse" in out and f"[{interval}" in out
    assert "| 4k-r100-rand-j1-qd4 | 56,235 | 18,066 | 57,144 |" in md and "| libaio-qd4 (n=3) |" in md


def test_at_80_columns_each_row_is_a_paragraph_of_whole_words(cmp):
    """Three configurations with intervals do not fit 80 columns as tables:
    each test becomes wrapped lines holding every word of its row, none split."""
    from rich.console import Console

    def render(width):
        console = Console(file=io.StringIO(), width=width, record=True)
        console.print(comparison_report(cmp, width=width if width < 1000 else None))
        return console.export_text()
    narrow, wide = render(80), render(1000)
    assert max(len(line.rstrip()) for line in narrow.splitlines()) <= 80
    assert "│" not in narrow.split("Tests won")[0] and "─" not in narrow.split("Tests won")[0]  # no table left
    for name, cols, rows in comparison_tables(cmp)[:-1]:  # the last, tests won per metric, fits as a table
        for row in rows:
            cells = " · ".join(f"{c} {v}" for c, v in zip(cols[1:], row[1:]))
            assert " ".join(f"{row[0]}: {cells}".split()) in " ".join(narrow.split()), row
    assert sorted(narrow.split()) != sorted(wide.split())  # the wide one is tables


def _depth(doc: dict, iodepth: int) -> dict:
    """A variant of a recorded run as if its plan had asked for another queue depth."""
    doc = copy.deepcopy(doc)
    for t in doc["tests"]:
        t["params"]["iodepth"], t["id"] = iodepth, t["id"].replace("-qd4", f"-qd{iodepth}")
    return doc


def test_nothing_matched_names_what_differs_and_the_match_that_pairs():
    before, qd16 = config("libaio-qd4"), config_of("qd16", [_depth(run(i), 16) for i in RUNS["psync"]])
    with pytest.raises(NothingMatched) as exc:
        compare([before, qd16], "libaio-qd4")
    assert str(exc.value) == ("no test is in every configuration: they differ in iodepth (4 in libaio-qd4, 16 in "
                              "qd16); to compare them, pair tests with --match bs,read_pct,random_pct,jobs")
    assert exc.value.differ == ["iodepth"] and exc.value.exit_code != 0
    c = compare([before, qd16], "libaio-qd4", match=exc.value.suggestion)
    assert [t.label for t in c.tests] == [READ, WRITE] and c.unmatched == []
    base, other = figures("libaio-qd4", READ, iops), figures("psync", READ, iops)
    assert c.tests[0].row("iops").cell("qd16").pct_change == pytest.approx(100 * (mean(other) - mean(base)) / mean(base))


def test_nothing_matched_without_a_match_that_pairs():
    # Variant: read_pct 50/60 and iodepth 16: without those two keys, run 1 could not tell its tests apart.
    doc = _depth(run(2), 16)
    for t in doc["tests"]:
        t["params"]["read_pct"] = {100: 50, 0: 60}[t["params"]["read_pct"]]
    with pytest.raises(NothingMatched) as exc:
        compare([config_of("run 1", [run(1)]), config_of("run 2", [doc])], "run 1")
    assert str(exc.value) == ("no test is in every configuration: they differ in read_pct (0/100 in run 1, 50/60 in "
                              "run 2), iodepth (4 in run 1, 16 in run 2); no --match pairs them one to one: "
                              "compare configurations that ran the same tests")
    assert exc.value.suggestion is None and "\n" not in str(exc.value)


def test_nothing_ok_to_compare():
    failed = copy.deepcopy(run(2))
    for t in failed["tests"]:
        t["status"] = "failed"
    with pytest.raises(IofleetError, match=r"^no test is in every configuration"):
        compare([config_of("run 1", [run(1)]), config_of("run 2", [failed])], "run 1")
    with pytest.raises(IofleetError, match=r"^nothing to compare: no test of run 2, run 1 ended ok \(4 excluded\)"):
        compare([config_of("run 2", [failed]), config_of("run 1", [failed | {"id": 1}])], "run 2")


def test_gate_fails_what_is_worse_beyond_noise_and_the_threshold(cmp):
    checks = gate(cmp, 5)
    assert len(checks) == 2 * 12  # two configurations × (2 tests × 6 metrics with data)
    failed = {(c.config, c.test, c.metric.name) for c in checks if c.outcome == REGRESSION}
    # psync: IOPS and MB/s 65-68 % lower with p = 0.005 (README); its lower latencies are better, not failures.
    assert failed == {("psync", t, m) for t in (READ, WRITE) for m in ("iops", "mb_s")}
    by_hand = {(c.config, c.test, c.metric.name) for c in checks if c.cell.verdict == WORSE
               and 100 * (c.cell.mean - cmp.tests[0 if c.test == READ else 1].row(c.metric.name).cell(
                   "libaio-qd4").mean) / cmp.tests[0 if c.test == READ else 1].row(c.metric.name).cell(
                   "libaio-qd4").mean < -5}
    assert failed == by_hand
    # Worse but within noise: the baseline's plan again, write p95 +0.5 %. Above a 0 % threshold it is
    # inconclusive (never passed), below a 1 % one it passes.
    again = next(c for c in gate(cmp, 0) if c.config == "libaio-qd4-again" and c.metric.name == "write_p95")
    assert again.cell.pct_change > 0 and again.cell.verdict == WITHIN_NOISE and again.outcome == INCONCLUSIVE
    assert "within noise: more repeats would tell" in again.reason
    assert all(c.outcome == PASSED for c in gate(cmp, 1) if c.config == "libaio-qd4-again")
    # A threshold above the worst change: psync's read test (-67.9 %) fails at 65 %, none at 70 %.
    assert {c.test for c in gate(cmp, 65) if c.outcome == REGRESSION} == {READ}
    assert not any(c.outcome == REGRESSION for c in gate(cmp, 70))
    lines = gate_lines(cmp, checks, 5)
    assert lines[0] == "FAILED --fail-above 5: 4 of 24 figures worse than libaio-qd4 by more than 5 % beyond noise:"
    assert lines[1].startswith(f"  psync, {READ}, IOPS: -67.9 % [") and lines[1].endswith(" worse")
    assert gate_lines(cmp, gate(cmp, 70), 70) == [
        "passed --fail-above 70: none of 24 figures is worse than libaio-qd4 by more than 70 %"]


def test_gate_better_passes_and_too_few_repeats_are_inconclusive_never_passed():
    sync_base = compare([config("psync"), config("libaio-qd4")], "psync")
    iops_checks = [c for c in gate(sync_base, 5) if c.metric.name == "iops"]
    assert [c.outcome for c in iops_checks] == [PASSED, PASSED] and all(c.cell.verdict == BETTER for c in iops_checks)
    one = compare([config_of("run 1", [run(1)]), config_of("run 2", [run(2)])], "run 1")
    checks = gate(one, 5)
    assert not any(c.outcome == REGRESSION for c in checks)
    unsure = [c for c in checks if c.outcome == INCONCLUSIVE]
    assert unsure and all(c.cell.verdict == NOT_ENOUGH and -c.cell.pct_change * (1 if c.metric.higher_is_better
                                                                                 else -1) > 5 for c in unsure)
    # Every figure worse by more than 5 % is inconclusive: none passes.
    assert all(c.outcome in (PASSED, NOT_JUDGED) for c in checks if c not in unsure)
    assert not any(c.outcome == PASSED and (c.cell.pct_change if not c.metric.higher_is_better
                                            else -c.cell.pct_change) > 5 for c in checks)
    lines = gate_lines(one, checks, 5)
    assert lines[0].startswith(f"INCONCLUSIVE --fail-above 5: no figure is worse than run 1 by more than 5 % beyond "
                               f"noise, but {len(unsure)} of {len(checks)} are worse by more than 5 %"), lines[0]
    assert len(lines) == 1 + len(unsure)
    for bad in (-1, float("inf"), float("nan"), 1e308, 1000.5):
        with pytest.raises(IofleetError, match=r"^--fail-above .*: give a share from 0 to 1000 %"):
            gate(one, bad)


# Elements and attributes of the JUnit schema Jenkins' xunit plugin ships (junit-10.xsd), that GitLab also reads.
JUNIT_ATTRIBUTES = {
    "testsuites": {"name", "time", "tests", "failures", "errors"},
    "testsuite": {"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id",
                  "package", "file", "log", "url"},
    "properties": set(), "property": {"name", "value"},
    "testcase": {"name", "time", "classname", "group"},
    "failure": {"type", "message"}, "error": {"type", "message"}, "skipped": {"type", "message"}}
JUNIT_REQUIRED = {"testsuite": {"name", "tests", "failures", "errors"}, "property": {"name", "value"},
                  "testcase": {"name"}}
JUNIT_CHILDREN = {"testsuites": ("testsuite",), "testsuite": ("testsuite", "properties", "testcase"),
                  "properties": ("property",), "testcase": ("skipped", "error", "failure")}


def test_junit_xml_parses_back_with_one_case_per_test_and_metric(cmp):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(junit_xml(cmp, gate(cmp, 5), 5))
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures")) == ("24", "4")
    for element in root.iter():  # only what the common schema (Jenkins junit-10.xsd) allows
        assert set(element.attrib) <= JUNIT_ATTRIBUTES[element.tag], element.tag
        assert JUNIT_REQUIRED.get(element.tag, set()) <= set(element.attrib), element.tag
        assert all(c.tag in JUNIT_CHILDREN.get(element.tag, ()) for c in element), element.tag
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"psync vs libaio-qd4", "libaio-qd4-again vs libaio-qd4"}
    psync = suites["psync vs libaio-qd4"]
    cases = psync.findall("testcase")
    assert len(cases) == int(psync.get("tests")) == 12 and psync.get("failures") == "4"
    assert all(c.get("classname") == "psync" for c in cases)
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failed) == {f"{t} {m}" for t in (READ, WRITE) for m in ("IOPS", "MB/s")}
    assert failed[f"{READ} IOPS"].get("message").startswith("IOPS -67.9 % [")
    assert failed[f"{READ} IOPS"].get("type") == "regression"
    assert suites["libaio-qd4-again vs libaio-qd4"].find("testcase/failure") is None
    props = {p.get("name"): p.get("value") for p in psync.findall("properties/property")}
    assert props["baseline"] == "libaio-qd4" and props["fail_above_pct"] == "5"


def test_junit_xml_escapes_names():
    hostile = "<a href='x'>&\"]]>\x01"
    one = compare([config_of("run 1", [run(1)]), config_of(hostile, [run(2)])], "run 1")
    raw = junit_xml(one, gate(one, 5), 5)
    import xml.etree.ElementTree as ET

    root = ET.fromstring(raw)
    assert raw.startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    suite = root.find("testsuite")
    assert suite.get("name") == "<a href='x'>&\"]]>\ufffd vs run 1"
    assert suite.find("testcase").get("classname") == "<a href='x'>&\"]]>\ufffd"
    # Single runs: inconclusive figures are errors (a CI job fails on them), never skipped.
    assert int(suite.get("errors")) == len(suite.findall("testcase/error")) > 0
    assert {e.get("type") for e in suite.findall("testcase/error")} == {"inconclusive"}
    assert root.get("errors") == suite.get("errors")
