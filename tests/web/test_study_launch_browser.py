"""The Run page starts every study, in Chromium over a real `iofleet serve`
running real fio: a saturate sweep, a curve (its sweep, then its
fixed-rate tests: two runs followed on one page), Easy Run and a scenario
that stops a process, each through Validate first; settings and scenarios
the page cannot run are refused at Validate, one line each."""

import subprocess
import sys

import pytest
import yaml

from ..browser import Seen, browser_page, screenshot

pytestmark = pytest.mark.integration

# Cells and points of a second: the studies' own logic, not their durations, is under test.
QUICK = {"runtime": "1s", "ramp": "0s", "size": "8m"}
SWEEP = QUICK | {"max_jobs": "1", "max_iodepth": "2"}


def pick(page, study: str, settings: dict, target) -> None:
    page.select_option("#study", study)
    for name, value in settings.items():
        field = page.locator(f"#set-{study}-{name}")
        if isinstance(value, bool):
            field.set_checked(value)
        else:
            field.fill(value)
    page.fill("#targets", str(target))


def validate(page) -> dict:
    """Validate's lines, check name → its line; waits for the verdict."""
    page.click("#validate")
    page.wait_for_function("() => !document.querySelector('#checks').hidden")
    return {li.get_attribute("data-check"): li.inner_text() for li in page.locator("#checks li").all()}


def run_to_end(page, run_id: int, timeout_s: float = 120) -> str:
    """Start, and wait for the study's last run to end; the page's closing message."""
    page.click("#start")
    page.wait_for_function(f"() => document.querySelector('#run-id').textContent === '{run_id}' && "
                           f"!document.querySelector('#run-message').hidden && "
                           f"!document.querySelector('#run-message').textContent.includes('goes on')",
                           timeout=timeout_s * 1000)
    return page.inner_text("#run-message")


def test_every_study_starts_from_the_run_page(server, disk):
    client = server.client()
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "iofleet-web-victim"])
    seen = Seen()
    try:
        with browser_page(seen) as page:
            page.goto(server.url + "/run")

            # A setting the study refuses: one line at Validate, and Start waits for a good one.
            pick(page, "saturate", SWEEP | {"bs": "1000"}, disk)
            checks = validate(page)
            assert checks == {"settings": "✗ settings: workload 'saturate': bs 1000 is not a multiple of 512 bytes"}, checks
            assert page.is_disabled("#start")

            # saturate: Validate checks the sweep's own targets and data, then it runs as one run.
            page.fill("#set-saturate-bs", "4k")
            checks = validate(page)
            assert checks["study"].startswith("✓ study: saturate: a sweep of jobs × iodepth up to 2 IOs"), checks
            assert checks["targets"].startswith("✓ targets:") and not page.is_disabled("#start"), checks
            assert run_to_end(page, 1) == "Run 1 complete."
            assert page.inner_text("#run-study").startswith("saturate: a sweep")
            assert page.locator("#run-results tr").count() >= 1 + 2  # 1 × 1 and 1 × 2, maybe repeated

            # curve: its sweep (run 2), then its fixed-rate tests (run 3), followed on one page.
            pick(page, "curve", SWEEP | {"points": "2"}, disk)
            assert validate(page)["study"] == ("✓ study: curve: a saturate sweep for the most IOPS, then 2 "
                                               "fixed-rate tests up to it")
            assert run_to_end(page, 3) == "Run 3 complete."
            assert page.get_attribute("#live-section", "data-ran-on") == "2", "run 2's end said the study goes on"
            assert page.locator("#run-results tr").count() == 1 + 2, "only the curve's two points: run 2's are gone"
            assert "its runs: 2, 3" in page.inner_text("#run-study")
            screenshot(page, "web-study-curve.png")

            # A curve from a stored sweep: Validate previews its fixed-rate tests, and knows a run that is none.
            page.fill("#set-curve-from_run", "1")
            checks = validate(page)
            assert checks["study"].startswith("✓ study: curve: the most IOPS of saturate run 1, "), checks
            assert checks["plan"] == "✓ plan: curve: 2 tests", checks
            page.fill("#set-curve-from_run", "4")
            assert validate(page)["settings"].startswith("✗ settings: no run 4 in ")
            page.fill("#set-curve-from_run", "")

            # Easy Run without its probe: the four profiles in one run.
            pick(page, "easy-run", QUICK | {"probe": False}, disk)
            assert run_to_end(page, 4) == "Run 4 complete."
            assert page.locator("#run-results tr").count() == 1 + 4

            # A scenario that runs a command is the terminal's to run (--yes after reading it).
            page.select_option("#study", "scenario")
            page.fill("#scenario-yaml", yaml.safe_dump({"name": "cmd", "load": {"runtime": "2s"}, "events": [
                {"at": "1s", "fault": "run", "command": "true", "for": "1s"}]}))
            checks = validate(page)
            assert list(checks) == ["settings"] and "the web UI does not run commands" in checks["settings"], checks
            # A scenario whose faults iofleet makes itself: a process stopped for a second under the load.
            page.fill("#scenario-yaml", yaml.safe_dump({"name": "stopped", "load": {
                "bs": "4k", "iodepth": 2, "rate_iops": 500, "size": "8m", "runtime": "4s", "ramp": "0s"},
                "events": [{"at": "1s", "fault": "process-stop", "pattern": "iofleet-web-victim", "for": "1s"}]}))
            assert run_to_end(page, 5) == "Run 5 complete."
            screenshot(page, "web-study-scenario.png")
        assert seen.errors == []
    finally:
        victim.kill()
        victim.wait()

    runs = {r["id"]: r for r in client.get("/api/results").json()}
    assert [runs[i]["kind"] for i in range(1, 6)] == ["saturate", "saturate", "curve", "run", "scenario"], runs
    assert [runs[i]["status"] for i in range(1, 6)] == ["complete"] * 5
    event = client.get("/api/results/5").json()["methodology"]["scenario"]["events"][0]
    assert event["applied_s"] is not None and event["undone_s"] is not None and not event["error"], event
