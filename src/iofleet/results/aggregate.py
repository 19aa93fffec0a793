"""Exact aggregation of fio results (DESIGN.md, truth rule 1).

Rates add up; latency means are weighted by IO count; the standard
deviation is pooled exactly; percentiles come from merged latency bins and
are None when some input has no bins — they are never averaged.
"""

import math

from iofleet.results.bins import merge_bins, percentiles
from iofleet.results.model import PERCENTILES, Aggregate, DirectionStats, JobResult, pct_key


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


def aggregate(jobs: list[JobResult]) -> Aggregate:
    """Exact aggregate of many jobs; CPU is the mean per job."""
    count = len(jobs)
    return Aggregate(
        jobs=count,
        read=combine([j.read for j in jobs]),
        write=combine([j.write for j in jobs]),
        all=combine([j.all for j in jobs]),
        usr_cpu_pct=sum(j.usr_cpu_pct for j in jobs) / count if count else 0.0,
        sys_cpu_pct=sum(j.sys_cpu_pct for j in jobs) / count if count else 0.0,
    )


def by_host(jobs: list[JobResult]) -> dict[str, Aggregate]:
    """One Aggregate per host, in the order hosts first appear."""
    groups: dict[str, list[JobResult]] = {}
    for job in jobs:
        groups.setdefault(job.host, []).append(job)
    return {host: aggregate(host_jobs) for host, host_jobs in groups.items()}
