"""Saturation: where IOPS stop growing with outstanding IO, the best
configuration, and the most IOPS that meet a latency target.

Works on the cells of an outstanding-IO sweep (one exported test per
jobs × iodepth), whether the sweep is running or long stored.
"""

import math
import re
import warnings
from dataclasses import dataclass

from ..errors import IofleetError
from .little import little_holds, little_ratio, outstanding_io

# Kneedle's sensitivity, in online mode (every knee along the curve, not
# only the first): on a doubling sweep the default of 1 misses the bend of a
# short sweep (docs/saturate.md).
KNEE_SENSITIVITY = 0.25
# A knee only counts when IOPS grow less than this share beyond it in all:
# a passing wiggle of the curve, with IOPS still climbing after it, is none.
BEYOND_KNEE_GAIN = 0.20
# The best configuration: the least outstanding IO giving this share of the
# highest IOPS (past it, more IOs in flight only add latency).
BEST_SHARE = 0.95

SLO_METRICS = ("mean", "p50", "p90", "p95", "p99", "p99.9")
_SLO_RE = re.compile(r"^\s*(mean|p50|p90|p95|p99|p99\.9)\s*(<=|<)\s*([0-9]+(?:\.[0-9]+)?)\s*(us|µs|ms|s)\s*$")
_UNIT_US = {"us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class Slo:
    """A latency target, e.g. p99 <= 2 ms, met when every IO direction that
    did IO meets it."""

    metric: str  # mean | p50 | p90 | p95 | p99 | p99.9
    limit_us: float
    strict: bool  # '<' rather than '<='

    @property
    def text(self) -> str:
        return f"{self.metric}{'<' if self.strict else '<='}{_fmt_us(self.limit_us)}"

    def value_us(self, test: dict) -> float | None:
        """The test's worst value of the metric over the directions that did
        IO; None when a needed figure is unknown."""
        key = "lat_mean_us" if self.metric == "mean" else f"lat_{self.metric.replace('.', '_')}_us"
        values = [test[d].get(key) for d in ("read", "write") if (test.get(d) or {}).get("ios")]
        if not values or any(v is None for v in values):
            return None
        return max(values)

    def met(self, value_us: float | None) -> bool:
        if value_us is None:
            return False  # unknown is not a pass
        return value_us < self.limit_us if self.strict else value_us <= self.limit_us


def parse_slo(text: str) -> Slo:
    """'p99<=2ms' → Slo('p99', 2000.0, False)."""
    m = _SLO_RE.match(text or "")
    if not m:
        raise IofleetError(f"--slo {text!r}: give a latency target like 'p99<=2ms' "
                           f"(metric: {', '.join(SLO_METRICS)}; units: us, ms, s)")
    metric, op, number, unit = m.groups()
    limit = float(number) * _UNIT_US[unit]
    if limit <= 0:
        raise IofleetError(f"--slo {text!r}: the latency limit must be above zero")
    return Slo(metric, limit, op == "<")


def _fmt_us(us: float) -> str:
    return f"{us / 1e3:g}ms" if us >= 1000 else f"{us:g}us"


@dataclass
class Cell:
    """One step of the sweep: a test at jobs × iodepth per host."""

    test: str  # test id
    seq: int  # position in the run
    jobs: int  # per host
    iodepth: int
    hosts: int
    outstanding: int  # IOs in flight asked of the whole fleet (hosts × jobs × iodepth)
    iops: float
    mb_s: float
    lat_mean_us: float | None
    lat_p99_us: float | None
    little: float | None  # IOPS × mean latency ÷ outstanding IO
    slo_value_us: float | None = None
    slo_ok: bool | None = None  # None without a target

    @property
    def per_host(self) -> int:
        return self.jobs * self.iodepth

    @property
    def little_ok(self) -> bool | None:
        return little_holds(self.little)


def cells_of(run: dict, slo: Slo | None = None) -> list[Cell]:
    """The measured cells of an exported run (results.export.run_to_dict)."""
    cells = []
    for t in run["tests"]:
        oio = outstanding_io(t)
        if t["status"] not in ("ok", "partial") or not oio or not (t.get("all") or {}).get("ios"):
            continue
        hosts = len(t.get("hosts") or {}) or 1
        cell = Cell(
            test=t["id"], seq=t["seq"], jobs=t["params"]["jobs"], iodepth=t["params"]["iodepth"], hosts=hosts,
            outstanding=oio, iops=t["all"]["iops"], mb_s=t["all"]["bw_mb_s"],
            lat_mean_us=t["all"]["lat_mean_us"], lat_p99_us=t["all"]["lat_p99_us"], little=little_ratio(t))
        if slo:
            cell.slo_value_us = slo.value_us(t)
            cell.slo_ok = slo.met(cell.slo_value_us)
        cells.append(cell)
    return cells


def frontier(cells: list[Cell]) -> list[Cell]:
    """The best cell (most IOPS) at each level of outstanding IO, in order."""
    best: dict[int, Cell] = {}
    for c in cells:
        if c.outstanding not in best or c.iops > best[c.outstanding].iops:
            best[c.outstanding] = c
    return [best[k] for k in sorted(best)]


def find_knee(cells: list[Cell]) -> Cell | None:
    """Kneedle (the kneed library) on IOPS over log2 of outstanding IO: of
    the knees found, the one farthest above the straight line; None when
    IOPS never bend (still growing at the last level, or too few levels)."""
    line = frontier(cells)
    if len(line) < 3:
        return None
    from kneed import KneeLocator  # imported here: scipy makes it slow to load

    x = [math.log2(c.outstanding) for c in line]
    y = [c.iops for c in line]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kneed warns when it finds no knee; None says it
        found = KneeLocator(x, y, curve="concave", direction="increasing", S=KNEE_SENSITIVITY, online=True)
    # A knee at the first level is a straight line (in log2 outstanding IO).
    knees = [x.index(k) for k in found.all_knees if x.index(k) > 0]
    knees = [i for i in knees if max(y[i:]) < y[i] * (1 + BEYOND_KNEE_GAIN)]
    if not knees:
        return None
    return line[max(knees, key=lambda i: found.y_difference[i])]


def best_cell(cells: list[Cell]) -> Cell | None:
    """The least outstanding IO that gives BEST_SHARE of the highest IOPS,
    among the cells that meet the latency target (all, without one)."""
    eligible = [c for c in cells if c.slo_ok is not False]
    if not eligible:
        return None
    top = max(c.iops for c in eligible)
    near = [c for c in eligible if c.iops >= BEST_SHARE * top]
    return min(near, key=lambda c: (c.outstanding, c.lat_mean_us or 0))


def slo_best(cells: list[Cell]) -> Cell | None:
    """The most IOPS among the cells that meet the latency target."""
    passing = [c for c in cells if c.slo_ok]
    return max(passing, key=lambda c: c.iops) if passing else None


def bisect_bracket(cells: list[Cell]) -> tuple[Cell, Cell] | None:
    """(passing, failing) cells of the same jobs, nearest above and below the
    target, around the passing cell with the most IOPS: where bisection on
    iodepth can still find more IOPS under the target; None when there is
    nothing between them."""
    best = slo_best(cells)
    if best is None:
        return None
    above = [c for c in cells if c.jobs == best.jobs and c.iodepth > best.iodepth and c.slo_ok is False]
    if not above:
        return None
    fail = min(above, key=lambda c: c.iodepth)
    passing = max((c for c in cells if c.jobs == best.jobs and c.slo_ok and c.iodepth < fail.iodepth),
                  key=lambda c: c.iodepth)
    return (passing, fail) if fail.iodepth - passing.iodepth > 1 else None


@dataclass
class Saturation:
    cells: list[Cell]
    knee: Cell | None
    best: Cell | None
    slo: Slo | None
    slo_best: Cell | None

    @property
    def little_flags(self) -> list[Cell]:
        return [c for c in self.cells if c.little_ok is False]


def saturation(run: dict, slo: Slo | None = None) -> Saturation:
    cells = cells_of(run, slo)
    return Saturation(cells=cells, knee=find_knee(cells), best=best_cell(cells), slo=slo,
                      slo_best=slo_best(cells) if slo else None)


def saturation_of_run(run: dict) -> Saturation | None:
    """The analysis of a stored sweep (an exported run), or None when the
    run is not a saturate sweep."""
    info = (run.get("methodology") or {}).get("saturate")
    if info is None:
        return None
    return saturation(run, parse_slo(info["slo"]) if info.get("slo") else None)
