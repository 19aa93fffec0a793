"""The network check's readers of ping and iperf3, on their real output
recorded between namespace hosts (tests/fixtures/network), its command
lines, and the inventory's `network:` expectations."""

from pathlib import Path

import pytest

from iofleet.fleet.inventory import InventoryError, load_inventory
from iofleet.fleet.links import iperf3_client_command, iperf3_server_command, parse_iperf3, parse_ping, ping_command

FIXTURES = Path(__file__).parents[1] / "fixtures" / "network"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_ping_summaries_give_loss_and_round_trip_time():
    ok = parse_ping(read("ping-ok.txt"))
    assert (ok.sent, ok.received, ok.loss_pct, ok.rtt_avg_ms, ok.rtt_max_ms) == (5, 5, 0.0, 0.051, 0.055)
    dropped = parse_ping(read("ping-dropped.txt"))
    assert (dropped.sent, dropped.received, dropped.loss_pct, dropped.rtt_avg_ms) == (5, 0, 100.0, None)
    # Don't-fragment pings filling 1500-byte packets pass a 1500 link; 9000-byte ones are all lost.
    assert parse_ping(read("ping-mtu-1500.txt")).loss_pct == 0.0
    assert parse_ping(read("ping-mtu-9000-on-1500.txt")).loss_pct == 100.0
    with pytest.raises(ValueError, match="no ping summary"):
        parse_ping("ping: connect: Network is unreachable\n")


def test_iperf3_gives_the_receivers_rate_or_its_own_error():
    fast, slow = parse_iperf3(read("iperf3-ok.json")), parse_iperf3(read("iperf3-tbf-50mbit.json"))
    assert fast.bits_per_s > 1e9 and 40e6 < slow.bits_per_s < 50e6  # tbf at 50 Mbit/s
    assert isinstance(fast.retransmits, int)
    with pytest.raises(ValueError, match="iperf3: unable to connect to server: Connection refused"):
        parse_iperf3(read("iperf3-refused.json"))
    with pytest.raises(ValueError, match="iperf3 gave no JSON"):
        parse_iperf3("iperf3: error - unable to connect")


def test_commands_take_ip_addresses_only_and_size_mtu_probes_to_the_packet():
    assert ping_command("10.0.0.2", mtu=1500)[-5:] == ["-M", "do", "-s", "1472", "10.0.0.2"]
    assert ping_command("2001:db8::2", mtu=9000)[-3:] == ["-s", "8952", "2001:db8::2"]
    assert iperf3_client_command("10.0.0.2", 5201)[:3] == ["iperf3", "-c", "10.0.0.2"]
    assert "--idle-timeout" in iperf3_server_command(5201)  # a server no client reaches ends by itself
    for bad in ("host; reboot", "-f", "h2.example"):
        with pytest.raises(ValueError, match="needs the hosts' IP addresses"):
            ping_command(bad)


def test_inventory_network_expectations_merge_defaults_key_by_key(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("defaults: {network: {mtu: 9000, min_gbps: 10}}\n"
                   "hosts:\n"
                   "  - {address: 10.0.0.1, targets: [/data]}\n"
                   "  - {address: 10.0.0.2, targets: [/data], network: {mtu: 1500, max_rtt_ms: 2}}\n")
    a, b = load_inventory(inv).hosts
    assert (a.network.mtu, a.network.min_gbps, a.network.max_rtt_ms) == (9000, 10.0, None)
    assert (b.network.mtu, b.network.min_gbps, b.network.max_rtt_ms) == (1500, 10.0, 2.0)
    inv.write_text("hosts:\n  - {address: 10.0.0.1, targets: [/data], network: {mtu: 100}}\n")
    with pytest.raises(InventoryError, match=r"hosts\[0\]\.network\.mtu"):
        load_inventory(inv)
    inv.write_text("hosts:\n  - {address: 10.0.0.1, targets: [/data], network: {speed: 10}}\n")
    with pytest.raises(InventoryError, match="speed"):
        load_inventory(inv)


def _hosts(tmp_path, network: str = "") -> dict:
    inv = tmp_path / "inv.yaml"
    inv.write_text(("defaults: {network: " + network + "}\n" if network else "") + "hosts:\n"
                   + "".join(f"  - {{name: h{i}, address: 10.0.0.{i}, targets: [/data]}}\n" for i in range(1, 5)))
    return {h.name: h for h in load_inventory(inv).hosts}


def test_problems_name_both_hosts_a_one_way_block_loss_slow_round_trips_and_expectations(tmp_path):
    from iofleet.fleet.links import Bandwidth, Ping
    from iofleet.fleet.network_check import NetworkCheck, matrix_lines, problems

    hosts = _hosts(tmp_path, "{min_gbps: 10, max_rtt_ms: 5}")
    ok = Ping(5, 5, 0.05, 0.06)
    check = NetworkCheck(list(hosts))
    check.pings = {a: {b: ok for b in hosts if b != a} for a in hosts}
    check.pings["h1"]["h2"] = Ping(5, 0, None, None)  # h2 answers h1's pings... the other way only
    check.pings["h3"]["h4"] = Ping(5, 4, 0.05, 0.06)
    check.pings["h4"]["h3"] = Ping(5, 5, 1.2, 1.5)
    check.pings["h2"]["h4"] = Ping(5, 5, 7.0, 9.0)
    check.bandwidth = {"h1": {"h2": Bandwidth(25e9, 0)}, "h2": {"h3": Bandwidth(24e9, 0)},
                       "h3": {"h4": Bandwidth(8e9, 3)}, "h4": {"h1": Bandwidth(26e9, 0)}}
    lines = problems(check, hosts)
    assert lines[0].startswith("h1 cannot reach h2 (all pings lost), though h2 reaches h1 and both answer the "
                               "controller: a one-way block")
    assert any(l.startswith("h3 → h4: 20 % of pings lost") for l in lines)
    assert any(l.startswith("h4 → h3: round trip 1.200 ms, against a median of 0.050 ms") for l in lines)
    assert any(l == "h2 → h4: round trip 7.000 ms, above the inventory's max_rtt_ms 5" for l in lines)
    assert any(l.startswith("h3 → h4: 8.00 Gbit/s, below the inventory's min_gbps 10") for l in lines)
    assert len(lines) == 5, lines
    shown = matrix_lines(check, width=25)  # room for two columns of four
    assert shown[1].split() == ["h1", "h2"] and shown[2].split() == ["h1", "-", "x"]
    assert "(columns for h3, h4 left out to fit 25 columns)" in shown
