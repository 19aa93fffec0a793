"""Baseline, impact and recovery of a scenario's faults, on per-second rounds."""

from iofleet.analysis.impact import RECOVERY_BAND_PCT, impact, per_second, recovery_s
from iofleet.fio.status import Round, Totals

US = 1000  # ns


def _round(k: int, ios: int, lat_us: int, start_ms: int = 500) -> Round:
    """Second k of a host: `ios` writes, all in the histogram bin of `lat_us`."""
    start = start_ms + 1000 * k
    return Round(start, start + 1000, Totals(), Totals(ios, ios * 4096, ios, float(ios * lat_us * US),
                                                           {lat_us * US: ios}), 0.0)


def _host(iops: list[int], lat_us: list[int] | int = 100) -> list[Round]:
    lats = lat_us if isinstance(lat_us, list) else [lat_us] * len(iops)
    return [_round(k, n, lats[k]) for k, n in enumerate(iops)]


def test_the_series_sums_the_hosts_that_reported_and_takes_p99_from_merged_bins():
    rounds = {"h1": _host([1000, 1000, 1000], 100), "h2": _host([1000], 900)}
    s = per_second(rounds)
    assert s["t_s"] == [1.5, 2.5, 3.5]
    assert s["iops"] == [2000.0, 1000.0, 1000.0]
    assert s["hosts_reporting"] == [2, 1, 1]
    assert s["hosts"]["h2"] == [1000.0, None, None]
    # Half the IOs at 0.9 ms: p99 is there, not the mean of the hosts' p99s.
    assert s["p99_ms"][0] == 0.9 and s["p99_ms"][1] == 0.1


def test_baseline_impact_and_recovery_of_a_slowdown():
    iops = [1000] * 4 + [200, 200] + [700, 1000, 1000, 1000, 1000]
    lat = [100] * 4 + [2000, 2000] + [300] + [100] * 4
    out = impact({"h1": _host(iops, lat)}, [{"at_s": 4.5, "end_s": 6.5}])
    assert out["baseline"] == {"seconds": 4, "iops": 1000.0, "p99_ms": 0.1}
    (e,) = out["events"]
    assert e["during"] == {"seconds": 2, "iops": 200.0, "p99_ms": 2.0}
    assert e["iops_change_pct"] == -80.0 and e["p99_change_pct"] == 1900.0
    # Undone at 6.5 s; the second 6.5–7.5 is still low (700), back from 7.5 s for 3 s in a row.
    assert e["recovery_s"] == 1.0
    assert out["band_pct"] == RECOVERY_BAND_PCT


def test_a_host_lost_for_good_has_no_recovery_and_its_impact_runs_to_the_end():
    rounds = {"h1": _host([500] * 8), "h2": _host([500] * 3)}
    out = impact(rounds, [{"at_s": 3.5, "end_s": None}])
    assert out["baseline"]["iops"] == 1000.0
    (e,) = out["events"]
    assert e["to_s"] == 8.5 and e["during"]["iops"] == 500.0 and e["iops_change_pct"] == -50.0
    assert e["recovery_s"] is None


def test_an_event_without_for_lasts_until_the_next_one():
    out = impact({"h1": _host([1000] * 10)}, [{"at_s": 3.5, "end_s": None}, {"at_s": 6.5, "end_s": 7.5}])
    assert [e["to_s"] for e in out["events"]] == [6.5, 7.5]
    assert out["events"][0]["during"]["seconds"] == 3


def test_recovery_needs_the_whole_hold_inside_the_band():
    series = {"t_s": [1, 2, 3, 4, 5, 6, 7], "iops": [1000, 1000, 950, 800, 1050, 1000, 990]}
    assert recovery_s(series, 1.0, 1000.0, hold_s=3) == 3.0  # 4–7 s; 3 s after the end at 1 s
    assert recovery_s(series, 1.0, 1000.0, hold_s=5) is None
    assert recovery_s(series, 0.0, 1000.0, hold_s=2) == 0.0


def test_no_second_before_the_first_event_means_no_baseline_and_no_percent():
    out = impact({"h1": _host([1000] * 4)}, [{"at_s": 0.5, "end_s": 2.5}])
    assert out["baseline"] is None
    assert out["events"][0]["iops_change_pct"] is None and out["events"][0]["recovery_s"] is None
