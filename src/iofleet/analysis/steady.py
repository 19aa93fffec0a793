"""Steady state of one test, per SNIA Solid State Storage PTS v2.0.x.

The per-second series of a test (the fleet's summed IOPS, or its mean
latency) is cut into *rounds* of `round_s` seconds, each round reduced to its
mean. A *measurement window* of `window` consecutive rounds (5 in the PTS)
is steady when both

- data excursion:  max(y) − min(y)            ≤ data_pct  % of mean(y)  (20 %)
- slope excursion: |a| × (x_last − x_first)   ≤ slope_pct % of mean(y)  (10 %)

hold, where y are the window's round means, x their round numbers and a the
slope of the least-squares line y = a·x + b through them. The first window,
scanning from the start, that passes both is the steady-state window.

Slope factor: the PTS asks that the best linear fit's maximum minus its
minimum *within the measurement window* be within 10 % of the average. A line
evaluated at the window's rounds x_first … x_last changes by
|a| × (x_last − x_first) = |a| × (window − 1); that is what we use. Some
implementations multiply by `window` instead, which is window/(window − 1)
times stricter (25 % with 5 rounds) than the standard's wording.

Pure logic; its verdict is a stored record (results.methodology). See
docs/steady-state.md.
"""

from __future__ import annotations

import math

from ..results.methodology import SteadyVerdict
from ..results.methodology import count as _count
from ..results.methodology import why_unjudged as _why_unjudged

# Float round-off must not turn an excursion that is exactly at the limit in
# decimal arithmetic (20 % of 100) into a failure; one part in 10^9 is far
# below anything a measurement can show.
_REL_TOLERANCE = 1e-9


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def rounds_of(t_ms: list[int], values: list[float], round_s: int) -> list[float]:
    """Means of the whole rounds of `round_s` seconds of a per-second series.

    Round k holds the samples whose end time t is in
    (k·round_s·1000, (k+1)·round_s·1000] ms, t counted from the start of the
    measured part (the first sample ends near 1000). A round is whole when it
    has at least round_s − 1 valid samples (at least 1): one missing sample
    is allowed, because fio may drop a second or log it a few ms late, into
    the next round (that round then has one sample more; its mean is still
    the mean of its samples).

    Gaps: a sample that is None or not finite counts as missing, and samples
    at t ≤ 0 (before the measured part) are ignored. Incomplete rounds at the
    end are dropped (the test stopped inside them). An incomplete round
    between whole ones is kept in its place as NaN, so round numbers stay
    aligned with time; `steady_state` does not judge a window holding one.
    """
    if isinstance(round_s, bool) or not isinstance(round_s, int) or round_s < 1:
        raise ValueError(f"round_s must be a whole number of seconds ≥ 1, not {round_s!r}")
    if len(t_ms) != len(values):
        raise ValueError(f"t_ms has {len(t_ms)} samples but values has {len(values)}")
    span_ms = round_s * 1000
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for t, v in zip(t_ms, values):
        if t <= 0 or not _finite(v):
            continue
        k = (t - 1) // span_ms  # integer ms: t in (k·span, (k+1)·span]
        sums[k] = sums.get(k, 0.0) + float(v)
        counts[k] = counts.get(k, 0) + 1
    if not counts:
        return []
    need = max(1, round_s - 1)
    out = [sums[k] / counts[k] if counts.get(k, 0) >= need else math.nan
           for k in range(max(counts) + 1)]
    while out and math.isnan(out[-1]):
        out.pop()
    return out


def window_of(verdict: SteadyVerdict) -> tuple[int, int] | None:
    """(start_s, end_s) of the steady-state window, None when not steady."""
    if not verdict.steady or verdict.start_s is None or verdict.end_s is None:
        return None
    return verdict.start_s, verdict.end_s


def steady_state(rounds: list[float | None], *, metric: str, round_s: int, window: int = 5,
                 data_pct: float = 20.0, slope_pct: float = 10.0,
                 spans_s: list[tuple[float, float]] | None = None) -> SteadyVerdict:
    """Judge the round means of one metric (see the module docstring).
    `spans_s`: each round's (start, end) in seconds of the measured part,
    when rounds are not exactly k·round_s (fio's status ticks); the
    window's start_s/end_s are then those of its rounds.

    Windows of `window` rounds are scanned from the first round; the first
    one that passes both criteria is the steady-state window. A window with a
    gap (None/NaN round) or an average ≤ 0 (no IO) cannot be judged and is
    passed over; when no window can be judged the verdict is "not enough
    data". Otherwise, if none passes, the reason gives the last judged
    window's excursions."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise ValueError(f"window must be a whole number of rounds ≥ 2, not {window!r}")
    if data_pct < 0 or slope_pct < 0:
        raise ValueError("data_pct and slope_pct must be ≥ 0")
    clean: list[float | None] = [float(v) if _finite(v) else None for v in rounds]
    verdict = SteadyVerdict(metric=metric, steady=False, reason="", round_s=round_s, window=window,
                            rounds=clean, data_pct=data_pct, slope_pct=slope_pct)
    n = len(clean)
    if n < window:
        verdict.reason = (f"not enough data: {_count(n, 'round')} of {round_s} s, {window} needed")
        return verdict
    last: tuple[int, float, float, float] | None = None
    for i in range(n - window + 1):
        ys = clean[i:i + window]
        if any(y is None for y in ys):
            continue
        avg = math.fsum(ys) / window
        if not avg > 0:
            continue
        data_exc = 100.0 * (max(ys) - min(ys)) / avg
        slope_exc = 100.0 * abs(_slope(ys)) * (window - 1) / avg  # PTS: the line's change x_first → x_last
        last = (i, avg, data_exc, slope_exc)
        if _within(data_exc, data_pct) and _within(slope_exc, slope_pct):
            break
    if last is None:
        why = _why_unjudged(clean, window)
        verdict.reason = ("not enough data: every window has a round without samples" if why == "gaps"
                          else "not enough data: no IO in the window")
        return verdict
    i, avg, data_exc, slope_exc = last
    verdict.first_round, verdict.last_round = i, i + window - 1
    if spans_s is not None:
        verdict.start_s, verdict.end_s = round(spans_s[i][0], 3), round(spans_s[i + window - 1][1], 3)
    else:
        verdict.start_s, verdict.end_s = i * round_s, (i + window) * round_s
    verdict.average, verdict.data_excursion_pct, verdict.slope_excursion_pct = avg, data_exc, slope_exc
    failed = []
    if not _within(data_exc, data_pct):
        failed.append(f"data excursion {_pct(data_exc, data_pct)}% > {data_pct:g}%")
    if not _within(slope_exc, slope_pct):
        failed.append(f"slope excursion {_pct(slope_exc, slope_pct)}% > {slope_pct:g}%")
    if failed:
        verdict.reason = "not steady: " + ", ".join(failed)
    else:
        verdict.steady = True
        verdict.reason = (f"steady: rounds {i + 1}–{i + window} ({verdict.start_s}–{verdict.end_s} s), "
                          f"data excursion {_pct(data_exc)}% ≤ {data_pct:g}%, "
                          f"slope excursion {_pct(slope_exc)}% ≤ {slope_pct:g}%")
    return verdict


def _slope(ys: list[float]) -> float:
    """Least-squares slope a of y = a·x + b, x = 0, 1, …, len(ys) − 1 (the
    slope does not depend on where the round numbers start)."""
    n = len(ys)
    x_mean = (n - 1) / 2
    y_mean = math.fsum(ys) / n
    sxy = math.fsum((x - x_mean) * (y - y_mean) for x, y in enumerate(ys))
    sxx = math.fsum((x - x_mean) ** 2 for x in range(n))
    return sxy / sxx


def _within(value_pct: float, limit_pct: float) -> bool:
    return value_pct <= limit_pct * (1 + _REL_TOLERANCE) + 1e-12


def _pct(x: float, limit: float | None = None) -> str:
    """A percentage with no decimals, or as many (up to 3) as it takes not to
    read like the limit it is compared with (20.4 % vs 20 %)."""
    for d in range(4):
        s = f"{x:.{d}f}"
        if limit is None or float(s) != limit:
            return s
    return s

