"""The Results and Compare pages in Chromium, as a user goes through them:
filter the list, open a result (every chart drawn), download its report,
tick two runs and compare them against a chosen baseline. User text (a
label made of markup) stays text: no dialog ever opens."""

from urllib.parse import urlencode

import pytest

from ..browser import Seen, browser_page, screenshot
from ..webserver import start_server
from .results_store import HOSTILE, stored_runs

pytestmark = pytest.mark.integration

# Functions, not expressions: the pages' CSP forbids the eval Playwright would poll an expression with.
CHARTS_DRAWN = ("() => document.querySelectorAll('.chart').length > 0 && document.querySelectorAll('.chart').length === "
                "document.querySelectorAll('.chart.js-plotly-plot').length")
EMPTY_CHARTS = ("[...document.querySelectorAll('.js-plotly-plot')]"
                ".filter(c => c.querySelectorAll('.trace, .bars .point').length === 0).map(c => c.id)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start_server(stored_runs(tmp_path_factory))
    yield s
    s.stop()


def charts(page) -> int:
    """Wait until plotly has drawn every chart of the page; their number (none empty)."""
    page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
    assert page.evaluate(EMPTY_CHARTS) == []
    return page.locator(".js-plotly-plot").count()


def rows(page) -> list[str]:
    return page.locator("#runs-table tr[data-run]").evaluate_all("rs => rs.map(r => r.dataset.run)")


def test_results_result_and_compare_pages(server, tmp_path):
    seen, dialogs = Seen(), []
    with browser_page(seen) as page:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

        # The list, then filtered by label and by status (htmx swaps the table and keeps the URL in step).
        page.goto(server.url + "/results")
        assert rows(page) == ["3", "2", "1"]
        assert HOSTILE in page.inner_text("#runs-table"), "a label made of markup shows as text"
        screenshot(page, "web-results.png")
        page.fill("input[name=label]", "alp")
        page.press("input[name=label]", "Enter")
        page.wait_for_function("() => document.querySelectorAll('#runs-table tr[data-run]').length === 1")
        assert rows(page) == ["1"] and "label=alp" in page.url
        page.fill("input[name=label]", "")
        page.select_option("select[name=status]", "interrupted")
        page.wait_for_function("() => document.querySelector('#runs-table tr[data-run]').dataset.run === '3' && "
                               "document.querySelectorAll('#runs-table tr[data-run]').length === 1")
        page.select_option("select[name=status]", "")
        page.wait_for_function("() => document.querySelectorAll('#runs-table tr[data-run]').length === 3")

        assert not [r for r in seen.requests if "plotly" in r]  # the list draws no chart: no plotly.js
        # A finished result: the report's tables and every chart, and its downloads.
        page.click("#runs-table tr[data-run='1'] td.text a")
        page.wait_for_url("**/results/1")
        # IOPS and MB/s by block size, latency per test, the test's percentiles (and its per-second
        # series when fio logged two seconds or more of its 1 s run: it varies).
        assert charts(page) == page.locator("script[data-chart]").count() >= 3
        text = page.inner_text("main")
        for part in ("Run 1 · webres-a", "Plan and environment", "Summary", "Diagnostics", "Raw files",
                     "4k-r100-rand-j1-qd4", "job.fio", "fio-output.json"):
            assert part in text
        screenshot(page, "web-result.png")
        with page.expect_download() as download:
            page.click("#dl-report")
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.name == "report-1.html" and saved.read_text().startswith("<!DOCTYPE html>")

        # The run labelled with markup: its page shows the label as it was written.
        page.goto(server.url + "/results/2")
        charts(page)
        assert HOSTILE in page.inner_text("main")

        # Tick runs 1 and 2 on the list, compare (the oldest is the baseline), then make run 2 the baseline.
        page.goto(server.url + "/results")
        page.check("#runs-table tr[data-run='1'] input[type=checkbox]")
        page.check("#runs-table tr[data-run='2'] input[type=checkbox]")
        page.click("#compare-picked")
        page.wait_for_url("**/compare?runs=2&runs=1")
        charts(page)
        assert page.inner_text("h1") == "Comparison against run 1"  # the oldest, though listed second
        # One run a side: no whiskers (no spread, no interval), and the title says why.
        assert page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                             ".every(c => c.data.every(t => !t.error_y || t.error_y.visible === false))")
        assert page.locator("text=no interval: fewer than 3 samples a side").count() >= 1
        page.click("#pick-section summary")
        page.select_option("#baseline", "2")
        page.click("#compare")
        page.wait_for_url("**baseline=2**")
        assert charts(page) == 2 * 6  # value and % change per metric (IOPS, MB/s, 3 read latencies, CPU)
        assert page.inner_text("h1") == "Comparison against run 2"
        table = page.locator("table:below(#metric-1)").first.inner_text()
        assert "run 1 vs run 2" in table and "%" in table and "not enough repeats" in table
        screenshot(page, "web-compare.png")

        # By label, with the markup label as a configuration: its name is text in tables and charts.
        page.goto(server.url + "/compare?" + urlencode({"runs": ["alpha", HOSTILE], "baseline": "alpha"}, doseq=True))
        charts(page)
        assert f"{HOSTILE} vs alpha" in page.inner_text("main")
        assert page.is_checked("input[name=runs][value='alpha']")

        # An impossible comparison is a message on the page.
        page.goto(server.url + "/compare?runs=1")
        assert "compare needs at least two configurations" in page.inner_text("#compare-error")

    assert dialogs == [] and seen.errors == []
    assert all(r.startswith(server.url) for r in seen.requests), "nothing is fetched from elsewhere"
