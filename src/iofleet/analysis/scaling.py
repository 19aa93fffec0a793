"""Scaling: how a fleet's IOPS grow as hosts are added, and where they stop.

Each step is one measurement of the same test on the first k hosts. Growth
is the raw change of the fleet's IOPS from the previous step, in %; the
saturation point is the first step whose growth is at most
SATURATION_GROWTH_PCT (adding hosts no longer buys IOPS: the shared storage,
or the network to it, is the limit).
"""

from dataclasses import dataclass

from ..results.model import Aggregate
from ..units import to_ms

# A step that adds at most this much IOPS (in %) over the previous step
# marks the saturation point.
SATURATION_GROWTH_PCT = 10.0


@dataclass
class ScaleRow:
    """One step's figures; None where the step was not measured."""

    hosts: int
    iops: float | None
    mb_s: float | None  # 10^6 bytes/s
    mean_ms: float | None  # mean latency of all IO
    p99_ms: float | None  # from the merged latency histogram
    growth_pct: float | None  # IOPS change from the previous step; None for the first
    iops_per_host: float | None


@dataclass
class Scaling:
    rows: list[ScaleRow]
    saturation: ScaleRow | None  # the first step whose growth <= the threshold
    best: ScaleRow | None  # the step just before saturation: the last one that paid off
    threshold_pct: float = SATURATION_GROWTH_PCT

    def verdict(self) -> str:
        """One sentence for any front end."""
        if self.saturation and self.best:
            s, b = self.saturation, self.best
            return (f"Saturation: the fleet stops growing at {_hosts(s.hosts)} "
                    f"({s.growth_pct:+.1f} % over {_hosts(b.hosts)}); "
                    f"best: {_hosts(b.hosts)}, {b.iops:,.0f} IOPS")
        grown = [(prev, row) for prev, row in zip(self.rows, self.rows[1:]) if row.growth_pct is not None]
        if not grown:
            return ("No saturation verdict: it needs two consecutive steps measured "
                    "(see the steps' status).")
        prev, last = grown[-1]
        return (f"No saturation: still growing at {_hosts(last.hosts)} "
                f"(IOPS +{last.growth_pct:.1f} % from {prev.hosts} to {_hosts(last.hosts)}).")


def _hosts(n: int) -> str:
    return f"{n} host" if n == 1 else f"{n} hosts"


def growth_pct(previous: float | None, current: float | None) -> float | None:
    """Raw change from previous to current in %, None when either is unknown
    or there was nothing to grow from."""
    if previous is None or current is None or previous <= 0:
        return None
    return (current - previous) * 100 / previous


def scaling(steps: list[tuple[int, Aggregate | None]],
            threshold_pct: float = SATURATION_GROWTH_PCT) -> Scaling:
    """Rows and the saturation point of [(hosts, the step's fleet aggregate
    or None when the step has no trustworthy result)], in step order."""
    rows: list[ScaleRow] = []
    for hosts, agg in steps:
        a = agg.all if agg is not None else None
        iops = a.iops if a is not None else None
        p99 = a.percentiles_ns.get("p99") if a is not None else None
        rows.append(ScaleRow(
            hosts=hosts,
            iops=iops,
            mb_s=a.bw_bytes_s / 1e6 if a is not None else None,
            mean_ms=to_ms(a.lat_mean_ns, "ns") if a is not None else None,
            p99_ms=to_ms(p99, "ns"),
            growth_pct=growth_pct(rows[-1].iops, iops) if rows else None,
            iops_per_host=iops / hosts if iops is not None and hosts > 0 else None,
        ))
    for prev, row in zip(rows, rows[1:]):
        if row.growth_pct is not None and row.growth_pct <= threshold_pct:
            return Scaling(rows, saturation=row, best=prev, threshold_pct=threshold_pct)
    return Scaling(rows, saturation=None, best=None, threshold_pct=threshold_pct)
