"""Compare configurations (groups of runs) test by test: % change against a
baseline, a bootstrap confidence interval and a Welch t-test where there are
repeats, a noise rule for what counts as a real difference, rankings and a
winners table. Pure logic on stored runs (results.model.Run); the JSON
shape of a comparison is report.compare's.

Samples are whole tests: one figure per run and per repeat of a test, never
the per-second points (they are autocorrelated, so treating them as
independent would make every difference look significant).
"""

from dataclasses import dataclass, field

from ..errors import IofleetError
from ..plan.params import ID_BASE
from ..results.export import DirectionFigures
from ..results.model import Run, TestRecord
from .links import LINK_MATCH, link_samples, network_check

# Tests pair up across configurations by what every test id names.
DEFAULT_MATCH = ID_BASE
MIN_REPEATS = 3  # per side, for an interval and a p-value
ALPHA = 0.05
CONFIDENCE = 95.0
DEFAULT_NOISE_PCT = 1.0
DEFAULT_RESAMPLES = 10000
DEFAULT_SEED = 20240601

BASELINE = "baseline"
BETTER = "better"
WORSE = "worse"
WITHIN_NOISE = "within noise"
NOT_ENOUGH = "not enough repeats"
NO_DATA = "n/a"

METHOD = (
    "Each run, and each repeat of a test within a run, is one sample; per-second points are not. "
    "% change = 100 × (mean of test − mean of baseline) / mean of baseline. "
    "With at least {min} samples on both sides: a {conf:g} % percentile bootstrap interval of that "
    "relative change ({resamples} resamples, each side resampled independently with replacement, seed {seed}) "
    "and a Welch t-test (unequal variances) p-value. A difference is real when p < {alpha:g} and the "
    "interval lies entirely outside ±{noise:g} %; otherwise it is within noise. With fewer samples: "
    "not enough repeats. The winner has the best mean (lower is better for latency and CPU); a "
    "configuration within noise of it wins too."
)


RATES = ("iops", "mb_s")  # figures that are no figure, not 0, where nothing was measured


@dataclass(frozen=True)
class Metric:
    """One figure of a test: `figure` is iops, mb_s, a latency (mean, p95,
    p99, ...) of `direction`, or host_cpu (direction None)."""

    name: str
    label: str
    unit: str  # unit of the stored values
    higher_is_better: bool
    direction: str | None  # read, write, all; None for host figures
    figure: str

    def value(self, test: TestRecord) -> float | None:
        if self.direction is None:
            return test.host_cpu.avg_pct if test.host_cpu else None
        # until: steady tests report their measurement window's figures
        # (all of them; results stored before 0.x: IOPS and MB/s only). A
        # test stored before `until` existed counts as until: steady.
        method = test.methodology  # None: an import, measured as a whole
        until = "steady" if method is None or not method.has("until") else method.until
        window = method.window_figures() if method is not None and until == "steady" else None
        if window is not None and window.per_direction:
            return self._of(window.direction(self.direction))
        if window is not None and self.direction == "all" and self.figure in RATES:
            return window.all.iops if self.figure == "iops" else window.all.bw_mb_s
        return self._of(test.figures().direction(self.direction))

    def _of(self, d: DirectionFigures) -> float | None:
        if self.figure in RATES and not d.ios:
            return None  # nothing measured in this direction: no figure, not 0
        if self.figure == "iops":
            return d.iops
        return d.bw_mb_s if self.figure == "mb_s" else d.lat_us(self.figure)


@dataclass(frozen=True)
class LinkMetric(Metric):
    """A figure of a network check's link (analysis/links.py)."""

    def value(self, test) -> float | None:
        return test.figures.get(self.figure)


LINK_METRICS = (LinkMetric("rtt", "round trip", "ms", False, None, "rtt_ms"),
                LinkMetric("gbps", "bandwidth", "Gbit/s", True, None, "gbps"))


def tests_of(run: Run) -> list:
    """What compare pairs up in a run: its tests, or a network check's links."""
    return link_samples(run) if network_check(run) else run.tests


def default_metrics(tail: str = "p99") -> tuple[Metric, ...]:
    """IOPS, MB/s, read and write mean, p95 and tail latency, host CPU."""
    out = [Metric("iops", "IOPS", "IOPS", True, "all", "iops"),
           Metric("mb_s", "MB/s", "MB/s", True, "all", "mb_s")]
    for d in ("read", "write"):
        out.append(Metric(f"{d}_lat_mean", f"{d} mean latency", "us", False, d, "mean"))
        out.append(Metric(f"{d}_p95", f"{d} p95 latency", "us", False, d, "p95"))
        if tail != "p95":
            out.append(Metric(f"{d}_{tail}", f"{d} {tail} latency", "us", False, d, tail))
    out.append(Metric("cpu", "host CPU avg", "%", False, None, "host_cpu"))
    return tuple(out)



@dataclass
class Config:
    """A named group of runs (one run, or every run with one label)."""

    name: str
    runs: list[Run]

    @property
    def partial(self) -> bool:
        return any(r.status != "complete" for r in self.runs)


@dataclass
class Judgement:
    """How samples `b` compare with reference samples `a`."""

    pct_change: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    real: bool | None  # None: not enough repeats or no data
    reason: str  # NOT_ENOUGH, WITHIN_NOISE, NO_DATA or "real"


def _mean(xs: list[float]) -> float | None:
    import numpy as np  # here, as in judge: the CLI reads this module's defaults without numpy's ~50 ms

    return float(np.mean(xs)) if xs else None


def judge(a: list[float], b: list[float], noise_pct: float, resamples: int, seed: int) -> Judgement:
    """Relative change of mean(b) against mean(a), its bootstrap interval,
    the Welch p-value, and whether the difference is real."""
    ma, mb = _mean(a), _mean(b)
    if ma is None or mb is None or ma == 0:
        return Judgement(None, None, None, None, None, NO_DATA)
    pct = 100.0 * (mb - ma) / ma
    if len(a) < MIN_REPEATS or len(b) < MIN_REPEATS:
        return Judgement(pct, None, None, None, None, NOT_ENOUGH)
    import numpy as np

    xa, xb = np.asarray(a, float), np.asarray(b, float)
    rng = np.random.default_rng(seed)  # a fresh generator per cell: results do not depend on order
    ra = xa[rng.integers(0, len(xa), size=(resamples, len(xa)))].mean(axis=1)
    rb = xb[rng.integers(0, len(xb), size=(resamples, len(xb)))].mean(axis=1)
    ok = ra != 0
    rel = 100.0 * (rb[ok] - ra[ok]) / ra[ok]
    tail = (100.0 - CONFIDENCE) / 2
    lo, hi = (float(v) for v in np.percentile(rel, [tail, 100.0 - tail]))
    if np.var(xa) == 0 and np.var(xb) == 0:
        p = 1.0 if ma == mb else 0.0  # no spread at all: the t statistic is undefined
    else:
        from scipy import stats  # here: importing scipy costs every CLI command 0.7 s of start-up

        p = float(stats.ttest_ind(xb, xa, equal_var=False).pvalue)
    real = p < ALPHA and (lo > noise_pct or hi < -noise_pct)
    return Judgement(pct, lo, hi, p, real, "real" if real else WITHIN_NOISE)


@dataclass
class Cell:
    """One configuration's figure for one matched test and metric."""

    config: str
    mean: float | None
    n: int
    samples: list[float]
    pct_change: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    verdict: str = NO_DATA


@dataclass
class Place:
    """A configuration's place in a ranking. `tie` says why it is not
    behind the best of the place above: WITHIN_NOISE (it shares that place),
    NOT_ENOUGH (order by means only) or None (a real difference)."""

    rank: int
    config: str
    mean: float
    tie: str | None


@dataclass
class MetricRow:
    metric: str
    cells: list[Cell]
    ranking: list[Place]

    def cell(self, config: str) -> Cell:
        return next(c for c in self.cells if c.config == config)


@dataclass
class MatchedTest:
    key: dict
    label: str  # the baseline's test id
    test_ids: dict[str, list[str]]  # per configuration
    rows: list[MetricRow]

    def row(self, metric: str) -> MetricRow:
        return next(r for r in self.rows if r.metric == metric)


@dataclass
class Comparison:
    configs: list[Config]
    baseline: str
    match: tuple[str, ...]
    noise_pct: float
    resamples: int
    seed: int
    metrics: tuple[Metric, ...]
    tests: list[MatchedTest]
    unmatched: list[dict] = field(default_factory=list)  # {key, label, configs: [names having it]}
    excluded: list[dict] = field(default_factory=list)  # tests not ok: {config, run, test, repeat, status}
    baseline_named: bool = True  # False: chosen by default, as baseline_note says
    baseline_note: str = "the first configuration named"

    @property
    def method(self) -> str:
        return METHOD.format(min=MIN_REPEATS, conf=CONFIDENCE, resamples=self.resamples, seed=self.seed,
                             alpha=ALPHA, noise=self.noise_pct)

    def winners(self) -> list[dict]:
        """Per matched test and metric: the configurations by place, tied
        ones together, e.g. places [["a"], ["b", "c"]] with ties noted."""
        out = []
        for t in self.tests:
            for r in t.rows:
                if not r.ranking:
                    continue
                places: list[dict] = []
                for p in r.ranking:
                    if places and p.tie == WITHIN_NOISE:
                        places[-1]["configs"].append(p.config)
                    else:
                        places.append({"rank": p.rank, "configs": [p.config],
                                       "order_not_established": p.tie == NOT_ENOUGH})
                out.append({"test": t.label, "metric": r.metric, "places": places})
        return out

    def wins(self) -> dict[str, dict[str, int]]:
        """Per metric: how many matched tests each configuration leads, alone or
        tied with others (a test where all tie has no winner)."""
        out: dict[str, dict[str, int]] = {m.name: {c.name: 0 for c in self.configs} for m in self.metrics}
        for w in self.winners():
            if len(w["places"][0]["configs"]) == len(self.configs):
                continue
            for name in w["places"][0]["configs"]:
                out[w["metric"]][name] += 1
        return out


def _label(key: tuple, match: tuple[str, ...]) -> str:
    return " ".join(f"{k}={v}" for k, v in zip(match, key))


def _group(config: Config, match: tuple[str, ...], excluded: list[dict]) -> dict[tuple, list[TestRecord]]:
    """The config's ok tests by match key (every run, every repeat)."""
    out: dict[tuple, list[TestRecord]] = {}
    for run in config.runs:
        ids_by_key: dict[tuple, set[str]] = {}
        for t in tests_of(run):
            if t.status != "ok":
                excluded.append({"config": config.name, "run": run.id, "test": t.id, "repeat": t.repeat,
                                 "status": t.status})
                continue
            key = tuple((t.params or {}).get(k) for k in match)
            ids_by_key.setdefault(key, set()).add(t.id)
            out.setdefault(key, []).append(t)
        for key, ids in ids_by_key.items():
            if len(ids) > 1:
                raise IofleetError(
                    f"--match {','.join(match)}: run {run.id} of {config.name} has several tests "
                    f"with {_label(key, match)} ({', '.join(sorted(ids))}); add parameters to --match "
                    f"so each test is told apart")
    return out


class NothingMatched(IofleetError):
    """No test is in every configuration. `differ`: the --match parameters
    whose values differ between configurations; `suggestion`: the --match
    that pairs the tests one to one, or None when no subset does."""

    def __init__(self, message: str, differ: list[str], suggestion: tuple[str, ...] | None):
        super().__init__(message)
        self.differ, self.suggestion = differ, suggestion


def _pairs(configs: list[Config], match: tuple[str, ...]) -> bool:
    """Whether `match` pairs at least one test across every configuration,
    each run's tests told apart."""
    try:
        grouped = [_group(c, match, []) for c in configs]
    except IofleetError:
        return False
    return bool(set.intersection(*(set(g) for g in grouped)))


def nothing_matched(configs: list[Config], match: tuple[str, ...]) -> NothingMatched:
    """The error for comparisons with no test in common: which parameters
    differ, with each configuration's values, and the --match that would pair them."""
    values = {c.name: {k: sorted({str((t.params or {}).get(k)) for r in c.runs for t in r.tests
                                  if t.status == "ok"}) for k in match} for c in configs}
    differ = [k for k in match if len({tuple(v[k]) for v in values.values()}) > 1]
    shown = ", ".join(f"{k} (" + ", ".join(f"{'/'.join(v[k])} in {name}" for name, v in values.items()) + ")"
                      for k in differ)
    head = (f"no test is in every configuration: they differ in {shown}" if differ else
            f"no test is in every configuration: each ran other combinations of {', '.join(match)}")
    keep = tuple(k for k in match if k not in differ)
    if keep and differ and _pairs(configs, keep):
        return NothingMatched(f"{head}; to compare them, pair tests with --match {','.join(keep)}", differ, keep)
    return NothingMatched(f"{head}; no --match pairs them one to one: compare configurations that ran "
                          f"the same tests", differ, None)


def _ranking(cells: list[Cell], metric: Metric, noise_pct: float, resamples: int, seed: int) -> list[Place]:
    present = [c for c in cells if c.mean is not None]
    ordered = sorted(present, key=lambda c: c.mean, reverse=metric.higher_is_better)  # stable: config order
    places: list[Place] = []
    leader = None  # the best configuration of the current place
    for i, c in enumerate(ordered):
        if leader is None:
            places.append(Place(1, c.config, c.mean, None))
            leader = c
            continue
        # Against the place's best, not the neighbour: ties do not chain.
        j = judge(leader.samples, c.samples, noise_pct, resamples, seed)
        tie = WITHIN_NOISE if j.reason == WITHIN_NOISE else NOT_ENOUGH if j.reason == NOT_ENOUGH else None
        if tie == WITHIN_NOISE:
            places.append(Place(places[-1].rank, c.config, c.mean, tie))
        else:
            places.append(Place(i + 1, c.config, c.mean, tie))
            leader = c
    return places


def _check_settings(names: list[str], baseline: str, noise_pct: float, resamples: int) -> None:
    """Refuse configurations and settings that cannot be compared."""
    if len(set(names)) != len(names):
        raise IofleetError(f"configurations {', '.join(names)}: each may be given only once")
    if baseline not in names:
        raise IofleetError(f"--baseline {baseline}: not one of the configurations ({', '.join(names)})")
    if len(names) < 2:
        raise IofleetError("compare needs at least two configurations: give another run or label")
    if not noise_pct >= 0:
        raise IofleetError(f"--noise {noise_pct}: give a share of 0 % or more, e.g. 1")
    if resamples < 100:
        raise IofleetError(f"resamples {resamples}: use at least 100 (default {DEFAULT_RESAMPLES})")


def _cell(config: str, samples: dict[str, list[float]], baseline: str, metric: Metric, noise_pct: float,
          resamples: int, seed: int) -> Cell:
    """One configuration's figure of one metric in one matched test, judged
    against the baseline's."""
    xs = samples[config]
    cell = Cell(config, _mean(xs), len(xs), xs)
    if config == baseline:
        cell.verdict = BASELINE if xs else NO_DATA
        return cell
    j = judge(samples[baseline], xs, noise_pct, resamples, seed)
    cell.pct_change, cell.ci_low, cell.ci_high, cell.p_value = j.pct_change, j.ci_low, j.ci_high, j.p_value
    if j.reason == "real":
        up = j.pct_change > 0
        cell.verdict = BETTER if up == metric.higher_is_better else WORSE
    else:
        cell.verdict = j.reason
    return cell


def compare(configs: list[Config], baseline: str, metrics: tuple[Metric, ...] | None = None,
            noise_pct: float = DEFAULT_NOISE_PCT, match: tuple[str, ...] = DEFAULT_MATCH,
            resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Comparison:
    """Compare every configuration with the baseline (one of them), test by
    test (tests matched by the `match` parameters) and metric by metric."""
    names = [c.name for c in configs]
    _check_settings(names, baseline, noise_pct, resamples)
    match = tuple(match)
    checks = {r.id: network_check(r) is not None for c in configs for r in c.runs}
    if any(checks.values()):
        if not all(checks.values()):
            net, fio = (min(i for i, v in checks.items() if v is want) for want in (True, False))
            raise IofleetError(f"run {net} is a network check and run {fio} is not: compare network checks "
                               f"with each other, fio runs with each other")
        match = LINK_MATCH if match == tuple(DEFAULT_MATCH) else match
        metrics = metrics or LINK_METRICS
    if not match:
        raise IofleetError("--match: give at least one parameter, e.g. bs,read_pct")
    known = {k for c in configs for r in c.runs for t in tests_of(r) for k in (t.params or {})}
    unknown = [k for k in match if k not in known]
    if unknown:
        raise IofleetError(f"--match {','.join(match)}: no test has the parameter {', '.join(unknown)}; "
                           f"use names such as {', '.join(DEFAULT_MATCH)}")
    configs = sorted(configs, key=lambda c: c.name != baseline)  # baseline first, others in given order
    if metrics is None:
        base = configs[0]
        tail = next((r.methodology.percentile for r in base.runs
                     if r.methodology is not None and r.methodology.percentile), "p99")
        metrics = default_metrics(tail)

    excluded: list[dict] = []
    grouped = {c.name: _group(c, match, excluded) for c in configs}
    keys: list[tuple] = []
    for c in configs:  # the baseline's test order first
        keys += [k for k in grouped[c.name] if k not in keys]

    if not any(grouped.values()):
        raise IofleetError(f"nothing to compare: no test of {', '.join(names)} ended ok "
                           f"({len(excluded)} excluded); compare runs with ok tests")
    tests, unmatched = [], []
    for key in keys:
        having = [c.name for c in configs if key in grouped[c.name]]
        first = grouped[having[0]][key][0].id
        if len(having) < len(configs):
            unmatched.append({"key": dict(zip(match, key)), "label": first, "configs": having})
            continue
        rows = []
        for m in metrics:
            samples = {n: [v for t in grouped[n][key] if (v := m.value(t)) is not None] for n in names}
            cells = [_cell(c.name, samples, baseline, m, noise_pct, resamples, seed) for c in configs]
            if all(c.n == 0 for c in cells):
                continue  # e.g. write latency of a read-only test
            rows.append(MetricRow(m.name, cells, _ranking(cells, m, noise_pct, resamples, seed)))
        ids = {c.name: sorted({t.id for t in grouped[c.name][key]}) for c in configs}
        tests.append(MatchedTest(dict(zip(match, key)), grouped[baseline][key][0].id, ids, rows))
    if not tests:
        raise nothing_matched(configs, match)
    return Comparison(configs, baseline, match, noise_pct, resamples, seed, tuple(metrics), tests,
                      unmatched, excluded)


# Regression gate (`--fail-above PCT`): what each compared figure did.
REGRESSION = "regression"
PASSED = "passed"
INCONCLUSIVE = "inconclusive"
NOT_JUDGED = "not judged"
# A larger threshold is no gate: a latency 11 times the baseline's would still pass it.
MAX_FAIL_ABOVE = 1000.0


@dataclass
class GateCheck:
    """One configuration's figure for one matched test and metric, against the baseline."""

    test: str
    config: str
    metric: Metric
    cell: Cell
    outcome: str  # REGRESSION, PASSED, INCONCLUSIVE or NOT_JUDGED
    reason: str


def _worse_by(cell: Cell, metric: Metric) -> float:
    """How much worse than the baseline, in % (negative: better)."""
    return -cell.pct_change if metric.higher_is_better else cell.pct_change


def check_fail_above(fail_above: float) -> None:
    """A threshold a figure can cross: from 0 to MAX_FAIL_ABOVE %."""
    if not 0 <= fail_above <= MAX_FAIL_ABOVE:
        raise IofleetError(f"--fail-above {fail_above:g}: give a share from 0 to {MAX_FAIL_ABOVE:g} %, e.g. 5 "
                           f"(a larger one could never fail)")


def gate(cmp: Comparison, fail_above: float) -> list[GateCheck]:
    """Every compared figure judged by the gate: a regression when it is
    worse than the baseline by more than `fail_above` % and the comparison
    calls it worse (beyond noise); passed when it is not worse by more than
    that; inconclusive when it is, but the samples cannot tell it from
    noise (fewer than MIN_REPEATS a side, or within noise): never passed;
    not judged when one side has no figure."""
    check_fail_above(fail_above)
    metrics = {m.name: m for m in cmp.metrics}
    out = []
    for t in cmp.tests:
        for row in t.rows:
            m = metrics[row.metric]
            for cell in row.cells:
                if cell.config == cmp.baseline:
                    continue
                if cell.pct_change is None:
                    outcome, reason = NOT_JUDGED, "no figure on one side"
                elif _worse_by(cell, m) <= fail_above:
                    outcome, reason = PASSED, f"not worse by more than {fail_above:g} %"
                elif cell.verdict == WORSE:
                    outcome, reason = REGRESSION, f"worse by more than {fail_above:g} %, beyond noise"
                elif cell.verdict == NOT_ENOUGH:
                    outcome, reason = INCONCLUSIVE, (f"worse by more than {fail_above:g} %, but fewer than "
                                                     f"{MIN_REPEATS} samples a side cannot tell it from noise")
                else:
                    outcome, reason = INCONCLUSIVE, (f"worse by more than {fail_above:g} % on average, but within "
                                                     f"noise: more repeats would tell")
                out.append(GateCheck(t.label, cell.config, m, cell, outcome, reason))
    return out
