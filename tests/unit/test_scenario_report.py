"""A scenario's summary lines and chart, from a record stored by a real
fleet run (tests/fleet/test_scenario_fleet.py's scenario: link-slow on h1,
then host-down on h2)."""

import json
from dataclasses import replace
from pathlib import Path

from iofleet.report.scenario import scenario_chart, scenario_lines, scenario_record
from iofleet.results.methodology import RunMethodology, ScenarioRecord

RECORD = json.loads((Path(__file__).parent.parent / "fixtures/scenario/fleet-faults.json").read_text())


def test_the_summary_names_baseline_each_event_with_its_change_and_the_lost_host():
    lines = scenario_lines(ScenarioRecord.from_dict(RECORD))
    assert lines[0] == "Scenario fleet-faults (times on fio's clock: its jobs began 1.7 s after iofleet's timeline):"
    assert lines[1] == "  baseline (first 1 s): 31,199 IOPS, p99 0.15 ms"
    assert lines[2].startswith("  link-slow h1 at 3s for 1s, measured 1.5–2.4 s: 33,703 IOPS (+8.0 %)")
    assert lines[3] == ("  host-down h2 at 5s, measured 3.6–7.6 s: 13,778 IOPS (-55.8 %), p99 0.16 ms (+2.6 %); "
                        "not back within ±10 % of baseline IOPS for 3 s by the end")
    assert lines[4] == "  hosts lost: h2 (their data kept up to the loss)"


def test_a_failed_event_says_why():
    record = json.loads(json.dumps(RECORD))
    record["events"][0]["error"] = "h1: link-slow could not be applied: no interface has the address 10.0.0.1"
    record["impact"]["events"] = record["impact"]["events"][1:]
    lines = scenario_lines(ScenarioRecord.from_dict(record))
    assert lines[2] == ("  link-slow h1 at 3s for 1s: not applied: h1: link-slow could not be applied: no interface "
                        "has the address 10.0.0.1")
    assert lines[3].startswith("  host-down h2 at 5s, measured 3.6–7.6 s")


def test_the_chart_has_the_series_per_host_and_the_events_on_the_time_axis():
    fig = scenario_chart(ScenarioRecord.from_dict(RECORD))
    names = [t.name for t in fig.data]
    assert names == ["IOPS (all hosts)", "IOPS h1", "IOPS h2", "p99 latency"]
    assert list(fig.data[0].y) == RECORD["impact"]["series"]["iops"]
    texts = [a.text for a in fig.layout.annotations]
    # Each event says when the file put it and, where it has an end, when it was in place on the axis's clock.
    assert texts == ["baseline", "link-slow h1 (at 3s in the file): in place 1.5–2.4 s",
                     "host-down h2 (at 5s in the file)"]
    spans = [(s.x0, s.x1) for s in fig.layout.shapes if s.type == "rect"]
    assert spans == [(0, 1.48), (1.48, 2.42)]  # baseline, then the link's slow second
    (line,) = [s for s in fig.layout.shapes if s.type == "line"]
    assert line.x0 == 3.62  # the host lost for good: a line, not a span
    record = ScenarioRecord.from_dict(RECORD)
    assert scenario_record(RunMethodology(scenario=record)) is record and scenario_record(None) is None
    assert scenario_chart(ScenarioRecord.from_dict({"name": "x", "events": [], "impact": None})) is None


def test_the_html_report_and_the_web_result_page_show_the_scenario():
    """report.html.j2 (which the web result page extends) gets a Scenario
    section: the chart, the impact lines and one row per event."""
    from markupsafe import escape

    from iofleet.report.html import run_report_html

    from .terminal_runs import recorded_run

    run, _ = recorded_run("buffered")
    run.methodology = replace(run.methodology or RunMethodology(), scenario=ScenarioRecord.from_dict(RECORD))
    html = run_report_html(run, {})
    section = html[html.index('<h2 id="scenario">'):html.index('<h2 id="charts">')]
    assert 'id="scenario-chart"' in section
    assert all(str(escape(line)) in section for line in scenario_lines(ScenarioRecord.from_dict(RECORD)))
    assert section.count("<tr") == 1 + len(RECORD["events"]) and "link-slow" in section and "host-down" in section
    plain, _ = recorded_run("buffered")
    assert '<h2 id="scenario">' not in run_report_html(plain, {})


def test_each_impact_goes_with_its_own_event_by_index():
    """Impacts name their event: two events at one time, the first not applied, each line gets its own."""
    record = json.loads(json.dumps(RECORD))
    link, down = record["events"]
    down["at_s"] = link["at_s"]
    link["error"] = "h1: link-slow could not be applied: no interface has the address 10.0.0.1"
    hit = record["impact"]["events"][1]
    record["impact"]["events"] = [dict(hit, index=down["index"])]
    lines = scenario_lines(ScenarioRecord.from_dict(record))
    assert lines[2].startswith("  link-slow h1 at 3s for 1s: not applied")
    assert lines[3].startswith("  host-down h2 at 3s, measured 3.6–7.6 s")
    record["impact"]["events"] = [dict(hit, index=link["index"])]  # an impact of the failed one: not the other's
    assert "measured" not in scenario_lines(ScenarioRecord.from_dict(record))[3]
