"""Start skew of a fleet test: did the hosts measure at the same time?

fio's client starts the hosts one after the other and has no start barrier,
so hosts can begin (and end) their measured part at different moments; a
fleet figure is only a sum over the same period if their windows overlap.
A host's measured window runs from the start of its first per-second log
interval to the end of its last one (the logs carry wall-clock times; ramp
writes no log lines, so the warm-up is outside the window).
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


def measure_skew(series: list[Series]) -> Skew | None:
    """Skew of the hosts' measured windows, from their IOPS series; None
    with fewer than two hosts."""
    windows: dict[str, tuple[int, int]] = {}
    for s in series:
        if s.metric != "iops" or not s.t_ms:
            continue
        start, end = s.t_ms[0] - LOG_INTERVAL_MS, s.t_ms[-1]
        if s.host in windows:
            start, end = min(start, windows[s.host][0]), max(end, windows[s.host][1])
        windows[s.host] = (start, end)
    if len(windows) < 2:
        return None
    starts = [w[0] for w in windows.values()]
    ends = [w[1] for w in windows.values()]
    span = max(ends) - min(starts)
    common = max(0, min(ends) - max(starts))
    return Skew(windows_ms=windows, start_spread_ms=max(starts) - min(starts),
                end_spread_ms=max(ends) - min(ends),
                overlap_pct=100.0 * common / span if span > 0 else 100.0)
