"""Baseline, impact and recovery of a scenario's faults, on per-second rounds."""

import gzip
import json
from pathlib import Path

from iofleet.analysis.impact import RECOVERY_BAND_PCT, Load, impact, per_second, recovery_s
from iofleet.analysis.stalls import on_grid
from iofleet.results.impact import ImpactSeries, SpanFigures
from iofleet.fio.parse import DocumentSplitter
from iofleet.fio.status import Round, Rounds, Totals, snapshot
from iofleet.units import LATENCY_CEILING_NS

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
    assert s.t_s == [1.5, 2.5, 3.5]
    assert s.iops == [2000.0, 1000.0, 1000.0]
    assert s.hosts_reporting == [2, 1, 1]
    assert s.hosts["h2"] == [1000.0, None, None]
    # Half the IOs at 0.9 ms: p99 is there, not the mean of the hosts' p99s.
    assert s.p99_ms[0] == 0.9 and s.p99_ms[1] == 0.1


def test_baseline_impact_and_recovery_of_a_slowdown():
    iops = [1000] * 4 + [200, 200] + [700, 1000, 1000, 1000, 1000]
    lat = [100] * 4 + [2000, 2000] + [300] + [100] * 4
    out = impact({"h1": _host(iops, lat)}, [{"at_s": 4.5, "end_s": 6.5}])
    assert out.baseline == SpanFigures(seconds=4, iops=1000.0, p99_ms=0.1, p99_lower_bound=False)
    (e,) = out.events
    assert e.during.to_dict() == {"seconds": 2, "iops": 200.0, "p99_ms": 2.0, "p99_lower_bound": False}
    assert out.stalls == [] and e.catch_up is None  # slow, not stalled; a load at full speed
    assert e.iops_change_pct == -80.0 and e.p99_change_pct == 1900.0
    # Undone at 6.5 s; the second 6.5–7.5 is still low (700), back from 7.5 s for 3 s in a row.
    assert e.recovery_s == 1.0
    assert out.band_pct == RECOVERY_BAND_PCT


def test_a_host_lost_for_good_has_no_recovery_and_its_impact_runs_to_the_end():
    rounds = {"h1": _host([500] * 8), "h2": _host([500] * 3)}
    out = impact(rounds, [{"at_s": 3.5, "end_s": None}])
    assert out.baseline.iops == 1000.0
    (e,) = out.events
    assert e.to_s == 8.5 and e.during.iops == 500.0 and e.iops_change_pct == -50.0
    assert e.recovery_s is None


def test_each_event_is_measured_over_its_own_span():
    """A later event does not cut an earlier one short, nor does an event without an end (a lost host)
    borrow the next one's: its span runs to the test's end."""
    out = impact({"h1": _host([1000] * 10)}, [{"at_s": 3.5, "end_s": None}, {"at_s": 6.5, "end_s": 7.5}])
    assert [e.to_s for e in out.events] == [10.5, 7.5]
    assert out.events[0].during.seconds == 7 and out.events[1].during.seconds == 1


def test_recovery_needs_the_whole_hold_inside_the_band():
    series = ImpactSeries(t_s=[1, 2, 3, 4, 5, 6, 7], iops=[1000, 1000, 950, 800, 1050, 1000, 990])
    assert recovery_s(series, 1.0, 1000.0, hold_s=3) == 3.0  # 4–7 s; 3 s after the end at 1 s
    assert recovery_s(series, 1.0, 1000.0, hold_s=5) is None
    assert recovery_s(series, 0.0, 1000.0, hold_s=2) == 0.0


def test_no_second_before_the_first_event_means_no_baseline_and_no_percent():
    out = impact({"h1": _host([1000] * 4)}, [{"at_s": 0.5, "end_s": 2.5}])
    assert out.baseline is None
    assert out.events[0].iops_change_pct is None and out.events[0].recovery_s is None


def _recorded_stall() -> list[Round]:
    """tests/fixtures/status/stall.fio run by fio 3.33 (500 IOPS, iodepth 4) with its disk stalled for 4 s
    about 5 s after its start (a blkio throttle of 1 byte/s): fio's status lines stopped meanwhile."""
    splitter, docs = DocumentSplitter(), []
    for line in gzip.open(Path(__file__).parent.parent / "fixtures" / "status" / "stall-status.json.gz", "rt"):
        docs += splitter.feed(line)
    rounds = Rounds(1)
    for d in docs:
        rounds.add(snapshot(json.loads(d)["jobs"]))
    return rounds.rounds


def test_a_stall_is_seconds_of_zero_iops_not_a_gap():
    rounds = _recorded_stall()
    assert max(r.seconds for r in rounds) > 3.5  # fio's status was held up through the stall: one long round
    out = impact({"local": rounds}, [{"at_s": 4.0, "end_s": 8.0}], Load(500, 4))
    s = out.series
    steps = [b - a for a, b in zip(s.t_s, s.t_s[1:])]
    assert all(0.9 <= d <= 1.1 for d in steps), steps  # every second is there
    assert [i for i, x in zip(s.iops, s.stalled) if x] == [0.0, 0.0, 0.0]
    (stall,) = out.stalls
    assert 3.5 <= stall.to_s - stall.from_s <= 4.5 and 3.5 <= stall.waited_s <= 4.5
    assert 4.0 <= stall.from_s <= 5.5
    # The IOs held, and the backlog fio issued once the disk was back, complete in the stall's last second.
    seconds, _ = on_grid("local", rounds)
    assert sum(x.round.read.ios + x.round.write.ios for x in seconds) == sum(r.read.ios + r.write.ios for r in rounds)
    after = s.stalled.index(True) + 3
    assert s.iops[after] > 1500 and not s.stalled[after]


def test_a_span_in_a_stall_counts_the_waiting_ios_and_says_its_p99_is_a_bound():
    rounds = _recorded_stall()
    out = impact({"local": rounds}, [{"at_s": 3.0, "end_s": 8.0}], Load(500, 4))
    (e,) = out.events
    stall = out.stalls[0]
    # Without the waiting IOs the span's p99 would be that of the IOs done before the stall (< 1 ms).
    assert e.during.p99_lower_bound is True
    assert e.during.p99_ms >= 0.9 * (8.0 - stall.from_s) * 1000
    # A load at full speed has no schedule: only the IOs in flight wait, too few for its p99.
    free = impact({"local": rounds}, [{"at_s": 3.0, "end_s": 8.0}], Load(None, 4)).events[0]
    assert free.during.p99_ms < 100 and free.catch_up is None


def test_the_catch_up_burst_is_reported_as_such_and_counts_as_back():
    rounds = _recorded_stall()
    out = impact({"local": rounds}, [{"at_s": 4.0, "end_s": 6.0}], Load(500, 4))
    (e,) = out.events
    c = e.catch_up
    assert c.behind_ios >= 1500 and c.burst_iops > 1500
    stall = out.stalls[0]
    assert stall.to_s - 0.5 <= c.drained_s <= stall.to_s + 1.5
    # Back once the disk is: the burst second (above the band) is the catch-up, not "not back".
    assert e.recovery_s is not None and e.recovery_s <= stall.to_s - 6.0 + 1.5


def test_a_late_status_line_is_a_missing_sample_spread_evenly_not_a_stall():
    late = Round(2500, 5500, Totals(), Totals(3000, 3000 * 4096, 3000, 3000 * 100e3, {100_000: 3000}), 0.0)
    rounds = _host([1000, 1000]) + [late] + [_round(5, 1000, 100)]
    seconds, stalls = on_grid("h1", rounds)
    assert stalls == []
    assert [s.round.read.ios + s.round.write.ios for s in seconds] == [1000, 1000, 1000, 1000, 1000, 1000]
    assert [s.estimated for s in seconds] == [False, False, True, True, True, False]


def test_a_wait_at_fio_s_histogram_ceiling_is_a_lower_bound():
    top = (1 << 33) + int(63.5 * (1 << 27))  # the value fio shows for its top bucket
    held = Round(1500, 2500, Totals(), Totals(5, 5 * 4096, 5, 5 * top, {top: 5}), 0.0)
    long = Round(2500, 22500, Totals(), Totals(10, 10 * 4096, 10, 10 * 100e3, {100_000: 10}), 0.0)
    _, (stall,) = on_grid("h1", [_round(0, 1000, 100), held, long])
    assert stall.bounded and stall.waited_s >= LATENCY_CEILING_NS / 1e9 - 0.1
    out = impact({"h1": [_round(0, 1000, 100), held]}, [{"at_s": 1.5, "end_s": 2.5}])
    assert out.events[0].during.p99_lower_bound is True
    assert out.events[0].during.p99_ms == round(LATENCY_CEILING_NS / 1e6, 3)


def test_seconds_without_an_io_are_a_stall_when_fio_kept_reporting():
    """An engine that polls (librbd's) keeps fio's status coming through a stall: its seconds hold no IO. The IO
    that completes after them waited through them."""
    empty = [Round(1500 + 1000 * k, 2500 + 1000 * k, Totals(), Totals(), 0.0) for k in range(3)]
    after = Round(4500, 5500, Totals(), Totals(900, 900 * 4096, 900, 900 * 100e3, {100_000: 896, 3_400_000_000: 4}),
                  0.0)
    seconds, (stall,) = on_grid("h1", [_round(0, 1000, 100)] + empty + [after])
    assert [s.stalled for s in seconds] == [False, True, True, True, False]
    assert (stall.from_s, stall.to_s, stall.waited_s) == (1.5, 4.9, 3.4)
