"""The Run page in the distribution's Chromium, over a real `iofleet serve`
running real fio: start a saved plan, watch it live, reload the page in the
middle (it reattaches), stop a second run, open the finished result."""


import pytest

from ..browser import Seen, browser_page, screenshot
from ..webserver import save_plan

pytestmark = pytest.mark.integration

PLAN = """name: web-live
defaults: {size: 16m, ramp: 1s, runtime: 3s, iodepth: 4}
workloads:
  - name: rand
    matrix: {bs: [4k, 64k], read_pct: [100]}
"""
LONG = """name: web-long
defaults: {size: 16m, ramp: 1s, runtime: 120s}
workloads:
  - name: rand
    matrix: {bs: [4k, 8k], read_pct: [100]}
"""



def samples(page) -> int:
    return int(page.get_attribute("#live-section", "data-samples") or 0)


def start(page, url: str, plan: str, target, label: str = "") -> None:
    """Start a saved plan from the Run page, as a user would."""
    page.goto(url + "/run")
    page.select_option("#plan", plan)
    page.fill("#targets", str(target))
    page.fill("#label", label)
    page.click("#start")


def test_start_watch_reattach_and_open_the_result(server, disk):
    client = server.client()
    save_plan(client, PLAN)
    seen = Seen()
    with browser_page(seen) as page:
        start(page, server.url, "web-live", disk, label="from-the-page")
        page.wait_for_selector("#live-section:not([hidden])")
        # Live figures arrive every second: the chart gets points and the ETA falls.
        page.wait_for_function("() => Number(document.querySelector('#live-section').dataset.samples || 0) >= 2",
                               timeout=20_000)
        assert page.locator("#live-iops .trace").count() == 1, "one line per host: here, local"
        # MB/s per host too, from the same live events as IOPS.
        mbs = page.evaluate("() => document.querySelector('#live-mbs').data.map(t => t.y.filter(v => v > 0).length)")
        assert mbs and mbs[0] >= 1, mbs
        assert "IOPS" in page.inner_text("#run-figures")
        assert "of 2:" in page.inner_text("#run-test")
        screenshot(page, "web-run-live.png")

        # Closing or reloading the page does not stop the run; the page reattaches.
        page.reload()
        page.wait_for_selector("#live-section:not([hidden])")
        page.wait_for_function("() => document.querySelector('#run-message') && !document.querySelector('#run-message').hidden",
                               timeout=60_000)
        message = page.inner_text("#run-message")
        assert message == "Run 1 complete."
        assert page.locator("#run-results tr").count() == 1 + 2
        assert "4k-r100-rand-j1-qd4" in page.inner_text("#run-results")
        assert samples(page) >= 2, "the replayed stream redraws the chart"
        screenshot(page, "web-run-done.png")

        page.click("#run-result")
        page.wait_for_url("**/results/1")

        # A second run from the page that shows the first one's end: nothing of run 1 stays on it.
        page.goto(server.url + "/run")
        page.wait_for_function("() => !document.querySelector('#run-message').hidden", timeout=20_000)
        assert page.locator("#run-results tr").count() == 1 + 2
        page.wait_for_function("() => document.querySelector('#run-figures').textContent.includes('IOPS')")
        before = page.inner_text("#run-figures")  # run 1's last live figures
        page.select_option("#plan", "web-live")
        page.fill("#targets", str(disk))
        page.fill("#label", "from-the-page")
        page.click("#start")
        page.wait_for_function("() => document.querySelector('#run-id').textContent === '2'", timeout=20_000)
        now = page.evaluate("() => ({samples: Number(document.querySelector('#live-section').dataset.samples), "
                            "figures: document.querySelector('#run-figures').textContent, "
                            "rows: document.querySelectorAll('#run-results tr').length, "
                            "message: document.querySelector('#run-message').hidden})")
        assert now["rows"] == 1 and now["message"], now  # run 1's results and its "complete" are gone
        assert now["figures"] != before and (now["samples"] > 0 or now["figures"] == ""), now  # run 2's only
        page.wait_for_function("() => !document.querySelector('#run-message').hidden", timeout=60_000)
        assert page.inner_text("#run-message") == "Run 2 complete."
        assert page.locator("#run-results tr").count() == 1 + 2
    assert seen.errors == []

    status = client.get("/api/runs/current").json()
    assert status["status"] == "complete" and status["label"] == "from-the-page"
    assert [r["status"] for r in status["results"]] == ["ok", "ok"]
    assert all(r["iops"] > 0 for r in status["results"])


def test_stop_button_stops_fio_and_keeps_the_run(server, disk):
    client = server.client()
    save_plan(client, LONG)
    seen = Seen()
    with browser_page(seen) as page:
        start(page, server.url, "web-long", disk)
        page.wait_for_function("() => Number(document.querySelector('#live-section').dataset.samples || 0) >= 1",
                               timeout=30_000)
        page.click("#stop")
        page.wait_for_function("() => !document.querySelector('#run-message').hidden", timeout=30_000)
        assert page.inner_text("#run-message") == "Run 1 interrupted."
        # The bar shows what ran (1 of 2 tests), not 100 %.
        assert page.get_attribute("#run-progress", "data-share") == "0.5"
        assert page.inner_text("#run-test") == "1 of 2 ran"
        screenshot(page, "web-run-stopped.png")
    assert seen.errors == []
    status = server.wait_run(client, timeout=30)
    assert status["status"] == "interrupted"
    assert status["tests_done"] == 1, "the test that was stopped is stored; the second never started"
    assert status["elapsed_s"] < 60, "fio stopped long before its 120 s runtime"
