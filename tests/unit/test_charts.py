"""Charts of recorded real runs: the numbers drawn are the run's numbers."""

import json
import math
import statistics
from pathlib import Path

import pytest

from iofleet.report import charts
from iofleet.report.saturation import saturation_chart, sweep_of_run
from iofleet.results.model import Run, TestRecord

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def load(name: str) -> dict:
    return json.loads((RUNS / f"{name}.json").read_text())


def test_block_size_charts_have_one_chart_per_read_mix_and_one_series_per_load():
    doc = load("qd-sweep")  # one read mix, 16 loads (jobs × iodepth) of one block size
    [fig] = charts.block_size_charts(Run.from_dict(doc))
    assert fig.layout.title.text == "IOPS and MB/s by block size · 100% read, random"
    iops_bars = [tr for tr in fig.data if tr.xaxis == "x"]
    mb_bars = [tr for tr in fig.data if tr.xaxis == "x2"]
    assert len(iops_bars) == len(mb_bars) == 16
    assert iops_bars[0].name == "1 job × qd 1" and iops_bars[-1].name == "2 jobs × qd 128"
    # Every test's IOPS appears once, at its block size.
    drawn = sorted(round(y, 3) for tr in iops_bars for y in tr.y)
    assert drawn == sorted(round(t["all"]["iops"], 3) for t in doc["tests"])
    assert all(list(tr.x) == ["4k"] for tr in iops_bars)
    assert fig.layout.yaxis.title.text == "IOPS" and fig.layout.yaxis2.title.text == "MB/s (10^6 bytes/s)"
    # 16 series, 12 colours: no two series look alike (colour and bar pattern together).
    looks = {(tr.marker.color, tr.marker.pattern.shape) for tr in iops_bars}
    assert len(looks) == 16 and len({tr.marker.color for tr in iops_bars}) == len(charts.PALETTE)


def test_read_mixes_of_one_bar_each_fold_into_one_overview_chart():
    doc = load("big-blocks")  # 1m random read and 1m random write: two read mixes of one bar each
    [fig] = charts.block_size_charts(Run.from_dict(doc))
    assert fig.layout.title.text == "IOPS and MB/s per test"
    iops, mb = fig.data
    assert list(iops.x) == list(mb.x) == [t["id"] for t in doc["tests"]]
    assert list(iops.y) == [t["all"]["iops"] for t in doc["tests"]]
    assert list(mb.y) == [t["all"]["bw_mb_s"] for t in doc["tests"]]
    assert iops.error_y.array is None  # one run each: no spread to draw
    assert fig.layout.yaxis.title.text == "IOPS"


def test_tests_differing_beyond_block_size_mix_and_load_are_separate_bars_not_repeats():
    doc = load("buffered")  # four 4k random read tests at jobs 1, qd 1 of different sizes and runtimes
    [fig] = charts.block_size_charts(Run.from_dict(doc))
    names = [tr.name for tr in fig.data if tr.xaxis == "x"]
    assert names == ["1 job × qd 1 · sz128m rt6s ramp0s", "1 job × qd 1 · sz256m rt6s ramp0s",
                     "1 job × qd 1 · sz512m rt6s ramp0s", "1 job × qd 1 · sz16m rt2s ramp1s"]  # the run's order
    assert all(len(tr.y) == 1 and tr.error_y.array is None for tr in fig.data)


def test_a_repeated_test_is_one_bar_at_the_mean_with_its_lowest_and_highest_run():
    doc = json.loads((RUNS.parent / "compare" / "run10.json").read_text())  # three tests, each repeat: 3
    [fig] = charts.block_size_charts(Run.from_dict(doc))
    iops = fig.data[0]
    ids = list(dict.fromkeys(t["id"] for t in doc["tests"]))
    assert list(iops.x) == ids
    runs = [[t["all"]["iops"] for t in doc["tests"] if t["id"] == i] for i in ids]
    assert all(len(r) == 3 for r in runs)
    assert list(iops.y) == pytest.approx([statistics.fmean(r) for r in runs])
    assert round(iops.y[0], 1) == 57_619.9  # tests/fixtures/compare/README.md: 62,069.5 · 58,121.4 · 52,668.7
    assert list(iops.error_y.array) == pytest.approx([max(r) - statistics.fmean(r) for r in runs])
    assert list(iops.error_y.arrayminus) == pytest.approx([statistics.fmean(r) - min(r) for r in runs])
    assert iops.customdata[0] == "57,620 IOPS: mean of 3 runs, bar from 52,669 to 62,069 (lowest to highest)"
    assert fig.layout.yaxis.title.text == "IOPS · mean; bar: min–max of the runs"
    # The latency chart too: one group per test, not one bar per run.
    latency = charts.latency_chart(Run.from_dict(doc))
    read_mean = next(tr for tr in latency.data if tr.name == "read mean")
    assert list(read_mean.x) == ids
    means = [statistics.fmean(t["read"]["lat_mean_us"] / 1000 for t in doc["tests"] if t["id"] == i) for i in ids
             if any(t["read"]["ios"] for t in doc["tests"] if t["id"] == i)]
    assert [y for y in read_mean.y if y is not None] == pytest.approx(means)
    assert latency.layout.yaxis.title.text == "latency, ms · mean; bar: min–max of the runs"


def test_ten_saturation_rows_have_ten_distinct_looks():
    doc = json.loads((RUNS.parent / "saturate" / "matrix-4k-randread.json").read_text())
    doc["methodology"]["saturate"] = {}
    # The recorded 1-job row as rows of 1…10 jobs (ids made distinct): the chart's ten lines.
    one_job = [t for t in doc["tests"] if t["params"]["jobs"] == 1]
    doc["tests"] = [dict(t, id=f"{t['id']}-{jobs}", params=dict(t["params"], jobs=jobs))
                    for jobs in range(1, 11) for t in one_job]
    sat, _ = sweep_of_run(Run.from_dict(doc))
    fig = saturation_chart(sat)
    rows = [tr for tr in fig.data if tr.xaxis == "x" and tr.name.endswith(("job", "jobs"))]
    assert len(rows) == 10
    assert len({tr.line.color for tr in rows}) == 10  # more than Okabe-Ito's eight
    assert len({(tr.line.dash, tr.marker.symbol) for tr in rows}) == 10  # and told apart without colour
    assert len({tuple(charts.series_style(i).values()) for i in range(420)}) == 420


def test_latency_chart_shows_the_runs_tail_percentile_in_ms():
    doc = load("qd-sweep")
    doc["methodology"]["percentile"] = "p99.9"
    fig = charts.latency_chart(Run.from_dict(doc))
    names = [tr.name for tr in fig.data]
    assert names == ["read mean", "read p95", "read p99.9"]  # a read-only run: no write bars
    first = doc["tests"][0]
    assert fig.data[2].y[0] == pytest.approx(first["read"]["lat_p99_9_us"] / 1000)
    assert fig.layout.yaxis.title.text == "latency, ms"
    # The statistic is told by the bar pattern as well as the legend, not by colour alone.
    assert [tr.marker.pattern.shape for tr in fig.data] == ["", "/", "x"]


def test_host_chart_marks_the_straggler_of_an_uneven_fleet():
    doc = load("fleet-uneven")
    test = next(t for t in doc["tests"] if len(t["hosts"]) > 1)
    fig = charts.host_chart(TestRecord.from_dict(test))
    bars = fig.data[0]
    iops = dict(zip(bars.x, bars.y))
    median = statistics.median(iops.values())
    slow = {h for h, v in iops.items() if v < 0.8 * median}
    assert slow, "the recorded fleet has a straggler (h4 on disk beside tmpfs hosts)"
    marked = {h for h, text in zip(bars.x, bars.text) if text == "straggler"}
    assert marked == slow
    assert charts.host_chart(TestRecord.from_dict(load("qd-sweep")["tests"][0])) is None  # one host: no chart


def test_percentile_curve_follows_the_merged_bins():
    # 90 IOs at 100 us, 9 at 1 ms, 1 at 10 ms: p90 = 0.1 ms, p99 = 1 ms, the last bin is p100.
    x, y = charts.percentile_curve({"100000": 90, "1000000": 9, "10000000": 1})
    assert y == [0.1, 1.0]
    assert x == pytest.approx([1.0, 2.0])  # -log10(1 - p): 90 % → 1, 99 % → 2
    assert charts.percentile_curve(None) == ([], [])
    assert math.isclose(charts._nines(0.999), 3)


# Per-round latency, as the run study stores it (methodology.latency_rounds, ns): rounds of 2 s.
def latency_rounds() -> dict:
    return {"round_s": 2, "start_s": [0, 2, 4, 6, 8, 10, 12], "end_s": [2, 4, 6, 8.001, 10, 12, 14],
            "fleet": {"p50": [100_000, 110_000, 120_000, None, 120_000, 118_000, 119_000],
                      "p99": [900_000, 1_000_000, 1_100_000, None, 950_000, 940_000, 960_000],
                      "p99.9": [2_000_000, 2_500_000, 3_000_000, None, 2_100_000, 2_050_000, 2_000_000],
                      "iops": [9000, 9500, 9700, None, 9800, 9750, 9790]},
            "hosts": {h: {"p50": [k * 100_000] * 7, "p99": [k * 1_000_000] * 7, "p99.9": [k * 2_000_000] * 7,
                          "iops": [4500] * 7} for h, k in (("h2", 2), ("h1", 1))}}


def steady_dict(until: str = "steady", steady: bool = True, rounds: dict | None = None) -> dict:
    test = load("qd-sweep")["tests"][0]
    verdict = test["methodology"]["steady"]["iops"]
    verdict.update(steady=steady, start_s=4 if steady else None, end_s=14 if steady else None)
    window = {"start_s": 4, "end_s": 14, "steady": steady, "iops": 9700.0, "bw_bytes_s": 9700 * 4096.0,
              "lat_mean_ns": 110_000.0, "read": dict(test["read"], iops=9700.0, lat_p99_us=960.0),
              "write": dict(test["write"]), "all": dict(test["all"], iops=9700.0, bw_mb_s=39.7, lat_p99_us=960.0)}
    test["methodology"].update(until=until, window=window, latency_rounds=rounds or latency_rounds())
    test["fleet"] = {"hosts": ["h1", "h2"], "skew": None, "groups": {}}
    return test


def steady_test(until: str = "steady", steady: bool = True, rounds: dict | None = None) -> TestRecord:
    return TestRecord.from_dict(steady_dict(until, steady, rounds))


def test_latency_rounds_chart_draws_each_rounds_percentiles_at_its_end():
    fig = charts.latency_rounds_chart(steady_test(), "t")
    fleet = fig.data[:3]
    assert [tr.name for tr in fleet] == ["p50", "p99", "p99.9"]
    assert list(fleet[0].x) == [2, 4, 6, 8.001, 10, 12, 14]  # round ends, s from the start of the measured part
    assert list(fleet[1].y) == [0.9, 1.0, 1.1, None, 0.95, 0.94, 0.96]  # ms; a round without data is a gap
    assert list(fleet[2].y)[2] == 3.0
    assert [tr.line.dash for tr in fleet] == ["solid", "dash", "dot"]  # told apart without colour
    assert fig.layout.yaxis.type == "log"
    # The steady window (4-14 s) shaded as on the per-second chart.
    [band] = fig.layout.shapes
    assert (band.x0, band.x1) == (4, 14)
    assert fig.layout.annotations[0].text == "steady window (SNIA)"
    # Beside the per-second chart, it counts from the start of the test too: its warm-up (here 3 s) first.
    shifted = charts.latency_rounds_chart(steady_test(), "t", offset=3.0)
    assert list(shifted.data[0].x) == [x + 3.0 for x in fleet[0].x]
    assert (shifted.layout.shapes[0].x0, shifted.layout.shapes[0].x1) == (7, 17)
    assert shifted.layout.xaxis.title.text.startswith("seconds from the start of the test")


def test_latency_rounds_chart_picks_a_host_in_a_dropdown():
    fig = charts.latency_rounds_chart(steady_test())
    # Fleet first, then the hosts in the inventory's order; only the fleet's lines show at first.
    assert [tr.name for tr in fig.data[3:]] == ["h1 p50", "h1 p99", "h1 p99.9", "h2 p50", "h2 p99", "h2 p99.9"]
    assert [tr.visible for tr in fig.data] == [True] * 3 + [False] * 6
    assert list(fig.data[7].y) == [2.0] * 7  # h2's p99
    [menu] = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["fleet (all hosts)", "h1", "h2"]
    assert menu.buttons[2].args[0]["visible"] == [False] * 6 + [True] * 3


def test_latency_rounds_chart_of_one_host_has_no_dropdown_and_old_results_have_no_chart():
    rounds = latency_rounds()
    rounds["hosts"] = {}  # one host: the fleet is that host
    del rounds["end_s"]  # without the rounds' ends: start + round
    fig = charts.latency_rounds_chart(steady_test(rounds=rounds))
    assert len(fig.data) == 3 and not fig.layout.updatemenus
    assert list(fig.data[0].x) == [2, 4, 6, 8, 10, 12, 14]
    old = load("qd-sweep")["tests"][0]
    assert "latency_rounds" not in old["methodology"] and charts.latency_rounds_chart(TestRecord.from_dict(old)) is None


def test_only_an_until_steady_test_has_its_last_five_rounds_marked():
    unsteady = charts.latency_rounds_chart(steady_test(steady=False))
    assert [(s.x0, s.x1) for s in unsteady.layout.shapes] == [(4, 14)]
    assert unsteady.layout.annotations[0].text == "last 5 rounds (not steady)"
    # A fixed-time test's figures are the whole test: its last rounds are not marked.
    assert not charts.latency_rounds_chart(steady_test(until="time", steady=False)).layout.shapes


def test_overview_charts_show_a_steady_tests_window_figures_as_the_summary_does():
    doc = load("qd-sweep")
    doc["tests"][0] = steady_dict()
    whole = doc["tests"][1]["all"]["iops"]
    iops = [y for fig in charts.block_size_charts(Run.from_dict(doc)) for tr in fig.data if tr.xaxis == "x" for y in tr.y]
    assert 9700.0 in iops and whole in iops
    latency = charts.latency_chart(Run.from_dict(doc))
    tail = next(tr for tr in latency.data if tr.name == "read p99")
    assert tail.y[0] == 0.96 and tail.y[1] == doc["tests"][1]["read"]["lat_p99_us"] / 1000
    # A fixed-time test with a window keeps its whole-test figures.
    doc["tests"][0] = steady_dict(until="time")
    assert charts.latency_chart(Run.from_dict(doc)).data[2].y[0] == load("qd-sweep")["tests"][0]["read"]["lat_p99_us"] / 1000
    # The percentile curve is the whole test's (bins of the whole measured part): its title says so.
    test = steady_dict()
    test["read"]["lat_bins_ns"] = {"100000": 90, "1000000": 10}
    assert charts.percentile_chart(TestRecord.from_dict(test), "t").layout.title.text == "Latency percentiles · t · whole measured part"
