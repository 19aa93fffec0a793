"""Steady state per SNIA PTS v2.0.x (iofleet.analysis.steady), checked
against numbers worked out by hand in the comments."""

import json
import math

import pytest

from iofleet.analysis.steady import SteadyVerdict, rounds_of, steady_state, window_of


def judge(rounds, **kw):
    kw.setdefault("metric", "iops")
    kw.setdefault("round_s", 10)
    return steady_state(rounds, **kw)


# --- steady windows -----------------------------------------------------------

RAMP_THEN_FLAT = [40, 60, 75, 103, 97, 103, 97, 100, 103, 97]  # 3 rounds of ramp, then 100 ± 3 %


def test_after_a_ramp_the_first_flat_window_is_steady():
    v = judge(RAMP_THEN_FLAT)
    # Windows before round 3 hold ramp rounds and fail the data excursion:
    #   r0–r4  40 60 75 103 97:  avg 375/5 = 75,   max−min 63 → 84 %
    #   r1–r5  60 75 103 97 103: avg 438/5 = 87.6, max−min 43 → 49 %
    #   r2–r6  75 103 97 103 97: avg 475/5 = 95,   max−min 28 → 29.5 %
    # Window r3–r7 = 103 97 103 97 100:
    #   avg = 500/5 = 100; max−min = 103−97 = 6 → 6 %
    #   x−x̄ = −2 −1 0 1 2; Σ(x−x̄)(y−ȳ) = −2·3 −1·(−3) + 0 + 1·(−3) + 2·0 = −6;
    #   Σ(x−x̄)² = 10; a = −0.6; |a|·(5−1) = 2.4 → 2.4 % of 100.
    assert v.steady
    assert (v.first_round, v.last_round) == (3, 7)
    assert (v.start_s, v.end_s) == (30, 80)
    assert window_of(v) == (30, 80)
    assert v.average == pytest.approx(100.0)
    assert v.data_excursion_pct == pytest.approx(6.0)
    assert v.slope_excursion_pct == pytest.approx(2.4)
    assert v.short() == "steady r4–r8"
    assert v.reason.startswith("steady: rounds 4–8 (30–80 s)")


def test_the_first_steady_window_wins_even_if_later_ones_are_flatter():
    # r0–r4 = 95 105 95 105 100: avg 100, data 10 %, Σ(x−x̄)(y−ȳ) = 10−5+0+5+0 = 10,
    # a = 1 → slope 4 %: steady at once; the perfectly flat rounds after it change nothing.
    v = judge([95, 105, 95, 105, 100, 100, 100, 100, 100])
    assert v.steady and (v.first_round, v.last_round) == (0, 4)
    assert v.slope_excursion_pct == pytest.approx(4.0)


def test_a_per_second_series_through_rounds_and_verdict():
    # 2-s rounds; each round is one second at r−1 and one at r+1, so its mean is r.
    means = [40, 60, 75, 103, 97, 103, 97, 100, 103, 97]
    t_ms, values = [], []
    for k, m in enumerate(means):
        t_ms += [2000 * k + 1000, 2000 * k + 2000]
        values += [m - 1, m + 1]
    assert rounds_of(t_ms, values, 2) == means
    v = steady_state(rounds_of(t_ms, values, 2), metric="lat_ns", round_s=2)
    assert v.steady and (v.start_s, v.end_s) == (6, 16) and v.metric == "lat_ns"


# --- not steady ---------------------------------------------------------------

def test_a_series_still_dropping_is_not_steady_and_says_by_how_much():
    # A write cliff still settling; the last window judged is r5–r9 = 100 92 86 81 77:
    #   avg = 436/5 = 87.2; max−min = 23 → 23/87.2 = 26.38 %
    #   Σ(x−x̄)(y−ȳ) = −2·100 −1·92 + 0 + 1·81 + 2·77 = −57 (ȳ drops out, Σ(x−x̄) = 0)
    #   a = −57/10 = −5.7; |a|·4 = 22.8 → 22.8/87.2 = 26.15 %
    v = judge([200, 170, 145, 125, 110, 100, 92, 86, 81, 77])
    assert not v.steady
    assert (v.first_round, v.last_round, v.start_s, v.end_s) == (5, 9, 50, 100)
    assert v.average == pytest.approx(87.2)
    assert v.data_excursion_pct == pytest.approx(100 * 23 / 87.2)
    assert v.slope_excursion_pct == pytest.approx(100 * 22.8 / 87.2)
    assert v.reason == "not steady: data excursion 26% > 20%, slope excursion 26% > 10%"
    assert v.short() == "not steady"
    assert window_of(v) is None


def test_a_drift_of_30_percent_over_the_window_is_not_steady():
    # 85 92.5 100 107.5 115: avg 100, a = 7.5, |a|·4 = 30 → 30 %; max−min = 30 → 30 %.
    v = judge([85, 92.5, 100, 107.5, 115])
    assert not v.steady
    assert v.reason == "not steady: data excursion 30% > 20%, slope excursion 30% > 10%"


def test_passing_the_data_excursion_but_failing_the_slope():
    # 94 97 100 103 106: avg 100, max−min 12 → 12 % ≤ 20 %; a = 3, |a|·4 = 12 → 12 % > 10 %.
    v = judge([94, 97, 100, 103, 106])
    assert not v.steady
    assert v.data_excursion_pct == pytest.approx(12.0)
    assert v.slope_excursion_pct == pytest.approx(12.0)
    assert v.reason == "not steady: slope excursion 12% > 10%"


def test_passing_the_slope_but_failing_the_data_excursion():
    # 75 125 100 125 75: avg 500/5 = 100, max−min 50 → 50 %;
    # Σ(x−x̄)(y−ȳ) = −2·(−25) −1·25 + 0 + 1·25 + 2·(−25) = 0 → slope 0 %.
    v = judge([75, 125, 100, 125, 75])
    assert not v.steady
    assert v.slope_excursion_pct == pytest.approx(0.0, abs=1e-12)
    assert v.reason == "not steady: data excursion 50% > 20%"


# --- boundaries ---------------------------------------------------------------

def test_data_excursion_of_exactly_20_percent_is_steady_and_20_5_is_not():
    # 90 110 100 110 90: avg 100, max−min 20 → 20 %, symmetric → slope 0.
    at = judge([90, 110, 100, 110, 90])
    assert at.steady and at.data_excursion_pct == pytest.approx(20.0)
    # 89.75 110.25 100 110.25 89.75: avg 500/5 = 100, max−min 20.5 → 20.5 %.
    over = judge([89.75, 110.25, 100, 110.25, 89.75])
    assert not over.steady
    assert over.reason == "not steady: data excursion 20.5% > 20%"
    # Exactly 20 % in decimals stays steady although binary floats make it 20.000000000000007:
    # latency rounds 0.9 1.1 1.0 1.1 0.9 ms, avg 1.0, max−min 0.2.
    lat = judge([0.9, 1.1, 1.0, 1.1, 0.9], metric="lat_ms")
    assert lat.data_excursion_pct > 20.0 and lat.steady


def test_slope_excursion_of_exactly_10_percent_is_steady_and_10_25_is_not():
    # 95 97.5 100 102.5 105: avg 100, a = 2.5, |a|·4 = 10 → 10 %; data 10 %.
    at = judge([95, 97.5, 100, 102.5, 105])
    assert at.steady and at.slope_excursion_pct == pytest.approx(10.0)
    # 94.875 97.4375 100 102.5625 105.125: a = 2.5625, |a|·4 = 10.25 → 10.25 %; data 10.25 %.
    over = judge([94.875, 97.4375, 100, 102.5625, 105.125])
    assert not over.steady
    assert over.reason == "not steady: slope excursion 10.2% > 10%"
    # Same in decimals: 0.95 0.975 1.0 1.025 1.05, a = 0.025, |a|·4 = 0.1 → 10 % (10.000000000000005 in floats).
    lat = judge([0.95, 0.975, 1.0, 1.025, 1.05], metric="lat_ms")
    assert lat.slope_excursion_pct > 10.0 and lat.steady  # 10.25 shown with one decimal


def test_the_slope_excursion_is_the_line_change_over_window_minus_one_rounds():
    # 95.2 97.6 100 102.4 104.8: avg 100, a = 2.4.
    #   PTS (fit's max − min within the window): |a|·(5−1) = 9.6 → 9.6 % ≤ 10 % → steady.
    #   The |a|·5 variant would give 12 % and call it not steady.
    v = judge([95.2, 97.6, 100, 102.4, 104.8])
    assert v.slope_excursion_pct == pytest.approx(9.6)
    assert v.steady


def test_limits_and_window_length_are_parameters():
    # Same 94 … 106 drift (slope 12 %) passes with slope_pct=15.
    assert judge([94, 97, 100, 103, 106], slope_pct=15).steady
    # Window of 3: r0–r2 = 80 100 120 (data 40 %) fails; r1–r3 = 100 120 110:
    # avg 110, max−min 20 → 18.2 %; a = (−1·(−10) + 1·0)/2 = 5, |a|·2 = 10 → 9.1 %.
    v = judge([80, 100, 120, 110], window=3)
    assert v.steady and (v.first_round, v.last_round) == (1, 3)
    assert v.slope_excursion_pct == pytest.approx(100 * 10 / 110)


# --- not enough data ----------------------------------------------------------

def test_too_few_rounds_is_not_enough_data():
    v = judge([100, 100, 100])
    assert not v.steady
    assert v.reason == "not enough data: 3 rounds of 10 s, 5 needed"
    assert v.first_round is None and v.start_s is None and v.average is None
    assert v.short() == "n/a (3 rounds)"
    assert judge([100], round_s=60).reason == "not enough data: 1 round of 60 s, 5 needed"


def test_empty_input_is_not_enough_data():
    v = judge(rounds_of([], [], 10))
    assert not v.steady and v.reason == "not enough data: 0 rounds of 10 s, 5 needed"
    assert v.short() == "n/a (0 rounds)"


def test_all_zeros_is_no_io_never_a_division_by_zero():
    v = judge([0, 0, 0, 0, 0, 0])
    assert not v.steady
    assert v.reason == "not enough data: no IO in the window"
    assert v.first_round is None and v.short() == "n/a (no IO)"


def test_a_stall_is_passed_over_and_the_windows_after_it_judged():
    v = judge([0, 0, 0, 0, 0, 100, 100, 100, 100])
    # r0 (zeros) is skipped; r1–r5 has avg 20, max−min 100 → 500 %; … r4–r8 = 0 100 100 100 100.
    assert not v.steady and (v.first_round, v.last_round) == (4, 8)
    assert v.data_excursion_pct == pytest.approx(125.0)  # 100 / 80


def test_nan_and_none_rounds_are_not_enough_data():
    for gap in (math.nan, None, math.inf):
        v = judge([100, 100, gap, 100, 100])
        assert not v.steady, gap
        assert v.reason == "not enough data: every window has a round without samples"
        assert v.short() == "n/a (gaps)"
        assert v.rounds[2] is None


def test_windows_with_a_gap_are_skipped():
    # The gap at r1 spoils r0–r4 and r1–r5; r2–r6 is the first window that can be judged.
    v = judge([100, None, 100, 100, 100, 100, 100])
    assert v.steady and (v.first_round, v.last_round) == (2, 6)


def test_bad_parameters_are_bugs():
    with pytest.raises(ValueError):
        judge([1] * 5, window=1)
    with pytest.raises(ValueError):
        rounds_of([1000], [1.0], 0)
    with pytest.raises(ValueError):
        rounds_of([1000, 2000], [1.0], 1)


# --- rounds_of ----------------------------------------------------------------

def test_rounds_of_averages_whole_rounds_and_drops_the_incomplete_last_one():
    t = [1000 * (i + 1) for i in range(25)]
    values = [float(i + 1) for i in range(25)]  # 1 … 25
    # 10-s rounds: (0,10 s] = 1…10 → 5.5; (10,20 s] = 11…20 → 15.5; (20,30 s] has 5 of 10 → dropped.
    assert rounds_of(t, values, 10) == [5.5, 15.5]
    # 5-s rounds: 1…5 → 3, 6…10 → 8, … 21…25 → 23: all whole.
    assert rounds_of(t, values, 5) == [3.0, 8.0, 13.0, 18.0, 23.0]


def test_rounds_of_allows_one_missing_sample_per_round():
    t = [1000 * (i + 1) for i in range(20)]
    values = [10.0] * 10 + [20.0] * 10
    # The last round loses one sample (9 of 10): still whole, mean of the 9.
    assert rounds_of(t[:-1], values[:-1], 10) == [10.0, 20.0]
    # Two missing in the last round: dropped.
    assert rounds_of(t[:-2], values[:-2], 10) == [10.0]
    # A sample logged 3 ms late falls into the next round: 9 and 11 samples, both whole.
    late = t[:9] + [10_003] + t[10:]
    assert rounds_of(late, values, 10) == [10.0, (10.0 + 10 * 20.0) / 11]


def test_rounds_of_keeps_a_gap_between_whole_rounds_as_nan():
    t = [1000 * (i + 1) for i in range(30)]
    values = [1.0] * 10 + [2.0] * 3 + [None] * 7 + [3.0] * 10  # r1 has only 3 valid samples
    r = rounds_of(t, values, 10)
    assert r[0] == 1.0 and math.isnan(r[1]) and r[2] == 3.0
    # Second 15–19 never logged at all: same thing.
    kept = [i for i in range(30) if not 13 <= i < 20]
    r = rounds_of([t[i] for i in kept], [1.0 if i < 10 else 3.0 for i in kept], 10)
    assert len(r) == 3 and math.isnan(r[1])


def test_rounds_of_one_second_returns_the_values():
    t = [1000, 2000, 3000, 4000]
    assert rounds_of(t, [5.0, 7.0, 6.0, 9.0], 1) == [5.0, 7.0, 6.0, 9.0]


def test_rounds_of_ignores_samples_before_the_measured_part():
    assert rounds_of([0, -1000, 1000, 2000], [99.0, 99.0, 1.0, 3.0], 2) == [2.0]


# --- plain data ---------------------------------------------------------------

def test_to_dict_is_json_safe_and_round_trips():
    for v in (judge(RAMP_THEN_FLAT), judge([94, 97, 100, 103, 106]), judge([1, 2]),
              judge([100, math.nan, 100, 100, 100, 100])):
        d = v.to_dict()
        assert json.loads(json.dumps(d, allow_nan=False)) == d
        back = SteadyVerdict.from_dict(json.loads(json.dumps(d)))
        assert back == v
        assert back.short() == v.short()
    d = judge(RAMP_THEN_FLAT).to_dict()
    assert d["first_round"] == 3 and d["steady"] is True and d["data_pct"] == 20.0
    assert SteadyVerdict.from_dict({**d, "added_later": 1}).first_round == 3
