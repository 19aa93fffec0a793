"""The curve's analysis, table, notes and chart on a real recorded curve run
(tests/fixtures/runs/curve.json: a sweep found 77,593 IOPS at jobs 1 ×
iodepth 16, then fixed rates at 10..90 % and 150 % of it), and the
study's settings refused in one line."""

import json
from pathlib import Path

import pytest

from iofleet.analysis.curve import REACHED_SHARE, curve_of_run, even_loads, load_rule
from iofleet.errors import IofleetError
from iofleet.report.curve import COLUMNS, curve_chart, curve_lines, curve_rows, curve_title
from iofleet.results.model import Run
from iofleet.studies.curve import Curve, parse_loads

DOC = json.loads((Path(__file__).parents[1] / "fixtures" / "runs" / "curve.json").read_text())
RUN = Run.from_dict(DOC)


def test_the_points_of_a_recorded_curve():
    curve = curve_of_run(RUN)
    assert (curve.jobs, curve.iodepth, round(curve.max_iops)) == (1, 16, 77593)
    assert [round(p.load_pct) for p in curve.points] == [10, 30, 50, 70, 90, 150]
    assert [p.target_iops for p in curve.points] == [t["params"]["rate_iops"] for t in DOC["tests"]]
    for p, t in zip(curve.points, DOC["tests"]):
        assert p.iops == t["all"]["iops"] and p.p99_9_us == t["all"]["lat_p99_9_us"]  # until: time: the whole test
    # Below the maximum fio keeps the pace; beyond it the storage cannot.
    assert [p.reached for p in curve.points] == [True] * 5 + [False]
    beyond = curve.points[-1]
    assert beyond.iops < REACHED_SHARE * beyond.target_iops and beyond.achieved_pct == pytest.approx(58.8, abs=0.1)
    assert curve.missed == [beyond]
    assert curve_of_run(Run.from_dict({"methodology": {}, "tests": []})) is None  # not a curve run


def test_the_table_and_notes_mark_the_missed_point_with_achieved_over_target():
    curve = curve_of_run(RUN)
    rows = curve_rows(curve)
    assert list(rows[0]) == list(COLUMNS)
    assert rows[0] == {"load %": "10", "target IOPS": "7,759", "achieved IOPS": "7,755", "MB/s": "31.8",
                       "p50 ms": "0.062", "p99 ms": "0.109", "p99.9 ms": "0.264", "reached": "yes"}
    assert rows[-1]["reached"] == "◀ 58 %"
    assert [r["reached"] for r in rows[:-1]] == ["yes"] * 5
    lines = curve_lines(curve)
    assert lines[0] == ("Most IOPS: 77,593 at jobs 1 × iodepth 16 (saturate run 1); loads as given: 10 %, 30 %, "
                        "50 %, 70 %, 90 %, 150 % of the most IOPS.")
    assert lines[-1].startswith("1 of 6 points did not reach their target rate (150 % load: 68,404/116,389 IOPS "
                                "achieved)")
    assert curve_title(curve) == "latency against load: 4k 100% read random, jobs 1 × iodepth 16"


def test_the_hockey_stick_chart():
    curve = curve_of_run(RUN)
    fig = curve_chart(curve)
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert list(lines) == ["p50", "p99", "p99.9"]
    p99 = lines["p99"]
    # The lines join the points that reached their target; the missed one is a marker off them.
    assert list(p99.x) == [p.iops for p in curve.points[:5]]
    assert list(p99.y) == [p.p99_us / 1000 for p in curve.points[:5]]  # ms
    off = [t for t in fig.data if t.name == "p99" and t.mode == "markers"]
    assert [list(t.x) for t in off] == [[curve.points[5].iops]] and off[0].marker.symbol == "x-open"
    assert fig.layout.yaxis.type == "log"  # p50 and p99.9 both readable
    [missed] = [t for t in fig.data if t.name == "missed its target"]
    assert list(missed.text) == ["68,404/116,389"]
    assert fig.layout.shapes[0].x0 == curve.max_iops  # the maximum's line
    assert curve_chart(curve_of_run(Run.from_dict(DOC | {"tests": []}))) is None


def test_the_loads_rule():
    assert even_loads(4) == [25.0, 50.0, 75.0, 100.0] and even_loads(3) == [33.3, 66.7, 100.0]
    assert load_rule(even_loads(10), False) == "10 loads evenly spaced: k/10 of the most IOPS, k = 1..10"
    assert parse_loads("90, 10,50%,10") == [10.0, 50.0, 90.0]


@pytest.mark.parametrize("make,message", [
    (lambda: parse_loads("10,x"), "--loads 10,x: give shares of the most IOPS in %"),
    (lambda: parse_loads(" , "), "--loads: give at least one share"),
    (lambda: Curve(loads=[0]), "--loads 0: a load is a share of the most IOPS above 0"),
    (lambda: Curve(loads=[5000]), "--loads 5000: a load is a share"),
    (lambda: Curve(points=0), "--points 0: allowed 1 to 50"),
])
def test_settings_are_refused_in_one_line(make, message):
    with pytest.raises(IofleetError) as exc:
        make()
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_the_html_report_and_the_web_result_page_show_the_curve():
    """report.html.j2 (which the web result page extends) gets a "Latency
    against load" section for a curve run: the chart, one row per point, the
    missed point marked."""
    from iofleet.report.html import run_report_html

    from .terminal_runs import recorded_run

    run, _ = recorded_run("curve")
    html = run_report_html(run, {})
    section = html[html.index('<h2 id="curve">'):html.index('<h2 id="charts">')]
    assert 'id="curve-chart"' in section
    assert section.count("<tr") == 1 + len(run.tests) and "missed" in section
    plain, _ = recorded_run("buffered")
    assert '<h2 id="curve">' not in run_report_html(plain, {})
