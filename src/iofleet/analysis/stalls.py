"""Stalls in a host's rounds: seconds in which jobs ran but no IO completed.

fio prints a status snapshot only once every job has updated its figures
(fio's stat.c waits on each job's usage semaphore), and a job blocked in
an IO that does not complete cannot. So during a total stall the
snapshots stop; the next one comes when the IO completes, stamped with the
runtime of when it was asked for (before the stall), and the one after it
ends a round as long as the stall (measured: an 8 s blkio stall of a
1 s-status job gave rounds of 1.0, 1.0, then 8.1 s). A long round is
therefore a stall only if an IO completing around it waited about as long
as the round: a status line merely late (fio's thread starved of CPU)
has no such IO, and is a missing sample, not a stall.

`on_grid` turns each host's rounds into whole seconds: a held round's
seconds are seconds of 0 IOPS (its IOs, the stalled ones and the backlog
issued once it ended, all complete in its last second), a late sample's
IOs are spread evenly over its seconds (marked estimated). Hosts' seconds
then line up by index, as the series needs. A stall is then any run of
seconds without an IO: a held round's, or those of an engine that polls
and so kept fio's status coming (librbd's).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fio.status import Round, Totals
from ..results.impact import Stall  # as a run stores it
from ..units import LATENCY_CEILING_NS

# A round this many status intervals long means fio's status was held up.
GAP_INTERVALS = 1.5


@dataclass
class Second:
    """One host's second on the grid: a round (or a part of a longer one)."""

    round: Round
    stalled: bool = False  # no IO completed: a stall's second
    estimated: bool = False  # a late status line's IOs, spread evenly


def longest_wait_ns(*rounds: Round) -> float:
    """The longest latency of an IO completed in the rounds (a bucket's
    value; the ceiling's lower edge for the top bucket)."""
    top = max((v for r in rounds for b in (r.read.bins, r.write.bins) if b for v in b), default=0)
    return min(top, LATENCY_CEILING_NS)


def _part(t: Totals, share: float) -> Totals:
    """`share` of a round's figures (its histogram scaled, rounded down)."""
    bins = {v: int(c * share) for v, c in t.bins.items()}
    return Totals(int(t.ios * share), int(t.io_bytes * share), int(t.lat_n * share), t.lat_sum_ns * share,
                  {v: c for v, c in bins.items() if c})


def _rest(t: Totals, parts: list[Totals]) -> Totals:
    """What the parts leave of t (so the seconds add up to the round)."""
    out = t
    for p in parts:
        out = out.minus(p)
    return out


def _split(r: Round, n: int) -> list[Round]:
    """A long round as n seconds, its figures spread evenly (the last one
    takes what rounding left)."""
    step = (r.end_ms - r.start_ms) / n
    out = []
    for i in range(n - 1):
        out.append(Round(round(r.start_ms + i * step), round(r.start_ms + (i + 1) * step),
                         _part(r.read, 1 / n), _part(r.write, 1 / n), r.cpu_ms / n))
    out.append(Round(out[-1].end_ms if out else r.start_ms, r.end_ms, _rest(r.read, [o.read for o in out]),
                     _rest(r.write, [o.write for o in out]), r.cpu_ms - sum(o.cpu_ms for o in out)))
    return out


def _expand(rounds: list[Round], interval_ms: int) -> list[Second]:
    """Each round as whole seconds: a held status line's round as a stall's
    seconds (0 IOs, then its IOs in its last second), a late one's spread."""
    seconds: list[Second] = []
    for i, r in enumerate(rounds):
        n = round((r.end_ms - r.start_ms) / interval_ms)
        if r.end_ms - r.start_ms < GAP_INTERVALS * interval_ms or n < 2:
            seconds.append(Second(r))
            continue
        wait_ns = longest_wait_ns(*rounds[max(0, i - 1):i + 1])
        length = (r.end_ms - r.start_ms) / 1000
        # An IO waited about as long as the round (or at least fio's ceiling): fio's status was held by it.
        if wait_ns < LATENCY_CEILING_NS and wait_ns / 1e9 < length - GAP_INTERVALS * interval_ms / 1000:
            seconds += [Second(p, estimated=True) for p in _split(r, n)]
            continue
        step = (r.end_ms - r.start_ms) / n
        for k in range(n - 1):
            seconds.append(Second(Round(round(r.start_ms + k * step), round(r.start_ms + (k + 1) * step),
                                        Totals(), Totals(), 0.0), stalled=True))
        seconds.append(Second(Round(round(r.start_ms + (n - 1) * step), r.end_ms, r.read, r.write, r.cpu_ms)))
    return seconds


def _ios(s: Second) -> int:
    return s.round.read.ios + s.round.write.ios


def on_grid(host: str, rounds: list[Round], interval_ms: int = 1000) -> tuple[list[Second], list[Stall]]:
    """A host's rounds as whole seconds, and its stalls: each run of
    seconds in which no IO completed (fio's status held, or an engine
    that polls and so kept reporting). An IO completing next to the run
    waited through it: the longest such wait says how long IO paused
    (the run's last second may end after the stall did)."""
    seconds = _expand(rounds, interval_ms)
    stalls: list[Stall] = []
    k = 0
    while k < len(seconds):
        if _ios(seconds[k]):
            k += 1
            continue
        first = k
        while k < len(seconds) and not _ios(seconds[k]):
            seconds[k].stalled = True
            k += 1
        around = [s.round for s in seconds[max(0, first - 1):k + 1]]
        wait_ns = longest_wait_ns(*around)
        start, end = seconds[first].round.start_ms / 1000, seconds[k - 1].round.end_ms / 1000
        limit = seconds[k].round.end_ms / 1000 if k < len(seconds) else end
        bounded = wait_ns >= LATENCY_CEILING_NS
        waited = max(wait_ns / 1e9, end - start) if bounded else wait_ns / 1e9
        stop = min(limit, max(end, start + waited))
        stalls.append(Stall(host, round(start, 1), round(stop, 1), round(max(waited, end - start), 1), bounded))
    return seconds, stalls
