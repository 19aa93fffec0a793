"""Latency against load (the "hockey stick"): the points of a curve run,
fixed-rate tests at shares of the most IOPS, each with the rate it asked
for, the rate it achieved and its latency percentiles (from the merged
histograms the store keeps: the test's measurement window).

A point that did not reach its target rate is said to be so: past the
maximum the storage cannot go faster, and its latency is that of a
saturated system, not of the load asked for."""

from dataclasses import dataclass, field

from ..results.export import DirectionFigures
from ..results.methodology import CurveRecord
from ..results.model import Run
from .saturation import figures_of

# A point reached its target when it achieved at least this share of it: fio
# paces IOs to the rate within a fraction of a percent, so a shortfall beyond
# this is the storage (or the host) not keeping up.
REACHED_SHARE = 0.95
# The loads when none are given: `points` evenly spaced shares of the most
# IOPS, the last at 100 %.
DEFAULT_POINTS = 10


def even_loads(points: int) -> list[float]:
    """k/points of the maximum for k = 1..points, in %: 10, 20, … 100 for 10."""
    return [round(100 * k / points, 1) for k in range(1, points + 1)]


def load_rule(loads: list[float], given: bool) -> str:
    """The rule that placed the points, as the run stores and shows it."""
    if given:
        return "loads as given: " + ", ".join(f"{pct:g} %" for pct in loads) + " of the most IOPS"
    return f"{len(loads)} loads evenly spaced: k/{len(loads)} of the most IOPS, k = 1..{len(loads)}"


@dataclass
class Point:
    """One fixed-rate test of the curve."""

    test: str
    status: str
    load_pct: float  # its target as a share of the most IOPS
    target_iops: int  # the rate asked of the whole test (all hosts and jobs)
    iops: float | None  # achieved
    mb_s: float | None
    p50_us: float | None
    p99_us: float | None
    p99_9_us: float | None

    @property
    def reached(self) -> bool:
        return self.iops is not None and self.iops >= REACHED_SHARE * self.target_iops

    @property
    def achieved_pct(self) -> float | None:
        """Achieved as a share of the target, %."""
        return None if self.iops is None else 100 * self.iops / self.target_iops


@dataclass
class CurveResult:
    max_iops: float  # the most IOPS, at jobs × iodepth per host
    jobs: int
    iodepth: int
    source: str  # where the maximum came from (a saturate run)
    rule: str
    io: dict = field(default_factory=dict)  # bs, read_pct, random_pct
    points: list[Point] = field(default_factory=list)

    @property
    def missed(self) -> list[Point]:
        return [p for p in self.points if not p.reached]


def curve_record(curve: "CurveResult") -> CurveRecord:
    """What a curve run stores in its methodology (`curve`), before its points."""
    return CurveRecord(max_iops=curve.max_iops, jobs=curve.jobs, iodepth=curve.iodepth, source=curve.source,
                       rule=curve.rule, io=curve.io, reached_share=REACHED_SHARE)


def curve_of_run(run: Run) -> CurveResult | None:
    """The curve of a stored run, or None when the run is not a curve run."""
    info = run.methodology.curve if run.methodology is not None else None
    if not info:
        return None
    result = CurveResult(info.max_iops, info.jobs, info.iodepth, info.source, info.rule, info.io or {})
    for t in run.tests:
        target = (t.params or {}).get("rate_iops")
        if not target:
            continue
        figs = figures_of(t).all if t.figures().all.ios else DirectionFigures()
        result.points.append(Point(
            test=t.id, status=t.status, load_pct=100 * target / info.max_iops, target_iops=target,
            iops=figs.iops, mb_s=figs.bw_mb_s, p50_us=figs.lat_us("p50"), p99_us=figs.lat_us("p99"),
            p99_9_us=figs.lat_us("p99.9")))
    return result
