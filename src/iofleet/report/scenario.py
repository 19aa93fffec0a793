"""A scenario's results shown: the summary lines (baseline, each event's
impact and recovery, hosts lost) and the chart of the per-second IOPS and
p99 with the events drawn on the time axis. Both read the record the
scenario study stores in the run's methodology (`scenario`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import plotly.graph_objects as go

from ..fio.records import Series
from ..results.methodology import RunMethodology, ScenarioRecord
from ..results.model import Run
from ..units import MISSING
from .charts import NEUTRAL, PALETTE, READ, WRITE, _figure


def scenario_record(run_methodology: RunMethodology | None) -> ScenarioRecord | None:
    """The scenario stored with a run, or None for another run."""
    return run_methodology.scenario if run_methodology else None


def _pct(value: float | None) -> str:
    return MISSING if value is None else f"{value:+.1f} %"


def _num(value: float | None, unit: str, digits: int = 0) -> str:
    return MISSING if value is None else f"{value:,.{digits}f} {unit}"


def event_label(e: dict) -> str:
    """`link-slow h1` / `run h2` / `device-slow local`."""
    return f"{e['fault']} {e['host'] or 'local'}"


def _event_line(e: dict, hit: dict | None, band: str) -> str:
    when = f"at {e['at_s']}s" + (f" for {e['for_s']}s" if e["for_s"] is not None else "")
    if e["error"]:
        return f"  {event_label(e)} {when}: not applied: {e['error']}"
    line = f"  {event_label(e)} {when}"
    for key, what in (("late_s", "applied"), ("undo_late_s", "undone")):
        if e.get(key):
            line += f" ({what} {e[key]:.1f} s late, bound {e['late_bound_s']:g} s)"
    if e.get("undo_error"):
        line += f" (UNDO FAILED: {e['undo_error']})"
    if hit and hit["during"]:
        d = hit["during"]
        line += (f", measured {hit['from_s']:.1f}–{hit['to_s']:.1f} s: {_num(d['iops'], 'IOPS')} "
                 f"({_pct(hit['iops_change_pct'])}), p99 {_num(d['p99_ms'], 'ms', 2)} ({_pct(hit['p99_change_pct'])})")
        rec = hit["recovery_s"]
        line += f"; back within {band} after {rec:.0f} s" if rec is not None else f"; not back within {band} by the end"
    elif e["applied_s"] is None:
        line += ": not applied (the load ended first)"
    return line


def scenario_lines(record: ScenarioRecord) -> list[str]:
    """The scenario's summary in words, one line each."""
    imp = record.impact or {}
    base = imp.get("baseline")
    band = f"±{imp.get('band_pct', 10):g} % of baseline IOPS for {imp.get('hold_s', 5)} s"
    shift = record.clock_shift_s or 0
    out = [f"Scenario {record.name}" + (f" (times on fio's clock: its jobs began {shift:.1f} s after iofleet's "
                                            f"timeline)" if shift else "") + ":"]
    if base:
        out.append(f"  baseline (first {base['seconds']} s): {_num(base['iops'], 'IOPS')}, "
                   f"p99 {_num(base['p99_ms'], 'ms', 2)}")
    else:
        out.append("  baseline: no second before the first event was measured")
    hits = imp.get("events") or []
    ordered = sorted(record.events, key=lambda e: e["at_s"])
    applied = [e for e in ordered if not e["error"]]
    by_event = {id(e): hits[i] for i, e in enumerate(applied) if i < len(hits)}
    out += [_event_line(e, by_event.get(id(e)), band) for e in ordered]
    if record.lost:
        out.append(f"  hosts lost: {', '.join(record.lost)} (their data kept up to the loss)")
    return out


def scenario_chart(record: ScenarioRecord) -> go.Figure | None:
    """Per-second IOPS (the fleet's, and each host's) and p99, with each
    event shaded from its start to its end (a line where it has none), and
    the baseline shaded."""
    imp = record.impact or {}
    series = imp.get("series") or {}
    if not series.get("t_s"):
        return None
    x = series["t_s"]
    fig = _figure(f"Scenario · {record.name}", secondary_y=True)
    fig.add_trace(go.Scatter(x=x, y=series["iops"], name="IOPS (all hosts)", mode="lines+markers",
                             line=dict(color=READ)), secondary_y=False)
    hosts = series.get("hosts") or {}
    if len(hosts) > 1:
        for i, (h, ys) in enumerate(sorted(hosts.items())):
            fig.add_trace(go.Scatter(x=x, y=[math.nan if v is None else v for v in ys], name=f"IOPS {h}",
                                     mode="lines", line=dict(color=PALETTE[(i + 2) % len(PALETTE)], width=1)),
                          secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[math.nan if v is None else v for v in series["p99_ms"]], name="p99 latency",
                             mode="lines", line=dict(color=WRITE, dash="dash")), secondary_y=True)
    base = imp.get("baseline")
    if base:
        first = min((e["from_s"] for e in imp.get("events") or []), default=x[-1])
        fig.add_vrect(x0=0, x1=first, fillcolor=NEUTRAL, opacity=0.10, line_width=0,
                      annotation_text="baseline", annotation_position="top left")
    hits = iter(imp.get("events") or [])
    for i, e in enumerate(sorted(record.events, key=lambda e: e["at_s"])):
        if e["error"]:
            continue
        hit = next(hits, None)
        start = hit["from_s"] if hit else e["at_s"]
        label = event_label(e)
        color = PALETTE[(i + 1) % len(PALETTE)]
        if e["for_s"] is not None and hit:
            fig.add_vrect(x0=start, x1=hit["to_s"], fillcolor=color, opacity=0.18, line_width=0,
                          annotation_text=label, annotation_position="top left")
        else:
            fig.add_vline(x=start, line=dict(color=color, dash="dot"), annotation_text=label,
                          annotation_position="top right")
    fig.update_xaxes(title_text="seconds into the measured part", rangemode="tozero")
    fig.update_yaxes(title_text="IOPS", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="p99 latency, ms", secondary_y=True, rangemode="tozero", showgrid=False)
    return fig


def scenario_section(run: Run, series: Mapping[int, list[Series]]) -> dict | None:
    """The report's scenario section: its chart (as JSON; events on the time
    axis), its impact lines and its events; None for another run."""
    record = scenario_record(run.methodology)
    if record is None:
        return None
    chart = scenario_chart(record)
    events = [{"fault": e["fault"], "host": e["host"] or "local", "at s": e["at_s"], "for s": e["for_s"],
               "applied at s": e["applied_s"], "undone at s": e["undone_s"], "command": e.get("command") or "",
               "error": "; ".join(x for x in (e["error"], e.get("undo_error")) if x)} for e in record.events]
    return {"chart": chart.to_json() if chart else None, "lines": scenario_lines(record), "events": events}
