"""The aggregate of many jobs: a test, a host or a host group."""

from dataclasses import dataclass

from ..fio.records import DirectionStats


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
