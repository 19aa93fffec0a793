"""A curve run shown: its table (load, target and achieved IOPS, MB/s,
p50/p99/p99.9), its notes, and the hockey-stick chart (latency against
achieved IOPS). A point that did not reach its target is marked in each,
with achieved/target: its latency is a saturated system's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..analysis.curve import REACHED_SHARE, CurveResult, Point, curve_of_run
from ..fio.records import Series
from ..results.model import Run
from ..plan.units import format_size
from ..units import format_value, to_ms

if TYPE_CHECKING:
    import plotly.graph_objects as go

COLUMNS = ("load %", "target IOPS", "achieved IOPS", "MB/s", "p50 ms", "p99 ms", "p99.9 ms", "reached")
PERCENTILES = (("p50", "p50_us"), ("p99", "p99_us"), ("p99.9", "p99_9_us"))


def curve_title(result: CurveResult) -> str:
    """latency against load: 4k 70% read random, jobs 1 × iodepth 4"""
    io = result.io
    what = ""
    if io:
        random = "random" if io["random_pct"] == 100 else "sequential" if io["random_pct"] == 0 else \
            f"{io['random_pct']}% random"
        what = f"{format_size(io['bs'])} {io['read_pct']}% read {random}, "
    return f"latency against load: {what}jobs {result.jobs} × iodepth {result.iodepth}"


def missed_mark(p: Point) -> str:
    """The `reached` cell: "yes", or how far a point fell short (the share
    of its target it achieved: the row shows both), or why it has no IO."""
    if p.reached:
        return "yes"
    if p.iops is None:
        return f"◀ no IO: {p.status}"
    # Rounded down: a point that missed never shows the 95 % it did not reach.
    return f"◀ {math.floor(p.achieved_pct)} %"


def _missed(p: Point) -> str:
    """e.g. "150 % load: 109,948/166,010 IOPS achieved" """
    got = f"{p.iops:,.0f}/{p.target_iops:,} IOPS achieved" if p.iops is not None else f"no IO ({p.status})"
    return f"{p.load_pct:.0f} % load: {got}"


def curve_columns(result: CurveResult) -> tuple[str, ...]:
    """The table's columns: `reached` only when a point missed its target."""
    return COLUMNS if result.missed else COLUMNS[:-1]


def curve_rows(result: CurveResult) -> list[dict[str, str]]:
    """The table's rows as shown (COLUMNS), in load order."""
    return [{"load %": f"{p.load_pct:.0f}", "target IOPS": f"{p.target_iops:,}",
             "achieved IOPS": format_value(p.iops, "IOPS"), "MB/s": format_value(p.mb_s, "MB/s"),
             "p50 ms": format_value(p.p50_us, "us"), "p99 ms": format_value(p.p99_us, "us"),
             "p99.9 ms": format_value(p.p99_9_us, "us"), "reached": missed_mark(p)}
            for p in sorted(result.points, key=lambda p: p.target_iops)]


def curve_lines(result: CurveResult, hosts: int = 1) -> list[str]:
    """Where the maximum came from, the rule of the loads, and the missed points."""
    where = f" per host on {hosts} hosts" if hosts > 1 else ""
    lines = [f"Most IOPS: {result.max_iops:,.0f} at jobs {result.jobs} × iodepth {result.iodepth}{where} "
             f"({result.source}); {result.rule}.",
             f"A point reached its target when it achieved at least {REACHED_SHARE:.0%} of it; "
             f"percentiles from the merged latency histograms of each test's measured part."]
    missed = result.missed
    if missed:
        lines.append(f"{len(missed)} of {len(result.points)} points did not reach their target rate "
                     f"({'; '.join(_missed(p) for p in missed)}): the storage, or the host driving it, "
                     f"did not keep up; their latency is that of a saturated system, not of the load asked for.")
    else:
        lines.append("Every point reached its target rate.")
    return lines


def curve_chart(result: CurveResult) -> go.Figure | None:
    """Latency (p50, p99, p99.9) against achieved IOPS: the hockey stick, on
    a log latency axis (p50 and p99.9 are orders of magnitude apart). The
    lines join the points that reached their target; a missed point (a
    saturated system's latency) is an open cross off the lines, with
    achieved/target on hover."""
    import plotly.graph_objects as go  # here: `iofleet curve` and every other command start without plotly

    from .charts import PALETTE, WRITE, _figure

    points = sorted((p for p in result.points if p.iops is not None), key=lambda p: p.target_iops)
    if not points:
        return None
    fig = _figure("Latency against load")
    hover = [f"load {p.load_pct:.0f} %: target {p.target_iops:,} IOPS, achieved {p.iops:,.0f}"
             + (f" (missed: {math.floor(p.achieved_pct)} %)" if not p.reached else "") for p in points]
    for i, (name, key) in enumerate(PERCENTILES):
        for reached in (True, False):
            mine = [(p, h) for p, h in zip(points, hover) if p.reached == reached]
            if not mine:
                continue
            fig.add_trace(go.Scatter(
                x=[p.iops for p, _ in mine], y=[to_ms(getattr(p, key), "us") for p, _ in mine], name=name,
                mode="lines+markers" if reached else "markers", text=[h for _, h in mine], legendgroup=name,
                showlegend=reached or len(mine) == len(points),
                hovertemplate="%{text}<br>" + name + " %{y:.3f} ms<extra></extra>", line=dict(color=PALETTE[i]),
                marker=dict(symbol="circle" if reached else "x-open", size=9, color=PALETTE[i])))
    missed = [p for p in points if not p.reached]
    if missed:
        fig.add_trace(go.Scatter(
            x=[p.iops for p in missed], y=[to_ms(p.p99_us, "us") for p in missed], mode="markers+text",
            name="missed its target", text=[f"{p.iops:,.0f}/{p.target_iops:,}" for p in missed],
            textposition="top center", hoverinfo="skip",
            marker=dict(symbol="x-open", size=16, color=WRITE, line=dict(width=2))))
    fig.add_vline(x=result.max_iops, line=dict(color=WRITE, dash="dot"),
                  annotation_text=f"most IOPS {result.max_iops:,.0f}", annotation_position="top left")
    fig.update_xaxes(title_text="achieved IOPS (all hosts)", rangemode="tozero")
    fig.update_yaxes(title_text="latency, ms (log scale)", type="log")
    return fig


def curve_section(run: Run, series: Mapping[int, list[Series]]) -> dict | None:
    """The report's curve section: the hockey stick (as JSON), its points and
    how they were chosen; None for a run that is not a curve run."""
    if run.methodology is None or not run.methodology.curve:
        return None
    result = curve_of_run(run)
    if result is None:
        return None
    chart, columns = curve_chart(result), curve_columns(result)
    return {"title": curve_title(result), "chart": chart.to_json() if chart else None,
            "rows": [{c: row[c] for c in columns} for row in curve_rows(result)],
            "lines": curve_lines(result, len(run.host_facts.get("hosts", [])) or 1)}
