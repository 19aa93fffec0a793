"""The network check's readers of ping and iperf3, on their real output
recorded between namespace hosts (tests/fixtures/network), its command
lines, and the inventory's `network:` expectations."""

from pathlib import Path

import pytest

from iofleet.fleet.inventory import InventoryError, load_inventory
from iofleet.fleet.links import iperf3_client_command, parse_iperf3, parse_ping, ping_command

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
