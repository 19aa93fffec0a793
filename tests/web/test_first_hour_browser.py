"""The web UI's first hour, in Chromium over a real `iofleet serve`: the
examples offered on an empty store, "Run this plan", Validate before Start,
and a run started from the CLI on the same store followed live, with
Start disabled while it holds the store (real fio, two 1-s tests)."""

import os
import re
import subprocess
import sys
import time

import pytest
from playwright.sync_api import expect

from ..browser import Seen, browser_page, screenshot
from ..webserver import save_plan

pytestmark = pytest.mark.integration

CLI_PLAN = """name: from-the-cli
defaults: {size: 8m, ramp: 0s, runtime: 1s, iodepth: 2}
workloads:
  - name: rand
    matrix: {bs: [4k, 8k], read_pct: [100]}
"""



def test_first_hour(server, disk):
    """One server and one browser for both halves: each start is seconds of test time."""
    seen = Seen()
    with browser_page(seen) as page:
        examples_run_this_plan_and_validate(server, disk, page)
        a_cli_run_is_seen_live_with_start_disabled(server, disk, page)
    assert seen.errors == []


def examples_run_this_plan_and_validate(server, disk, page):
    # An empty store: both pages offer the project's examples.
    page.goto(server.url + "/run")
    expect(page.locator("#examples a.example", has_text="quick")).to_be_visible()
    page.goto(server.url + "/plans")
    page.click("#examples a.example:text-is('quick')")
    expect(page.locator("#plan-yaml")).to_have_value(re.compile("^name: quick$", re.MULTILINE))
    page.click("#save")
    expect(page.locator("#save-result")).to_contain_text("quick")

    # The saved plan is listed with "Run this plan", which opens the Run page with it chosen.
    page.goto(server.url + "/plans")
    expect(page.locator("#examples")).to_have_count(0)  # a plan is saved: no more offers
    page.click("#plans a.run-plan")
    page.wait_for_url("**/run?plan=quick")
    expect(page.locator("#plan")).to_have_value("quick")

    # Validate: one line per check; a missing target fails and disables Start.
    expect(page.locator("#validated")).to_contain_text("not validated yet")
    page.fill("#targets", str(disk / "missing"))
    page.click("#validate")
    expect(page.locator("#checks li[data-check=targets]")).to_contain_text("is not a directory")
    expect(page.locator("#checks li.bad")).to_have_count(1)
    expect(page.locator("#start")).to_be_disabled()
    page.fill("#targets", str(disk))  # a change: Start is possible again, unvalidated
    expect(page.locator("#start")).to_be_enabled()
    page.click("#validate")
    expect(page.locator("#validated")).to_have_text("all checks passed")
    checks = page.locator("#checks li").all_inner_texts()
    assert [c.split(":")[0] for c in checks] == ["✓ store", "✓ plan", "✓ duration", "✓ data", "✓ engine",
                                                   "✓ targets"]
    assert "4 tests" in checks[1] and "fio-" in checks[4]
    screenshot(page, "web-run-validate.png")


def a_cli_run_is_seen_live_with_start_disabled(server, disk, page):
    client = server.client()
    save_plan(client, CLI_PLAN)
    plan = disk / "plan.yaml"
    plan.write_text(CLI_PLAN)
    cli = subprocess.Popen([sys.executable, "-m", "iofleet", "run", str(plan), "--target", str(disk),
                            "--data-dir", str(server.data_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=dict(os.environ, COLUMNS="120"))
    try:
        for _ in range(100):  # until the CLI's run is published
            status = client.get("/api/runs/current").json()
            if status.get("run_id") is not None:
                break
            time.sleep(0.1)
        assert status["external"] is True and status["pid"] == cli.pid and status["plan"] == "from-the-cli"
        metrics = client.get("/metrics").text
        page.goto(server.url + "/run")
        if status["state"] != "ended":  # the usual case: the run is still going
            assert "iofleet_run_active 1.0" in metrics and 'iofleet_run_id 1.0' in metrics
            expect(page.locator("#start-busy")).to_contain_text(f"run 1 (from-the-cli) is running in another "
                                                                f"iofleet process (pid {cli.pid})")
            expect(page.locator("#start")).to_be_disabled()
            expect(page.locator("#validated")).to_be_hidden()
            expect(page.locator("#run-plan")).to_contain_text(f"started by another iofleet process (pid {cli.pid})")
            screenshot(page, "web-run-from-cli.png")
        expect(page.locator("#run-message")).to_have_text("Run 1 complete.", timeout=30_000)
        expect(page.locator("#start")).to_be_enabled()
        expect(page.locator("#start-busy")).to_be_hidden()
        expect(page.locator("#run-results tr")).to_have_count(1 + 2)
        # Each test starts at a marked boundary with its name.
        assert page.get_attribute("#live-section", "data-marks") == "2"
        names = page.locator("#live-iops .annotation-text").all_text_contents()  # SVG text
        assert names == ["4k-r100-rand-j1-qd2", "8k-r100-rand-j1-qd2"]
        assert page.get_attribute("#run-progress", "data-share") == "1"
    finally:
        out, _ = cli.communicate(timeout=60)
    assert cli.returncode == 0, out
    assert "iofleet_run_active 0.0" in client.get("/metrics").text
