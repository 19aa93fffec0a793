"""The web UI over a real fleet (fio servers in network namespaces): the
Fleet page lists the inventory and checks the hosts, and a plan started
from the Run page on the fleet draws one live line per host, as does a
saturate sweep started there."""

from ..browser import Seen, browser_page, screenshot
from ..webserver import save_plan, start_server

PLAN = """name: web-fleet
defaults: {size: 8m, ramp: 1s, runtime: 4s, round: 1s}
workloads:
  - name: rand
    matrix: {bs: [4k], read_pct: [70]}
"""


def test_fleet_page_checks_hosts_and_the_run_page_runs_on_them(tmp_path, make_fleet):
    fleet = make_fleet(2, metrics=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    server = start_server(tmp_path / "data", "--hosts", str(inv))
    try:
        client = server.client()
        save_plan(client, PLAN)
        seen = Seen()
        with browser_page(seen) as page:
            page.goto(server.url + "/fleet")
            assert page.locator("#inventory tr").count() == 1 + 2
            page.click("#check")
            page.wait_for_selector("#check-table", timeout=60_000)
            assert "2 of 2 hosts ready." in page.inner_text("#check-result")
            assert page.locator("#check-table tr.bad").count() == 0
            screenshot(page, "web-fleet.png")

            page.goto(server.url + "/run")
            page.select_option("#plan", "web-fleet")
            page.check("#fleet")
            page.click("#start")
            # fio's own IOPS and p99 of each host's last round (1-s rounds): one line each, h1 and h2.
            page.wait_for_function(
                "() => { const d = document.querySelector('#live-latency').data;"
                "        return d && d.length === 2 && d.every(t => t.y.filter(v => v > 0).length >= 2); }",
                timeout=30_000)
            assert page.evaluate("() => document.querySelector('#live-iops').data.map(t => t.name)") == ["h1", "h2"]
            assert "p99 latency per host" in page.inner_text("#live-latency")
            assert "MB/s" in page.inner_text("#run-figures") and "last round" in page.inner_text("#run-figures")
            screenshot(page, "web-run-fleet.png")
            page.wait_for_function("() => !document.querySelector('#run-message').hidden", timeout=60_000)
            assert page.inner_text("#run-message") == "Run 1 complete."

            # A study on the fleet: a saturate sweep, every cell on both hosts at once, Validated first.
            page.select_option("#study", "saturate")
            for name, value in {"size": "8m", "runtime": "1s", "ramp": "0s", "max_jobs": "1",
                                "max_iodepth": "2"}.items():
                page.fill(f"#set-saturate-{name}", value)
            page.click("#validate")
            page.wait_for_function("() => document.querySelector('#validated').textContent === 'all checks passed'",
                                   timeout=60_000)
            assert "2 hosts" in page.inner_text("#checks li[data-check='targets']")
            page.click("#start")
            page.wait_for_function("() => document.querySelector('#run-message').textContent === 'Run 2 complete.'",
                                   timeout=90_000)
            assert page.evaluate("() => document.querySelector('#live-iops').data.map(t => t.name)") == ["h1", "h2"]
        assert seen.errors == []
        sweep = client.get("/api/results/2").json()
        assert sweep["plan_name"] == "saturate" and sweep["status"] == "complete"
        assert all(set(t["hosts"]) == {"h1", "h2"} for t in sweep["tests"]), "every cell on both hosts"
        run = client.get("/api/runs/current").json()
        assert run["status"] == "complete" and run["results"][0]["iops"] > 0
    finally:
        server.stop()
