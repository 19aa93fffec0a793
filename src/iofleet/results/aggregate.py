"""Exact aggregation of fio results (DESIGN.md, truth rule 1).

Rates add up; latency means are weighted by IO count; the standard
deviation is pooled exactly; percentiles come from merged latency bins and
are None when some input has no bins — they are never averaged.
"""

from ..fio.merge import combine
from ..fio.records import JobResult
from .model import Aggregate


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
