"""Saturation: the answer of an outstanding-IO sweep (the most IOPS, under
a latency target when there is one, and what it cannot be told apart from
within noise), where IOPS stop growing (the knee) and the best
configuration.

Works on the cells of a sweep (a run's tests per jobs × iodepth, repeats
of a cell taken together; figures of each test's measurement window),
whether the sweep is running or long stored.
"""

import math
import re
import warnings
from dataclasses import dataclass

from ..errors import IofleetError
from ..results.export import Figures
from ..results.model import Run, TestRecord
from .little import in_flight, little_holds, outstanding_io

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

    def value_us(self, figures: Figures) -> float | None:
        """The worst value of the metric over the directions that did IO
        (of a test's figures); None when a needed figure is unknown."""
        values = [d.lat_us(self.metric) for d in (figures.read, figures.write) if d.ios]
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


# A single run's IOPS are taken as ± half this share (the host's run-to-run
# noise, ±8 % on this project's VM), n runs' median as ± half ÷ √n or their
# spread: two cells are told apart only when these bands do not overlap
# (docs/saturate.md).
NOISE_PCT = 8.0


@dataclass
class Cell:
    """One step of the sweep: jobs × iodepth per host, measured once or
    repeated. Its figures are the medians of its runs; each run's figures
    are its measurement window's (the steady window), else the whole test's."""

    test: str  # test id (every run of the cell has it)
    seq: int  # position of its first run in the run
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
    slo_ok: bool | None = None  # None without a target; True only when every run met it
    iops_runs: tuple[float, ...] = ()  # each run's IOPS (one value when not repeated)
    slo_runs: tuple[float | None, ...] = ()  # each run's value of the target's metric
    slo_met_runs: int = 0  # how many runs met the target
    noise_pct: float = NOISE_PCT

    @property
    def per_host(self) -> int:
        return self.jobs * self.iodepth

    @property
    def little_ok(self) -> bool | None:
        return little_holds(self.little)

    @property
    def runs(self) -> int:
        return max(1, len(self.iops_runs))

    @property
    def band(self) -> tuple[float, float]:
        """Where the cell's IOPS may be: the median ± half the noise ÷ √runs,
        widened to the lowest and highest run (a few runs may agree by
        chance; they may also spread more than the noise)."""
        half = self.iops * self.noise_pct / 200 / math.sqrt(self.runs)
        return min([self.iops - half, *self.iops_runs]), max([self.iops + half, *self.iops_runs])


def more_iops(a: Cell, b: Cell) -> bool:
    """a has more IOPS than b beyond noise: their bands do not overlap."""
    return a.band[0] > b.band[1]


def apart(a: Cell, b: Cell) -> bool:
    return more_iops(a, b) or more_iops(b, a)


def _median(values: list) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    mid = len(known) // 2
    return known[mid] if len(known) % 2 else (known[mid - 1] + known[mid]) / 2


def figures_of(test: TestRecord) -> Figures:
    """The figures a cell uses from a test: its measurement window's
    (methodology.window), else the whole test's (runs stored before
    windows had exact figures, tests too short for a window)."""
    window = test.methodology.window_figures() if test.methodology is not None else None
    if window is not None and window.all.ios:
        return window
    return test.figures()


def cells_of(tests: list[TestRecord], slo: Slo | None = None, noise_pct: float = NOISE_PCT) -> list[Cell]:
    """The measured cells of a sweep's tests, the repeats of a cell (tests
    of the same id) taken together."""
    runs: dict[str, list[TestRecord]] = {}
    for t in tests:
        oio = outstanding_io(t)
        if t.status not in ("ok", "partial") or not oio or not t.figures().all.ios:
            continue
        runs.setdefault(t.id, []).append(t)
    cells = []
    for tests in runs.values():
        t0 = tests[0]
        figs = [figures_of(t).all for t in tests]
        oio = outstanding_io(t0)
        iops = [f.iops for f in figs]
        lat = [f.lat_mean_us for f in figs]
        littles = [None if (seen := in_flight(f.iops, f.lat_mean_us)) is None else seen / oio for f in figs]
        cell = Cell(
            test=t0.id, seq=t0.seq, jobs=t0.params["jobs"], iodepth=t0.params["iodepth"],
            hosts=len(t0.host_aggregates()) or 1, outstanding=oio, iops=_median(iops),
            mb_s=_median([f.bw_mb_s for f in figs]), lat_mean_us=_median(lat),
            lat_p99_us=_median([f.lat_us("p99") for f in figs]), little=_median(littles),
            iops_runs=tuple(iops), noise_pct=noise_pct)
        if slo:
            values = [slo.value_us(figures_of(t)) for t in tests]
            cell.slo_runs = tuple(values)
            cell.slo_value_us = _median(values) if None not in values else None
            cell.slo_met_runs = sum(1 for v in values if slo.met(v))
            cell.slo_ok = cell.slo_met_runs == len(values)
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


def peak(cells: list[Cell]) -> tuple[Cell | None, list[Cell]]:
    """The sweep's answer: the most IOPS among the cells that meet the
    latency target (all, without one), and the cells it cannot be told apart
    from. Of cells within noise of the highest, the one with the least
    outstanding IO (then the fewest jobs) wins: more IOs in flight that buy
    no measurable IOPS only add latency."""
    eligible = [c for c in cells if c.slo_ok is not False]
    if not eligible:
        return None, []
    top = max(eligible, key=lambda c: c.iops)
    tied = [c for c in eligible if not more_iops(top, c)]
    answer = min(tied, key=lambda c: (c.outstanding, c.jobs, c.lat_mean_us or 0))
    return answer, [c for c in tied if c is not answer]


def best_cell(cells: list[Cell], top: Cell | None = None) -> Cell | None:
    """The least outstanding IO that gives BEST_SHARE of the answer's IOPS,
    among the cells that meet the latency target (all, without one)."""
    top = top or peak(cells)[0]
    if top is None:
        return None
    near = [c for c in cells if c.slo_ok is not False and c.iops >= BEST_SHARE * top.iops]
    return min(near, key=lambda c: (c.outstanding, c.jobs, c.lat_mean_us or 0))


def slo_best(cells: list[Cell]) -> Cell | None:
    """The most IOPS among the cells that meet the latency target (the
    sweep's answer under it)."""
    return peak(cells)[0] if any(c.slo_ok for c in cells) else None


def near_limit(cell: Cell, slo: Slo) -> bool:
    """A cell whose target metric is within noise of the limit (on either
    side in some run), or whose runs disagree on the target: one more run
    may turn its verdict."""
    if cell.slo_runs and 0 < cell.slo_met_runs < len(cell.slo_runs):
        return True
    band = 1 + cell.noise_pct / 100
    return any(v is not None and slo.limit_us / band <= v <= slo.limit_us * band for v in cell.slo_runs)


def bisect_bracket(cells: list[Cell]) -> tuple[Cell, Cell] | None:
    """(passing, failing) cells of the same jobs, nearest above and below the
    target, around the answer under it: where bisection on iodepth can
    still find more IOPS under the target; None when there is nothing
    between them."""
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
    """What a sweep found. `peak` is its answer (the cell to use: the most
    IOPS, under the target when there is one; `peak.jobs`, `peak.iodepth`,
    `peak.iops`); `ties` the cells that cannot be told apart from it; `best`
    the least outstanding IO within BEST_SHARE of it; `knee` where IOPS
    bend."""

    cells: list[Cell]
    knee: Cell | None
    best: Cell | None
    slo: Slo | None
    peak: Cell | None
    ties: list[Cell]
    noise_pct: float = NOISE_PCT

    @property
    def slo_best(self) -> Cell | None:
        """The most IOPS that meet the target (None without a target)."""
        return self.peak if self.slo and self.peak is not None and self.peak.slo_ok else None

    @property
    def little_flags(self) -> list[Cell]:
        return [c for c in self.cells if c.little_ok is False]


def analyse(cells: list[Cell], slo: Slo | None, noise_pct: float = NOISE_PCT) -> Saturation:
    top, ties = peak(cells)
    return Saturation(cells=cells, knee=find_knee(cells), best=best_cell(cells, top), slo=slo, peak=top,
                      ties=ties, noise_pct=noise_pct)


def saturation(run: Run, slo: Slo | None = None, noise_pct: float = NOISE_PCT) -> Saturation:
    return analyse(cells_of(run.tests, slo, noise_pct), slo, noise_pct)


def saturation_of_run(run: Run) -> Saturation | None:
    """The analysis of a stored sweep, or None when the run is not a
    saturate sweep."""
    info = run.methodology.saturate if run.methodology is not None else None
    if info is None:
        return None
    # A sweep stored before --noise existed has no noise_pct: the default it ran with.
    noise = info.noise_pct if info.noise_pct is not None else NOISE_PCT
    return saturation(run, parse_slo(info.slo) if info.slo else None, noise)
