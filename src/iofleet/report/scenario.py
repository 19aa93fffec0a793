"""A scenario's results shown: the summary lines (baseline, each event's
impact and recovery, hosts lost, the storage's own account of each event)
and the chart of the per-second IOPS and p99 with the events and the
storage's states drawn on the time axis. Both read the record the
scenario study stores in the run's methodology (`scenario`)."""

from __future__ import annotations

import itertools
import math
from html import escape
from collections.abc import Mapping

import plotly.graph_objects as go

from ..fio.records import Series
from ..results.impact import CatchUp, EventImpact, Impact, Stall
from ..results.methodology import RunMethodology, ScenarioRecord, count
from ..results.watch import StorageAccount
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


def _event_line(e: dict, hit: EventImpact | None, band: str) -> str:
    when = f"at {e['at_s']}s" + (f" for {e['for_s']}s" if e["for_s"] is not None else "")
    if e["error"]:
        return f"  {event_label(e)} {when}: not applied: {e['error']}"
    line = f"  {event_label(e)} {when}"
    for key, what in (("late_s", "applied"), ("undo_late_s", "undone")):
        if e.get(key):
            line += f" ({what} {e[key]:.1f} s late, bound {e['late_bound_s']:g} s)"
    if e.get("undo_error"):
        line += f" (UNDO FAILED: {e['undo_error']})"
    if hit and hit.during:
        d = hit.during
        bound = "≥ " if d.p99_lower_bound else ""
        line += (f", measured {hit.from_s:.1f}–{hit.to_s:.1f} s: {_num(d.iops, 'IOPS')} "
                 f"({_pct(hit.iops_change_pct)}), p99 {bound}{_num(d.p99_ms, 'ms', 2)} "
                 f"({bound}{_pct(hit.p99_change_pct)})")
        rec = hit.recovery_s
        line += f"; back within {band} after {rec:.0f} s" if rec is not None else f"; not back within {band} by the end"
        line += _catch_up(hit.catch_up)
    elif e["applied_s"] is None:
        line += ": not applied (the load ended first)"
    return line


def _catch_up(c: CatchUp | None) -> str:
    """The fixed-rate load's catch-up after the event: fio issues the IOs it fell behind on at once."""
    if not c:
        return ""
    when = f"drained at {c.drained_s:.1f} s" if c.drained_s is not None else "not drained by the end"
    burst = f", a catch-up burst of up to {_num(c.burst_iops, 'IOPS')}" if c.burst_iops else ""
    return f"; backlog of {c.behind_ios:,} IOs {when}{burst}"


def stall_line(stall: Stall, hosts: int) -> str:
    """`IO paused from 29.6 to 56.1 s (26.5 s); IOs waited at least 26.4 s`."""
    where = f" on {stall.host}" if hosts > 1 else ""
    return (f"  IO paused{where} from {stall.from_s:.1f} to {stall.to_s:.1f} s "
            f"({stall.to_s - stall.from_s:.1f} s); IOs waited at least {stall.waited_s:.1f} s"
            + (" (past the end of fio's latency histogram, 17.0 s)" if stall.bounded else ""))


def _hits_by_event(ordered: list[dict], hits: list[EventImpact]) -> dict[int, EventImpact]:
    """Each event's impact (by id of its record): by its index, or, in a
    record stored before impacts had one, by position among the applied."""
    if all(h.has("index") for h in hits):
        by_index = {h.index: h for h in hits}
        return {id(e): by_index[e["index"]] for e in ordered if e["index"] in by_index}
    applied = [e for e in ordered if not e["error"]]
    return {id(e): hits[i] for i, e in enumerate(applied) if i < len(hits)}


def scenario_lines(record: ScenarioRecord) -> list[str]:
    """The scenario's summary in words, one line each."""
    imp = record.impact or Impact()
    base = imp.baseline
    band = f"±{imp.band_pct:g} % of baseline IOPS for {imp.hold_s} s"
    shift = record.clock_shift_s or 0
    out = [f"Scenario {record.name}" + (f" (times on fio's clock: its jobs began {shift:.1f} s after iofleet's "
                                            f"timeline)" if shift else "") + ":"]
    if base:
        out.append(f"  baseline (first {base.seconds} s): {_num(base.iops, 'IOPS')}, p99 {_num(base.p99_ms, 'ms', 2)}")
    else:
        out.append("  baseline: no second before the first event was measured")
    ordered = sorted(record.events, key=lambda e: e["at_s"])
    by_event = _hits_by_event(ordered, imp.events)
    out += [_event_line(e, by_event.get(id(e)), band) for e in ordered]
    hosts = len(imp.series.hosts) if imp.series else 0
    out += [stall_line(st, hosts) for st in imp.stalls]
    if any(h.during and h.during.p99_lower_bound for h in imp.events):
        out.append("  p99 is fio's latency from issue; \"≥\": a lower bound that also counts the IOs that waited "
                   "in a stall, from when the rate wanted them issued")
    if record.lost:
        out.append(f"  hosts lost: {', '.join(record.lost)} (their data kept up to the loss)")
    return out + watch_lines(record)


def scenario_chart(record: ScenarioRecord) -> go.Figure | None:
    """Per-second IOPS (the fleet's, and each host's) and p99, with each
    event shaded from its start to its end (a line where it has none), and
    the baseline shaded."""
    imp = record.impact
    series = imp.series if imp else None
    if not series or not series.t_s:
        return None
    x = series.t_s
    fig = _figure(f"Scenario · {record.name}", secondary_y=True)
    fig.add_trace(go.Scatter(x=x, y=series.iops, name="IOPS (all hosts)", mode="lines+markers",
                             line=dict(color=READ)), secondary_y=False)
    hosts = series.hosts or {}
    if len(hosts) > 1:
        for i, (h, ys) in enumerate(sorted(hosts.items())):
            fig.add_trace(go.Scatter(x=x, y=[math.nan if v is None else v for v in ys], name=f"IOPS {h}",
                                     mode="lines", line=dict(color=PALETTE[(i + 2) % len(PALETTE)], width=1)),
                          secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[math.nan if v is None else v for v in series.p99_ms], name="p99 latency",
                             mode="lines", line=dict(color=WRITE, dash="dash")), secondary_y=True)
    if imp.baseline:
        fig.add_vrect(x0=0, x1=imp.first_event_s(default=x[-1]), fillcolor=NEUTRAL, opacity=0.10, line_width=0,
                      annotation_text="baseline", annotation_position="top left")
    ordered = sorted(record.events, key=lambda e: e["at_s"])
    by_event = _hits_by_event(ordered, imp.events)
    for i, e in enumerate(ordered):
        if e["error"]:
            continue
        hit = by_event.get(id(e))
        start = hit.from_s if hit else e["at_s"]
        # The file's `at` counts from fio's launch; the axis is the measured part on fio's own clock.
        label = f"{event_label(e)} (at {e['at_s']}s in the file)" + (
            f": in place {start:.1f}–{hit.to_s:.1f} s" if hit and e["for_s"] is not None else "")
        color = PALETTE[(i + 1) % len(PALETTE)]
        if e["for_s"] is not None and hit:
            fig.add_vrect(x0=start, x1=hit.to_s, fillcolor=color, opacity=0.18, line_width=0,
                          annotation_text=label, annotation_position="top left")
        else:
            fig.add_vline(x=start, line=dict(color=color, dash="dot"), annotation_text=label,
                          annotation_position="top right")
    for st in imp.stalls:
        where = f" on {st.host}" if len(hosts) > 1 else ""
        fig.add_vrect(x0=st.from_s, x1=st.to_s, fillcolor=WRITE, opacity=0.12, line=dict(color=WRITE, width=1),
                      annotation_text=f"IO paused{where} ({st.to_s - st.from_s:.1f} s)",
                      annotation_position="bottom left")
    _watch_states(fig, record)
    fig.update_xaxes(title_text="seconds into the measured part", rangemode="tozero")
    fig.update_yaxes(title_text="IOPS", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="p99 latency, ms", secondary_y=True, rangemode="tozero", showgrid=False,
                     tickmode="auto", nticks=6)  # its own round ticks, not the IOPS axis's grid
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


# ---- the storage's own account (the scenario's `watch:`, studies/watch.py) ----

def _account(a: StorageAccount) -> str:
    """What the storage said of one event (analysis/watch_recovery.py)."""
    if a.before is None:
        return "no storage sample before it began"
    if a.changed_s is None:
        return (f"storage stayed {a.before} ({count(a.samples, 'sample')})" if a.samples
                else "no storage sample after it began")
    line = f"storage {a.before} before, reported {a.changed_to} at {a.changed_s:.1f} s; "
    if a.back_s is None:
        return line + f"not back to {a.before} " + (
            "by the end" if a.until_s is None else f"before the next event (at {a.until_s:.1f} s)")
    after = a.back_after_s
    since = (f"{after:.1f} s after the fault {'ended' if a.end_s is not None else 'began'}" if after >= 0
             else f"{-after:.1f} s before the fault ended")
    return line + f"back to its state before the fault ({a.before}) at {a.back_s:.1f} s ({since})"


def _when(e: dict, a: StorageAccount) -> str:
    """`link-slow h1 at 3s, in place 2.4–4.4 s`: its planned time, then its span on fio's clock."""
    span = f"{a.at_s:.1f}–{a.end_s:.1f} s" if a.end_s is not None else f"from {a.at_s:.1f} s"
    return f"{event_label(e)} at {e['at_s']}s, in place {span}"


def watch_lines(record: ScenarioRecord) -> list[str]:
    """The storage's own account: its command and samples, then a line per event."""
    w = record.watch
    if not w:
        return []
    head = (f"  storage's account: `{w.command}` on {w.host or 'this host'} every {w.every_s}s, "
            f"{count(len(w.samples), 'sample')}")
    failed = [s for s in w.samples if s.exit != 0]
    if failed:
        head += f", {len(failed)} failed or unanswered (first: {failed[0].state})"
    by_index = {e["index"]: e for e in record.events}
    return [head + ":"] + [f"    {_when(by_index[a.index], a)}: {_account(a)}" for a in w.events
                           if a.index in by_index]


# States Ceph names: green, amber, red; others in the palette's order; no answer grey.
_HEALTH = {"HEALTH_OK": PALETTE[2], "HEALTH_WARN": PALETTE[1], "HEALTH_ERR": PALETTE[5]}


def _state_colours(states: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    others = iter(PALETTE[i % len(PALETTE)] for i in itertools.count(3))
    for state in states:
        if state not in out:
            word = state.split(" ", 1)[0].rstrip(":")
            out[state] = (_HEALTH.get(word) or (NEUTRAL if word in ("exit", "no") else None)
                          or next(others))
    return out


def _watch_states(fig: go.Figure, record: ScenarioRecord) -> None:
    """The storage's states on the time axis: a band along the bottom,
    coloured by state, a marker per sample (its state and output in the
    hover), and the new state written at each change."""
    samples = record.watch.samples if record.watch else []
    if not samples:
        return
    every = record.watch.every_s
    states = [s.state for s in samples]
    colour = _state_colours(states)
    changes = [k for k in range(len(samples)) if k == 0 or states[k] != states[k - 1]]
    for n, k in enumerate(changes):
        # A sample's state stands until the next sample (the last: for one interval).
        end = samples[changes[n + 1]].t_s if n + 1 < len(changes) else samples[-1].t_s + every
        fig.add_shape(type="rect", xref="x", yref="paper", x0=samples[k].t_s, x1=end, y0=0, y1=0.03,
                      fillcolor=colour[states[k]], opacity=0.7, line_width=0)
        fig.add_annotation(x=samples[k].t_s, y=0.04, xref="x", yref="paper", text=escape(states[k][:60]),
                           showarrow=False, textangle=-90, xanchor="center", yanchor="bottom",
                           font=dict(size=10, color=colour[states[k]]))
    # Plotly reads hover text as HTML: the command's output is escaped.
    hover = [escape(s.state) + (f"<br>{escape(s.output[:200])}" if s.output and s.output != s.state else "")
             for s in samples]
    name = escape(f"storage: {record.watch.command[:40]}")
    fig.add_trace(go.Scatter(x=[s.t_s for s in samples], y=[0] * len(samples), mode="markers", name=name,
                             hovertext=hover, hoverinfo="x+text",
                             marker=dict(color=[colour[x] for x in states], symbol="line-ns-open", size=10)),
                  secondary_y=False)
