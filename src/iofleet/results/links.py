"""A network check's link as a run stores it (its methodology's
`network.links`; fleet/network_check.py measures it): from one host to
another, its pings, its don't-fragment pings of the expected MTU and its
iperf3 bandwidth. `to_dict` is the exported JSON; `from_dict` reads it
back, old runs' too (records.py); fleet/network_check.py check_of_links
shows stored links again as the check measured them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .records import Record

if TYPE_CHECKING:
    from ..fleet.network_check import NetworkCheck


@dataclass
class Link(Record):
    """One link, `from_host` → `to_host` (its JSON's `from` and `to`); None:
    not measured. `bandwidth_measured`: iperf3 was run on it (its
    `bits_per_s` None then: it failed, or the pings were all lost)."""

    from_host: str = ""
    to_host: str = ""
    sent: int | None = None
    received: int | None = None
    rtt_avg_ms: float | None = None
    rtt_max_ms: float | None = None
    mtu: int | None = None  # the size probed: the MTU the inventory expects of the path
    mtu_sent: int | None = None
    mtu_received: int | None = None
    bandwidth_measured: bool = False
    bits_per_s: float | None = None
    retransmits: int | None = None

    # The JSON's key of a field named otherwise (`from` is a Python keyword).
    _KEYS = {"from_host": "from", "to_host": "to"}

    def _dict(self) -> dict:
        return {self._KEYS.get(name, name): getattr(self, name) for name in self._fields()}

    @classmethod
    def _from(cls, d: dict) -> dict:
        return {name: d[key] for name in cls._fields() if (key := cls._KEYS.get(name, name)) in d}

    @classmethod
    def _known(cls) -> tuple[str, ...]:
        return tuple(cls._KEYS.get(name, name) for name in cls._fields())

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        return super()._known()

    @property
    def name(self) -> str:
        """`h1 → h2`."""
        return f"{self.from_host} → {self.to_host}"

    @property
    def reached(self) -> bool:
        """Some ping came back."""
        return self.received is not None and self.received > 0

    def touches(self, host: str) -> bool:
        return host in (self.from_host, self.to_host)


def links_of(check: NetworkCheck) -> list[Link]:
    """Each link the check measured, from → to, as a run stores it."""
    rows = []
    for a in check.hosts:
        for b in check.hosts:
            ping = check.pings.get(a, {}).get(b)
            mtu, probe = check.mtu.get(a, {}).get(b, (None, None))
            measured = b in check.bandwidth.get(a, {})
            if a == b or (ping is None and mtu is None and not measured):
                continue
            bw = check.bandwidth.get(a, {}).get(b)
            rows.append(Link(a, b, ping and ping.sent, ping and ping.received, ping and ping.rtt_avg_ms,
                             ping and ping.rtt_max_ms, mtu, probe and probe.sent, probe and probe.received, measured,
                             bw and bw.bits_per_s, bw and bw.retransmits))
    return rows
