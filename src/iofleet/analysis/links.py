"""A network check's links as `compare` reads a run's tests: one sample per
link (from → to) and check, with its round trip and bandwidth, so checks
compare link by link with the same rules as fio runs compare test by test."""

from dataclasses import dataclass, field

from ..results.methodology import NetworkRecord
from ..results.model import Run

LINK_MATCH = ("link",)  # links pair up across checks by from → to


@dataclass
class LinkSample:
    id: str  # "h1 → h2"
    params: dict
    figures: dict = field(default_factory=dict)  # rtt_ms, gbps (None: not measured)
    status: str = "ok"
    repeat: int = 1


def network_check(run: Run) -> NetworkRecord | None:
    """The run's own network check (a fleet run's record of its last check is not)."""
    return run.methodology.own_network if run.methodology is not None else None


def link_samples(run: Run) -> list[LinkSample]:
    out = []
    for k in network_check(run).links:
        gbps = None if k.bits_per_s is None else k.bits_per_s / 1e9
        out.append(LinkSample(k.name, {"link": k.name}, {"rtt_ms": k.rtt_avg_ms if k.reached else None,
                                                         "gbps": gbps}))
    return out
