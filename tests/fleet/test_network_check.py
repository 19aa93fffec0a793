"""`iofleet hosts network` on namespace hosts running sshd: a healthy fleet,
then a slow link (tc tbf), a partition between two hosts that both answer
the controller (nftables) and a host whose MTU is below the one the
inventory expects, each named with both hosts."""

import json
import subprocess

import yaml

from ..browser import Seen, browser_page, screenshot
from ..cli import iofleet, write_plan
from ..webserver import start_server
from .sshfleet import ssh_fleet


def _inventory(fleet, path, network: dict | None = None):
    inv = fleet.write_inventory(path)
    if network:
        data = yaml.safe_load(inv.read_text())
        data["defaults"]["network"] = network
        inv.write_text(yaml.safe_dump(data, sort_keys=False))
    return inv


def _slow(host, rate: str = "50mbit") -> None:
    """Traffic towards `host` shaped (its veth's end on the bridge)."""
    subprocess.run(["tc", "qdisc", "add", "dev", host.veth, "root", "tbf", "rate", rate, "burst", "32kbit",
                    "latency", "400ms"], check=True)


def _in(host, *cmd: str) -> None:
    subprocess.run(["ip", "netns", "exec", host.namespace, *cmd], check=True, capture_output=True)


def _own_link(host) -> str:
    """The host's interface inside its namespace."""
    return subprocess.run(["ip", "netns", "exec", host.namespace, "ip", "-o", "link", "show", "type", "veth"],
                          check=True, capture_output=True, text=True).stdout.split(":")[1].strip().split("@")[0]


def test_a_healthy_fleet_has_no_problem_and_every_pair_measured(tmp_path, make_fleet):
    fleet = ssh_fleet(make_fleet, 3)
    inv = _inventory(fleet, tmp_path / "inv.yaml", {"mtu": 1500})
    proc = iofleet("hosts", "network", inv, data_dir=tmp_path / "data")
    out = proc.stdout
    assert "No problem found on the links between 3 hosts." in out, out
    rows = [l for l in out.splitlines() if l.startswith(("h1 ", "h2 ", "h3 "))]
    assert len(rows) == 3 and all(len(r.split()) == 4 for r in rows), out  # name, then 3 cells (one is "-")
    ring = [l.split(":")[0].strip() for l in out.splitlines() if l.startswith("  h") and "Gbit/s" in l]
    assert ring == ["h1 → h2", "h2 → h3", "h3 → h1"], out  # each host to the next


def test_a_slow_link_a_partition_and_a_small_mtu_are_each_named(tmp_path, make_fleet):
    fleet = ssh_fleet(make_fleet, 4)
    h1, h2, h3, h4 = fleet.hosts
    inv = _inventory(fleet, tmp_path / "inv.yaml", {"mtu": 1500})
    _slow(h2)  # 50 Mbit/s towards h2, and from h2 (its own interface): both its links in the ring are slow
    _in(h2, "tc", "qdisc", "add", "dev", _own_link(h2), "root", "tbf", "rate", "50mbit", "burst", "32kbit",
        "latency", "400ms")
    # h3 drops everything from h1: both still answer the controller.
    _in(h3, "nft", f"add table inet iofleet_test; add chain inet iofleet_test in {{ type filter hook input priority 0; "
                   f"}}; add rule inet iofleet_test in ip saddr {h1.address} drop")
    # h4's own interface at MTU 1400.
    _in(h4, "ip", "link", "set", "dev", _own_link(h4), "mtu", "1400")
    proc = iofleet("hosts", "network", inv, data_dir=tmp_path / "data", check_rc=1)
    err = " ".join(proc.stderr.split())
    assert "h1 and h3 cannot reach each other (all pings lost) though both answer the controller: a partition" in err
    assert "h4: packets of 1500 bytes do not pass to or from any other host (the inventory expects MTU 1500)" in err
    assert "h1 → h2:" in err and "h2 → h3:" in err and "Mbit/s against a median of" in err, err
    assert "h2: every slow link is to or from h2" in err, err
    # Nothing else blamed: h2 reaches everyone, h1's MTU is fine.
    assert "h2 cannot" not in err and "h1: packets" not in err and "h4 → h1: packets" not in err


def test_hosts_check_with_network_checks_the_links_too(tmp_path, make_fleet):
    fleet = ssh_fleet(make_fleet, 2, fio_server=True)
    h1, h2 = fleet.hosts
    inv = _inventory(fleet, tmp_path / "inv.yaml")
    _in(h2, "nft", f"add table inet iofleet_test; add chain inet iofleet_test in {{ type filter hook input priority 0; "
                   f"}}; add rule inet iofleet_test in ip saddr {h1.address} drop")
    proc = iofleet("hosts", "check", inv, "--network", data_dir=tmp_path / "data", check_rc=1)
    # Both fio servers answer the controller; the hosts cannot reach each other.
    assert "2 of 2 hosts ready." in proc.stdout, proc.stdout
    assert "h1 and h2 cannot reach each other" in " ".join(proc.stderr.split()), proc.stderr


def test_the_fleet_page_checks_the_network_and_shows_the_matrix_and_the_problems(tmp_path, make_fleet):
    fleet = ssh_fleet(make_fleet, 3)
    h1, h2, h3 = fleet.hosts
    inv = _inventory(fleet, tmp_path / "inv.yaml")
    _in(h3, "nft", f"add table inet iofleet_test; add chain inet iofleet_test in {{ type filter hook input priority 0; "
                   f"}}; add rule inet iofleet_test in ip saddr {h1.address} drop")
    server = start_server(tmp_path / "data", "--hosts", str(inv))
    try:
        seen = Seen()
        with browser_page(seen) as page:
            page.goto(server.url + "/fleet")
            page.click("#check-network")
            page.wait_for_selector("#network-table", timeout=60_000)
            # One row per host (and the header); h1 → h3 and h3 → h1 are the lost pairs.
            assert page.locator("#network-table tr").count() == 1 + 3
            assert page.locator("#network-table td.bad").count() == 2
            assert page.locator("#bandwidth-table tr").count() == 1 + 3  # the ring
            problems = page.locator(".network-problem").all_inner_texts()
            assert any("h1 and h3 cannot reach each other" in p for p in problems), problems
            assert not any("did not finish" in p for p in problems), problems  # the cut pair is not measured
            screenshot(page, "web-fleet-network.png")
            # Stored as a run: its result page shows the same matrix and draws the ring's bandwidth.
            page.click("#network-run a")
            page.wait_for_function("() => document.querySelector('#network-chart.js-plotly-plot') !== null",
                                   timeout=30_000)
            assert page.locator("#network-table td.bad").count() == 2
            assert page.locator("#network-chart .bars .point").count() == 2  # h1 → h3 was not measured
            assert page.locator("#summary-table").count() == 0  # a check has no fio tests
            screenshot(page, "web-network-run.png")
        assert seen.errors == []
    finally:
        server.stop()


def test_a_check_is_a_run_that_results_compare_and_the_next_fleet_run_record(tmp_path, make_fleet):
    """Two checks stored as runs (healthy, then h2 behind 50 Mbit/s):
    `results show` prints the stored matrix, `compare` pairs them link by
    link, the report has the network section, and a fleet run made after
    them records the last one for its diagnostics."""
    fleet = ssh_fleet(make_fleet, 3, fio_server=True)
    h1, h2, h3 = fleet.hosts
    inv = _inventory(fleet, tmp_path / "inv.yaml")
    data = tmp_path / "data"
    out = iofleet("hosts", "network", inv, "--label", "healthy", data_dir=data).stdout
    healthy = int(out.split("Stored as run ")[1].split()[0])
    _slow(h2)
    out = iofleet("hosts", "network", inv, "--label", "slow", data_dir=data, check_rc=1).stdout
    slow = int(out.split("Stored as run ")[1].split()[0])

    shown = iofleet("results", "show", str(slow), data_dir=data)
    text = " ".join((shown.stdout + shown.stderr).split())
    assert f"Run {slow} · network check · complete" in text and "Round trip, ms" in text, text
    assert "problem: h1 → h2:" in text and "Mbit/s against a median of" in text, text
    listed = json.loads(iofleet("results", "list", "--format", "json", data_dir=data).stdout)
    assert {(r["id"], r["plan"], r["kind"], r["tests"]) for r in listed} == {
        (healthy, "network check", "network check", 0), (slow, "network check", "network check", 0)}

    cmp = json.loads(iofleet("compare", "healthy", "slow", "--format", "json", data_dir=data).stdout)
    cells = {t["label"]: {r["metric"]: r for r in t["rows"]} for t in cmp["tests"]}
    assert len(cells) == 6 and {k for k, rows in cells.items() if "gbps" in rows} == {"h1 → h2", "h2 → h3",
                                                                                        "h3 → h1"}, cells
    into_h2 = next(c for c in cells["h1 → h2"]["gbps"]["cells"] if c["config"] == "slow")
    assert into_h2["pct_change"] < -50 and into_h2["verdict"] == "not enough repeats", into_h2

    report = tmp_path / "net.html"
    iofleet("report", str(slow), "-o", report, data_dir=data)
    html = report.read_text()
    assert 'id="network-table"' in html and 'id="network-chart"' in html and 'id="summary-table"' not in html

    plan = write_plan(tmp_path / "p.yaml", name="after-check", prepare="none",
                      defaults={"size": "4m", "runtime": "1s", "ramp": "0s", "iodepth": 1, "engine": "psync",
                                "round": "1s"}, workloads=[{"name": "r", "read_pct": 100}])
    iofleet("run", plan, "--hosts", inv, data_dir=data)
    run = json.loads(iofleet("results", "show", "--format", "json", data_dir=data).stdout)
    net = run["methodology"]["network"]
    assert net["run"] == slow and net["hosts"] == ["h1", "h2", "h3"], net
    assert any(k["from"] == "h1" and k["to"] == "h2" and k["bits_per_s"] < 100e6 for k in net["links"]), net
