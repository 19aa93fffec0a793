"""Little's law as a check on a measurement: in a closed loop, the IOs in
flight equal the IO rate times the mean time an IO takes
(outstanding IO = IOPS × mean latency). When fewer IOs were in flight than
the test asked for, the client did not keep its queues full (CPU-bound, or
the measurement is broken)."""

from ..results.model import TestRecord

# A test whose IOPS × mean latency differs from its outstanding IO by more
# than this share of it is flagged.
LITTLE_TOLERANCE = 0.15

SYNC_ENGINES = ("psync", "sync")  # one IO at a time per job, whatever iodepth says


def outstanding_io(test: TestRecord) -> int | None:
    """IOs the test keeps in flight over all its hosts (fio jobs × iodepth);
    None for mixed tests, whose host groups run different depths, for tests
    at a fixed rate (rate_iops, rate_mbps: iodepth is only a cap there) and
    for tests without figures."""
    params = test.params or {}
    jobs = test.aggregate.jobs if test.aggregate else None
    if params.get("groups") or not jobs or "iodepth" not in params:
        return None
    if params.get("rate_iops") or params.get("rate_mbps"):
        return None  # a fixed rate, not the queue, sets how many IOs are in flight
    engine = params.get("engine_used") or params.get("engine")
    depth = 1 if engine in SYNC_ENGINES else params["iodepth"]
    return jobs * depth


def in_flight(iops: float | None, lat_mean_us: float | None) -> float | None:
    """IOs in flight by Little's law: IOPS × mean latency."""
    if iops is None or lat_mean_us is None:
        return None
    return iops * lat_mean_us / 1e6


def little_ratio(test: TestRecord) -> float | None:
    """IOPS × mean latency ÷ outstanding IO of a test (1.0 when the law
    holds exactly); None when a figure is missing."""
    oio = outstanding_io(test)
    figures = test.figures().all
    seen = in_flight(figures.iops, figures.lat_mean_us)
    if not oio or seen is None or not figures.ios:
        return None
    return seen / oio


def little_holds(ratio: float | None, tolerance: float = LITTLE_TOLERANCE) -> bool | None:
    return None if ratio is None else abs(ratio - 1) <= tolerance
