"""How far a test's figures can be trusted: its steady-state verdicts, the
figures of its measurement window, and whether its working set fits in a
cache (a "cache test") or not (a "capacity test")."""

import numpy as np

from ..fio.jobfile import LOG_INTERVAL_MS
from ..fio.records import Series
from ..plan.params import STEADY_DATA_PCT, STEADY_SLOPE_PCT, STEADY_WINDOW_ROUNDS
from .steady import SteadyVerdict, rounds_of, steady_state


def test_totals(series: list[Series], phase: str = "measured") -> dict[str, list]:
    """The test's per-second totals over every job and host of the measured
    part (or of the warm-up, for plots): IOPS and bytes/s summed, mean
    latency weighted by IOPS. `t_ms` is each second's end from the start of
    the part, `origin_ms` that start in the logs' clock. A fleet test is cut
    where its first host stopped (with until: steady hosts stop on their
    own), so every second holds every host."""
    measured = [s for s in series if s.phase == phase and s.t_ms]
    if not measured:
        return {"t_ms": [], "iops": [], "bw_bytes_s": [], "lat_mean_ns": [], "origin_ms": None}
    origin = min(s.t_ms[0] for s in measured) - LOG_INTERVAL_MS
    last = {}
    for s in measured:
        last[s.host] = max(last.get(s.host, 0), s.t_ms[-1])
    end = min(last.values()) - origin
    # With numpy, series by series in the same order as a loop over the
    # samples would add them (np.bincount adds in array order), so every
    # sum is the same to the last bit; 64 hosts × 600 s are millions of samples.
    by_key = {(s.host, s.job_index, s.direction, s.metric): s for s in measured}
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"iops": [], "bw_bytes_s": [], "lat": [], "lat_ios": []}
    arrays = {}
    for key, s in by_key.items():
        n = min(len(s.t_ms), len(s.values))
        arrays[key] = _floats(s.t_ms, n), _floats(s.values, n)
    for (host, job, direction, metric), (t, values) in arrays.items():
        second = np.rint((t - origin) / 1000)  # round half to even, as round()
        kept = second * 1000 <= end + 500
        if metric in ("iops", "bw_bytes_s"):
            parts[metric].append((second[kept], values[kept]))
        if metric == "lat_ns":
            ios = arrays.get((host, job, direction, "iops"))
            weight = _weights(*ios, t) if ios and len(ios[0]) else np.zeros(len(t))
            kept &= weight > 0
            w = weight[kept]
            parts["lat"].append((second[kept], values[kept] * w))
            parts["lat_ios"].append((second[kept], w))
    seconds = np.unique(np.concatenate([x for x, _ in parts["iops"]] or [np.zeros(0)])).astype(np.int64)
    iops, bw, lat_weighted, lat_ios = (_sum_by_second(parts[k], seconds) for k in ("iops", "bw_bytes_s", "lat", "lat_ios"))
    return {
        "t_ms": [k * 1000 for k in seconds.tolist()],
        "iops": iops.tolist(),
        "bw_bytes_s": bw.tolist(),
        "lat_mean_ns": [lw / li if li else None for lw, li in zip(lat_weighted.tolist(), lat_ios.tolist())],
        "origin_ms": origin,
    }


def _weights(ios_t: np.ndarray, ios: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The IOPS sample (`ios` at times `ios_t`) at each time of `t` (the last
    one where fio logged a time twice), 0 where there is none."""
    times, first = np.unique(ios_t[::-1], return_index=True)  # first in reverse: the last logged
    values = ios[::-1][first]
    at = np.minimum(np.searchsorted(times, t), len(times) - 1)
    return np.where(times[at] == t, values[at], 0.0)


def _floats(values: list, n: int) -> np.ndarray:
    """The first n values as float64 (exact for times in ms: integers far
    below 2**53), without numpy guessing the type of each."""
    return np.fromiter(values, dtype=np.float64, count=n)


def _sum_by_second(parts: list[tuple[np.ndarray, np.ndarray]], seconds: np.ndarray) -> np.ndarray:
    """Per second of `seconds`, the sum of the values at that second, added
    in order; seconds not in `seconds` are dropped."""
    if not parts or not len(seconds):
        return np.zeros(len(seconds))
    second = np.concatenate([x for x, _ in parts]).astype(np.int64)
    value = np.concatenate([v for _, v in parts])
    at = np.minimum(np.searchsorted(seconds, second), len(seconds) - 1)
    known = seconds[at] == second
    return np.bincount(at[known], weights=value[known], minlength=len(seconds)).astype(np.float64)  # float if empty


def judge_steady(totals: dict[str, list], round_s: int) -> dict[str, SteadyVerdict]:
    """SNIA PTS verdicts for IOPS and for mean latency."""
    out = {}
    for key, metric in (("iops", "iops"), ("lat", "lat_mean_ns")):
        rounds = rounds_of(totals["t_ms"], totals[metric], round_s)
        out[key] = steady_state(rounds, metric=metric, round_s=round_s, window=STEADY_WINDOW_ROUNDS,
                                data_pct=STEADY_DATA_PCT, slope_pct=STEADY_SLOPE_PCT)
    return out


def window_figures(totals: dict[str, list], iops_verdict: SteadyVerdict) -> dict | None:
    """Figures of the measurement window: the steady-state window when IOPS
    are steady, else the last whole window of rounds (labelled not steady)."""
    round_s = iops_verdict.round_s
    span = STEADY_WINDOW_ROUNDS * round_s
    if iops_verdict.steady:
        start, end = iops_verdict.start_s, iops_verdict.end_s
    else:
        whole_rounds = len(rounds_of(totals["t_ms"], totals["iops"], round_s))
        if whole_rounds < STEADY_WINDOW_ROUNDS:
            return None
        end = whole_rounds * round_s
        start = end - span
    picked = [i for i, t in enumerate(totals["t_ms"]) if start * 1000 < t <= end * 1000]
    if not picked:
        return None
    iops = [totals["iops"][i] for i in picked]
    lat_w = [(totals["lat_mean_ns"][i], totals["iops"][i]) for i in picked if totals["lat_mean_ns"][i] is not None]
    ios = sum(w for _, w in lat_w)
    return {
        "start_s": start,
        "end_s": end,
        "steady": iops_verdict.steady,
        "iops": sum(iops) / len(iops),
        "bw_bytes_s": sum(totals["bw_bytes_s"][i] for i in picked) / len(picked),
        "lat_mean_ns": sum(v * w for v, w in lat_w) / ios if ios else None,
    }


def cache_verdict(working_set_bytes: int, cache_bytes: int | None, source: str) -> dict:
    """Whether a host's working set fits in the cache in front of the
    storage: a cache test measures that cache, a capacity test the storage
    behind it."""
    if cache_bytes is None:
        return {"kind": None, "working_set_bytes": working_set_bytes, "cache_bytes": None, "source": source}
    kind = "cache test" if working_set_bytes <= cache_bytes else "capacity test"
    return {"kind": kind, "working_set_bytes": working_set_bytes, "cache_bytes": cache_bytes, "source": source}
