"""Each fleet host's status rounds while its test runs, from the status
frames its fio server sends through iofleet's relay (fio/status_frames.py):
the hosts' live figures, the fleet's whole rounds (what early stop judges)
and when each host's rounds arrived (how far apart the hosts' status
timers tick: each server's timer starts with its own fio)."""

from __future__ import annotations

import threading
import time

from ...fio.merge import merge_bins, percentile_from_bins
from ...fio.status import Round, Rounds, measured_sum
from ...fio.status_frames import decode_job
from .runner import RoundFigures


class _Host:
    """One host: its status frames grouped by tick (every job once), each
    tick's measured sum taken as a snapshot, one round per tick."""

    def __init__(self, per_tick: int, interval_ms: int):
        self.per_tick = per_tick
        self.rounds = Rounds(1, interval_ms)
        self.tick: list = []
        self.arrived: list[float] = []  # monotonic time each round closed
        self.unreadable: str | None = None  # why its frames are not decoded

    def take(self, version: int, payload: bytes, now: float) -> bool:
        """One TS frame; True when it closed a round."""
        if self.unreadable:
            return False
        try:
            self.tick.append(decode_job(payload, version))
        except Exception as exc:  # noqa: BLE001 — a frame not understood ends live figures, never the host's link
            self.unreadable = str(exc) or type(exc).__name__
            return False
        if len(self.tick) < self.per_tick:
            return False
        snap, self.tick = measured_sum(self.tick), []
        if not self.rounds.add(snap):
            return False
        self.arrived.append(now)
        return True


class LiveRounds:
    """The hosts' rounds as their frames arrive (`take`, on the relay's
    thread); `on_round(host)` is called as a host closes a round."""

    def __init__(self, per_tick: dict[str, int], interval_ms: int, on_round=None):
        self._hosts = {name: _Host(n, interval_ms) for name, n in per_tick.items()}
        self._lock = threading.Lock()
        self.on_round = on_round

    def take(self, name: str, version: int, payload: bytes) -> None:
        with self._lock:
            closed = self._hosts[name].take(version, payload, time.monotonic())
        if closed and self.on_round is not None:
            self.on_round(name)

    def unreadable(self) -> dict[str, str]:
        """host → why its status is not decoded (its fio's protocol version)."""
        return {n: h.unreadable for n, h in self._hosts.items() if h.unreadable}

    def rounds(self, names: list[str]) -> dict[str, list[Round]]:
        """The hosts' rounds so far (copies)."""
        with self._lock:
            return {n: list(self._hosts[n].rounds.rounds) for n in names}

    def whole(self, names: list[str]) -> int:
        """Rounds every one of the hosts has."""
        with self._lock:
            return min((len(self._hosts[n].rounds.rounds) for n in names), default=0)

    def latest(self) -> dict[str, RoundFigures | None]:
        """Each host's last round's figures (None before its first)."""
        with self._lock:
            return {n: _figures(h.rounds.rounds[-1]) if h.rounds.rounds else None for n, h in self._hosts.items()}

    def fleet_round(self, names: list[str]) -> tuple[float, float, float | None] | None:
        """(IOPS, bytes/s, mean latency ns) of the last round every host
        has, summed over the hosts; None before the first."""
        per_host = self.rounds(names)
        k = min((len(r) for r in per_host.values()), default=0)
        if k == 0:
            return None
        last = [_figures(r[k - 1]) for r in per_host.values()]
        lat = [(f.lat_mean_ns, f.iops) for f in last if f.lat_mean_ns is not None]
        weight = sum(w for _, w in lat)
        return (sum(f.iops for f in last), sum(f.bw_bytes_s for f in last),
                sum(v * w for v, w in lat) / weight if weight else None)

    def spread_s(self, names: list[str]) -> float | None:
        """The most seconds between the first and the last host closing the
        same round: how far apart the fleet's rounds are, measured."""
        with self._lock:
            arrived = [self._hosts[n].arrived for n in names]
        k = min((len(a) for a in arrived), default=0)
        if len(arrived) < 2 or k == 0:
            return None
        return max(max(a[i] for a in arrived) - min(a[i] for a in arrived) for i in range(k))


def _figures(r: Round) -> RoundFigures:
    lat_n = r.read.lat_n + r.write.lat_n
    bins = merge_bins([r.read.bins, r.write.bins])
    s = r.seconds
    return RoundFigures(end_s=r.end_ms / 1000, seconds=s,
                        iops=(r.read.ios + r.write.ios) / s if s > 0 else 0.0,
                        bw_bytes_s=(r.read.io_bytes + r.write.io_bytes) / s if s > 0 else 0.0,
                        lat_mean_ns=(r.read.lat_sum_ns + r.write.lat_sum_ns) / lat_n if lat_n else None,
                        p99_ns=percentile_from_bins(bins, 99.0) if bins else None)


def not_decoded_note(unreadable: dict[str, str]) -> str:
    """The run's line when some host's status cannot be decoded."""
    hosts = ", ".join(sorted(unreadable))
    why = next(iter(unreadable.values()))
    return (f"no live figures from {hosts}: {why}; no early stop: the test ran its full time, its rounds "
            f"read from fio's client at the end")


class SteadyWatch:
    """Ends an until: steady fleet test (sets `finish`) at the first whole
    round (every host has it) at which the fleet's rounds hold by `rule`
    (host → rounds: the steady-state rule that judges them afterwards)."""

    def __init__(self, names: list[str], rule, phase):
        self.names, self.rule, self.phase = names, rule or None, phase
        self.rounds = 0  # whole rounds judged so far
        self.at_s: float | None = None  # the measured second the fleet was steady
        self._lock = threading.Lock()

    def check(self, live: LiveRounds, finish: threading.Event) -> None:
        if self.rule is None or finish.is_set():
            return
        with self._lock:
            whole = live.whole(self.names)
            if whole <= self.rounds:
                return
            self.rounds = whole
            per_host = {h: r[:whole] for h, r in live.rounds(self.names).items()}
            if self.rule(per_host):
                self.at_s = per_host[self.names[0]][-1].end_ms / 1000  # a round's span is the first host's
                self.phase(f"steady at {self.at_s:.0f} s on every host: ending the test")
                finish.set()
