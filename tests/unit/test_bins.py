"""Latency histogram math: percentiles must be exactly the ones fio prints."""

import json
from pathlib import Path

import pytest

from iofleet.fio.merge import merge_bins, percentile_from_bins, percentiles
from iofleet.fio.records import PERCENTILES, pct_key

FIO = Path(__file__).resolve().parents[1] / "fixtures" / "fio"


def load(name):
    return json.loads((FIO / name).read_text())


def histograms(doc, kind="lat_ns"):
    """(label, bins, fio's percentile dict) of every direction with bins."""
    for i, job in enumerate(doc.get("jobs") or doc["client_stats"]):
        for direction in ("read", "write"):
            lat = job[direction][kind]
            if "bins" in lat:
                bins = {int(k): v for k, v in lat["bins"].items()}
                yield f"job{i}.{direction}", bins, lat["percentile"]


def test_empty_bins_have_no_percentile():
    assert percentile_from_bins({}, 50.0) is None
    assert percentile_from_bins({100: 0}, 99.0) is None
    assert percentiles({}) == {pct_key(p): None for p in PERCENTILES}


def test_small_histogram_by_fio_rule():
    # 10 IOs: 4 at 100 ns, 5 at 200 ns, 1 at 900 ns.
    bins = {200: 5, 900: 1, 100: 4}  # unsorted on purpose
    assert percentile_from_bins(bins, 40.0) == 100  # cumulative 4 >= 4
    assert percentile_from_bins(bins, 40.1) == 200
    assert percentile_from_bins(bins, 90.0) == 200  # cumulative 9 >= 9
    assert percentile_from_bins(bins, 99.0) == 900


def test_threshold_is_exact_like_fios_long_double():
    # fio compares in long double, where 99.9 (a double a hair above 99.9)
    # / 100 * 33000 is just above 32967; in plain double arithmetic it
    # rounds to exactly 32967.0 and would pick the lower bucket.
    bins = {10: 32967, 20: 33}
    assert 99.9 / 100 * 33000 == 32967.0
    assert percentile_from_bins(bins, 99.9) == 20


@pytest.mark.parametrize("fixture", ["single-job-json+.json", "multi-job-json+.json",
                                     "clientserver-2hosts-json+.json"])
def test_percentiles_from_bins_equal_fios_own(fixture):
    seen = 0
    for label, bins, fio_pct in histograms(load(fixture)):
        for p in PERCENTILES:
            assert percentile_from_bins(bins, p) == fio_pct[f"{p:f}"], (label, p)
        # Every percentile fio printed, not only ours.
        for key, value in fio_pct.items():
            assert percentile_from_bins(bins, float(key)) == value, (label, key)
        seen += 1
    assert seen >= 1


def test_single_job_fixture_has_read_bins():
    labels = [label for label, _, _ in histograms(load("single-job-json+.json"))]
    assert labels == ["job0.read"]


def test_multi_job_fixture_checks_each_job_both_directions():
    labels = [label for label, _, _ in histograms(load("multi-job-json+.json"))]
    assert labels == [f"job{i}.{d}" for i in range(4) for d in ("read", "write")]


def test_clat_bins_equal_fios_clat_percentiles():
    for label, bins, fio_pct in histograms(load("clat-only-json+.json"), "clat_ns"):
        assert percentiles(bins) == {pct_key(p): fio_pct[f"{p:f}"] for p in PERCENTILES}, label


def test_merge_bins_sums_counts():
    assert merge_bins([{1: 2, 5: 1}, {5: 3, 9: 1}, {}]) == {1: 2, 5: 4, 9: 1}
    assert merge_bins([]) == {}


def test_merge_does_not_change_inputs():
    a, b = {1: 2}, {1: 3}
    merge_bins([a, b])
    assert a == {1: 2} and b == {1: 3}
