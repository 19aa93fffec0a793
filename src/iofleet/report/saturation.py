"""The saturate sweep in words and tables: the cells (runs, IOPS, MB/s,
mean and p99 latency, Little's law, the latency target), the IOPS grid by
jobs and iodepth, the answer and what it cannot be told apart from, the
knee, the best configuration and the answer to the target."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.little import LITTLE_TOLERANCE
from ..analysis.saturation import BEST_SHARE, Cell, Saturation, saturation_of_run
from ..fio.records import Series
from ..results.model import Run
from ..units import MISSING, format_value, to_ms

if TYPE_CHECKING:
    import plotly.graph_objects as go


def _config(c: Cell) -> str:
    return f"jobs {c.jobs} × iodepth {c.iodepth}"


def _little(c: Cell) -> str:
    if c.little is None:
        return MISSING
    return f"{c.little:.2f}" + ("" if c.little_ok else " ✗")


def _iops(c: Cell) -> str:
    """IOPS, with the lowest and highest run when repeated."""
    iops = format_value(c.iops, "IOPS")
    if c.runs < 2:
        return iops
    return f"{iops} ({format_value(min(c.iops_runs), 'IOPS')}–{format_value(max(c.iops_runs), 'IOPS')})"


def _target(c: Cell) -> str:
    verdict = "ok" if c.slo_ok else "over"
    if c.runs > 1 and 0 < c.slo_met_runs < c.runs:
        verdict = f"{c.slo_met_runs}/{c.runs} ok"
    return f"{verdict} ({format_value(c.slo_value_us, 'us')})"


def cell_rows(sat: Saturation) -> list[dict]:
    """One plain row per cell, in jobs then iodepth order."""
    rows = []
    fleet = any(c.hosts > 1 for c in sat.cells)
    for c in sorted(sat.cells, key=lambda c: (c.jobs, c.iodepth)):
        marks = [name for name, cell in (("answer", sat.peak), ("knee", sat.knee), ("best", sat.best)) if cell is c]
        marks += ["tie"] if any(t is c for t in sat.ties) else []
        row = {"jobs": str(c.jobs), "iodepth": str(c.iodepth), "OIO/host": str(c.per_host)}
        if fleet:
            row["OIO fleet"] = str(c.outstanding)
        row |= {"runs": str(c.runs), "IOPS": _iops(c), "MB/s": format_value(c.mb_s, "MB/s"),
                "mean ms": format_value(c.lat_mean_us, "us"), "p99 ms": format_value(c.lat_p99_us, "us"),
                "Little": _little(c)}
        if sat.slo:
            row[sat.slo.text] = _target(c)
        row[""] = " ".join(f"◀ {m}" for m in marks)
        rows.append(row)
    return rows


def _runs(c: Cell) -> str:
    if c.runs < 2:
        return "one run"
    return f"median of {c.runs} runs, {min(c.iops_runs):,.0f}–{max(c.iops_runs):,.0f}"


def verdict_lines(sat: Saturation, hosts: int) -> list[tuple[str, str | None]]:
    """(line, style): the answer (and what it cannot be told apart from),
    the knee, the best configuration, the target's answer and the
    Little's-law check, each in one sentence with its numbers."""
    fleet = f" on {hosts} hosts (IOPS of the fleet; outstanding IO per host × {hosts})" if hosts > 1 else ""
    lines: list[tuple[str, str | None]] = []
    if not sat.cells:
        return [("No cell was measured.", "red")]
    if sat.peak:
        p = sat.peak
        under = " under the target" if sat.slo else ""
        lines.append((f"Most IOPS{under}{fleet}: {_config(p)} ({p.per_host} outstanding IOs per host): "
                      f"{p.iops:,.0f} IOPS ({_runs(p)}), {_latency(p)}.", "bold"))
        if sat.ties:
            others = ", ".join(f"{_config(c)} ({c.iops:,.0f}, {_runs(c)})"
                               for c in sorted(sat.ties, key=lambda c: (c.outstanding, c.jobs)))
            lines.append((f"Cannot tell apart from {others}: their IOPS are within noise (±{sat.noise_pct / 2:g}% "
                          f"of a single run, else the spread of the runs); the least outstanding IO is the "
                          f"answer.", "yellow"))
    if sat.knee:
        k = sat.knee
        lines.append((f"Knee: {_config(k)} ({k.per_host} outstanding IOs per host): {k.iops:,.0f} IOPS, "
                      f"{_latency(k)}; past it, more IOs in flight add latency faster than IOPS.", None))
    else:
        levels = len({c.outstanding for c in sat.cells})
        top = max(sat.cells, key=lambda c: c.outstanding)
        why = (f"{levels} level{'s' if levels != 1 else ''} of outstanding IO are too few to find one"
               if levels < 3 else f"IOPS did not bend up to {top.per_host} outstanding IOs per host")
        lines.append((f"No knee: {why}; a wider sweep (--max-iodepth, --max-jobs, a looser --slo) "
                      f"may find it.", "yellow"))
    if sat.best and sat.peak:
        b, p = sat.best, sat.peak
        same = " (the answer itself)" if b is p else ""
        lines.append((f"Best configuration: {_config(b)} ({b.per_host} per host){same}: {b.iops:,.0f} IOPS "
                      f"({b.iops / p.iops:.0%} of the answer's), {_latency(b)} — the least outstanding IO within "
                      f"{1 - BEST_SHARE:.0%} of the most IOPS.", None))
    if sat.slo:
        lines.append(_target_line(sat))
    flagged = sat.little_flags
    if flagged:
        for c in flagged:
            why = ("the client could not keep its queues full (CPU-bound) or the measurement is broken"
                   if c.little < 1 else "more IOs than asked seem in flight: the measurement is inconsistent "
                   "(another load on the host, or stalls fio's runtime does not count)")
            lines.append((f"Little's law does not hold at {_config(c)}: IOPS × mean latency = "
                          f"{c.little * c.outstanding:,.1f} IOs in flight, {c.little:.0%} of the {c.outstanding} "
                          f"asked (beyond ±{LITTLE_TOLERANCE:.0%}): {why}.", "yellow"))
    elif any(c.little is not None for c in sat.cells):
        lines.append((f"Little's law holds in every cell: IOPS × mean latency within ±{LITTLE_TOLERANCE:.0%} "
                      f"of the outstanding IO.", None))
    return lines


def _latency(c: Cell) -> str:
    mean, p99 = (format_value(us, "us", with_unit=True) for us in (c.lat_mean_us, c.lat_p99_us))
    return f"mean {mean}, p99 {p99}"


def _target_line(sat: Saturation) -> tuple[str, str | None]:
    slo = sat.slo
    best = sat.slo_best

    def measured(c: Cell) -> str:  # the cell's figure the target is on
        return f"{slo.metric} {format_value(c.slo_value_us, 'us', with_unit=True)}"

    if best is None:
        first = min(sat.cells, key=lambda c: c.outstanding)
        return f"Target {slo.text}: no cell met it; even {_config(first)} had {measured(first)}.", "red"
    over = [c for c in sat.cells if c.slo_ok is False and c.jobs == best.jobs and c.iodepth > best.iodepth]
    if not over:
        return f"Target {slo.text}: met by the answer ({measured(best)}); no step of the sweep broke it.", "bold"
    nxt = min(over, key=lambda c: c.iodepth)
    runs = f" in {c_runs}" if (c_runs := _broke_runs(nxt)) else ""
    return (f"Target {slo.text}: met by the answer ({measured(best)}); "
            f"iodepth {nxt.iodepth} broke it{runs} ({measured(nxt)}).", "bold")


def _broke_runs(c: Cell) -> str:
    if c.runs < 2:
        return ""
    return f"{c.runs - c.slo_met_runs} of {c.runs} runs"


def iops_grid(sat: Saturation) -> Table:
    """IOPS by jobs (rows) and iodepth (columns); blank where not run."""
    jobs = sorted({c.jobs for c in sat.cells})
    depths = sorted({c.iodepth for c in sat.cells})
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("jobs", justify="right")
    for d in depths:
        table.add_column(f"qd{d}", justify="right")
    at = {(c.jobs, c.iodepth): c for c in sat.cells}
    for j in jobs:
        table.add_row(str(j), *(f"{at[(j, d)].iops:,.0f}" if (j, d) in at else "" for d in depths))
    return table


def saturation_report(sat: Saturation, hosts: int, title: str):
    """A rich renderable: the cells, the grid, then the verdicts."""
    rows = cell_rows(sat)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, caption=(
        "OIO: outstanding IOs asked (jobs × iodepth, per host; OIO fleet: over all hosts); runs: a cell within noise "
        "of a decision is repeated, its figures are the medians of its runs (IOPS: lowest–highest run); figures of "
        "each run's steady window; Little: IOPS × mean latency "
        f"÷ OIO (✗ beyond ±{LITTLE_TOLERANCE:.0%}); latency in ms, all IO; ◀ answer (most IOPS{', under the target' if sat.slo else ''}), "
        "tie (cannot be told apart from it), knee (Kneedle), best configuration."), caption_justify="left")
    for col in (rows[0] if rows else ["jobs"]):
        table.add_column(col, justify="left" if col == "" else "right")
    for row in rows:
        table.add_row(*row.values())
    whose = "of the fleet " if hosts > 1 else ""
    return Group(table, Text(f"IOPS {whose}by jobs (rows) × iodepth (columns) per host:"), iops_grid(sat),
                 *(Text(line, style=style) for line, style in verdict_lines(sat, hosts)))


def sweep_of_run(run: Run) -> tuple[Saturation, int] | None:
    """A saturate run's analysis and its host count; None for other runs."""
    sat = saturation_of_run(run)
    if sat is None:
        return None
    return sat, max((len(t.host_aggregates()) for t in run.tests), default=1) or 1


def sweep_section(run: Run, series: Mapping[int, list[Series]]) -> dict | None:
    """The report's sweep section: its chart (as JSON), the cells and the
    verdicts; None for a run that is not a saturate sweep."""
    if run.methodology is None or run.methodology.saturate is None:
        return None
    sweep = sweep_of_run(run)
    if sweep is None:
        return None
    sat, hosts = sweep
    return {"chart": saturation_chart(sat).to_json(), "rows": cell_rows(sat), "lines": verdict_lines(sat, hosts)}


def saturation_chart(sat: Saturation) -> go.Figure:
    """A saturate sweep: IOPS (left) and p99 latency (right) by outstanding
    IO, one line per jobs row; the knee, the best configuration and the most
    IOPS under the latency target are marked."""
    import plotly.graph_objects as go  # here: `iofleet saturate` starts without plotly
    from plotly.subplots import make_subplots

    from .charts import _LAYOUT, WRITE, series_style

    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12)
    fig.update_layout(**_LAYOUT, title=dict(text="Saturation sweep · IOPS and p99 latency by outstanding IO",
                                            x=0, xanchor="left", y=0.98))
    rows = sorted({c.jobs for c in sat.cells})
    for i, jobs in enumerate(rows):
        cells = sorted((c for c in sat.cells if c.jobs == jobs), key=lambda c: c.outstanding)
        name = f"{jobs} job{'s' if jobs > 1 else ''}"
        look = series_style(i)
        style, marker = dict(color=look["color"], dash=look["dash"]), dict(symbol=look["symbol"], size=8)
        fig.add_trace(go.Scatter(x=[c.outstanding for c in cells], y=[c.iops for c in cells], name=name,
                                 legendgroup=name, mode="lines+markers", line=style, marker=marker,
                                 text=[f"{c.jobs} × qd {c.iodepth}" for c in cells]), row=1, col=1)
        fig.add_trace(go.Scatter(x=[c.outstanding for c in cells], y=[to_ms(c.lat_p99_us, "us") for c in cells],
                                 name=name, legendgroup=name, showlegend=False, mode="lines+markers", line=style,
                                 marker=marker,
                                 text=[f"{c.jobs} × qd {c.iodepth}" for c in cells]), row=1, col=2)
    marks = [(sat.knee, "knee", "star"), (sat.best, "best configuration", "diamond-open"),
             (sat.slo_best, "most IOPS under the target", "square-open")]
    for cell, label, symbol in marks:
        if cell is not None:
            fig.add_trace(go.Scatter(x=[cell.outstanding], y=[cell.iops], name=label, mode="markers",
                                     marker=dict(symbol=symbol, size=16, color="#000000", line=dict(width=2))),
                          row=1, col=1)
    if sat.slo is not None and sat.slo.metric == "p99":
        fig.add_hline(y=to_ms(sat.slo.limit_us, "us"), line_dash="dot", line_color=WRITE,
                      annotation_text=f"target {sat.slo.text}", row=1, col=2)
    fig.update_xaxes(title_text="outstanding IO (fleet), log scale", type="log", dtick=math.log10(2))
    fig.update_yaxes(title_text="IOPS", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="p99 latency, ms", rangemode="tozero", row=1, col=2)
    return fig
