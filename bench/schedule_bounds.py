"""How far a fixed-rate load fell behind its rate schedule, from fio's counts.

fio's rate limit (`rate_iops`, `rate_process=linear`) gives each direction
of a job a schedule: its n-th IO (n from 0) is due n / rate seconds after
the job started (fio's backend.c, usec_for_io), and is never issued
earlier. When the storage stalls, the schedule runs on; afterwards fio
issues the IOs it missed at once (a catch-up burst). fio's latency runs from
when it issued an IO, so the backlog shows its short service time although
the application wanted those IOs since their slot: coordinated omission.
fio 3.33 records no intended time (log_issue_time came in fio 3.38).

What fio's status snapshots do give, per direction, is how many IOs had
completed at each snapshot's time. The m-th IO to complete (m from 0) is
paired with the m-th slot of the schedule (due m / rate): fio issues in
slot order and IOs overtake each other only among those in flight, so a
pairing is off by at most iodepth × jobs slots. If it completed between
snapshots at t0 and t1, it waited at least t0 − m / rate (never below 0)
and at most t1 − m / rate from its slot. The bounds are one snapshot
interval apart; what they gave on a stalled loop device, against every
IO's real wait, is in docs/scenarios.md ("Latency during a stall").

Times are seconds on the jobs' clock (from their start), taken when the
counts were read: see `status_times` for fio's local status documents.
One host at a time: each host's jobs keep their own schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from iofleet.errors import ImportFormatError
from iofleet.fio.status import snapshot

if TYPE_CHECKING:  # numpy is imported where it is used: importing this module stays cheap
    import numpy as np

WAIT_PERCENTILES = (50.0, 99.0)


@dataclass
class SlotWaits:
    """One direction's schedule slots that completed, in slot order: when
    each was due (s on the jobs' clock) and the bounds of its wait (s)."""

    due_s: np.ndarray
    at_least_s: np.ndarray
    at_most_s: np.ndarray


def _points(times_s: Sequence[float], completed: Sequence[int], rate: float):
    import numpy as np

    if rate <= 0:
        raise ValueError(f"a schedule needs a rate above 0 IOs/s (got {rate})")
    if len(times_s) != len(completed):
        raise ValueError(f"{len(times_s)} times but {len(completed)} counts")
    t = np.concatenate(([0.0], np.asarray(times_s, dtype=float)))  # nothing had completed at the start
    c = np.concatenate(([0], np.asarray(completed, dtype=np.int64)))
    if np.any(np.diff(c) < 0):
        raise ValueError("completed IOs must be cumulative counts (never decreasing)")
    return t, c


def schedule_lag(times_s: Sequence[float], completed: Sequence[int], rate: float) -> list[float]:
    """At each time: how far completions trail the schedule (s), t − completed / rate,
    0 when on time. Some IO due by then had not completed: it waited longer than this."""
    t, c = _points(times_s, completed, rate)
    return [max(0.0, float(x)) for x in (t - c / rate)[1:]]


def slot_waits(times_s: Sequence[float], completed: Sequence[int], rate: float) -> SlotWaits:
    """Every completed slot's wait, bounded by the snapshots around its completion."""
    import numpy as np

    t, c = _points(times_s, completed, rate)
    m = np.arange(int(c[-1]))
    due = m / rate
    k = np.searchsorted(c, m, side="right")  # the interval (t[k-1], t[k]] in which slot m completed
    return SlotWaits(due, np.maximum(0.0, t[k - 1] - due), np.maximum(0.0, t[k] - due))


def wait_percentiles_ms(values) -> dict:
    """p50, p99 and max (ms) of waits in seconds; None each when there are none."""
    import numpy as np

    if not len(values):
        return {"p50": None, "p99": None, "max": None}
    # inverted_cdf: the first value whose running count reaches p % (fio's rule, fio/merge.py)
    pct = np.percentile(values, WAIT_PERCENTILES, method="inverted_cdf")
    return {"p50": round(float(pct[0]) * 1e3, 3), "p99": round(float(pct[1]) * 1e3, 3),
            "max": round(float(values.max()) * 1e3, 3)}


def behind_schedule(waits: Sequence[SlotWaits], from_s: float = 0.0, to_s: float = float("inf"),
                    waited_s: float = 1.0) -> dict:
    """The slots due in [from_s, to_s) over the given directions: how many,
    the p50, p99 and max of their waits' lower and upper bounds (ms), and
    how many surely waited at least `waited_s` seconds (`waited_at_least`)."""
    import numpy as np

    chosen = [(w.due_s >= from_s) & (w.due_s < to_s) for w in waits]
    lower = np.concatenate([w.at_least_s[s] for w, s in zip(waits, chosen)]) if waits else np.zeros(0)
    upper = np.concatenate([w.at_most_s[s] for w, s in zip(waits, chosen)]) if waits else np.zeros(0)
    return {"slots": int(len(lower)), "at_least_ms": wait_percentiles_ms(lower),
            "at_most_ms": wait_percentiles_ms(upper), "waited_s": waited_s,
            "waited_at_least": int(np.count_nonzero(lower >= waited_s))}


def backlog_drained_s(times_s: Sequence[float], completed: Sequence[int], rate: float,
                      due_by_s: float) -> float | None:
    """The first time at which as many IOs had completed as there were slots
    due before `due_by_s` (a fault's end): its backlog had drained by then,
    after the time before it. None: not by the last time."""
    t, c = _points(times_s, completed, rate)
    needed = math.ceil(due_by_s * rate - 1e-9)  # slots 0 … needed-1 are due before due_by_s
    for when, done in zip(t[1:], c[1:]):
        if done >= needed:
            return float(when)
    return None


def status_times(docs: Sequence[dict]) -> list[float | None]:
    """When each of fio's local JSON documents read its counts, s on the
    measured jobs' clock (None before they did any IO). fio's status thread
    waits for every job to update its figures, so during a stall no
    snapshot comes, and the one printed after it keeps the job_runtime of
    when it was asked for but the counts of when it was printed: its
    time is its timestamp_ms less the jobs' start (the smallest
    timestamp_ms − job_runtime). The last document is fio's final one,
    written after the jobs ended: its job_runtime is their end."""
    snaps = [snapshot(d.get("jobs", []), f"document {i}") for i, d in enumerate(docs)]
    for i, (d, s) in enumerate(zip(docs, snaps)):
        if s is not None and not isinstance(d.get("timestamp_ms"), int):
            raise ImportFormatError(f"document {i}: no timestamp_ms in fio's output (a local fio run's JSON "
                                    "has it; a fio client's snapshots do not)")
    starts = [d["timestamp_ms"] - s.t_ms for d, s in zip(docs, snaps) if s is not None]
    if not starts:
        return [None] * len(docs)
    start = min(starts)
    out: list[float | None] = [None if s is None else (d["timestamp_ms"] - start) / 1e3
                               for d, s in zip(docs, snaps)]
    if snaps[-1] is not None:
        out[-1] = snaps[-1].t_ms / 1e3
    return out
