"""Export of a stored run to JSON-able data and CSV."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from iofleet.results.aggregate import aggregate
from iofleet.results.export import (
    CSV_COLUMNS,
    DIRECTION_FIELDS,
    EXPORT_FIELDS,
    HOST_FIELDS,
    RUN_FIELDS,
    TEST_FIELDS,
)
from iofleet.results.model import TestInfo, run_to_csv
from iofleet.fio.records import DirectionStats, DiskUtil, JobResult
from iofleet.fleet.metrics.records import HostCpu
from iofleet.results.store import Store

DOC = Path(__file__).parents[2] / "docs" / "results-format.md"
NO_PCT = {"p50": None, "p90": None, "p95": None, "p99": None, "p99.9": None}


def stats(ios, lat_ns, *, bins=True) -> DirectionStats:
    if ios == 0:
        return DirectionStats(percentiles_ns=dict(NO_PCT))
    return DirectionStats(
        ios=ios, io_bytes=ios * 4096, runtime_ms=10_000, iops=ios / 10, bw_bytes_s=ios * 4096 / 10,
        lat_n=ios, lat_mean_ns=float(lat_ns), lat_stddev_ns=10.0, lat_min_ns=lat_ns - 50,
        lat_max_ns=lat_ns + 5000,
        percentiles_ns={"p50": float(lat_ns), "p90": float(lat_ns), "p95": float(lat_ns),
                        "p99": float(lat_ns + 1000), "p99.9": float(lat_ns + 2000)} if bins else dict(NO_PCT),
        bins={lat_ns: ios - 2, lat_ns + 1000: 1, lat_ns + 2000: 1} if bins else None,
    )


def job(host, index, reads, writes, *, bins=True) -> JobResult:
    r, w = stats(reads, 100_000, bins=bins), stats(writes, 300_000, bins=bins)
    a = stats(reads + writes, 200_000, bins=bins)
    return JobResult(host=host, job="oltp", index=index, error=0, runtime_ms=10_000,
                     usr_cpu_pct=2.0, sys_cpu_pct=6.0, read=r, write=w, all=a)


@pytest.fixture
def run(tmp_path):
    """A run with an ok test on two hosts, a test without bins, and a failed test."""
    with Store.open(tmp_path) as st:
        run_id = st.create_run(plan_name="demo", plan_text="name: demo\n", label="base",
                               fio_version="fio-3.36", host_facts={"hostname": "h1"}, tests_planned=3)
        params = {"bs": 4096, "read_pct": 70, "random_pct": 100, "iodepth": 8, "jobs": 2,
                  "size": 2**30, "working_set_pct": 100, "runtime": 10, "ramp": 2,
                  "engine": "io_uring", "direct": True, "until": "steady", "max_runtime": 600, "round": 30}
        jobs = [job("h1", 0, 1000, 400), job("h1", 1, 1000, 400), job("h2", 0, 1000, 400)]
        common = dict(started_at="2024-05-01T10:00:00Z", ended_at="2024-05-01T10:00:12Z",
                      series=[], artifacts={})
        st.save_test(run_id, seq=0, test=TestInfo("4k-r70-rand-j2-qd8", "oltp", 1, params),
                     status="ok", error=None, jobs=jobs, aggregate=aggregate(jobs),
                     host_cpu=HostCpu(10, 35.5, 80.25), disks=[DiskUtil("h1", "nvme0n1", 97.5, 2000, 800)],
                     **common)
        # Plain json (no bins) from two jobs: percentiles cannot be known exactly.
        plain = [job("h1", 0, 500, 0, bins=False), job("h1", 1, 500, 0, bins=False)]
        st.save_test(run_id, seq=1, test=TestInfo("import-1", "imported", 1, {"bs": 8192, "engine": "libaio"}),
                     status="partial", error="host h2 lost", jobs=plain, aggregate=aggregate(plain),
                     host_cpu=None, disks=[], **common)
        st.save_test(run_id, seq=2, test=TestInfo("4k-r70-rand-j2-qd8", "oltp", 2, params),
                     status="failed", error="fio: pid=12, err=28/file:io_u.c:1845, error=No space left",
                     jobs=[], aggregate=None, host_cpu=None, disks=[], **common)
        st.finish_run(run_id, "partial")
        return st.get_run(run_id)


def test_run_dict_fields_and_units(run):
    d = run.to_dict()
    json.dumps(d, allow_nan=False)  # JSON-able
    assert list(d) == list(RUN_FIELDS)
    assert d["format"] == "iofleet-results" and d["id"] == run.id and d["label"] == "base"
    assert d["fio_version"] == "fio-3.36" and d["status"] == "partial"

    t = d["tests"][0]
    assert list(t) == list(TEST_FIELDS)
    assert (t["id"], t["workload"], t["repeat"], t["status"], t["error"]) == (
        "4k-r70-rand-j2-qd8", "oltp", 1, "ok", None)
    assert t["params"]["bs"] == 4096 and t["params"]["direct"] is True
    assert t["fio_jobs"] == 3
    r = t["read"]
    assert list(r) == list(DIRECTION_FIELDS)
    assert r["ios"] == 3000 and r["io_bytes"] == 3000 * 4096
    assert r["iops"] == 300.0
    assert r["bw_bytes_s"] == 3000 * 4096 / 10 and r["bw_mb_s"] == 3000 * 4096 / 10 / 1e6
    assert r["lat_mean_us"] == 100.0 and r["lat_min_us"] == 99.95 and r["lat_max_us"] == 105.0
    assert r["lat_p50_us"] == 100.0 and r["lat_p99_9_us"] == 102.0
    assert r["percentile_basis"] == "lat"
    assert "lat_bins_ns" not in r
    assert t["host_cpu_samples"] == 10 and t["host_cpu_avg_pct"] == 35.5 and t["host_cpu_max_pct"] == 80.25
    assert t["fio_usr_cpu_pct"] == 2.0 and t["fio_sys_cpu_pct"] == 6.0
    assert t["disks"] == [{"host": "h1", "name": "nvme0n1", "util_pct": 97.5,
                           "read_ios": 2000, "write_ios": 800}]

    # Per host, from the stored jobs.
    assert list(t["hosts"]) == ["h1", "h2"]
    h1, h2 = t["hosts"]["h1"], t["hosts"]["h2"]
    assert list(h1) == list(HOST_FIELDS)
    assert h1["fio_jobs"] == 2 and h2["fio_jobs"] == 1
    assert h1["read"]["iops"] == 200.0 and h2["read"]["iops"] == 100.0
    assert h1["write"]["lat_p99_us"] == 300.0 and h1["write"]["lat_p99_9_us"] == 302.0


def test_unavailable_values_are_null_not_zero(run):
    d = run.to_dict()
    no_bins, failed = d["tests"][1], d["tests"][2]
    # Two jobs without histograms: percentiles unknown, but means and rates are exact.
    r = no_bins["read"]
    assert r["lat_p50_us"] is None and r["lat_p99_us"] is None and r["lat_p99_9_us"] is None
    assert r["lat_mean_us"] == 100.0 and r["iops"] == 100.0
    # No write IO at all: rates are a true 0, latencies unknown.
    w = no_bins["write"]
    assert w["iops"] == 0.0 and w["ios"] == 0 and w["lat_mean_us"] is None and w["lat_max_us"] is None
    assert no_bins["host_cpu_avg_pct"] is None and no_bins["host_cpu_samples"] is None
    assert no_bins["status"] == "partial" and no_bins["error"] == "host h2 lost"
    # A failed test: every figure null, status and fio's error line kept.
    assert failed["status"] == "failed" and failed["error"].startswith("fio: pid=12")
    assert failed["fio_jobs"] is None and failed["hosts"] == {} and failed["disks"] == []
    for direction in ("read", "write", "all"):
        assert set(failed[direction].values()) == {None}
    assert failed["fio_usr_cpu_pct"] is None


def test_bins_only_on_request(run):
    d = run.to_dict(include_bins=True)
    json.loads(json.dumps(d))
    t = d["tests"][0]
    assert t["read"]["lat_bins_ns"] == {"100000": 2994, "101000": 3, "102000": 3}
    assert t["hosts"]["h2"]["write"]["lat_bins_ns"] == {"300000": 398, "301000": 1, "302000": 1}
    assert d["tests"][1]["read"]["lat_bins_ns"] is None
    assert d["tests"][2]["all"]["lat_bins_ns"] is None


def test_csv(run):
    text = run_to_csv(run)
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    assert tuple(header) == CSV_COLUMNS and len(body) == 3
    assert len(set(header)) == len(header)
    for col in ("bs_bytes", "size_bytes", "runtime_s", "ramp_s", "read_iops", "read_lat_p99_us",
                "all_bw_mb_s", "write_lat_p99_9_us", "host_cpu_avg_pct", "fio_sys_cpu_pct"):
        assert col in header
    ok, partial, failed = (dict(zip(header, r)) for r in body)
    assert ok["run_id"] == str(run.id) and ok["test_id"] == "4k-r70-rand-j2-qd8"
    assert ok["fio_version"] == "fio-3.36" and ok["repeat"] == "1" and ok["status"] == "ok"
    assert ok["bs_bytes"] == "4096" and ok["size_bytes"] == str(2**30) and ok["direct"] == "true"
    assert ok["runtime_s"] == "10" and ok["ramp_s"] == "2" and ok["engine"] == "io_uring"
    assert (ok["until"], ok["max_runtime_s"], ok["round_s"]) == ("steady", "600", "30")
    # The parameter columns are the parameter table's, in its order; a parameter not stored is empty.
    assert header[10:30] == ["bs_bytes", "read_pct", "random_pct", "iodepth", "jobs", "size_bytes", "working_set_pct",
                             "runtime_s", "ramp_s", "engine", "direct", "compress_pct", "dedupe_pct", "rate_iops",
                             "rate_mb_s", "rbd_cache", "until",
                             "max_runtime_s", "round_s", "fio_jobs"]
    assert ok["compress_pct"] == "" and partial["until"] == ""
    assert float(ok["read_iops"]) == 300.0 and float(ok["read_lat_p99_us"]) == 100.0
    assert float(ok["all_iops"]) == 420.0 and ok["host_cpu_max_pct"] == "80.25"
    # Unknown values are empty, never 0.
    assert partial["read_lat_p99_us"] == "" and partial["iodepth"] == "" and partial["bs_bytes"] == "8192"
    assert partial["write_iops"] == "0.0" and partial["write_lat_mean_us"] == ""
    assert failed["all_iops"] == "" and failed["fio_jobs"] == ""
    assert failed["error"] == "fio: pid=12, err=28/file:io_u.c:1845, error=No space left"


def test_csv_floats_are_exact(run):
    body = list(csv.DictReader(io.StringIO(run_to_csv(run))))
    assert float(body[0]["read_bw_bytes_s"]) == run.to_dict()["tests"][0]["read"]["bw_bytes_s"]
    assert float(body[0]["read_bw_mb_s"]) == run.to_dict()["tests"][0]["read"]["bw_mb_s"]


def test_every_field_is_documented():
    doc = DOC.read_text()
    documented = set(re.findall(r"`([a-z0-9_]+)`", doc))
    names = {n for fields in EXPORT_FIELDS.values() for n in fields} | set(CSV_COLUMNS) | {"lat_bins_ns"}
    flattened = {f"{d}_{f}" for d in ("all", "read", "write") for f in DIRECTION_FIELDS}  # documented as a rule
    missing = sorted(n for n in names - flattened if n not in documented)
    assert missing == []


def test_percentiles_at_fio_s_histogram_ceiling_are_flagged_as_lower_bounds():
    from iofleet.results.export import DirectionFigures
    top_us = 17_112_760.32  # fio's top bucket: every IO from 17.046 s up
    f = DirectionFigures(lat_pct_us={"p50": 120.0, "p99": 900.0, "p99.9": top_us})
    assert f.to_dict()["lat_bound_percentiles"] == "p99.9"
    assert DirectionFigures(lat_pct_us={"p99": 900.0}).to_dict()["lat_bound_percentiles"] is None
