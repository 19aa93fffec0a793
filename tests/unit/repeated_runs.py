"""Runs of repeated tests stored in a real store from hand-built results."""

from iofleet.fio.records import DirectionStats, JobResult
from iofleet.fleet.metrics.records import HostCpu
from iofleet.results.aggregate import aggregate
from iofleet.results.methodology import FleetRecord, TestMethodology
from iofleet.results.model import TestInfo
from iofleet.results.store import Store

PARAMS = {"bs": 4096, "read_pct": 100, "random_pct": 100, "iodepth": 8, "jobs": 1, "size": 2**26,
          "working_set_pct": 100, "runtime": 30, "ramp": 2, "engine": "io_uring", "direct": True}
NONE = DirectionStats(percentiles_ns=dict.fromkeys(("p50", "p90", "p95", "p99", "p99.9")))
ID, ONCE = "4k-r100-rand-j1-qd8", "64k-r100-rand-j1-qd8"


def job(host: str, iops: float, mean_us: float) -> JobResult:
    """30 s of reads: p95 = 2 × mean, p99 = 3 × mean."""
    ios = int(iops * 30)
    r = DirectionStats(ios=ios, io_bytes=ios * 4096, runtime_ms=30_000, iops=iops, bw_bytes_s=iops * 4096,
                       lat_n=ios, lat_mean_ns=mean_us * 1000,
                       percentiles_ns={"p50": mean_us * 1000, "p90": 2000 * mean_us, "p95": 2000 * mean_us,
                                       "p99": 3000 * mean_us, "p99.9": 4000 * mean_us})
    return JobResult(host=host, job="randread", index=0, error=0, runtime_ms=30_000, usr_cpu_pct=5.0,
                     sys_cpu_pct=20.0, read=r, write=NONE, all=r)


def store_run(tmp_path, tests: list[tuple], methodology: list[dict] | None = None):
    """tests: (id, repeat, status, jobs, host CPU avg %); a fleet test when its jobs are on several hosts;
    methodology: each test's (until: steady windows)."""
    with Store.open(tmp_path) as st:
        run_id = st.create_run(plan_name="repeats", plan_text="name: repeats\n", label=None, fio_version="fio-3.33",
                               host_facts={"hostname": "vm"}, tests_planned=len(tests))
        for seq, (test_id, repeat, status, jobs, cpu) in enumerate(tests):
            hosts = list(dict.fromkeys(j.host for j in jobs))
            fleet = FleetRecord.from_dict({"hosts": hosts, "skew": None, "groups": {}}) if len(hosts) > 1 else None
            st.save_test(run_id, seq=seq, test=TestInfo(test_id, "w", repeat, PARAMS),
                         status=status, error=None if status == "ok" else "fio exited with 1",
                         started_at="2026-11-24T00:00:00Z", ended_at="2026-11-24T00:00:40Z", jobs=jobs,
                         aggregate=aggregate(jobs), host_cpu=HostCpu(30, cpu, cpu + 20), fleet=fleet,
                         methodology=TestMethodology.from_dict(methodology[seq]) if methodology else None)
        st.finish_run(run_id, "complete")
        return st.get_run(run_id)


def three_runs(tmp_path, third: str = "ok"):
    """IOPS 900, 1,000, 1,100 (mean 1,000, standard deviation 100: 10.0 %); mean latency 1.0, 1.2, 1.4 ms."""
    return store_run(tmp_path, [(ID, 1, "ok", [job("local", 900, 1000)], 40.0),
                                (ID, 2, "ok", [job("local", 1000, 1200)], 50.0),
                                (ID, 3, third, [job("local", 1100, 1400)], 60.0),
                                (ONCE, 1, "ok", [job("local", 500, 2000)], 30.0)])
