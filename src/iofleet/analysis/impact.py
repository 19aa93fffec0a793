"""What a scenario's faults did to the load: baseline, impact, recovery.

Computed from each host's one-second status rounds (fio/status.py), whose
clock is the measured part's (the warm-up is in no round):

- the per-second series: the fleet's IOPS (the hosts that reported that
  second, summed) and its p99 from the second's merged latency histograms;
- baseline: the seconds that ended before the first event began;
- impact of each event: IOPS and p99 over its span (from `at` to its end,
  `at + for`; an event without `for` to the next event or the test's end)
  against the baseline, as % change;
- recovery: seconds from the event's end until IOPS are back within
  ±RECOVERY_BAND_PCT % of the baseline for RECOVERY_HOLD_S seconds in a row
  (None: not back before the test ended). An event without `for` (a lost
  host) is measured from its start.

Percentiles always come from merged histograms, never from averaged
percentiles (DESIGN.md, rule 1).
"""

from __future__ import annotations

from ..fio.merge import merge_bins, percentile_from_bins
from ..fio.status import Round

RECOVERY_BAND_PCT = 10.0
RECOVERY_HOLD_S = 3


def _ios(r: Round) -> int:
    return r.read.ios + r.write.ios


def _p99_ms(rounds: list[Round]) -> float | None:
    bins = merge_bins([b for r in rounds for b in (r.read.bins, r.write.bins) if b])
    p = percentile_from_bins(bins, 99.0) if bins else None
    return None if p is None else round(p / 1e6, 3)


def _seconds(per_host: dict[str, list[Round]]) -> int:
    return max((len(r) for r in per_host.values()), default=0)


def _at(per_host: dict[str, list[Round]], k: int) -> list[Round]:
    return [rs[k] for rs in per_host.values() if k < len(rs)]


def _span(per_host: dict[str, list[Round]], k: int) -> tuple[float, float]:
    """(start, end) s of second k, as the first host reporting it has it."""
    r = _at(per_host, k)[0]
    return r.start_ms / 1000, r.end_ms / 1000


def per_second(per_host: dict[str, list[Round]]) -> dict:
    """The series a scenario is judged on: per second, its end (s into the
    measured part), the fleet's IOPS and p99 (ms), each host's IOPS (None
    once it no longer reports) and how many hosts reported."""
    n = _seconds(per_host)
    out: dict = {"t_s": [], "iops": [], "p99_ms": [], "hosts_reporting": [],
                 "hosts": {h: [] for h in per_host}}
    for k in range(n):
        rs = _at(per_host, k)
        start, end = _span(per_host, k)
        seconds = max(end - start, 1e-3)
        out["t_s"].append(round(end, 3))
        out["iops"].append(round(sum(_ios(r) for r in rs) / seconds, 1))
        out["p99_ms"].append(_p99_ms(rs))
        out["hosts_reporting"].append(len(rs))
        for h, hr in per_host.items():
            out["hosts"][h].append(round(_ios(hr[k]) / max(hr[k].seconds, 1e-3), 1) if k < len(hr) else None)
    return out


def _figures(per_host: dict[str, list[Round]], ks: list[int]) -> dict | None:
    """IOPS (all IOs over the seconds' length) and p99 of the seconds ks."""
    if not ks:
        return None
    rounds = [r for k in ks for r in _at(per_host, k)]
    seconds = sum(_span(per_host, k)[1] - _span(per_host, k)[0] for k in ks)
    return {"seconds": len(ks), "iops": round(sum(_ios(r) for r in rounds) / max(seconds, 1e-3), 1),
            "p99_ms": _p99_ms(rounds)}


def _inside(per_host, start_s: float, end_s: float) -> list[int]:
    """Seconds whose middle lies in [start_s, end_s)."""
    out = []
    for k in range(_seconds(per_host)):
        a, b = _span(per_host, k)
        if start_s <= (a + b) / 2 < end_s:
            out.append(k)
    return out


def _change(now: float | None, base: float | None) -> float | None:
    if now is None or not base:
        return None
    return round(100.0 * (now - base) / base, 1)


def recovery_s(series: dict, from_s: float, baseline_iops: float, band_pct: float = RECOVERY_BAND_PCT,
               hold_s: int = RECOVERY_HOLD_S) -> float | None:
    """Seconds from `from_s` to the start of the first `hold_s` seconds in
    a row whose IOPS are within ±band_pct % of the baseline; None if never."""
    low, high = baseline_iops * (1 - band_pct / 100), baseline_iops * (1 + band_pct / 100)
    run_from, count = None, 0
    for end, iops in zip(series["t_s"], series["iops"]):
        start = end - 1
        if start < from_s - 0.5:
            continue
        if low <= iops <= high:
            run_from = start if count == 0 else run_from
            count += 1
            if count >= hold_s:
                return round(max(0.0, run_from - from_s), 1)
        else:
            count = 0
    return None


def impact(per_host: dict[str, list[Round]], events: list[dict], band_pct: float = RECOVERY_BAND_PCT,
           hold_s: int = RECOVERY_HOLD_S) -> dict:
    """Baseline, each event's impact and recovery. `events`: dicts with
    `at_s` and `end_s` (None: no end of its own), s into the measured part,
    in time order."""
    series = per_second(per_host)
    n = len(series["t_s"])
    end_of_test = _span(per_host, n - 1)[1] if n else 0.0
    first = min((e["at_s"] for e in events), default=end_of_test)
    # Whole seconds before the first event: none partly inside it.
    baseline = _figures(per_host, [k for k in range(n) if _span(per_host, k)[1] <= first + 0.01])
    out: dict = {"band_pct": band_pct, "hold_s": hold_s, "baseline": baseline, "events": [], "series": series}
    for i, e in enumerate(events):
        later = [x["at_s"] for x in events[i + 1:] if x["at_s"] > e["at_s"]]
        until = e["end_s"] if e["end_s"] is not None else min(later, default=end_of_test)
        during = _figures(per_host, _inside(per_host, e["at_s"], until))
        entry = {"from_s": e["at_s"], "to_s": round(until, 2), "during": during,
                 "iops_change_pct": _change(during and during["iops"], baseline and baseline["iops"]),
                 "p99_change_pct": _change(during and during["p99_ms"], baseline and baseline["p99_ms"]),
                 "recovery_s": None}
        if baseline and baseline["iops"]:
            entry["recovery_s"] = recovery_s(series, e["end_s"] if e["end_s"] is not None else e["at_s"],
                                             baseline["iops"], band_pct, hold_s)
        out["events"].append(entry)
    return out
