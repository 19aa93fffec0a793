"""Recorded runs (tests/fixtures/runs, exported JSON) as Run objects, for
rendering tests: one job per host carrying that host's exported figures,
so every figure the summary shows is the stored one (one source merges
unchanged, results.aggregate)."""

import json
from pathlib import Path

from iofleet.fio.records import DirectionStats, JobResult
from iofleet.fleet.metrics.records import HostCpu
from iofleet.results.aggregate import aggregate
from iofleet.results.methodology import FleetRecord, RunMethodology, TestMethodology
from iofleet.results.model import Run, TestRecord
from iofleet.results.records import from_optional

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
NS = 1000  # the export is in µs


def direction(d: dict) -> DirectionStats:
    if d["iops"] is None:
        return DirectionStats()
    us = {k: (v * NS if v is not None else None) for k, v in d.items() if k.startswith("lat_")}
    return DirectionStats(ios=d["ios"], io_bytes=d["io_bytes"], runtime_ms=d["runtime_ms"], iops=d["iops"],
                          bw_bytes_s=d["bw_bytes_s"], lat_n=d["ios"], lat_mean_ns=us["lat_mean_us"],
                          lat_stddev_ns=us["lat_stddev_us"], lat_min_ns=us["lat_min_us"], lat_max_ns=us["lat_max_us"],
                          percentiles_ns={p: us[f"lat_{p.replace('.', '_')}_us"]
                                          for p in ("p50", "p90", "p95", "p99", "p99.9")},
                          percentile_basis=d["percentile_basis"])


def test_record(t: dict) -> TestRecord:
    jobs = [JobResult(host=h, job=t["workload"], index=0, error=0, runtime_ms=f["all"]["runtime_ms"] or 0,
                      usr_cpu_pct=f["fio_usr_cpu_pct"] or 0, sys_cpu_pct=f["fio_sys_cpu_pct"] or 0,
                      read=direction(f["read"]), write=direction(f["write"]), all=direction(f["all"]))
            for h, f in t["hosts"].items()]
    agg = aggregate(jobs)
    if len(jobs) > 1:  # a fleet: the test's own exported figures (its percentiles need the bins)
        agg.all, agg.read, agg.write = direction(t["all"]), direction(t["read"]), direction(t["write"])
    cpu = HostCpu(t["host_cpu_samples"], t["host_cpu_avg_pct"], t["host_cpu_max_pct"]) \
        if t["host_cpu_samples"] is not None else None
    return TestRecord(pk=t["seq"], seq=t["seq"], id=t["id"], workload=t["workload"], repeat=t["repeat"],
                      params=t["params"], status=t["status"], error=t["error"], started_at=t["started_at"],
                      ended_at=t["ended_at"], host_cpu=cpu, host_metrics=[], controller=None,
                      fleet=from_optional(FleetRecord, t["fleet"]),
                      methodology=from_optional(TestMethodology, t["methodology"]), aggregate=agg, jobs=jobs, disks=[], artifact_dir=None,
                      artifacts=[])


def recorded_run(name: str) -> tuple[Run, dict]:
    """The run and its export."""
    doc = json.loads((RUNS / f"{name}.json").read_text())
    fields = ("id", "label", "plan_name", "plan_text", "source", "status", "created_at", "ended_at", "fio_version",
              "host_facts", "tests_planned", "note")
    run = Run(**{k: doc[k] for k in fields}, methodology=from_optional(RunMethodology, doc["methodology"]), resume=None, tests=[test_record(t) for t in doc["tests"]])
    return run, doc
