"""Charts of a run as plotly figures: IOPS and MB/s by block size per read
mix, latency per test, per-second series with the warm-up and the steady
window marked, p50/p99/p99.9 per round (fleet and per host), per-host bars,
and the latency percentile curve from the merged histogram bins: the
report's overview and tests sections (sections.py). Every front end (HTML
report, web UI) draws these. An `until: steady` test is drawn with
the figures its summary row shows: those of its measurement window.

Colours are the Okabe-Ito palette, which stays distinguishable with the
common colour-vision deficiencies, then four more of Paul Tol's; read and
write also differ by marker pattern or line dash, and the n-th series of a
chart by colour, dash and marker together (`series_style`), so no chart
relies on colour alone and no two of its series look alike.

A repeated test is drawn as the mean of its runs with an error bar from
the lowest to the highest run (summary.spread, as the summary's "mean ± x %").
"""

import math
import statistics
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.methodology import test_totals
from ..analysis.stragglers import STRAGGLER_SHARE
from ..fio.records import Series
from ..plan.params import base_id
from ..plan.units import format_size
from ..results.export import DirectionFigures
from ..results.model import Run, TestRecord
from ..units import MISSING, format_value, shown_unit, to_ms
from .summary import run_tail, shown_window, spread

# Okabe & Ito (2008), "Color Universal Design", then wine, olive, indigo
# and brown (Paul Tol's palettes): twelve colours before one comes back.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
           "#882255", "#999933", "#332288", "#8C564B")
READ, WRITE, NEUTRAL = "#0072B2", "#D55E00", "#999999"
# Bar patterns for mean / p95 / tail: the statistic is readable without colour.
PATTERNS = ("", "/", "x")
# Cycles of lengths prime to each other and to the palette's: colour, dash
# and marker of the n-th series repeat together only after 420 series.
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star")
BAR_PATTERNS = ("", "/", "x", ".", "-", "+", "|")  # 7: colour and pattern repeat together after 84

# plotly_white's look without its defaults for every trace type (7 kB in
# each chart's JSON; a big run's report has ~100 charts).
_AXIS = dict(gridcolor="#EBF0F8", linecolor="#EBF0F8", ticks="", title=dict(standoff=15), zerolinecolor="#EBF0F8",
             automargin=True, zerolinewidth=2)
TEMPLATE = go.layout.Template(
    layout=dict(font=dict(color="#2a3f5f"), paper_bgcolor="white", plot_bgcolor="white", hovermode="closest",
                hoverlabel=dict(align="left"), xaxis=_AXIS, yaxis=_AXIS, shapedefaults=dict(line=dict(color="#2a3f5f")),
                annotationdefaults=dict(arrowcolor="#2a3f5f", arrowhead=0, arrowwidth=1)),
    data=dict(bar=[go.Bar(marker=dict(line=dict(color="white", width=0.5),
                                      pattern=dict(fillmode="overlay", size=10, solidity=0.2)),
                          error_y=dict(color="#2a3f5f"))]))


def series_style(i: int) -> dict:
    """The line colour, dash and marker of a chart's i-th series."""
    return dict(color=PALETTE[i % len(PALETTE)], dash=DASHES[i % len(DASHES)], symbol=SYMBOLS[i % len(SYMBOLS)])


def bar_style(i: int) -> dict:
    """The marker (colour and pattern) of a chart's i-th bar series."""
    return dict(color=PALETTE[i % len(PALETTE)], pattern=dict(shape=BAR_PATTERNS[i % len(BAR_PATTERNS)]))


_LAYOUT = dict(
    template=TEMPLATE,
    colorway=list(PALETTE),
    font=dict(family="system-ui, -apple-system, 'Segoe UI', sans-serif", size=13),
    margin=dict(l=70, r=70, t=60, b=60),
    legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    height=380,
)


def _figure(title: str, secondary_y: bool = False) -> go.Figure:
    # The layout given to the constructor: plotly then copies and checks
    # its template once, not twice (a report of a big run has ~100 charts).
    fig = go.Figure(layout=dict(_LAYOUT, title=dict(text=title, x=0, xanchor="left", y=0.98)))
    return make_subplots(specs=[[{"secondary_y": True}]], figure=fig) if secondary_y else fig


def _ok(run: Run) -> list[TestRecord]:
    return [t for t in run.tests if t.status == "ok" and t.aggregate is not None and t.aggregate.all.ios > 0]


def _shown(t: TestRecord, direction: str) -> DirectionFigures:
    """A test's figures of one direction (export units: µs, MB/s) as its
    summary row shows them: its measurement window's for an `until: steady`
    test, else the whole test's."""
    if shown_window(t.methodology):
        return t.methodology.window_figures().direction(direction)
    return t.figures().direction(direction)


def _mix_name(read_pct: int, random_pct: int) -> str:
    pattern = "random" if random_pct == 100 else "sequential" if random_pct == 0 else f"{random_pct}% random"
    return f"{read_pct}% read, {pattern}"


def _mean_bars(runs: list[list[float | None]], unit: str) -> dict:
    """go.Bar keywords for bars that are each the mean of some runs (one
    list of figures per bar): the height, a min–max error bar where a bar
    has several runs, and a hover saying which."""
    stats = [spread(v) for v in runs]
    hover = [MISSING if s is None else format_value(s["mean"], unit, with_unit=True) if s["n"] == 1 else
             f"{format_value(s['mean'], unit, with_unit=True)}: mean of {s['n']} runs, bar from "
             f"{format_value(s['min'], unit)} to {format_value(s['max'], unit)} (lowest to highest)" for s in stats]
    out = dict(y=[s and s["mean"] for s in stats], customdata=hover, hovertemplate="%{x}: %{customdata}")
    if any(s and s["n"] > 1 for s in stats):
        out["error_y"] = dict(type="data", symmetric=False,
                              array=[s["max"] - s["mean"] if s else None for s in stats],
                              arrayminus=[s["mean"] - s["min"] if s else None for s in stats])
    return out


def _repeated(runs: list[list]) -> bool:
    return any(len([v for v in r if v is not None]) > 1 for r in runs)


SPREAD_AXIS = " · mean; bar: min–max of the runs"  # an axis title's tail where a bar is a repeated test's mean


def _two_panel(title: str, bars: list[tuple[str, list[str], list[list[dict]], dict]], x_title: str,
               legend: bool = True) -> go.Figure:
    """IOPS (left) and MB/s (right) side by side: one (name, x, runs of each
    bar, marker) per bar series."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12)
    fig.update_layout(**_LAYOUT, title=dict(text=title, x=0, xanchor="left", y=0.98), barmode="group",
                      showlegend=legend)
    repeated = False
    for name, x, runs, marker in bars:
        for col, figure, unit in ((1, lambda d: d.iops, "IOPS"), (2, lambda d: d.bw_mb_s, "MB/s")):
            figures = [[figure(_shown(t, "all")) for t in bar] for bar in runs]
            repeated |= _repeated(figures)
            fig.add_trace(go.Bar(x=x, name=name, legendgroup=name, showlegend=col == 1, marker=marker,
                                 **_mean_bars(figures, unit)), row=1, col=col)
    tail = SPREAD_AXIS if repeated else ""
    fig.update_xaxes(title_text=x_title, type="category")
    fig.update_yaxes(title_text="IOPS" + tail, rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="MB/s (10^6 bytes/s)" + tail, rangemode="tozero", row=1, col=2)
    return fig


def _rest_of_id(test: TestRecord) -> str:
    """What a test's id says beyond block size, read mix and load: its
    workload and the parameters its plan varies ("oltp sz64m")."""
    before, _, after = test.id.partition(base_id(test.params))
    return " ".join(x for x in (before.rstrip("."), after.strip("-").replace("-", " ")) if x)


def _load_order(item: tuple) -> tuple:
    """Loads by jobs and iodepth, then as the run ran them."""
    (jobs, iodepth, _), by_bs = item
    return jobs, iodepth, min(t.seq for runs in by_bs.values() for t in runs)


def block_size_charts(run: Run) -> list[go.Figure]:
    """One chart per read mix: IOPS (left) and MB/s (right) by block size,
    one colour per load (jobs × iodepth); a repeated test is one bar, the
    mean of its runs. Read mixes of one bar each are drawn together in one
    overview chart rather than as charts of one bar."""
    mixes: dict[tuple, dict[tuple, dict[int, list[TestRecord]]]] = {}
    for t in _ok(run):
        p = t.params
        mix = (p["read_pct"], p["random_pct"])
        load = (p["jobs"], p["iodepth"], _rest_of_id(t))  # tests of other sizes, engines… are other bars
        mixes.setdefault(mix, {}).setdefault(load, {}).setdefault(p["bs"], []).append(t)
    one_bar = [m for m, loads in mixes.items() if sum(len(by_bs) for by_bs in loads.values()) == 1]
    figures = []
    if len(one_bar) > 1:
        runs = sorted((runs for m in one_bar for by_bs in mixes[m].values() for runs in by_bs.values()),
                      key=lambda r: r[0].seq)  # in the run's order
        x = [" + ".join(dict.fromkeys(t.id for t in r)) for r in runs]
        figures.append(_two_panel("IOPS and MB/s per test", [("tests", x, runs, bar_style(0))], "test",
                                   legend=False))
    for (read_pct, random_pct), loads in sorted(mixes.items(), key=lambda kv: (-kv[0][0], -kv[0][1])):
        if len(one_bar) > 1 and (read_pct, random_pct) in one_bar:
            continue
        bars = []
        for i, ((jobs, iodepth, rest), by_bs) in enumerate(sorted(loads.items(), key=_load_order)):
            sizes = sorted(by_bs)
            name = f"{jobs} job{'s' if jobs > 1 else ''} × qd {iodepth}" + (f" · {rest}" if rest else "")
            bars.append((name, [format_size(b) for b in sizes],
                         [by_bs[b] for b in sizes], bar_style(i)))
        figures.append(_two_panel(f"IOPS and MB/s by block size · {_mix_name(read_pct, random_pct)}", bars,
                                  "block size"))
    return figures


def test_names(run: Run) -> dict[int, str]:
    """seq → a test's name in the report's per-test detail and charts: its
    id, plus #repeat where repeated (as the summary's per-run rows)."""
    counts: dict[str, int] = {}
    for t in run.tests:
        counts[t.id] = counts.get(t.id, 0) + 1
    return {t.seq: t.id if counts[t.id] == 1 else f"{t.id} #{t.repeat}" for t in run.tests}


def latency_chart(run: Run) -> go.Figure | None:
    """Mean, p95 and the run's tail percentile of reads and writes per test,
    in ms; a repeated test is one group of bars, the means of its runs."""
    tests = _ok(run)
    if not tests:
        return None
    tail = run_tail(run)
    by_id: dict[str, list[TestRecord]] = {}
    for t in tests:
        by_id.setdefault(t.id, []).append(t)
    fig = _figure(f"Latency per test · mean, p95 and {tail}")
    repeated = False
    for direction, colour in (("read", READ), ("write", WRITE)):
        shown = [[_shown(t, direction) for t in runs] for runs in by_id.values()]
        if not any(d.ios for runs in shown for d in runs):
            continue
        for label, pattern in zip(("mean", "p95", tail), PATTERNS):
            figures = [[to_ms(d.lat_us(label), "us") if d.ios else None for d in runs] for runs in shown]
            repeated |= _repeated(figures)
            fig.add_trace(go.Bar(x=list(by_id), name=f"{direction} {label}", **_mean_bars(figures, "ms"),
                                 marker=dict(color=colour, pattern=dict(shape=pattern)),
                                 opacity=1.0 if label == "mean" else 0.75))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="test", type="category")
    fig.update_yaxes(title_text="latency, ms" + (SPREAD_AXIS if repeated else ""), rangemode="tozero")
    return fig


def series_chart(test: TestRecord, series: list[Series], name: str | None = None) -> go.Figure | None:
    """IOPS (all hosts and jobs) and mean latency per second from the start
    of the warm-up; the warm-up and the steady-state (or measurement) window
    are shaded."""
    measured = test_totals(series)
    if not measured["t_ms"]:
        return None
    warmup = test_totals(series, phase="warmup")
    start = min(o for o in (warmup["origin_ms"], measured["origin_ms"]) if o is not None)

    def seconds(totals):
        return [(totals["origin_ms"] - start + t) / 1000 for t in totals["t_ms"]]

    fig = _figure(f"Per second · {name or test.id}", secondary_y=True)
    for totals, phase in ((warmup, "warm-up"), (measured, "measured")):
        if not totals["t_ms"]:
            continue
        x = _packed(seconds(totals))  # a long test has thousands of seconds
        fig.add_trace(go.Scatter(x=x, y=_packed(totals["iops"]), name=f"IOPS ({phase})", mode="lines+markers",
                                 line=dict(color=NEUTRAL if phase == "warm-up" else READ)), secondary_y=False)
        lat = [to_ms(v, "ns") for v in totals["lat_mean_ns"]]
        fig.add_trace(go.Scatter(x=x, y=_packed([math.nan if v is None else v for v in lat]),
                                 name=f"mean latency ({phase})", mode="lines",
                                 line=dict(color=NEUTRAL if phase == "warm-up" else WRITE, dash="dash")),
                      secondary_y=True)
    if warmup["origin_ms"] is not None:  # a short warm-up may have logged latency only
        fig.add_vrect(x0=0, x1=(measured["origin_ms"] - start) / 1000, fillcolor=NEUTRAL, opacity=0.15,
                      line_width=0, annotation_text="warm-up (in no figure)", annotation_position="top left")
    _mark_window(fig, test, offset=(measured["origin_ms"] - start) / 1000)
    fig.update_xaxes(title_text="seconds from the start of the test", rangemode="tozero")
    fig.update_yaxes(title_text="IOPS", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="mean latency, ms", secondary_y=True, rangemode="tozero", showgrid=False,
                     tickmode="auto")  # its own round ticks, not the IOPS axis's grid
    return fig


def _mark_window(fig: go.Figure, test: TestRecord, offset: float = 0.0) -> None:
    """Shade the steady window (SNIA) or, for an `until: steady` test that
    found none, the last 5 rounds its figures come from; `offset`: seconds
    from the chart's origin to the start of the measured part."""
    method = test.methodology
    if method is None:
        return
    verdict = method.verdict("iops")
    window = method.window
    if verdict and verdict.steady:
        span, label = (verdict.start_s, verdict.end_s), "steady window (SNIA)"
    # A fixed-time test's figures are the whole test (a window stored before `until` was: steady).
    elif window and (method.until or "steady") == "steady":
        span, label = (window["start_s"], window["end_s"]), "last 5 rounds (not steady)"
    else:
        return
    fig.add_vrect(x0=offset + span[0], x1=offset + span[1], fillcolor=PALETTE[2], opacity=0.15, line_width=0,
                  annotation_text=label, annotation_position="top right")


# Per-round latency percentiles: (key in latency_rounds, line dash); the
# percentile is told by the dash, the host (in the dropdown) by its name.
ROUND_PERCENTILES = (("p50", "solid"), ("p99", "dash"), ("p99.9", "dot"))


def warmup_s(series: list[Series]) -> float:
    """Seconds from the start of the test (its warm-up's first second) to
    its measured part: the per-second chart's origin, which the per-round
    chart beside it shares."""
    measured, warmup = test_totals(series), test_totals(series, phase="warmup")
    origins = [o for o in (warmup["origin_ms"], measured["origin_ms"]) if o is not None]
    return (measured["origin_ms"] - min(origins)) / 1000 if measured["origin_ms"] is not None else 0.0


def latency_rounds_chart(test: TestRecord, name: str | None = None, offset: float = 0.0) -> go.Figure | None:
    """p50, p99 and p99.9 of each whole round (from that round's merged
    histograms), fleet-wide and, in a dropdown, per host; the steady (or
    measurement) window shaded as on the per-second chart; `offset`: its
    warm-up, so both charts count from the start of the test."""
    rounds = test.methodology.latency_rounds if test.methodology else None
    if not rounds or not rounds.get("start_s"):
        return None
    ends = rounds.get("end_s") or [s + rounds["round_s"] for s in rounds["start_s"]]  # each round at its end
    x = [offset + e for e in ends]
    hosts = rounds.get("hosts") or {}
    order = (test.fleet.hosts if test.fleet else None) or sorted(hosts)  # the inventory's order
    lines = [("fleet", rounds["fleet"])]
    if len(hosts) > 1:
        lines += [(h, hosts[h]) for h in sorted(hosts, key=lambda h: order.index(h) if h in order else len(order))]
    fig = _figure(f"Latency per {rounds['round_s']} s round · {name or test.id}")
    for i, (who, figures) in enumerate(lines):
        iops = figures.get("iops") or [None] * len(x)
        for (key, dash), colour in zip(ROUND_PERCENTILES, (READ, PALETTE[1], WRITE)):
            fig.add_trace(go.Scatter(
                x=x, y=[to_ms(v, "ns") for v in figures.get(key) or [None] * len(x)],
                name=key if who == "fleet" else f"{who} {key}", mode="lines+markers", visible=i == 0,
                line=dict(color=colour, dash=dash), customdata=iops,
                hovertemplate=f"{who} {key}: %{{y:.3f}} ms · %{{customdata:,.0f}} IOPS in the round<extra></extra>"))
    if len(lines) > 1:
        per = len(ROUND_PERCENTILES)
        fig.update_layout(updatemenus=[dict(
            type="dropdown", x=1, xanchor="right", y=1.02, yanchor="bottom", showactive=True,  # below the modebar
            buttons=[dict(label="fleet (all hosts)" if who == "fleet" else who, method="update",
                          args=[{"visible": [j // per == i for j in range(per * len(lines))]}])
                     for i, (who, _) in enumerate(lines)])])
    _mark_window(fig, test, offset)
    fig.update_xaxes(title_text="seconds from the start of the test (end of each round)", rangemode="tozero")
    fig.update_yaxes(title_text="latency, ms (log)", type="log", dtick=1, tickformat="~g")
    return fig


def host_chart(test: TestRecord, name: str | None = None) -> go.Figure | None:
    """IOPS per host of a fleet test; hosts below the straggler share of the
    median host are drawn hatched in another colour."""
    hosts = {h: agg.all.iops for h, agg in test.host_aggregates().items() if agg is not None}
    if len(hosts) < 2:
        return None
    median = statistics.median(hosts.values())
    slow = {h for h, v in hosts.items() if v < STRAGGLER_SHARE * median}
    order = (test.fleet.hosts if test.fleet else None) or sorted(hosts)  # the inventory's order
    x = sorted(hosts, key=lambda h: order.index(h) if h in order else len(order))
    fig = _figure(f"IOPS per host · {name or test.id}")
    fig.add_trace(go.Bar(
        x=x, y=[hosts[h] for h in x], name="IOPS",
        marker=dict(color=[WRITE if h in slow else READ for h in x],
                    pattern=dict(shape=["/" if h in slow else "" for h in x])),
        text=["straggler" if h in slow else "" for h in x], textposition="outside"))
    fig.add_hline(y=median, line_dash="dash", line_color=NEUTRAL, annotation_text="median host")
    fig.add_hline(y=STRAGGLER_SHARE * median, line_dash="dot", line_color=WRITE,
                  annotation_text=f"{STRAGGLER_SHARE:.0%} of median (straggler below)")
    fig.update_xaxes(title_text="host", type="category")
    fig.update_yaxes(title_text="IOPS", rangemode="tozero")
    fig.update_layout(showlegend=False)
    return fig


# Percentile axis: x = -log10(1 - p), so 90, 99, 99.9 … are evenly spaced.
_NINES = (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999)
# Its five nines span ~1,000 pixels: bins closer than a pixel are one point
# (a test's histogram has up to ~1,500 bins; its curve was 10-50 kB).
CURVE_STEP = 0.005


def _nines(p: float) -> float:
    return -math.log10(1 - p)


def percentile_curve(bins: dict | None) -> tuple[list[float], list[float]]:
    """(percentile on the nines axis, latency ms) at each bin of a merged
    histogram; the last bin (p = 100) has no place on that axis."""
    if not bins:
        return [], []
    items = sorted((int(k), n) for k, n in bins.items())
    total = sum(n for _, n in items)
    x, y, seen = [], [], 0
    for value_ns, n in items:
        seen += n
        p = seen / total
        if p >= 1:
            break
        if len(x) > 1 and _nines(p) - x[-2] < CURVE_STEP:  # under a pixel on: the later bin replaces the last
            x[-1], y[-1] = _nines(p), to_ms(value_ns, "ns")
        else:
            x.append(_nines(p))
            y.append(to_ms(value_ns, "ns"))
    return x, y


def _packed(values: list) -> np.ndarray:
    """Values as float32: plotly writes a numpy array as base64 (5 characters
    a value rather than ~18 as decimal text), precise to 7 digits."""
    return np.asarray(values, dtype=np.float32)


def percentile_chart(test: TestRecord, name: str | None = None) -> go.Figure | None:
    """Latency by percentile from the test's merged histogram bins, reads and writes."""
    # The window has no bins of its own here: say that this curve is the whole test's.
    span = " · whole measured part" if shown_window(test.methodology) else ""
    fig = _figure(f"Latency percentiles · {name or test.id}{span}")
    drawn = False
    for direction, colour, dash in (("read", READ, "solid"), ("write", WRITE, "dash")):
        x, y = percentile_curve(getattr(test.aggregate, direction).bins if test.aggregate else None)
        if x:
            fig.add_trace(go.Scatter(x=_packed(x), y=_packed(y), name=direction, mode="lines",
                                     line=dict(color=colour, dash=dash),
                                     hovertemplate="p%{customdata:.4g}: %{y:.3f} ms<extra>" + direction + "</extra>",
                                     customdata=_packed([100 * (1 - 10 ** -v) for v in x])))
            drawn = True
    if not drawn:
        return None
    fig.update_xaxes(title_text="percentile", tickvals=[_nines(p) for p in _NINES],
                     ticktext=[f"{100 * p:g}" for p in _NINES], range=[0, _nines(0.99999)])
    fig.update_yaxes(title_text="latency, ms (log)", type="log", dtick=1, tickformat="~g")  # 0.01, 0.1, 1, 10
    return fig


def compare_charts(cmp, metric) -> list[go.Figure]:
    """For one metric of a comparison: each configuration's mean per matched
    test (bars; whiskers span its samples), and each configuration's %
    change against the baseline with its 95 % interval, the ±noise band
    shaded — a bar whose whisker crosses the band is within noise."""
    found = [(t, r) for t in cmp.tests for r in t.rows if r.metric == metric.name]  # tests with this metric
    if not found:
        return []
    unit = shown_unit(metric.unit)  # latency in ms, as everywhere else

    def shown(v):
        return v if v is None or unit != "ms" else to_ms(v, metric.unit)

    x = [t.label for t, _ in found]
    values = _figure(f"{metric.label} per configuration ({'higher' if metric.higher_is_better else 'lower'} "
                     f"is better)")
    # Whiskers only where there is a spread to show: a single sample has none, fewer than 3 no interval.
    intervals = any(r.cell(c.name).ci_low is not None for _, r in found for c in cmp.configs)
    change = _figure(f"{metric.label}: % change against {cmp.baseline}<br><sub>"
                     + ("with its 95 % interval" if intervals else "no interval: fewer than 3 samples a side")
                     + "</sub>")
    for i, config in enumerate(c.name for c in cmp.configs):
        cells = [r.cell(config) for _, r in found]
        marker = bar_style(i)
        mean = [shown(c.mean) for c in cells]
        values.add_trace(go.Bar(
            x=x, y=mean, name=config, marker=marker,
            error_y=dict(type="data", symmetric=False, visible=any(c.n > 1 for c in cells),
                         array=[None if c.n < 2 else shown(max(c.samples) - c.mean) for c in cells],
                         arrayminus=[None if c.n < 2 else shown(c.mean - min(c.samples)) for c in cells]),
            hovertemplate="%{y:.4g} " + unit + " (n=%{customdata})<extra>" + config + "</extra>",
            customdata=[c.n for c in cells]))
        if config == cmp.baseline:
            continue
        pct = [c.pct_change for c in cells]
        change.add_trace(go.Bar(
            x=x, y=pct, name=config, marker=marker,
            text=[c.verdict for c in cells], textposition="outside",
            error_y=dict(type="data", symmetric=False, visible=intervals,
                         array=[None if c.ci_high is None else c.ci_high - c.pct_change for c in cells],
                         arrayminus=[None if c.ci_low is None else c.pct_change - c.ci_low for c in cells])))
    values.update_layout(barmode="group")
    values.update_xaxes(title_text="test", type="category")
    values.update_yaxes(title_text=f"{metric.label}, {unit}" if unit != metric.label else unit, rangemode="tozero")
    change.add_hrect(y0=-cmp.noise_pct, y1=cmp.noise_pct, fillcolor=NEUTRAL, opacity=0.25, line_width=0,
                     annotation_text=f"±{cmp.noise_pct:g} % noise", annotation_position="top left")
    change.update_layout(barmode="group")
    change.update_xaxes(title_text="test", type="category")
    change.update_yaxes(title_text="% change against the baseline", zeroline=True)
    return [values, change] if len(cmp.configs) > 1 else [values]


# ---- the report's sections of these charts (sections.py) -----------------

def overview_section(run: Run, series: Mapping[int, list[Series]]) -> list[str]:
    """The run's overview charts (as JSON): IOPS and MB/s by block size, latency per test.
    A curve or a scenario has no block size to compare (one IO, its own chart above): no by-size chart."""
    method = run.methodology
    own_chart = method is not None and (method.curve or method.scenario)
    overview = [] if own_chart else [f.to_json() for f in block_size_charts(run)]
    latency = latency_chart(run)
    if latency:
        overview.append(latency.to_json())
    return overview


def tests_section(run: Run, series: Mapping[int, list[Series]]) -> list[dict]:
    """Each test's charts (as JSON), its series read only while its chart is drawn."""
    names = test_names(run)
    tests = []
    for t in run.tests:
        name = names[t.seq]
        per_second = series.get(t.seq, [])
        figures = [f.to_json() for f in (series_chart(t, per_second, name),
                                         latency_rounds_chart(t, name, warmup_s(per_second)), host_chart(t, name),
                                         percentile_chart(t, name)) if f]
        tests.append({"name": name, "status": t.status, "error": t.error, "figures": figures})
    return tests
