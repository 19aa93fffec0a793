"""Exact aggregation of fio results (DESIGN.md, truth rule 1).

Rates add up; latency means are weighted by IO count; the standard
deviation is pooled exactly; percentiles come from merged latency bins and
are None when some input has no bins — they are never averaged.
"""

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass

from ..fio.merge import combine
from ..fio.records import DirectionStats, JobResult


@dataclass
class Aggregate:
    """Exact aggregate over many jobs (a test, or one host of a test):
    rates summed, means weighted by IO count, percentiles from merged bins."""

    jobs: int
    read: DirectionStats
    write: DirectionStats
    all: DirectionStats
    usr_cpu_pct: float  # mean per job, % of one CPU
    sys_cpu_pct: float


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
    """One Aggregate per host, in the order hosts first appear (within
    shared_by_host, computed once per list of jobs)."""
    memo = _shared.get()
    ids = tuple(map(id, jobs)) if memo is not None else ()
    hit = memo.get(id(jobs)) if memo is not None else None
    if hit is not None and hit[0] is jobs and hit[1] == ids:
        return hit[2]
    groups: dict[str, list[JobResult]] = {}
    for job in jobs:
        groups.setdefault(job.host, []).append(job)
    hosts = {host: aggregate(host_jobs) for host, host_jobs in groups.items()}
    if memo is not None:
        memo[id(jobs)] = (jobs, ids, hosts)  # the list kept alive: its id is not reused meanwhile
    return hosts


_shared: ContextVar[dict | None] = ContextVar("by_host_shared", default=None)


@contextlib.contextmanager
def shared_by_host():
    """Within this, by_host of the same, unchanged list of jobs is merged
    once and its result shared (callers only read it): a report asks for
    every test's hosts three times (summary rows, notes, export), each a
    merge of every job's histograms."""
    token = _shared.set({})
    try:
        yield
    finally:
        _shared.reset(token)
