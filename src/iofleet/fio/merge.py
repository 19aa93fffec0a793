"""Exact merge of fio results: latency histogram math on json+ bins, and
the merge of several DirectionStats (DESIGN.md, truth rule 1).

fio's json+ output lists, per latency kind, `bins`: {bucket value in ns:
IO count}, with only non-empty buckets. Histograms of many jobs merge
exactly by adding counts, so percentiles of a whole test are computed from
merged bins (never by averaging per-job percentiles).
"""

from bisect import bisect_left
from collections.abc import Iterable, Mapping
import functools
from itertools import accumulate
import math
from fractions import Fraction

from .records import PERCENTILES, DirectionStats, pct_key


def _needed(p: float, total: int) -> int:
    """The fewest IOs that reach p/100 * total, exactly: counts are whole,
    so `cumulative >= threshold` is `cumulative >= ceil(threshold)`, and
    the threshold is computed in integers (a Fraction per bucket is slow)."""
    num, den = _ratio(p)
    return -(-num * total // den)


@functools.cache
def _ratio(p: float) -> tuple[int, int]:
    return (Fraction(p) / 100).as_integer_ratio()


def percentile_from_bins(bins: Mapping[int, int], p: float) -> float | None:
    """The p-th percentile of a histogram by fio's own rule.

    fio (stat.c, calc_clat_percentiles) walks the buckets in ascending
    order and returns the value of the first bucket where the cumulative
    count reaches p/100 * total. The threshold is computed exactly (fio
    uses long double) so 99.9 % of 1000 IOs needs 1000 IOs, as in fio:
    the double 99.9 is slightly above 99.9.
    """
    total = sum(bins.values())
    if total <= 0:
        return None
    threshold = _needed(p, total)
    cumulative = 0
    for value in sorted(bins):
        cumulative += bins[value]
        if cumulative >= threshold:
            return float(value)
    return float(max(bins))  # p > 100: fio would fail; clamp to the top


def merge_bins(many: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """Sum the counts per bucket of several histograms."""
    merged: dict[int, int] = {}
    for bins in many:
        if not merged:
            merged = dict(bins)  # the first one as it is (a copy at C speed)
            continue
        get = merged.get
        for value, count in bins.items():
            merged[value] = get(value, 0) + count
    return merged


def percentiles(bins: Mapping[int, int]) -> dict[str, float | None]:
    """All of iofleet's PERCENTILES from one histogram, keyed 'p50'…
    (percentile_from_bins for each, with one sort and one running sum)."""
    values = sorted(bins)
    counts = [bins[v] for v in values]
    total = sum(counts)
    if total <= 0 or min(counts) < 0:  # nothing measured, or not a histogram: the walk decides
        return {pct_key(p): percentile_from_bins(bins, p) for p in PERCENTILES}
    cumulative = list(accumulate(counts))
    out = {}
    for p in PERCENTILES:
        i = bisect_left(cumulative, _needed(p, total))  # the first bucket whose running count reaches it
        out[pct_key(p)] = float(values[i] if i < len(values) else values[-1])
    return out


def _no_percentiles() -> dict[str, float | None]:
    return {pct_key(p): None for p in PERCENTILES}


def combine(stats: list[DirectionStats]) -> DirectionStats:
    """Merge several DirectionStats (jobs, hosts, or read+write) exactly."""
    out = DirectionStats(
        ios=sum(s.ios for s in stats),
        io_bytes=sum(s.io_bytes for s in stats),
        runtime_ms=max((s.runtime_ms for s in stats), default=0),
        iops=sum(s.iops for s in stats),
        bw_bytes_s=sum(s.bw_bytes_s for s in stats),
        lat_n=sum(s.lat_n for s in stats),
        percentiles_ns=_no_percentiles(),
    )
    # Inputs without latency samples contribute nothing to latency.
    measured = [s for s in stats if s.lat_n > 0]
    bases = {s.percentile_basis for s in (measured or stats)}
    out.percentile_basis = bases.pop() if len(bases) == 1 else ("mixed" if measured else "lat")
    if not measured:
        return out

    mins = [s.lat_min_ns for s in measured]
    maxs = [s.lat_max_ns for s in measured]
    out.lat_min_ns = None if None in mins else min(mins)
    out.lat_max_ns = None if None in maxs else max(maxs)

    if len(measured) == 1:
        # One source: keep its figures as they are (no rounding by the
        # formulas below), and its percentiles are exact whatever their origin.
        only = measured[0]
        out.lat_mean_ns, out.lat_stddev_ns = only.lat_mean_ns, only.lat_stddev_ns
        out.percentiles_ns = {**out.percentiles_ns, **only.percentiles_ns}
        out.bins = dict(only.bins) if only.bins is not None else None
        return out

    n = out.lat_n
    if all(s.lat_mean_ns is not None for s in measured):
        mean = sum(s.lat_mean_ns * s.lat_n for s in measured) / n
        out.lat_mean_ns = mean
        if all(s.lat_stddev_ns is not None for s in measured):
            # Pooled sample variance (fio's stddev uses n-1): the squared
            # deviations within each input plus those between inputs.
            ss = 0.0
            for s in measured:
                within = s.lat_stddev_ns * s.lat_stddev_ns * (s.lat_n - 1)
                between = s.lat_n * (s.lat_mean_ns - mean) * (s.lat_mean_ns - mean)
                ss += within + between
            out.lat_stddev_ns = math.sqrt(ss / (n - 1))

    # Percentiles only from merged bins of one latency kind; never averaged.
    if out.percentile_basis != "mixed" and all(s.bins is not None for s in measured):
        out.bins = merge_bins(s.bins for s in measured)
        out.percentiles_ns = percentiles(out.bins)
    return out
