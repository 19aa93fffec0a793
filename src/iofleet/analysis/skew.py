"""Start skew of a fleet test: did the hosts measure at the same time?

fio's client starts the hosts one after the other and has no start barrier,
so hosts can begin (and end) their measured part at different moments; a
fleet figure is only a sum over the same period if their windows overlap.
A host's measured window starts where its first per-second log interval
starts (the logs carry wall-clock times; ramp writes no log lines, so the
warm-up is outside the window) and lasts as long as fio says its jobs ran.
The window's end is not read from the log: fio may drop a job's last,
partial interval, which would make a host look up to a second short.
"""

from dataclasses import dataclass

from ..fio.jobfile import LOG_INTERVAL_MS
from ..fio.records import Series

MIN_OVERLAP_PCT = 95.0


@dataclass
class Skew:
    windows_ms: dict[str, tuple[int, int]]  # host → (start, end), ms on the series' time axis
    start_spread_ms: int  # latest start − earliest start
    end_spread_ms: int
    overlap_pct: float  # common part of all windows / span from first start to last end

    @property
    def overlapping(self) -> bool:
        return self.overlap_pct >= MIN_OVERLAP_PCT

    def to_dict(self) -> dict:
        return {"start_spread_ms": self.start_spread_ms, "end_spread_ms": self.end_spread_ms,
                "overlap_pct": self.overlap_pct,
                "windows_ms": {h: list(w) for h, w in self.windows_ms.items()}}


def measure_skew(series: list[Series], runtime_ms: dict[str, int]) -> Skew | None:
    """Skew of the hosts' measured windows, from their IOPS series and the
    measured runtime fio reported per host; None with fewer than two hosts."""
    starts: dict[str, int] = {}
    for s in series:
        if s.metric == "iops" and s.t_ms and s.host in runtime_ms:
            starts[s.host] = min(starts.get(s.host, s.t_ms[0]), s.t_ms[0])
    windows = {h: (t - LOG_INTERVAL_MS, t - LOG_INTERVAL_MS + runtime_ms[h]) for h, t in starts.items()}
    if len(windows) < 2:
        return None
    starts = [w[0] for w in windows.values()]
    ends = [w[1] for w in windows.values()]
    span = max(ends) - min(starts)
    common = max(0, min(ends) - max(starts))
    return Skew(windows_ms=windows, start_spread_ms=max(starts) - min(starts),
                end_spread_ms=max(ends) - min(ends),
                overlap_pct=100.0 * common / span if span > 0 else 100.0)
