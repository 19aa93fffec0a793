"""The network between the hosts, as ping and iperf3 measure it from one
host to another: a link's round-trip time and loss, whether it carries the
MTU the inventory expects (don't-fragment pings of that size), and its
bandwidth. The command lines (run on a host over SSH, each argument
quoted there) and the readers of their output."""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

# IPv4 and ICMP headers (20 + 8 bytes); IPv6 and ICMPv6 (40 + 8): a
# don't-fragment ping of MTU minus these fills one packet of exactly MTU bytes.
_HEADERS = {4: 28, 6: 48}
_SENT = re.compile(r"^(\d+) packets transmitted, (\d+) received", re.M)
_RTT = re.compile(r"^rtt min/avg/max/mdev = ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms", re.M)


@dataclass
class Ping:
    """One host's pings of another."""

    sent: int
    received: int
    rtt_avg_ms: float | None  # None when no reply came
    rtt_max_ms: float | None

    @property
    def loss_pct(self) -> float:
        return 100.0 * (self.sent - self.received) / self.sent if self.sent else 100.0


@dataclass
class Bandwidth:
    """What one iperf3 client measured sending to a server."""

    bits_per_s: float
    retransmits: int | None


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """A host's address as ping and iperf3 get it: an IP address only (the
    inventory's; a name would be resolved differently on each host)."""
    try:
        return ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(f"{address!r}: the network check needs the hosts' IP addresses in the inventory") from None


def ping_command(address: str, count: int = 5, interval_s: float = 0.2, mtu: int | None = None) -> list[str]:
    """Pings of `address`; with `mtu`, don't-fragment pings that fill
    packets of exactly that many bytes (they are lost where the path's MTU
    is smaller)."""
    ip = _ip(address)
    cmd = ["ping", "-n", "-q", "-c", str(int(count)), "-i", f"{interval_s:g}", "-W", "1"]
    if mtu is not None:
        cmd += ["-M", "do", "-s", str(int(mtu) - _HEADERS[ip.version])]
    return [*cmd, str(ip)]


def parse_ping(text: str) -> Ping:
    """ping's summary lines (iputils); ValueError when it has none (ping
    could not run: its own message is the error)."""
    sent = _SENT.search(text)
    if not sent:
        raise ValueError(f"no ping summary in {text.strip()[-200:]!r}")
    rtt = _RTT.search(text)
    return Ping(int(sent[1]), int(sent[2]), float(rtt[2]) if rtt else None, float(rtt[3]) if rtt else None)


def iperf3_server_command(port: int, idle_s: int = 15) -> list[str]:
    """One iperf3 server for one test, in the background: it exits after
    its client (`-1`), or after `idle_s` without one (never left behind)."""
    return ["iperf3", "-s", "-1", "-D", "-p", str(int(port)), "--idle-timeout", str(int(idle_s))]


def iperf3_client_command(address: str, port: int, seconds: int = 2, connect_s: int = 3) -> list[str]:
    return ["iperf3", "-c", str(_ip(address)), "-p", str(int(port)), "-t", str(int(seconds)), "-J",
            "--connect-timeout", str(int(connect_s * 1000))]


def parse_iperf3(text: str) -> Bandwidth:
    """iperf3's JSON (`-J`): the receiver's rate; ValueError with iperf3's
    own error (a refused connection, no route) when it measured nothing."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise ValueError(f"iperf3 gave no JSON: {text.strip()[-200:]!r}") from None
    if not isinstance(doc, dict):
        raise ValueError("iperf3's JSON is not an object")
    if doc.get("error"):
        raise ValueError(f"iperf3: {doc['error']}")
    end = doc.get("end") or {}
    received, sent = end.get("sum_received") or {}, end.get("sum_sent") or {}
    rate = received.get("bits_per_second")
    if not isinstance(rate, (int, float)):
        raise ValueError("iperf3's JSON has no end.sum_received.bits_per_second")
    retransmits = sent.get("retransmits")
    return Bandwidth(float(rate), retransmits if isinstance(retransmits, int) else None)
