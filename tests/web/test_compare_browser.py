"""The comparison page of recorded real runs, opened in Chromium: every
chart drawn from the comparison's own numbers, nothing fetched."""

import json
from pathlib import Path

import pytest

from iofleet.analysis.compare import Config, compare
from iofleet.report.html import compare_page

from ..browser import open_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "compare"

# The % change bars of the IOPS chart, as plotly holds them in the page.
IOPS_CHANGE = ("[...document.querySelectorAll('.js-plotly-plot')]"
               ".filter(c => c.layout.title.text.startsWith('IOPS: % change'))"
               ".map(c => c.data.map(t => ({name: t.name, y: [...t.y], text: [...t.text]})))[0]")


def config(name: str, *ids: int) -> Config:
    return Config(name, [json.loads((FIXTURES / f"run{i}.json").read_text()) for i in ids])


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
    for text in ("Comparison against libaio-qd4", "Winners per test and metric", "Welch", "within noise"):
        assert text in seen.text
