"""A test's rounds from fio's status snapshots (`--status-interval`).

With `--status-interval=N` fio reports every job's cumulative figures
every N seconds: IOs, bytes, latency sum and the json+ latency histogram.
The difference of two snapshots is therefore exact for the time between
them, which no per-second log gives (fio's histogram logs record
completion latency only, and drop the last interval of a job).

A *round* (SNIA PTS) is the span between two snapshots `round_s` seconds
apart; the first round starts at the first snapshot inside the measured
part (fio's status timer runs from fio's start, not from the measured
part's), so the part before it (under one interval) is in no round. The
steady-state verdict, the measurement window's figures and the per-round
latency percentiles are all computed from these rounds: the rule that ends
a test early judges exactly what is judged afterwards (DESIGN.md, rule 7).

Locally fio prints a snapshot every second while it runs (live rounds);
on a fleet each server sends one per round, which fio's client holds until
the end but iofleet's relay decodes as it passes (status_frames.py): the
same rounds, live.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ImportFormatError
from .jobfile import WARMUP_JOB
from .merge import merge_bins
from .parse import ALL_CLIENTS, _direction


@dataclass
class Totals:
    """Cumulative (or, for a round, the round's) figures of one direction."""

    ios: int = 0
    io_bytes: int = 0
    lat_n: int = 0
    lat_sum_ns: float = 0.0
    bins: dict[int, int] = field(default_factory=dict)

    def minus(self, before: Totals) -> Totals:
        bins = {v: c - before.bins.get(v, 0) for v, c in self.bins.items()}
        return Totals(self.ios - before.ios, self.io_bytes - before.io_bytes, self.lat_n - before.lat_n,
                      self.lat_sum_ns - before.lat_sum_ns, {v: c for v, c in bins.items() if c})


@dataclass
class Snapshot:
    """The measured jobs of one host at one status tick, summed."""

    t_ms: int  # the measured part's clock: how long its jobs have run
    read: Totals
    write: Totals
    cpu_ms: float  # user + system CPU the jobs used so far


@dataclass
class Round:
    """One round of one host: exact figures of the span (start_ms, end_ms]."""

    start_ms: int
    end_ms: int
    read: Totals
    write: Totals
    cpu_ms: float

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000


@dataclass
class JobStatus:
    """One job's cumulative figures at a status tick, from fio's JSON
    status or its server's binary status frame (status_frames.py)."""

    name: str
    runtime_ms: int  # fio's job_runtime: how long the job has run
    read: Totals
    write: Totals
    cpu_ms: float  # user + system CPU the job used so far


def job_status(entry: dict, where: str) -> JobStatus:
    """One job entry of fio's JSON status."""
    runtime = entry.get("job_runtime")
    if not isinstance(runtime, int) or isinstance(runtime, bool):
        raise ImportFormatError(f"{where}: no job_runtime in fio's status")
    totals = {}
    for name in ("read", "write"):
        d = _direction(entry, name, where)
        totals[name] = Totals(d.ios, d.io_bytes, d.lat_n, (d.lat_mean_ns or 0.0) * d.lat_n, dict(d.bins or {}))
    cpu = (entry.get("usr_cpu") or 0.0) + (entry.get("sys_cpu") or 0.0)
    # fio's CPU shares are of the job's runtime
    return JobStatus(entry.get("jobname", ""), runtime, totals["read"], totals["write"], cpu / 100 * runtime)


def measured_sum(jobs: list[JobStatus]) -> Snapshot | None:
    """The measured jobs' sum at one tick (the warm-up group and fio's "All
    clients" sum left out); None before the measured jobs have done any IO
    (fio shows their process age there)."""
    measured = [j for j in jobs if j.name not in (WARMUP_JOB, ALL_CLIENTS)]
    if not any(j.read.ios or j.write.ios for j in measured):
        return None
    read, write = Totals(), Totals()
    for j in measured:
        for acc, d in ((read, j.read), (write, j.write)):
            acc.ios += d.ios
            acc.io_bytes += d.io_bytes
            acc.lat_n += d.lat_n
            acc.lat_sum_ns += d.lat_sum_ns
            if d.bins:
                acc.bins = merge_bins([acc.bins, d.bins]) if acc.bins else dict(d.bins)
    return Snapshot(max(j.runtime_ms for j in measured), read, write, sum(j.cpu_ms for j in measured))


def snapshot(entries: list[dict], where: str = "status") -> Snapshot | None:
    """The measured jobs' sum from one snapshot's job entries of fio's JSON status."""
    measured = [e for e in entries if e.get("jobname") not in (WARMUP_JOB, ALL_CLIENTS)]
    return measured_sum([job_status(e, f"{where}[{i}]") for i, e in enumerate(measured)])


class Rounds:
    """One host's rounds, built snapshot by snapshot (`add`), live or from
    a finished client's output. `every`: status intervals per round, each
    `interval_ms` long."""

    def __init__(self, every: int, interval_ms: int = 1000):
        if every < 1:
            raise ValueError("a round holds at least one status interval")
        self.every, self.interval_ms = every, interval_ms
        self.rounds: list[Round] = []
        self._mark: Snapshot | None = None  # the snapshot the current round started at

    def add(self, snap: Snapshot | None) -> bool:
        """Take the next snapshot; True when it closed a round: the first
        snapshot at least 90 % of a round after the round's start (fio's
        timer drifts by milliseconds). fio's final document, written at
        the runtime's end or a stop at any time after the last tick,
        closes no round shorter than that: its part is in no round."""
        if snap is None:
            return False
        if self._mark is None:
            self._mark = snap
            return False
        m = self._mark
        if snap.t_ms - m.t_ms < 0.9 * self.every * self.interval_ms:
            return False
        self.rounds.append(Round(m.t_ms, snap.t_ms, snap.read.minus(m.read), snap.write.minus(m.write),
                                 snap.cpu_ms - m.cpu_ms))
        self._mark = snap
        return True


def client_rounds(doc: dict, per_tick: int, interval_ms: int) -> tuple[Rounds, dict]:
    """A fio client's output for one server with snapshots (`--status-
    interval`): that host's rounds, and the document with only its final
    snapshot (what `parse.parse_output` reads as the test's result).
    `per_tick`: job entries fio sends per snapshot (warm-up and measured
    jobs of the host's job file); one round per status interval."""
    entries = [e for e in doc.get("client_stats", []) if isinstance(e, dict) and e.get("jobname") != ALL_CLIENTS]
    if per_tick < 1 or not entries or len(entries) % per_tick:
        raise ImportFormatError(f"fio's client output has {len(entries)} job entries, not whole snapshots "
                                f"of {per_tick} jobs")
    ticks = [entries[i:i + per_tick] for i in range(0, len(entries), per_tick)]
    names = [e.get("jobname") for e in ticks[0]]
    if any([e.get("jobname") for e in tick] != names for tick in ticks):
        raise ImportFormatError("fio's client output: its status snapshots do not list the same jobs")
    rounds = Rounds(1, interval_ms)
    for n, tick in enumerate(ticks):
        rounds.add(snapshot(tick, f"client_stats snapshot {n}"))
    return rounds, {**doc, "client_stats": ticks[-1]}
