"""What a scenario's faults did to the load: baseline, impact, recovery.

Computed from each host's one-second status rounds (fio/status.py), whose
clock is the measured part's (the warm-up is in no round), put on a grid
of whole seconds first (analysis/stalls.py: a stall's seconds are seconds
of 0 IOPS, not a gap):

- the per-second series: the fleet's IOPS (the hosts that reported that
  second, summed) and its p99 from the second's merged latency histograms;
- baseline: the seconds that ended before the first event began;
- impact of each event: IOPS and p99 over its own span (from `at` to its
  end, `at + for`; a lost host's to the test's end) against the baseline,
  as % change;
- recovery: seconds from the event's end until IOPS are back within
  ±RECOVERY_BAND_PCT % of the baseline for RECOVERY_HOLD_S seconds in a row
  (None: not back before the test ended). A fixed-rate load that fell
  behind its schedule catches up (fio keeps the average rate, so it issues
  the backlog at once): seconds above the band while a backlog remains
  count as back, and when the backlog drained is reported on its own.

Latency that counts the waiting: a span's p99 also counts the IOs still
waiting at its end in a stall (censored: at least their age), and for a
fixed-rate load the IOs its schedule wanted issued during the stall, from
when they were due (fio measures from when it issued an IO: after a stall,
the backlog's IOs would otherwise show a normal latency). A percentile that
falls on such an IO, or on fio's histogram ceiling, is a lower bound.

Percentiles always come from merged histograms, never from averaged
percentiles (DESIGN.md, rule 1).
"""

from __future__ import annotations

from ..fio.merge import merge_bins, percentile_from_bins
from ..fio.status import Round
from ..results.impact import CatchUp, EventImpact, Impact, ImpactSeries, SpanFigures
from ..units import LATENCY_CEILING_NS
from .stalls import Second, Stall, on_grid

RECOVERY_BAND_PCT = 10.0
RECOVERY_HOLD_S = 3
# Censored IOs are spread over a stall in this many steps of their due time.
_DUE_STEPS = 100


def _ios(r: Round) -> int:
    return r.read.ios + r.write.ios


def _bins(rounds: list[Round]) -> dict[int, int]:
    return merge_bins([b for r in rounds for b in (r.read.bins, r.write.bins) if b])


def _p99(bins: dict[int, int], waiting: dict[int, int]) -> tuple[float | None, bool]:
    """p99 (ms) of the completed IOs' bins and the waiting IOs' ages (ns
    -> count); True when it is a lower bound: a waiting IO's age, or fio's
    histogram ceiling."""
    merged = merge_bins([bins, waiting]) if waiting else bins
    p = percentile_from_bins(merged, 99.0) if merged else None
    if p is None:
        return None, False
    if p in waiting and p not in bins:  # a waiting IO's age: its own value, at least
        return round(p / 1e6, 3), True
    ceiling = p >= LATENCY_CEILING_NS  # fio's top bucket: from its lower edge up
    return round(min(p, LATENCY_CEILING_NS) / 1e6, 3), ceiling


class Grid:
    """Every host's seconds, lined up by index (k: the k-th second)."""

    def __init__(self, per_host: dict[str, list[Round]]):
        self.seconds: dict[str, list[Second]] = {}
        self.stalls: list[Stall] = []
        for host, rounds in per_host.items():
            self.seconds[host], found = on_grid(host, rounds)
            self.stalls += found
        self.n = max((len(s) for s in self.seconds.values()), default=0)

    def at(self, k: int) -> list[Round]:
        return [s[k].round for s in self.seconds.values() if k < len(s)]

    def span(self, k: int) -> tuple[float, float]:
        """(start, end) s of second k, as the first host reporting it has it."""
        r = self.at(k)[0]
        return r.start_ms / 1000, r.end_ms / 1000

    @property
    def end_s(self) -> float:
        return self.span(self.n - 1)[1] if self.n else 0.0

    def inside(self, start_s: float, end_s: float) -> list[int]:
        """Seconds whose middle lies in [start_s, end_s)."""
        return [k for k in range(self.n) if start_s <= sum(self.span(k)) / 2 < end_s]


def per_second(per_host: dict[str, list[Round]], grid: Grid | None = None) -> ImpactSeries:
    """The series a scenario is judged on: per second, its end (s into the
    measured part), the fleet's IOPS and p99 (ms), each host's IOPS (None
    once it no longer reports), how many hosts reported, whether a host
    was stalled in it (0 IOPS from that host, not a gap), and whether a
    host's figures in it are a late status line's, spread evenly."""
    grid = grid or Grid(per_host)
    out = ImpactSeries(hosts={h: [] for h in grid.seconds})
    for k in range(grid.n):
        rs = grid.at(k)
        start, end = grid.span(k)
        out.t_s.append(round(end, 3))
        out.iops.append(round(sum(_ios(r) for r in rs) / max(end - start, 1e-3), 1))
        out.p99_ms.append(_p99(_bins(rs), {})[0])
        out.hosts_reporting.append(len(rs))
        out.stalled.append(any(k < len(s) and s[k].stalled for s in grid.seconds.values()))
        out.estimated.append(any(k < len(s) and s[k].estimated for s in grid.seconds.values()))
        for h, secs in grid.seconds.items():
            r = secs[k].round if k < len(secs) else None
            out.hosts[h].append(None if r is None else round(_ios(r) / max(r.seconds, 1e-3), 1))
    return out


class Load:
    """What the scenario's load asks of each host: its rate (IOs a second,
    None: as fast as it goes) and its IOs in flight (jobs x iodepth)."""

    def __init__(self, rate_iops: float | None = None, in_flight: int = 1, hosts: int = 1):
        self.rate = None if rate_iops is None else rate_iops / max(hosts, 1)
        self.in_flight = in_flight


def _waiting(grid: Grid, load: Load, start_s: float, end_s: float) -> tuple[dict[int, int], int]:
    """IOs still waiting at `end_s` in a stall that overlaps [start_s,
    end_s), as {age ns: count}, and how many of them (a fixed-rate load's
    schedule's) completed inside the span, in its catch-up (counted by fio
    too, from their issue: replaced here by their wait)."""
    ages: dict[int, int] = {}
    completed = 0
    for st in grid.stalls:
        a, b = max(start_s, st.from_s), min(end_s, st.to_s)
        if b <= a:
            continue
        if end_s <= st.to_s:  # the stalled IOs themselves, still in flight at the span's end
            age = int((end_s - st.from_s) * 1e9)
            ages[age] = ages.get(age, 0) + load.in_flight
        if load.rate:  # the schedule's IOs due in the stall, waiting at least until b
            due = load.rate * (b - a)
            for i in range(_DUE_STEPS):
                t = a + (i + 0.5) * (b - a) / _DUE_STEPS
                count = round(due * (i + 1) / _DUE_STEPS) - round(due * i / _DUE_STEPS)
                if count:
                    age = int((b - t) * 1e9)
                    ages[age] = ages.get(age, 0) + count
            if end_s > st.to_s:
                completed += round(due)
    return ages, completed


def _without_fastest(bins: dict[int, int], n: int) -> dict[int, int]:
    """The bins less their n fastest IOs."""
    out = dict(bins)
    for v in sorted(out):
        if n <= 0:
            break
        take = min(n, out[v])
        out[v] -= take
        n -= take
        if not out[v]:
            del out[v]
    return out


def _figures(grid: Grid, ks: list[int], load: Load, span: tuple[float, float] | None = None) -> SpanFigures | None:
    """IOPS (all IOs over the seconds' length) and p99 of the seconds ks;
    over an event's span, p99 counts the IOs waiting in a stall."""
    if not ks:
        return None
    rounds = [r for k in ks for r in grid.at(k)]
    seconds = sum(grid.span(k)[1] - grid.span(k)[0] for k in ks)
    waiting, completed = _waiting(grid, load, *span) if span else ({}, 0)
    p99, bound = _p99(_without_fastest(_bins(rounds), completed), waiting)
    return SpanFigures(len(ks), round(sum(_ios(r) for r in rounds) / max(seconds, 1e-3), 1), p99, bound)


def _change(now: float | None, base: float | None) -> float | None:
    if now is None or not base:
        return None
    return round(100.0 * (now - base) / base, 1)


def behind(grid: Grid, load: Load) -> list[float] | None:
    """A fixed-rate load's backlog at the end of each second: IOs its
    schedule wanted done by then (each reporting host's rate since the
    start) less the IOs done. None for a load at full speed."""
    if not load.rate:
        return None
    done = {h: 0 for h in grid.seconds}
    out = []
    for k in range(grid.n):
        due = 0.0
        for h, secs in grid.seconds.items():
            if k < len(secs):
                done[h] += _ios(secs[k].round)
                due += load.rate * secs[k].round.end_ms / 1000 - done[h]
        out.append(round(due, 1))
    return out


def drained_at(series: ImpactSeries, backlog: list[float] | None, from_s: float,
               rate: float | None) -> tuple[CatchUp | None, list[bool] | None]:
    """A catch-up after `from_s`: the most IOs behind, and the end of the
    first second at which the backlog is back to what it was before the
    event (within a tenth of a second of the rate), and each second
    whether the load was catching up in it; None, None without one."""
    if not backlog or not rate:
        return None, None
    ks = [k for k, t in enumerate(series.t_s) if t > from_s]
    before = [b for t, b in zip(series.t_s, backlog) if t <= from_s]
    usual = before[-1] if before else 0.0
    peak = max((backlog[k] for k in ks), default=usual)
    if not ks or peak - usual < rate:  # less than a second of IO behind: no catch-up to speak of
        return None, None
    top = max(ks, key=lambda k: backlog[k])
    done = next((k for k in ks if k > top and backlog[k] <= usual + rate / 10), None)
    burst = max((series.iops[k] for k in ks if k > top), default=None)
    catching = [top < k and (done is None or k <= done) for k in range(len(backlog))]
    return CatchUp(round(peak - usual), None if done is None else series.t_s[done], burst), catching


def recovery_s(series: ImpactSeries, from_s: float, baseline_iops: float, band_pct: float = RECOVERY_BAND_PCT,
               hold_s: int = RECOVERY_HOLD_S, catching_up: list[bool] | None = None) -> float | None:
    """Seconds from `from_s` to the start of the first `hold_s` seconds in
    a row whose IOPS are within ±band_pct % of the baseline (or above it
    while the load catches up its backlog); None if never."""
    low, high = baseline_iops * (1 - band_pct / 100), baseline_iops * (1 + band_pct / 100)
    run_from, count = None, 0
    for k, (end, iops) in enumerate(zip(series.t_s, series.iops)):
        start = end - 1
        if start < from_s - 0.5:
            continue
        if low <= iops <= high or (iops > high and catching_up and catching_up[k]):
            run_from = start if count == 0 else run_from
            count += 1
            if count >= hold_s:
                return round(max(0.0, run_from - from_s), 1)
        else:
            count = 0
    return None


def impact(per_host: dict[str, list[Round]], events: list[dict], load: Load | None = None,
           band_pct: float = RECOVERY_BAND_PCT, hold_s: int = RECOVERY_HOLD_S) -> Impact:
    """Baseline, each event's impact and recovery, the stalls. `events`:
    dicts with `at_s` and `end_s` (None: to the test's end, a lost host)
    and `index` (kept when given), s into the measured part, in time order."""
    load = load or Load()
    grid = Grid(per_host)
    series = per_second(per_host, grid)
    first = min((e["at_s"] for e in events), default=grid.end_s)
    # Whole seconds before the first event: none partly inside it.
    baseline = _figures(grid, [k for k in range(grid.n) if grid.span(k)[1] <= first + 0.01], load)
    backlog = behind(grid, load)
    series.behind_ios = backlog or None
    out = Impact(band_pct, hold_s, baseline, series=series, stalls=grid.stalls)
    for e in events:
        until = e["end_s"] if e["end_s"] is not None else grid.end_s
        during = _figures(grid, grid.inside(e["at_s"], until), load, (e["at_s"], until))
        ended = e["end_s"] if e["end_s"] is not None else e["at_s"]
        catch_up, catching = drained_at(series, backlog, e["at_s"], load.rate and load.rate * len(per_host))
        hit = EventImpact(e.get("index"), e["at_s"], round(until, 2), during,
                          _change(during and during.iops, baseline and baseline.iops),
                          _change(during and during.p99_ms, baseline and baseline.p99_ms), catch_up=catch_up)
        if baseline and baseline.iops:
            hit.recovery_s = recovery_s(series, ended, baseline.iops, band_pct, hold_s, catching)
        out.events.append(hit)
    return out
