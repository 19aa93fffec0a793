"""How far a test's figures can be trusted: its steady-state verdicts, the
figures of its measurement window, and whether its working set fits in a
cache (a "cache test") or not (a "capacity test")."""

from collections import defaultdict

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
    iops: dict[int, float] = defaultdict(float)
    bw: dict[int, float] = defaultdict(float)
    lat_weighted: dict[int, float] = defaultdict(float)
    lat_ios: dict[int, float] = defaultdict(float)
    by_key = {(s.host, s.job_index, s.direction, s.metric): s for s in measured}
    for (host, job, direction, metric), s in by_key.items():
        for t, v in zip(s.t_ms, s.values):
            second = round((t - origin) / 1000)
            if second * 1000 > end + 500:
                continue
            if metric == "iops":
                iops[second] += v
            elif metric == "bw_bytes_s":
                bw[second] += v
        if metric == "lat_ns":
            ios = by_key.get((host, job, direction, "iops"))
            weight = dict(zip(ios.t_ms, ios.values)) if ios else {}
            for t, v in zip(s.t_ms, s.values):
                second = round((t - origin) / 1000)
                w = weight.get(t, 0.0)
                if second * 1000 <= end + 500 and w > 0:
                    lat_weighted[second] += v * w
                    lat_ios[second] += w
    seconds = sorted(iops)
    return {
        "t_ms": [k * 1000 for k in seconds],
        "iops": [iops[k] for k in seconds],
        "bw_bytes_s": [bw.get(k, 0.0) for k in seconds],
        "lat_mean_ns": [lat_weighted[k] / lat_ios[k] if lat_ios.get(k) else None for k in seconds],
        "origin_ms": origin,
    }


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
