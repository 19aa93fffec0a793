"""Latency histogram math on fio's json+ bins.

fio's json+ output lists, per latency kind, `bins`: {bucket value in ns:
IO count}, with only non-empty buckets. Histograms of many jobs merge
exactly by adding counts, so percentiles of a whole test are computed from
merged bins (never by averaging per-job percentiles).
"""

from collections.abc import Iterable, Mapping
from fractions import Fraction

from iofleet.results.model import PERCENTILES, pct_key


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
    threshold = Fraction(p) / 100 * total
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
        for value, count in bins.items():
            merged[value] = merged.get(value, 0) + count
    return merged


def percentiles(bins: Mapping[int, int]) -> dict[str, float | None]:
    """All of iofleet's PERCENTILES from one histogram, keyed 'p50'…"""
    return {pct_key(p): percentile_from_bins(bins, p) for p in PERCENTILES}
