"""Exact aggregation: rates add up, means are IO-weighted, stddev is pooled
exactly, percentiles come from merged bins and are never averaged."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from iofleet.fio.parse import parse_output
from iofleet.fio.merge import combine
from iofleet.results.aggregate import aggregate, by_host
from iofleet.fio.records import PERCENTILES, DirectionStats, JobResult, pct_key

FIO = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
NONE = {pct_key(p): None for p in PERCENTILES}


def parsed(name, host="local"):
    return parse_output((FIO / name).read_text(), host=host)


def hand_percentiles(bins_list):
    """Independent reference: sum the bins, sort, walk the cumulative count."""
    total_bins = {}
    for bins in bins_list:
        for value, count in bins.items():
            total_bins[value] = total_bins.get(value, 0) + count
    ordered = sorted(total_bins.items())
    total = sum(total_bins.values())
    out = {}
    for p in PERCENTILES:
        running = 0
        for value, count in ordered:
            running += count
            if running * 100 >= p * total:
                out[pct_key(p)] = value
                break
    return out


def stats_of(samples, **extra) -> DirectionStats:
    """DirectionStats of a sample array, as fio would report it (n-1 stddev)."""
    a = np.asarray(samples, dtype=float)
    return DirectionStats(
        ios=len(a), lat_n=len(a), lat_mean_ns=float(a.mean()),
        lat_stddev_ns=float(a.std(ddof=1)) if len(a) > 1 else 0.0,
        lat_min_ns=int(a.min()), lat_max_ns=int(a.max()), **extra,
    )


# --- on the recorded multi-job run ----------------------------------------------


@pytest.mark.parametrize("direction", ["read", "write", "all"])
def test_merged_percentiles_equal_hand_computation(direction):
    jobs = parsed("multi-job-json+.json").jobs
    merged = getattr(aggregate(jobs), direction)
    expected = hand_percentiles(getattr(j, direction).bins for j in jobs)
    assert merged.percentiles_ns == expected
    assert merged.percentile_basis == "lat"


def test_merged_percentiles_are_not_averages():
    jobs = parsed("multi-job-json+.json").jobs
    agg = aggregate(jobs)
    differs = 0
    for direction in ("read", "write", "all"):
        for key in agg.read.percentiles_ns:
            mean_of_jobs = sum(getattr(j, direction).percentiles_ns[key] for j in jobs) / len(jobs)
            differs += getattr(agg, direction).percentiles_ns[key] != mean_of_jobs
    assert differs > 0


def test_merged_bins_hold_every_io():
    agg = aggregate(parsed("multi-job-json+.json").jobs)
    for d in (agg.read, agg.write, agg.all):
        assert sum(d.bins.values()) == d.lat_n
    assert agg.all.lat_n == agg.read.lat_n + agg.write.lat_n


def test_rates_add_up_and_mean_is_io_weighted():
    jobs = parsed("multi-job-json+.json").jobs
    agg = aggregate(jobs)
    assert agg.jobs == 4
    for direction in ("read", "write"):
        one = [getattr(j, direction) for j in jobs]
        total = getattr(agg, direction)
        assert total.iops == pytest.approx(sum(s.iops for s in one), rel=1e-12)
        assert total.bw_bytes_s == sum(s.bw_bytes_s for s in one)
        assert total.ios == sum(s.ios for s in one)
        assert total.io_bytes == sum(s.io_bytes for s in one)
        weighted = sum(s.lat_mean_ns * s.lat_n for s in one) / sum(s.lat_n for s in one)
        assert total.lat_mean_ns == pytest.approx(weighted, rel=1e-12)
        assert total.lat_min_ns == min(s.lat_min_ns for s in one)
        assert total.lat_max_ns == max(s.lat_max_ns for s in one)
        assert total.runtime_ms == max(s.runtime_ms for s in one)
    assert agg.all.iops == pytest.approx(agg.read.iops + agg.write.iops, rel=1e-12)


def test_cpu_is_mean_per_job():
    jobs = parsed("multi-job-json+.json").jobs
    agg = aggregate(jobs)
    assert agg.usr_cpu_pct == pytest.approx(sum(j.usr_cpu_pct for j in jobs) / 4)
    assert agg.sys_cpu_pct == pytest.approx(sum(j.sys_cpu_pct for j in jobs) / 4)


def test_plain_json_merged_percentiles_are_unknown():
    agg = aggregate(parsed("multi-job-json.json").jobs)
    for d in (agg.read, agg.write, agg.all):
        assert d.percentiles_ns == NONE
        assert d.bins is None
        assert d.lat_mean_ns is not None


def test_by_host_in_first_seen_order():
    out = parsed("clientserver-2hosts-json+.json")
    hosts = by_host(out.jobs)
    assert list(hosts) == ["127.0.0.1:8765", "127.0.0.1:8766"]
    assert [h.jobs for h in hosts.values()] == [2, 2]
    for host, agg in hosts.items():
        mine = [j for j in out.jobs if j.host == host]
        assert agg.read.iops == pytest.approx(sum(j.read.iops for j in mine), rel=1e-12)
        assert agg.read.percentiles_ns == hand_percentiles(j.read.bins for j in mine)


# --- synthetic ----------------------------------------------------------------


def test_pooled_stddev_matches_numpy():
    rng = np.random.default_rng(7)
    a = rng.lognormal(11, 0.4, 37).round()
    b = rng.lognormal(11.5, 0.2, 80).round()
    c = np.array([123456.0])  # a single sample has stddev 0 and n-1 = 0
    merged = combine([stats_of(a), stats_of(b), stats_of(c)])
    everything = np.concatenate([a, b, c])
    assert merged.lat_n == len(everything)
    assert merged.lat_mean_ns == pytest.approx(everything.mean(), rel=1e-12)
    assert merged.lat_stddev_ns == pytest.approx(everything.std(ddof=1), rel=1e-9)
    assert merged.lat_min_ns == everything.min() and merged.lat_max_ns == everything.max()


def test_empty_inputs_contribute_no_latency():
    a = stats_of([100, 200, 300], bins={100: 1, 200: 1, 300: 1}, percentiles_ns={"p50": 200.0})
    empty = DirectionStats(runtime_ms=5000)
    merged = combine([empty, a, DirectionStats()])
    assert merged.lat_mean_ns == a.lat_mean_ns and merged.lat_stddev_ns == a.lat_stddev_ns
    assert merged.lat_min_ns == 100 and merged.runtime_ms == 5000
    assert merged.bins == a.bins and merged.percentiles_ns["p50"] == 200.0


def test_nothing_measured():
    merged = combine([DirectionStats(), DirectionStats()])
    assert merged.lat_n == 0 and merged.lat_mean_ns is None and merged.lat_stddev_ns is None
    assert merged.percentiles_ns == NONE and merged.bins is None
    assert combine([]).ios == 0
    assert aggregate([]).jobs == 0


def test_one_input_without_bins_keeps_its_percentiles():
    one = stats_of([1, 2, 3], percentiles_ns={**NONE, "p50": 2.0})
    merged = combine([one, DirectionStats()])
    assert merged.percentiles_ns["p50"] == 2.0 and merged.bins is None


def test_percentiles_unknown_when_an_input_lacks_bins():
    with_bins = stats_of([10, 20], bins={10: 1, 20: 1}, percentiles_ns={**NONE, "p50": 10.0})
    without = stats_of([30, 40], percentiles_ns={**NONE, "p50": 30.0})
    merged = combine([with_bins, without])
    assert merged.percentiles_ns == NONE and merged.bins is None
    assert merged.lat_mean_ns == 25.0


def test_mixed_lat_and_clat_percentiles_are_unknown():
    lat = stats_of([10, 20], bins={10: 1, 20: 1})
    clat = stats_of([30, 40], bins={30: 1, 40: 1}, percentile_basis="clat")
    merged = combine([lat, clat])
    assert merged.percentile_basis == "mixed"
    assert merged.percentiles_ns == NONE and merged.bins is None
    same = combine([clat, clat])
    assert same.percentile_basis == "clat" and same.percentiles_ns["p50"] == 30


def test_job_all_combines_read_and_write():
    job = parsed("clat-only-json+.json").jobs[0]
    assert job.all.ios == job.read.ios + job.write.ios
    assert job.all.bins == hand_merge(job.read.bins, job.write.bins)
    assert job.all.percentile_basis == "clat"
    n = job.read.lat_n + job.write.lat_n
    assert job.all.lat_mean_ns == pytest.approx(
        (job.read.lat_mean_ns * job.read.lat_n + job.write.lat_mean_ns * job.write.lat_n) / n)
    assert math.isfinite(job.all.lat_stddev_ns)


def hand_merge(a, b):
    return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}


def test_aggregate_does_not_touch_inputs():
    doc = json.loads((FIO / "multi-job-json+.json").read_text())
    jobs = parse_output(doc).jobs
    before = [dict(j.read.bins) for j in jobs]
    aggregate(jobs)
    assert [j.read.bins for j in jobs] == before


def test_by_host_groups_jobs():
    def job(host, iops):
        d = DirectionStats(ios=1, iops=iops)
        return JobResult(host=host, job="j", index=0, error=0, runtime_ms=1, usr_cpu_pct=1.0,
                         sys_cpu_pct=2.0, read=d, write=DirectionStats(), all=d)

    hosts = by_host([job("b", 1.0), job("a", 2.0), job("b", 3.0)])
    assert list(hosts) == ["b", "a"]
    assert hosts["b"].read.iops == 4.0 and hosts["b"].jobs == 2
