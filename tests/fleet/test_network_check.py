"""`iofleet hosts network` on namespace hosts running sshd: a healthy fleet,
then a slow link (tc tbf), a partition between two hosts that both answer
the controller (nftables) and a host whose MTU is below the one the
inventory expects, each named with both hosts."""

import subprocess

import yaml

from ..browser import Seen, browser_page, screenshot
from ..cli import iofleet
from ..webserver import start_server
from .sshfleet import ssh_fleet


def _inventory(fleet, path, network: dict | None = None):
    inv = fleet.write_inventory(path)
    if network:
        data = yaml.safe_load(inv.read_text())
        data["defaults"]["network"] = network
        inv.write_text(yaml.safe_dump(data, sort_keys=False))
    return inv


def _in(host, *cmd: str) -> None:
    subprocess.run(["ip", "netns", "exec", host.namespace, *cmd], check=True, capture_output=True)


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
    # Traffic towards h2 shaped to 50 Mbit/s (its veth's end on the bridge).
    subprocess.run(["tc", "qdisc", "add", "dev", h2.veth, "root", "tbf", "rate", "50mbit", "burst", "32kbit",
                    "latency", "400ms"], check=True)
    # h3 drops everything from h1: both still answer the controller.
    _in(h3, "nft", f"add table inet iofleet_test; add chain inet iofleet_test in {{ type filter hook input priority 0; "
                   f"}}; add rule inet iofleet_test in ip saddr {h1.address} drop")
    # h4's own interface at MTU 1400.
    link = subprocess.run(["ip", "netns", "exec", h4.namespace, "ip", "-o", "link", "show", "type", "veth"],
                          check=True, capture_output=True, text=True).stdout.split(":")[1].strip().split("@")[0]
    _in(h4, "ip", "link", "set", "dev", link, "mtu", "1400")
    proc = iofleet("hosts", "network", inv, data_dir=tmp_path / "data", check_rc=1)
    err = " ".join(proc.stderr.split())
    assert "h1 and h3 cannot reach each other (all pings lost) though both answer the controller: a partition" in err
    assert "h4: packets of 1500 bytes do not pass to or from any other host (the inventory expects MTU 1500)" in err
    assert "h1 → h2:" in err and "Mbit/s against a median of" in err, err
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
        assert seen.errors == []
    finally:
        server.stop()
