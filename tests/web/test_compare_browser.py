"""The comparison page of recorded real runs, opened in Chromium: every
chart drawn from the comparison's own numbers, nothing fetched."""

import json
from pathlib import Path

import pytest

from iofleet.analysis.compare import Config, compare
from iofleet.report.html import compare_page
from iofleet.results.ingest import import_outputs
from iofleet.results.model import Run
from iofleet.results.store import Store

from ..browser import Seen, browser_page, open_page, screenshot
from ..webserver import start_server

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "compare"
FIO_OUTPUT = FIXTURES.parent / "fio" / "single-job-json+.json"

# The % change bars of the IOPS chart, as plotly holds them in the page.
IOPS_CHANGE = ("[...document.querySelectorAll('.js-plotly-plot')]"
               ".filter(c => c.layout.title.text.startsWith('IOPS: % change'))"
               ".map(c => c.data.map(t => ({name: t.name, y: [...t.y], text: [...t.text]})))[0]")


def config(name: str, *ids: int) -> Config:
    return Config(name, [Run.from_dict(json.loads((FIXTURES / f"run{i}.json").read_text())) for i in ids])


@pytest.mark.integration
def test_comparison_page_shows_changes_with_their_verdicts(tmp_path):
    cmp = compare([config("libaio-qd4", 1, 4, 7), config("psync", 2, 5, 8), config("libaio-qd4-again", 3, 6, 9)],
                  baseline="libaio-qd4")
    page = tmp_path / "compare.html"
    page.write_text(compare_page(cmp))
    seen = open_page(page, "compare.html.png", evaluate={"iops": IOPS_CHANGE})
    assert seen.errors == [] and seen.requests == [page.resolve().as_uri()]
    assert seen.empty_charts == []
    # Per metric with data: values and % change (9 metrics: IOPS, MB/s, 3 read and 3 write latencies, CPU).
    assert seen.charts == 2 * 9
    bars = {t["name"]: t for t in seen.values["iops"]}
    assert set(bars) == {"psync", "libaio-qd4-again"}
    test = cmp.tests[0]
    for name, t in bars.items():
        cell = test.row("iops").cell(name)
        assert t["y"][0] == pytest.approx(cell.pct_change)
        assert t["text"][0] == cell.verdict
    assert bars["psync"]["text"][0] == "worse" and bars["libaio-qd4-again"]["text"][0] == "within noise"
    for text in ("Comparison against libaio-qd4", "winner", "libaio-qd4-again = libaio-qd4", "Welch", "within noise"):
        assert text in seen.text
    assert "Rankings" not in seen.text and "Winners per test" not in seen.text  # said once, in the winner column


@pytest.mark.integration
def test_compare_page_offers_the_match_that_pairs_runs_of_other_queue_depths(tmp_path):
    """Two imports of one recorded fio output, the second as if run at iodepth 16: nothing matches
    by default; the page says so in one line, fills in the match that pairs them, and one click compares."""
    data, qd16 = tmp_path / "data", json.loads(FIO_OUTPUT.read_text())
    qd16["jobs"][0]["job options"]["iodepth"] = "16"
    (tmp_path / "qd16.json").write_text(json.dumps(qd16))
    with Store.open(data) as store:  # as `iofleet results import FILE --label L` stores them
        import_outputs(store, [FIO_OUTPUT], label="before")
        import_outputs(store, [tmp_path / "qd16.json"], label="qd16")
    server, seen = start_server(data), Seen()
    try:
        with browser_page(seen) as page:
            page.goto(server.url + "/compare?runs=before&runs=qd16")
            assert page.inner_text("#compare-error") == (
                "no test is in every configuration: they differ in iodepth (4 in before, 16 in qd16); to compare "
                "them, pair tests with --match bs,read_pct,random_pct,jobs")
            assert page.locator("table:below(#compare-error)").count() == 0  # no empty tables
            assert page.input_value("#match") == "bs,read_pct,random_pct,jobs"
            page.click("#compare")
            page.wait_for_url("**match=bs%2Cread_pct%2Crandom_pct%2Cjobs**")
            assert page.inner_text("h1") == "Comparison against before"
            text = page.inner_text("main")
            assert "before — baseline (the oldest picked)" in text and "qd16 vs before" in text
            assert "Tests matched by bs, read_pct, random_pct, jobs" in text
            assert page.input_value("#match") == "bs,read_pct,random_pct,jobs"
            screenshot(page, "web-compare-match.png")
    finally:
        server.stop()
    assert seen.errors == []
