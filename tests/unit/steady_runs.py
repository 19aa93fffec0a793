"""Runs of `until: steady` tests stored in a real store from hand-built
results, with the window figures as the run study stores them (issue 17)."""

from iofleet.fio.records import DirectionStats, JobResult
from iofleet.fleet.metrics.records import HostCpu
from iofleet.results.aggregate import aggregate
from iofleet.results.methodology import FleetRecord, RunMethodology, TestMethodology
from iofleet.results.model import TestInfo
from iofleet.results.store import Store

PARAMS = {"bs": 4096, "read_pct": 100, "random_pct": 100, "iodepth": 8, "jobs": 1, "size": 2**26,
          "working_set_pct": 100, "runtime": 60, "ramp": 2, "engine": "io_uring", "direct": True,
          "until": "steady", "round": 2, "max_runtime": 60}
NONE = DirectionStats(percentiles_ns=dict.fromkeys(("p50", "p90", "p95", "p99", "p99.9")))


def reads(iops: float, mean_us: float, p95_us: float, p99_us: float, p99_9_us: float) -> DirectionStats:
    """A read direction over 30 s of the whole measured part."""
    ios = int(iops * 30)
    return DirectionStats(ios=ios, io_bytes=ios * 4096, runtime_ms=30_000, iops=iops, bw_bytes_s=iops * 4096,
                          lat_n=ios, lat_mean_ns=mean_us * 1000,
                          percentiles_ns={"p50": mean_us * 1000, "p90": p95_us * 1000, "p95": p95_us * 1000,
                                          "p99": p99_us * 1000, "p99.9": p99_9_us * 1000})


def job(host: str, iops: float, mean_us: float) -> JobResult:
    r = reads(iops, mean_us, 2 * mean_us, 3 * mean_us, 4 * mean_us)
    return JobResult(host=host, job="randread", index=0, error=0, runtime_ms=30_000, usr_cpu_pct=5.0,
                     sys_cpu_pct=20.0, read=r, write=NONE, all=r)


def figures(iops: float, mean_us: float, p95_us: float, p99_us: float, p99_9_us: float) -> dict:
    """One direction of a window, with the keys of results.export.direction_figures."""
    return {"iops": iops, "bw_mb_s": iops * 4096 / 1e6, "bw_bytes_s": iops * 4096, "ios": int(iops * 10),
            "io_bytes": int(iops * 10) * 4096, "runtime_ms": 10_000, "lat_mean_us": mean_us,
            "lat_stddev_us": None, "lat_min_us": None, "lat_max_us": None, "lat_p50_us": mean_us,
            "lat_p90_us": p95_us, "lat_p95_us": p95_us, "lat_p99_us": p99_us, "lat_p99_9_us": p99_9_us,
            "percentile_basis": "lat"}


NO_IO = dict.fromkeys(figures(1, 1, 1, 1, 1)) | {"ios": 0, "iops": 0.0, "bw_mb_s": 0.0, "bw_bytes_s": 0.0}


def window(start: float, end: float, *, steady: bool = True, cpu: dict | None = None) -> dict:
    """A read-only window of 1,200 IOPS: mean 800 us, p95 1.5 ms, p99 2.5 ms, p99.9 4 ms."""
    read = figures(1200, 800, 1500, 2500, 4000)
    out = {"start_s": start, "end_s": end, "steady": steady, "iops": 1200.0, "bw_bytes_s": 1200 * 4096.0,
           "lat_mean_ns": 800_000.0, "read": read, "write": dict(NO_IO), "all": dict(read)}
    if cpu:
        out["cpu"] = cpu
    return out


def verdict(steady: bool, start: float | None = None, end: float | None = None) -> dict:
    return {"metric": "iops", "steady": steady, "reason": "steady" if steady else "data excursion 31% > 20%",
            "round_s": 2, "window": 5, "rounds": [], "first_round": start // 2 if steady else None,
            "last_round": end // 2 - 1 if steady else None,
            "start_s": start, "end_s": end, "average": 1200.0 if steady else None,
            "data_excursion_pct": 5.0 if steady else 31.0, "slope_excursion_pct": 2.0, "data_pct": 20.0,
            "slope_pct": 10.0}


def method(until: str, win: dict | None, steady: bool = True) -> dict:
    v = verdict(steady, win["start_s"] if win and steady else None, win["end_s"] if win and steady else None)
    return {"steady": {"iops": v, "lat": v}, "until": until, "window": win, "prepared": True, "cache": {},
            "working_set": {}}


def store_run(tmp_path, tests: list[tuple[str, dict | None, list[JobResult]]], percentile: str = "p99") -> dict:
    """tests: (id, methodology, jobs); a fleet test when its jobs are on several hosts."""
    with Store.open(tmp_path) as st:
        run_id = st.create_run(plan_name="window", plan_text="name: window\n", label=None, fio_version="fio-3.33",
                               host_facts={"hostname": "vm"}, tests_planned=len(tests))
        st.set_run_methodology(run_id, RunMethodology.from_dict({"percentile": percentile}))
        for seq, (test_id, methodology, jobs) in enumerate(tests):
            hosts = list(dict.fromkeys(j.host for j in jobs))
            fleet = FleetRecord.from_dict({"hosts": hosts, "skew": None, "groups": {}}) if len(hosts) > 1 else None
            st.save_test(run_id, seq=seq, test=TestInfo(test_id, "w", 1, PARAMS),
                         status="ok", started_at="2026-11-24T00:00:00Z", ended_at="2026-11-24T00:00:40Z",
                         jobs=jobs, aggregate=aggregate(jobs), host_cpu=HostCpu(30, 50.0, 70.0), fleet=fleet,
                         methodology=methodology and TestMethodology.from_dict(methodology))
        st.finish_run(run_id, "complete")
        return st.get_run(run_id)
