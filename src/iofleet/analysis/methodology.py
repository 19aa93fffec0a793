"""How far a test's figures can be trusted: its steady-state verdicts, the
figures of its measurement window, and whether its working set fits in a
cache (a "cache test") or not (a "capacity test")."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where used: a run starts sooner without it
    import numpy as np

from ..fio.jobfile import LOG_INTERVAL_MS
from ..fio.merge import merge_bins, percentiles
from ..fio.records import DirectionStats, Series
from ..fio.status import Round, Totals
from ..results.export import direction_figures
from ..results.methodology import CacheVerdict, PrepareRecord
from ..plan.params import STEADY_DATA_PCT, STEADY_SLOPE_PCT, STEADY_WINDOW_ROUNDS
from ..plan.units import format_bytes
from .steady import SteadyVerdict, rounds_of, steady_state


def test_totals(series: list[Series], phase: str = "measured") -> dict[str, list]:
    """The test's per-second totals over every job and host of the measured
    part (or of the warm-up, for plots): IOPS and bytes/s summed, mean
    latency weighted by IOPS. `t_ms` is each second's end from the start of
    the part, `origin_ms` that start in the logs' clock. Only seconds in
    which every job of every host logged IOPS are kept: jobs end a few ms
    apart and one may log a last second the others do not (a sum over half
    the jobs would show a drop that never happened); a fleet test so ends
    where its first host stopped."""
    import numpy as np
    measured = [s for s in series if s.phase == phase and s.t_ms]
    if not measured:
        return {"t_ms": [], "iops": [], "bw_bytes_s": [], "lat_mean_ns": [], "origin_ms": None}
    origin = min(s.t_ms[0] for s in measured) - LOG_INTERVAL_MS
    # With numpy, series by series in the same order as a loop over the
    # samples would add them (np.bincount adds in array order), so every
    # sum is the same to the last bit; 64 hosts × 600 s are millions of samples.
    by_key = {(s.host, s.job_index, s.direction, s.metric): s for s in measured}
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"iops": [], "bw_bytes_s": [], "lat": [], "lat_ios": []}
    arrays = {}
    for key, s in by_key.items():
        n = min(len(s.t_ms), len(s.values))
        arrays[key] = _floats(s.t_ms, n), _floats(s.values, n)
    second_of = {key: np.rint((t - origin) / 1000) for key, (t, _) in arrays.items()}  # half to even, as round()
    seconds = _complete_seconds({key: s for key, s in second_of.items() if key[3] == "iops"})
    for (host, job, direction, metric), (t, values) in arrays.items():
        second = second_of[host, job, direction, metric]
        if metric in ("iops", "bw_bytes_s"):
            parts[metric].append((second, values))
        if metric == "lat_ns":
            ios = arrays.get((host, job, direction, "iops"))
            weight = (_weights(second_of[host, job, direction, "iops"], ios[1], second) if ios and len(ios[0])
                      else np.zeros(len(t)))
            kept = weight > 0
            w = weight[kept]
            parts["lat"].append((second[kept], values[kept] * w))
            parts["lat_ios"].append((second[kept], w))
    iops, bw, lat_weighted, lat_ios = (_sum_by_second(parts[k], seconds) for k in ("iops", "bw_bytes_s", "lat", "lat_ios"))
    return {
        "t_ms": [k * 1000 for k in seconds.tolist()],
        "iops": iops.tolist(),
        "bw_bytes_s": bw.tolist(),
        "lat_mean_ns": [lw / li if li else None for lw, li in zip(lat_weighted.tolist(), lat_ios.tolist())],
        "origin_ms": origin,
    }


def _complete_seconds(iops_seconds: dict[tuple, np.ndarray]) -> np.ndarray:
    """The seconds (sorted) in which every job of every host has an IOPS
    sample, from each (host, job, direction, "iops") series' seconds."""
    import numpy as np
    by_job: dict[tuple, list[np.ndarray]] = {}
    for (host, job, _, _), second in iops_seconds.items():
        by_job.setdefault((host, job), []).append(second)
    if not by_job:
        return np.zeros(0, dtype=np.int64)
    each = [np.unique(np.concatenate(parts)) for parts in by_job.values()]
    seconds, jobs = np.unique(np.concatenate(each), return_counts=True)
    return seconds[jobs == len(by_job)].astype(np.int64)


def _weights(ios_t: np.ndarray, ios: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The IOPS sample (`ios` at seconds `ios_t`) at each second of `t` (the
    last one where fio logged a second twice), 0 where there is none. By
    second, not ms: fio stamps a job's lat and iops samples up to a few ms
    apart (1011 and 1012)."""
    import numpy as np
    times, first = np.unique(ios_t[::-1], return_index=True)  # first in reverse: the last logged
    values = ios[::-1][first]
    at = np.minimum(np.searchsorted(times, t), len(times) - 1)
    return np.where(times[at] == t, values[at], 0.0)


def _floats(values: list, n: int) -> np.ndarray:
    """The first n values as float64 (exact for times in ms: integers far
    below 2**53), without numpy guessing the type of each."""
    import numpy as np
    return np.fromiter(values, dtype=np.float64, count=n)


def _sum_by_second(parts: list[tuple[np.ndarray, np.ndarray]], seconds: np.ndarray) -> np.ndarray:
    """Per second of `seconds`, the sum of the values at that second, added
    in order; seconds not in `seconds` are dropped."""
    import numpy as np
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


def cache_verdict(working_set_bytes: int, cache_bytes: int | None, source: str) -> CacheVerdict:
    """Whether a host's working set fits in the cache in front of the
    storage: a cache test measures that cache, a capacity test the storage
    behind it."""
    if cache_bytes is None:
        return CacheVerdict(kind=None, working_set_bytes=working_set_bytes, cache_bytes=None, source=source)
    kind = "cache test" if working_set_bytes <= cache_bytes else "capacity test"
    return CacheVerdict(kind=kind, working_set_bytes=working_set_bytes, cache_bytes=cache_bytes, source=source)


# ---- rounds from fio's status snapshots (fio/status.py) ---------------------
# One rule for a test iofleet ran, live and afterwards: the steady-state
# verdict, the window's figures and the per-round percentiles all come from
# the same rounds, summed over the hosts (DESIGN.md, rules 6 and 7).

ROUND_PERCENTILES = ("p50", "p99", "p99.9")
EARLY_STOP_RULE = (f"iofleet's SNIA PTS check on the status rounds: {STEADY_WINDOW_ROUNDS} rounds, data excursion "
                   f"<= {STEADY_DATA_PCT:g} %, slope excursion <= {STEADY_SLOPE_PCT:g} % of their mean IOPS")


def _whole(per_host: dict[str, list[Round]]) -> int:
    """Rounds every host has (a round counts only where all hosts reported)."""
    return min((len(r) for r in per_host.values()), default=0)


def _round_iops(r: Round) -> float:
    return (r.read.ios + r.write.ios) / r.seconds if r.seconds > 0 else 0.0


def round_means(per_host: dict[str, list[Round]]) -> tuple[list[float], list[float | None], list[tuple[float, float]]]:
    """(IOPS, mean latency ns, (start, end) s) of each whole round, summed
    over hosts (latency weighted by IO count). A round's span is the first
    host's; hosts' status timers tick apart by under one interval."""
    n = _whole(per_host)
    iops, lat, spans = [], [], []
    hosts = list(per_host.values())
    for k in range(n):
        rs = [h[k] for h in hosts]
        iops.append(sum(_round_iops(r) for r in rs))
        lat_n = sum(r.read.lat_n + r.write.lat_n for r in rs)
        lat.append(sum(r.read.lat_sum_ns + r.write.lat_sum_ns for r in rs) / lat_n if lat_n else None)
        spans.append((rs[0].start_ms / 1000, rs[0].end_ms / 1000))
    return iops, lat, spans


def judge_rounds(per_host: dict[str, list[Round]], round_s: int) -> dict[str, SteadyVerdict]:
    """SNIA PTS verdicts for IOPS and mean latency on the status rounds:
    the rule that ends an until: steady test early (`steady_now`) and the
    one that judges every test afterwards."""
    iops, lat, spans = round_means(per_host)
    out = {}
    for key, metric, values in (("iops", "iops", iops), ("lat", "lat_mean_ns", lat)):
        out[key] = steady_state(values, metric=metric, round_s=round_s, window=STEADY_WINDOW_ROUNDS,
                                data_pct=STEADY_DATA_PCT, slope_pct=STEADY_SLOPE_PCT, spans_s=spans)
    return out


def steady_now(per_host: dict[str, list[Round]], round_s: int) -> bool:
    """Whether the rounds so far hold a steady window: an until: steady test ends here."""
    return judge_rounds(per_host, round_s)["iops"].steady


def _direction(parts: list[tuple[Totals, float]]) -> DirectionStats:
    """A direction's exact figures over spans of several hosts: (host's
    totals, its seconds) pairs; rates add up over hosts."""
    ios = sum(t.ios for t, _ in parts)
    lat_n = sum(t.lat_n for t, _ in parts)
    bins = merge_bins(t.bins for t, _ in parts if t.bins)
    return DirectionStats(
        ios=ios, io_bytes=sum(t.io_bytes for t, _ in parts),
        runtime_ms=int(max((s for _, s in parts), default=0) * 1000),
        iops=sum(t.ios / s for t, s in parts if s > 0),
        bw_bytes_s=sum(t.io_bytes / s for t, s in parts if s > 0),
        lat_n=lat_n, lat_mean_ns=sum(t.lat_sum_ns for t, _ in parts) / lat_n if lat_n else None,
        percentiles_ns=percentiles(bins) if bins else {}, bins=bins or None)


def _span(rounds: list[Round]) -> tuple[Totals, Totals, float, float]:
    """(read, write, seconds, CPU ms) of consecutive rounds of one host."""
    read, write = Totals(), Totals()
    for r in rounds:
        for acc, part in ((read, r.read), (write, r.write)):
            acc.ios += part.ios
            acc.io_bytes += part.io_bytes
            acc.lat_n += part.lat_n
            acc.lat_sum_ns += part.lat_sum_ns
            acc.bins = merge_bins([acc.bins, part.bins])
    return read, write, sum(r.seconds for r in rounds), sum(r.cpu_ms for r in rounds)


def _spans(per_host: dict[str, list[Round]], first: int, last: int) -> dict[str, tuple[Totals, Totals, float, float]]:
    return {h: _span(rounds[first:last + 1]) for h, rounds in per_host.items()}


def span_figures(per_host: dict[str, list[Round]], first: int, last: int,
                 spans: dict[str, tuple] | None = None) -> dict[str, DirectionStats]:
    """Exact read/write/all figures of rounds first..last (inclusive) over
    all hosts: IOs and bytes counted in those rounds, percentiles from
    their merged latency histograms."""
    spans = spans or _spans(per_host, first, last)
    read = _direction([(r, s) for r, _, s, _ in spans.values()])
    write = _direction([(w, s) for _, w, s, _ in spans.values()])
    both = _direction([(r, s) for r, _, s, _ in spans.values()] + [(w, s) for _, w, s, _ in spans.values()])
    return {"read": read, "write": write, "all": both}


def status_window(per_host: dict[str, list[Round]], verdict: SteadyVerdict, host_cpu: dict | None = None,
                  measured_from_s: float = 0.0) -> dict | None:
    """The measurement window's figures, all from that window: the steady
    window when IOPS are steady, else the last STEADY_WINDOW_ROUNDS whole
    rounds; with several hosts, each host's too (`hosts`). `host_cpu`: host
    → its HostSample series (fleet.metrics), whose clock has the measured
    part starting at `measured_from_s`."""
    n = _whole(per_host)
    if verdict.steady:
        first, last = verdict.first_round, verdict.last_round
    elif n >= STEADY_WINDOW_ROUNDS:
        first, last = n - STEADY_WINDOW_ROUNDS, n - 1
    else:
        return None
    spans = _spans(per_host, first, last)
    figures = span_figures(per_host, first, last, spans)
    any_host = next(iter(per_host.values()))
    start, end = any_host[first].start_ms / 1000, any_host[last].end_ms / 1000
    host_cpu = host_cpu or {}

    def window(figures: dict[str, DirectionStats], spans: dict, series: list) -> dict:
        seconds = sum(s[2] for s in spans.values())
        fio_cpu_ms = sum(s[3] for s in spans.values())
        return {**{d: direction_figures(figures[d]) for d in ("read", "write", "all")},
                "cpu": {"fio_pct": round(100 * fio_cpu_ms / (seconds * 1000), 2) if seconds else None,
                        **_host_cpu_between(series, measured_from_s + start, measured_from_s + end)}}

    out = {"start_s": round(start, 3), "end_s": round(end, 3), "steady": verdict.steady, "source": "fio status",
           "iops": figures["all"].iops, "bw_bytes_s": figures["all"].bw_bytes_s,
           "lat_mean_ns": figures["all"].lat_mean_ns, **window(figures, spans, list(host_cpu.values()))}
    if len(per_host) > 1:  # each host over the same rounds: its row in the summary
        out["hosts"] = {h: window(span_figures({h: per_host[h]}, first, last, {h: spans[h]}), {h: spans[h]},
                                  [host_cpu[h]] if h in host_cpu else []) for h in per_host}
    return out


def _host_cpu_between(series: list, a: float, b: float) -> dict:
    """Mean and highest host CPU % of the samples (each covering the second
    before its t_s) inside (a, b], over hosts; half a second of slack for
    the offset between fio's clock and the sampler's."""
    values = [s.cpu_pct for samples in series for s in samples
              if s.cpu_pct is not None and s.t_s - 1 >= a - 0.5 and s.t_s <= b + 0.5]
    if not values:
        return {"host_avg_pct": None, "host_max_pct": None}
    return {"host_avg_pct": round(sum(values) / len(values), 2), "host_max_pct": round(max(values), 2)}


def latency_rounds(per_host: dict[str, list[Round]], round_s: int) -> dict | None:
    """p50/p99/p99.9 and IOPS of each whole round, fleet-wide and per host
    (the report's per-round latency chart)."""
    n = _whole(per_host)
    if not n:
        return None

    def figures(hosts: dict[str, list[Round]]) -> dict[str, list]:
        out: dict[str, list] = {k: [] for k in (*ROUND_PERCENTILES, "iops")}
        for k in range(n):
            f = span_figures(hosts, k, k)["all"]
            for p in ROUND_PERCENTILES:
                out[p].append(f.percentiles_ns.get(p))
            out["iops"].append(f.iops)
        return out

    any_host = next(iter(per_host.values()))
    return {"round_s": round_s, "start_s": [round(r.start_ms / 1000, 3) for r in any_host[:n]],
            "end_s": [round(r.end_ms / 1000, 3) for r in any_host[:n]],
            "fleet": figures(per_host),
            "hosts": {h: figures({h: r}) for h, r in per_host.items()} if len(per_host) > 1 else {}}


def _hosts(n: int) -> str:
    return f"{n} host{'s' if n != 1 else ''}"


def _passes(n: int) -> str:
    return f"{n} pass{'es' if n != 1 else ''}"


def _by_runs(runs: dict[str, int]) -> str:
    """"run 4", or "runs 4 (2 hosts), 6 (1 host)": the runs whose kept data hosts used."""
    ids = sorted(set(runs.values()))
    return f"run {ids[0]}" if len(ids) == 1 else "runs " + ", ".join(
        f"{r} ({_hosts(sum(v == r for v in runs.values()))})" for r in ids)


def prepare_note(prepared: PrepareRecord) -> str:
    """A run's preparation (its methodology's `prepare`) in one sentence:
    what was written where, and which hosts used data an earlier run kept
    (fleet/targets/kept.py) instead, as it was or extended."""
    per_host, written = prepared.working_set_per_host, prepared.written_per_host
    reused, extended = prepared.reused or {}, prepared.extended or {}
    whole = [h for h in per_host if h not in reused and h not in extended]
    sizes = {format_bytes(per_host[h]) for h in whole}
    text = "Preparation:"
    if whole:  # (a run stored before reuse existed: every host written)
        text += (f" {prepared.mode} data written sequentially over {' / '.join(sorted(sizes))} per host "
                 f"({_passes(prepared.passes)} of {format_bytes(prepared.bs)} writes) on "
                 f"{_hosts(len(whole))} in {prepared.seconds:.1f} s.")
    if extended:
        tails = " / ".join(sorted({format_bytes(written[h] // prepared.passes) for h in extended if h in written}))
        took = "" if whole else f" in {prepared.seconds:.1f} s"
        text += (f" {'D' if whole else 'd'}ata prepared by {_by_runs(extended)} and kept, in fewer or smaller "
                 f"files, is extended on {_hosts(len(extended))}: only each file's missing end is written "
                 f"({tails} per host, {prepared.mode} data, {_passes(prepared.passes)}){took}.")
    if reused:
        text += (f" {'D' if whole or extended else 'd'}ata prepared by {_by_runs(reused)} and kept "
                 f"(keep_files) is used as it is on {_hosts(len(reused))}, as the last run's tests left it: "
                 f"not written again.")
    return text
