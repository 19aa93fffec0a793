"""Stragglers: hosts whose IOPS fall well below the fleet's median host."""

import statistics

from ..results.model import Aggregate

# A host below this share of the median host's IOPS is named in the summary.
STRAGGLER_SHARE = 0.80


def stragglers(per_host: dict[str, Aggregate], share: float = STRAGGLER_SHARE) -> list[tuple[str, float]]:
    """(host, its IOPS as a share of the median host's), slowest first."""
    if len(per_host) < 2:
        return []
    median = statistics.median(a.all.iops for a in per_host.values())
    if median <= 0:
        return []
    slow = [(h, a.all.iops / median) for h, a in per_host.items() if a.all.iops < share * median]
    return sorted(slow, key=lambda x: x[1])
