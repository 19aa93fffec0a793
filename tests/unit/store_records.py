"""Runs and tests saved in a results store from hand-built records, with
awkward figures, so that inexact storage would show."""

from iofleet.fio.records import DirectionStats, DiskUtil, JobResult
from iofleet.fleet.metrics.records import HostCpu
from iofleet.results.model import Aggregate, TestInfo

PLAN = "name: demo\nworkloads:\n  - name: oltp\n    bs: 4k\n"


def stats(ios, *, bins=True, pct=True, basis="lat") -> DirectionStats:
    """A DirectionStats with awkward floats, so inexact storage would show."""
    if ios == 0:
        return DirectionStats(percentiles_ns={"p50": None, "p90": None, "p95": None,
                                              "p99": None, "p99.9": None})
    return DirectionStats(
        ios=ios,
        io_bytes=ios * 4096,
        runtime_ms=60_000,
        iops=ios / 60.0,
        bw_bytes_s=ios * 4096 / 60.0,
        lat_n=ios,
        lat_mean_ns=123456.78901234567,
        lat_stddev_ns=0.1 + 0.2,
        lat_min_ns=1_000,
        lat_max_ns=9_876_543_210,  # > 2**32
        percentiles_ns={"p50": 100_352.0, "p90": 150_528.0 if pct else None,
                        "p95": 177_152.0 if pct else None, "p99": 1e-300 if pct else None,
                        "p99.9": 987_136.0 if pct else None},
        bins={100_352: ios - 3, 150_528: 2, 2**40: 1} if bins else None,
        percentile_basis=basis,
    )


def job(host, index, *, reads=1000, writes=400) -> JobResult:
    r, w = stats(reads), stats(writes)
    return JobResult(host=host, job="oltp", index=index, error=0, runtime_ms=60_001,
                     usr_cpu_pct=3.3333333333333335, sys_cpu_pct=12.5,
                     read=r, write=w, all=stats(reads + writes))


def aggregate(jobs) -> Aggregate:
    n = sum(j.all.ios for j in jobs)
    return Aggregate(jobs=len(jobs), read=stats(n - 1), write=stats(1, pct=False, bins=False),
                     all=stats(n, basis="clat"), usr_cpu_pct=1 / 3, sys_cpu_pct=2 / 3)


def spec(test_id, repeat=1, **params) -> TestInfo:
    p = {"bs": 4096, "read_pct": 70, "random_pct": 100, "iodepth": 8, "jobs": 2,
         "size": 1024**3, "working_set_pct": 100, "runtime": 60, "ramp": 10,
         "engine": "io_uring", "direct": True}
    p.update(params)
    return TestInfo(id=test_id, workload="oltp", repeat=repeat, params=p)


def save(st, run_id, seq, *, status="ok", jobs=None, **kw):
    jobs = [job("h1", 0), job("h2", 0), job("h2", 1)] if jobs is None else jobs
    args = dict(
        seq=seq, test=spec("4k-r70-rand-j2-qd8", repeat=seq + 1), status=status, error=None,
        started_at="2024-05-01T10:00:00Z", ended_at="2024-05-01T10:01:10Z", jobs=jobs,
        aggregate=aggregate(jobs) if jobs else None, host_cpu=HostCpu(70, 41.25, 97.5),
        disks=[DiskUtil("h1", "nvme0n1", 99.87, 1000, 400)], series=[], artifacts={},
    )
    args.update(kw)
    return st.save_test(run_id, **args)


def new_run(st, **kw):
    args = dict(plan_name="demo", plan_text=PLAN, fio_version="fio-3.36",
                host_facts={"hostname": "h1", "cpus": 16, "memory_bytes": 64 * 2**30}, tests_planned=2)
    args.update(kw)
    return st.create_run(**args)
