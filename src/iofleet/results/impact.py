"""What a scenario's faults did to the load, as a run stores it (its
methodology's `scenario.impact`, analysis/impact.py measures it): the
baseline, each event's impact, recovery and catch-up, the per-second
series and the stalls. Each `to_dict` is the exported JSON; `from_dict`
reads it back, old runs' too (records.py)."""

from dataclasses import dataclass, field

from .records import Record, from_optional


@dataclass
class Stall(Record):
    """IO on `host` paused from `from_s` to `to_s` (s into the measured
    part); the longest wait of an IO through it, `waited_s`, is a lower
    bound when `bounded` (fio's histogram ends at its ceiling)."""

    host: str = ""
    from_s: float = 0.0
    to_s: float = 0.0
    waited_s: float = 0.0
    bounded: bool = False


@dataclass
class SpanFigures(Record):
    """IOPS and p99 (ms) over whole seconds: the baseline's, or an event's
    span's; `p99_lower_bound`: the p99 counts IOs still waiting in a stall,
    or is fio's histogram ceiling (at least that)."""

    seconds: int = 0
    iops: float = 0.0
    p99_ms: float | None = None
    p99_lower_bound: bool = False


@dataclass
class CatchUp(Record):
    """A fixed-rate load catching up after an event: the most IOs behind
    its schedule, when the backlog drained (None: not by the end) and the
    highest IOPS while it did."""

    behind_ios: int = 0
    drained_s: float | None = None
    burst_iops: float | None = None


@dataclass
class EventImpact(Record):
    """One event's impact: its span on fio's clock, the figures over it,
    their change against the baseline (%), the seconds until IOPS were
    back (None: not by the end) and a fixed-rate load's catch-up. `index`:
    the event's in the scenario (None in records stored before it)."""

    index: int | None = None
    from_s: float = 0.0
    to_s: float = 0.0
    during: SpanFigures | None = None
    iops_change_pct: float | None = None
    p99_change_pct: float | None = None
    recovery_s: float | None = None
    catch_up: CatchUp | None = None

    OPTIONAL = ("index",)

    @classmethod
    def _from(cls, d: dict) -> dict:
        return super()._from(d) | {"during": from_optional(SpanFigures, d.get("during")),
                                   "catch_up": from_optional(CatchUp, d.get("catch_up"))}


@dataclass
class ImpactSeries(Record):
    """Per second: its end (s into the measured part), the fleet's IOPS
    and p99 (ms), how many hosts reported, whether a host stalled in it or
    its figures are a late status line's spread evenly, each host's IOPS
    (None once it no longer reports) and a fixed-rate load's backlog."""

    t_s: list[float] = field(default_factory=list)
    iops: list[float] = field(default_factory=list)
    p99_ms: list[float | None] = field(default_factory=list)
    hosts_reporting: list[int] = field(default_factory=list)
    stalled: list[bool] = field(default_factory=list)
    estimated: list[bool] = field(default_factory=list)
    hosts: dict[str, list[float | None]] = field(default_factory=dict)
    behind_ios: list[float] | None = None

    OPTIONAL = ("behind_ios",)


@dataclass
class Impact(Record):
    """A scenario's impact: the recovery band (± % of the baseline's IOPS,
    held for `hold_s` seconds), the baseline, each event's impact, the
    series and the stalls. Records stored without a band were judged
    with ±10 % for 5 s."""

    band_pct: float = 10.0
    hold_s: int = 5
    baseline: SpanFigures | None = None
    events: list[EventImpact] = field(default_factory=list)
    series: ImpactSeries | None = None
    stalls: list[Stall] = field(default_factory=list)

    @classmethod
    def _from(cls, d: dict) -> dict:
        lists = {"events": [EventImpact.from_dict(e) for e in d.get("events") or []],
                 "stalls": [Stall.from_dict(s) for s in d.get("stalls") or []]}
        return super()._from(d) | {"baseline": from_optional(SpanFigures, d.get("baseline")),
                                   "series": from_optional(ImpactSeries, d.get("series"))} | {
            k: v for k, v in lists.items() if v}

    def first_event_s(self, default: float) -> float:
        """When the first event's span began (the baseline's end)."""
        return min((e.from_s for e in self.events), default=default)
