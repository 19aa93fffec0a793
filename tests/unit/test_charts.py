"""Charts of recorded real runs: the numbers drawn are the run's numbers."""

import json
import math
import statistics
from pathlib import Path

import pytest

from iofleet.report import charts

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def load(name: str) -> dict:
    return json.loads((RUNS / f"{name}.json").read_text())


def test_block_size_charts_have_one_chart_per_read_mix_and_the_tests_figures():
    doc = load("big-blocks")
    figures = charts.block_size_charts(doc)
    mixes = {(t["params"]["read_pct"], t["params"]["random_pct"]) for t in doc["tests"] if t["status"] == "ok"}
    assert len(figures) == len(mixes)
    for fig in figures:
        iops_bars = [tr for tr in fig.data if tr.xaxis == "x"]
        mb_bars = [tr for tr in fig.data if tr.xaxis == "x2"]
        assert iops_bars and len(iops_bars) == len(mb_bars)
        for tr in iops_bars:
            for x, y in zip(tr.x, tr.y):
                assert x.endswith("k") or x.endswith("m")
                assert y > 0
    # Every ok test's IOPS appears in exactly one chart, at its block size.
    drawn = sorted(round(y, 3) for fig in figures for tr in fig.data if tr.xaxis == "x" for y in tr.y)
    assert drawn == sorted(round(t["all"]["iops"], 3) for t in doc["tests"] if t["status"] == "ok")
    assert all(fig.layout.yaxis.title.text == "IOPS" and "MB/s" in fig.layout.yaxis2.title.text for fig in figures)


def test_latency_chart_shows_the_runs_tail_percentile_in_ms():
    doc = load("qd-sweep")
    doc["methodology"]["percentile"] = "p99.9"
    fig = charts.latency_chart(doc)
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
    fig = charts.host_chart(test)
    bars = fig.data[0]
    iops = dict(zip(bars.x, bars.y))
    median = statistics.median(iops.values())
    slow = {h for h, v in iops.items() if v < 0.8 * median}
    assert slow, "the recorded fleet has a straggler (h4 on disk beside tmpfs hosts)"
    marked = {h for h, text in zip(bars.x, bars.text) if text == "straggler"}
    assert marked == slow
    assert charts.host_chart(load("qd-sweep")["tests"][0]) is None  # one host: no chart


def test_percentile_curve_follows_the_merged_bins():
    # 90 IOs at 100 us, 9 at 1 ms, 1 at 10 ms: p90 = 0.1 ms, p99 = 1 ms, the last bin is p100.
    x, y = charts.percentile_curve({"100000": 90, "1000000": 9, "10000000": 1})
    assert y == [0.1, 1.0]
    assert x == pytest.approx([1.0, 2.0])  # -log10(1 - p): 90 % → 1, 99 % → 2
    assert charts.percentile_curve(None) == ([], [])
    assert math.isclose(charts._nines(0.999), 3)
