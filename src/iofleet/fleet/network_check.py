"""`iofleet hosts network`: every link between the hosts, measured from the
hosts themselves over the SSH control channel, before the storage is blamed.

1. Reachability and round-trip time of every pair, both ways: each host
   pings every other host at once (ping's summary: loss, mean RTT), with
   don't-fragment pings of the MTU the inventory expects (`network: {mtu}`)
   on the same paths.
2. Bandwidth with iperf3, in a ring (each host to the next, as vSAN's
   network test) or every pair (`pairs="all"`): one round per shift of the
   ring, every host a server for one peer and a client of another at once.

Then the problems, each naming both hosts and the fix: a pair that cannot
reach each other while both answer the controller (a partition), lost
pings, a path that does not carry the expected MTU, and a round-trip time
or a bandwidth that is an outlier against the others (worse than half or
twice the median) or beyond the inventory's expectation."""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from .control.ssh import run_on_all
from .inventory import Host
from .links import Bandwidth, Ping, iperf3_client_command, iperf3_server_command, parse_iperf3, parse_ping, ping_command

PINGS = 5
IPERF_PORT = 5201
IPERF_SECONDS = 2
# A link this much worse than the median of its kind is named.
OUTLIER = 2.0
# Round trips under this are never outliers (namespaces and LANs: tens of microseconds apart).
RTT_FLOOR_MS = 0.5
# Each step (the pings; starting the iperf3 servers; a bandwidth round, plus
# its IPERF_SECONDS) ends within this: a ring check is over within 30 s even
# when a host hangs (8 healthy hosts: 3.7 s on a 2-core VM).
STEP_TIMEOUT_S = 8.0
_MARK = "@@iofleet-peer"


@dataclass
class NetworkCheck:
    """The links measured (from → to → figure) and what is wrong with them."""

    hosts: list[str]
    pings: dict[str, dict[str, Ping | None]] = field(default_factory=dict)
    mtu: dict[str, dict[str, tuple[int, Ping | None]]] = field(default_factory=dict)  # the size probed, its pings
    bandwidth: dict[str, dict[str, Bandwidth | None]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # a host that could not measure (SSH, ping or iperf3 missing)
    problems: list[str] = field(default_factory=list)


def expected_mtu(a: Host, b: Host) -> int | None:
    """The MTU the path between two hosts must carry: the smaller of what the inventory expects of either."""
    values = [h.network.mtu for h in (a, b) if h.network is not None and h.network.mtu is not None]
    return min(values) if values else None


def _ping_all(host: Host, peers: list[Host]) -> str:
    """One shell command on `host`: every peer pinged at once (and the MTU
    probes), each output after a marker line naming the peer's index."""
    jobs = []
    for i, peer in enumerate(peers):
        jobs.append((f"{i} plain", ping_command(peer.endpoint[0], count=PINGS)))
        mtu = expected_mtu(host, peer)
        if mtu is not None:
            jobs.append((f"{i} mtu {mtu}", ping_command(peer.endpoint[0], count=2, mtu=mtu)))
    lines = ['d=$(mktemp -d)']
    lines += [f"{shlex.join(cmd)} > \"$d/{n}\" 2>&1 &" for n, (_, cmd) in enumerate(jobs)]
    lines.append("wait")
    lines += [f"echo {shlex.quote(f'{_MARK} {label}')}; cat \"$d/{n}\"" for n, (label, _) in enumerate(jobs)]
    lines.append('rm -rf "$d"')
    return "\n".join(lines)


def _read_pings(check: NetworkCheck, host: Host, peers: list[Host], text: str) -> None:
    parts = text.split(_MARK + " ")[1:]
    for part in parts:
        label, _, output = part.partition("\n")
        words = label.split()
        peer = peers[int(words[0])]
        try:
            ping = parse_ping(output)
        except ValueError as exc:
            check.errors.append(f"{host.name}: ping {peer.name} failed: {exc}")
            ping = None
        if words[1] == "mtu":
            check.mtu.setdefault(host.name, {})[peer.name] = (int(words[2]), ping)
        else:
            check.pings.setdefault(host.name, {})[peer.name] = ping


def _bandwidth_round(check: NetworkCheck, hosts: list[Host], shift: int, timeout_s: float) -> None:
    """Every host sends to the one `shift` places on in the ring, all at
    once; a pair whose pings were all lost is not measured (said so)."""
    n = len(hosts)
    target = {h.name: hosts[(i + shift) % n] for i, h in enumerate(hosts)}
    cut = [h for h in hosts if (p := check.pings.get(h.name, {}).get(target[h.name].name)) is None or p.received == 0]
    for h in cut:
        check.bandwidth.setdefault(h.name, {})[target[h.name].name] = None
    senders = [h for h in hosts if h not in cut]
    servers = run_on_all([target[h.name] for h in senders], shlex.join(iperf3_server_command(IPERF_PORT)),
                         timeout_s=timeout_s)
    for name, reply in servers.items():
        if not reply.ok:
            check.errors.append(reply.error or f"{name}: iperf3 server did not start: {reply.stderr.strip()[-200:]}")
    clients = run_on_all(senders, lambda h: shlex.join(iperf3_client_command(target[h.name].endpoint[0], IPERF_PORT,
                                                                            IPERF_SECONDS)),
                         timeout_s=timeout_s + IPERF_SECONDS)
    for name, reply in clients.items():
        peer = target[name].name
        try:
            result = parse_iperf3(reply.stdout) if reply.error is None else None
        except ValueError as exc:
            check.errors.append(f"{name} → {peer}: {exc}")
            result = None
        if reply.error:
            check.errors.append(reply.error)
        check.bandwidth.setdefault(name, {})[peer] = result


def check_network(hosts: list[Host], pairs: str = "ring", timeout_s: float = STEP_TIMEOUT_S) -> NetworkCheck:
    """Measure every link between `hosts` (each with `ssh:`), then name the problems."""
    check = NetworkCheck([h.name for h in hosts])
    peers = {h.name: [p for p in hosts if p is not h] for h in hosts}
    replies = run_on_all(hosts, lambda h: _ping_all(h, peers[h.name]), timeout_s=timeout_s)
    answered = []
    for h in hosts:
        reply = replies.get(h.name)
        if reply is None or reply.error:
            check.errors.append(reply.error if reply else f"{h.name}: no `ssh:` in the inventory; the network "
                                                          f"check runs over SSH")
            continue
        answered.append(h)
        _read_pings(check, h, peers[h.name], reply.stdout)
    if len(answered) > 1:
        for shift in (range(1, len(answered)) if pairs == "all" else [1]):
            _bandwidth_round(check, answered, shift, timeout_s)
    check.problems = problems(check, {h.name: h for h in hosts})
    return check


def problems(check: NetworkCheck, hosts: dict[str, Host]) -> list[str]:
    """One line per problem, naming both hosts (or the one host every such
    link has in common) and the fix."""
    return _partitions(check) + _losses_and_rtts(check, hosts) + _mtus(check) + _bandwidths(check, hosts)


def _partitions(check: NetworkCheck) -> list[str]:
    cut = {(a, b) for a, row in check.pings.items() for b, p in row.items() if p is not None and p.received == 0}
    out = []
    for a, b in sorted(cut):
        if (b, a) not in cut:
            out.append(f"{a} cannot reach {b} (all pings lost), though {b} reaches {a} and both answer the "
                       f"controller: a one-way block; check the firewalls and routes between {a} and {b}")
        elif a < b:
            out.append(f"{a} and {b} cannot reach each other (all pings lost) though both answer the controller: "
                       f"a partition between them; check the routes and firewalls between {a} and {b}")
    return out


def _losses_and_rtts(check: NetworkCheck, hosts: dict[str, Host]) -> list[str]:
    out = []
    rtts = [p.rtt_avg_ms for row in check.pings.values() for p in row.values() if p and p.rtt_avg_ms is not None]
    median_rtt = statistics.median(rtts) if rtts else None
    for a, row in check.pings.items():
        for b, p in row.items():
            if p is None or p.received == 0:
                continue
            if p.loss_pct > 0:
                out.append(f"{a} → {b}: {p.loss_pct:.0f} % of pings lost; check the link's cabling, NICs and switch "
                           f"ports (`ip -s link` on both hosts)")
            limit = min([h.network.max_rtt_ms for h in (hosts[a], hosts[b])
                         if h.network is not None and h.network.max_rtt_ms is not None], default=None)
            if limit is not None and p.rtt_avg_ms > limit:
                out.append(f"{a} → {b}: round trip {p.rtt_avg_ms:.3f} ms, above the inventory's max_rtt_ms {limit:g}")
            elif median_rtt and p.rtt_avg_ms > max(OUTLIER * median_rtt, RTT_FLOOR_MS):
                out.append(f"{a} → {b}: round trip {p.rtt_avg_ms:.3f} ms, against a median of {median_rtt:.3f} ms "
                           f"between the hosts; check that path (a congested or slower link)")
    return out


def _mtus(check: NetworkCheck) -> list[str]:
    failed: dict[tuple[str, str], int] = {}
    for a, row in check.mtu.items():
        for b, (mtu, p) in row.items():
            plain = check.pings.get(a, {}).get(b)
            if p is not None and p.received == 0 and plain is not None and plain.received > 0:
                failed[(a, b)] = mtu
    out = []
    for host in check.hosts:  # a host whose every path fails: its own interface
        mine = {pair: mtu for pair, mtu in failed.items() if host in pair}
        peers = {b if a == host else a for a, b in mine}
        if len(peers) >= 2 and len(peers) == len(check.hosts) - 1:
            mtu = min(mine.values())
            out.append(f"{host}: packets of {mtu} bytes do not pass to or from any other host (the inventory "
                       f"expects MTU {mtu}); set MTU {mtu} on {host}'s interface (`ip link`) and its switch port")
            failed = {pair: m for pair, m in failed.items() if host not in pair}
    out += [f"{a} → {b}: packets of {mtu} bytes do not pass (the inventory expects MTU {mtu}); set MTU {mtu} on "
            f"every interface and switch port between {a} and {b}" for (a, b), mtu in failed.items()]
    return out


def _bandwidths(check: NetworkCheck, hosts: dict[str, Host]) -> list[str]:
    rates = [bw.bits_per_s for row in check.bandwidth.values() for bw in row.values() if bw]
    median_rate = statistics.median(rates) if rates else None
    slow, out = [], []
    for a, row in check.bandwidth.items():
        for b, bw in row.items():
            if bw is None:
                continue
            floor = max([h.network.min_gbps for h in (hosts[a], hosts[b])
                         if h.network is not None and h.network.min_gbps is not None], default=None)
            if floor is not None and bw.bits_per_s / 1e9 < floor:
                out.append(f"{a} → {b}: {rate_text(bw.bits_per_s)}, below the inventory's min_gbps {floor:g}; check "
                           f"the link's speed (`ethtool` on both hosts) and what else uses it")
                slow.append((a, b))
            elif median_rate and bw.bits_per_s < median_rate / OUTLIER:
                out.append(f"{a} → {b}: {rate_text(bw.bits_per_s)} against a median of {rate_text(median_rate)} for the "
                           f"links; check that link's speed (`ethtool`), duplex and shaping")
                slow.append((a, b))
    shared = set.intersection(*(set(pair) for pair in slow)) if len(slow) >= 2 else set()
    if len(shared) == 1:  # every slow link has one host in common: name it (TCP's acks cross its link too)
        host = shared.pop()
        out.append(f"{host}: every slow link is to or from {host}; check {host}'s own link first")
    return out


def rate_text(bits_per_s: float) -> str:
    return f"{bits_per_s / 1e9:.2f} Gbit/s" if bits_per_s >= 1e9 else f"{bits_per_s / 1e6:.0f} Mbit/s"


def matrix_lines(check: NetworkCheck, width: int = 80) -> list[str]:
    """The round-trip matrix (from row to column, ms; x: unreachable) and
    the bandwidth of each link measured, within `width` columns (hosts that
    do not fit are said)."""
    names = check.hosts
    cell = 9
    first = min(12, max(len(n) for n in names) + 1)
    fits = max(1, (width - first) // cell)
    shown = names[:fits]
    lines = ["Round trip, ms (from row to column; x: all pings lost):",
             " " * first + "".join(f"{n[:cell - 1]:>{cell}}" for n in shown)]
    for a in names:
        cells = []
        for b in shown:
            p = check.pings.get(a, {}).get(b)
            cells.append("-" if a == b else "?" if p is None else "x" if p.received == 0 else f"{p.rtt_avg_ms:.3f}")
        lines.append(f"{a[:first - 1]:<{first}}" + "".join(f"{c:>{cell}}" for c in cells))
    if len(shown) < len(names):
        lines.append(f"(columns for {', '.join(names[fits:])} left out to fit {width} columns)")
    links = [(a, b, bw) for a, row in check.bandwidth.items() for b, bw in row.items()]
    if links:
        lines.append("Bandwidth (iperf3, from → to):")
        lines += [f"  {a} → {b}: {rate_text(bw.bits_per_s) if bw else 'not measured'}" for a, b, bw in links]
        if any(bw is None for _, _, bw in links):
            lines.append("  (not measured: the pair's pings were all lost, or iperf3 failed: see below)")
    return lines


def check_of_links(hosts: list[str], links: Iterable, errors: list[str], problems: list[str]) -> NetworkCheck:
    """A stored check as measured, to show it again: `links` as a run
    stores them (results' Link: from_host, to_host, sent, received, …)."""
    check = NetworkCheck(list(hosts), errors=list(errors), problems=list(problems))
    for k in links:
        a, b = k.from_host, k.to_host
        if k.sent is not None:
            check.pings.setdefault(a, {})[b] = Ping(k.sent, k.received, k.rtt_avg_ms, k.rtt_max_ms)
        if k.mtu is not None:
            probe = None if k.mtu_sent is None else Ping(k.mtu_sent, k.mtu_received, None, None)
            check.mtu.setdefault(a, {})[b] = (k.mtu, probe)
        if k.bandwidth_measured:
            check.bandwidth.setdefault(a, {})[b] = None if k.bits_per_s is None else Bandwidth(k.bits_per_s,
                                                                                               k.retransmits)
    return check
