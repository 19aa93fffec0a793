"""The self-contained HTML report of a run (plotly.js embedded: it opens
offline and makes no network request), and its Markdown summary for tickets.

Every user-supplied text (plan, test names, errors) goes through Jinja2's
autoescaping; chart data is JSON in non-executed script blocks, and a
Content-Security-Policy forbids any fetch, so a report cannot call out.
"""

import base64
import datetime
import functools
import gzip
from collections.abc import Mapping
from pathlib import Path

import plotly.graph_objects as go
from jinja2 import Environment, FileSystemLoader, select_autoescape
from plotly.offline import get_plotlyjs

from .. import __version__
from ..analysis.curve import curve_of_run
from ..analysis.diagnostics import RULES, diagnose
from ..analysis.host_facts import host_line
from ..analysis.steady import SteadyVerdict
from ..fio.records import DIRECTIONS, Series
from ..plan.units import format_bytes
from ..results.aggregate import shared_by_host
from ..results.export import BINS_FIELD, aggregate_figures
from ..results.model import Run
from . import charts
from .curve import curve_chart, curve_columns, curve_lines, curve_rows, curve_title
from .scenario import scenario_chart, scenario_lines, scenario_record
from .compare import comparison_tables, header_lines, metric_table, note_lines
from .saturation import cell_rows, sweep_of_run, verdict_lines
from .summary import diagnostics_lines, repeat_rows, run_title, summary_caption, summary_notes, summary_rows

TEMPLATES = Path(__file__).parent / "templates"


@functools.cache
def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["figure"] = figure_json
    return env


def figure_json(fig: go.Figure | str) -> str:
    """A figure (or its JSON, from fig.to_json()) as JSON safe inside a
    <script> block ('</' cannot end it)."""
    return (fig if isinstance(fig, str) else fig.to_json()).replace("</", "<\\/")


@functools.cache
def plotly_js_gzip() -> str:
    """plotly.js gzip-compressed, in base64: 1.9 MB of the 4.8 MB it takes
    as text, which was most of every report. The page inflates it with the
    browser's DecompressionStream (no request: the report stays one file)."""
    return base64.b64encode(gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)).decode("ascii")


def page(template: str, title: str, **context) -> str:
    """A whole HTML page from a template, with plotly.js inline (compressed)."""
    return _environment().get_template(template).render(
        title=title, plotly_js_gzip=plotly_js_gzip(), version=__version__, layout="base.html.j2",
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), **context)


def environment_rows(run: Run) -> list[tuple[str, str]]:
    """(what, value) pairs: where and how the run was measured."""
    facts = run.host_facts
    rows = [("plan", run.plan_name), ("label", run.label or "—"), ("status", run.status),
            ("started / ended (UTC)", f"{run.created_at} / {run.ended_at or '—'}"),
            ("fio", run.fio_version or "unknown"), ("source", run.source)]
    if facts.get("hostname"):
        rows.append(("controller host", f"{facts['hostname']} · {facts.get('cpus', '?')} CPUs · "
                     f"{format_bytes(facts['memory_bytes']) if facts.get('memory_bytes') else '? '} RAM"))
    if facts.get("kernel"):
        rows.append(("kernel", facts["kernel"]))
    if facts.get("targets"):
        rows.append(("targets", ", ".join(facts["targets"])))
    for h in facts.get("hosts") or []:
        if isinstance(h, dict):
            nic = f" · NIC {h['nic_gbps']:g} Gbit/s" if h.get("nic_gbps") else ""
            seen = f" · {host_line(h['facts'])}" if isinstance(h.get("facts"), dict) else ""
            rows.append((f"host {h['name']}", f"{h['address']} · targets {', '.join(h.get('targets') or [])}{nic}{seen}"))
    return rows


def steady_rows(doc: dict, names: dict[int, str]) -> list[dict]:
    rows = []
    for t in doc["tests"]:
        steady = (t.get("methodology") or {}).get("steady") or {}
        if not steady:
            continue
        row = {"test": names[t["seq"]]}
        for key, label in (("iops", "IOPS"), ("lat", "latency")):
            v = steady.get(key)
            row[label] = SteadyVerdict.from_dict(v).short() if v else "n/a"
            row[f"{label} why"] = (v or {}).get("reason") or ""
        rows.append(row)
    return rows


def finding_rows(doc: dict) -> list[dict]:
    titles = {r.name: r.title for r in RULES}
    return [{"severity": f.severity, "test": f.test or "(run)", "host": f.host or "", "finding": titles[f.rule],
             "evidence": f.evidence, "change": f.change} for f in diagnose(doc)]


def run_report_html(run: Run, series: Mapping[int, list[Series]]) -> str:
    """The report of a stored run and its per-second series by test seq."""
    return page("report.html.j2", **run_report_context(run, series))


def run_report_context(run: Run, series: Mapping[int, list[Series]]) -> dict:
    """What report.html.j2 shows of a run (the web UI's result page shows the same)."""
    with shared_by_host():  # the summary, its notes and the export each ask for every test's hosts
        return _run_report_context(run, series)


def _run_report_context(run: Run, series: Mapping[int, list[Series]]) -> dict:
    """Each figure is kept as its JSON (plotly's objects of a 64-host run's
    ~100 charts take hundreds of MB), each test's series read only while
    its chart is drawn, and only each test's own histograms added to the
    document (its percentile curve; the hosts' are in no chart)."""
    doc = run.to_dict()
    for t, record in zip(doc["tests"], run.tests):
        merged = aggregate_figures(record.aggregate, include_bins=True)
        for direction in DIRECTIONS:
            t[direction][BINS_FIELD] = merged[direction][BINS_FIELD]
    names = charts.test_names(doc)
    overview = [f.to_json() for f in charts.block_size_charts(doc)]
    latency = charts.latency_chart(doc)
    if latency:
        overview.append(latency.to_json())
    tests = []
    for t in doc["tests"]:
        name = names[t["seq"]]
        figures = [f.to_json() for f in (charts.series_chart(t, series.get(t["seq"], []), name),
                                         charts.latency_rounds_chart(t, name), charts.host_chart(t, name),
                                         charts.percentile_chart(t, name)) if f]
        tests.append({"name": name, "status": t["status"], "error": t["error"], "figures": figures})
    sweep = sweep_of_run(doc)
    if sweep is not None:
        sat, hosts = sweep
        sweep = {"chart": charts.saturation_chart(sat).to_json(), "rows": cell_rows(sat),
                 "lines": verdict_lines(sat, hosts)}
    return dict(title=run_title(run), run=run, environment=environment_rows(run),
                rows=summary_rows(run), caption=summary_caption(run), notes=summary_notes(run),
                repeats=repeat_rows(run), sweep=sweep, scenario=_scenario_context(run), curve=_curve_context(doc, run),
                overview=overview, tests=tests, steady=steady_rows(doc, names), findings=finding_rows(doc))


def _curve_context(doc: dict, run: Run) -> dict | None:
    """A latency-vs-load run's chart (the hockey stick), its points and how they were chosen."""
    result = curve_of_run(doc)
    if result is None:
        return None
    chart, columns = curve_chart(result), curve_columns(result)
    return {"title": curve_title(result), "chart": chart.to_json() if chart else None,
            "rows": [{c: row[c] for c in columns} for row in curve_rows(result)],
            "lines": curve_lines(result, len(run.host_facts.get("hosts", [])) or 1)}


def _scenario_context(run: Run) -> dict | None:
    """A scenario run's chart (events on the time axis), its impact lines and its events."""
    record = scenario_record(run.methodology)
    if record is None:
        return None
    chart = scenario_chart(record)
    events = [{"fault": e["fault"], "host": e["host"] or "local", "at s": e["at_s"], "for s": e["for_s"],
               "applied at s": e["applied_s"], "undone at s": e["undone_s"], "command": e.get("command") or "",
               "error": "; ".join(x for x in (e["error"], e.get("undo_error")) if x)} for e in record["events"]]
    return {"chart": chart.to_json() if chart else None, "lines": scenario_lines(record), "events": events}


def compare_page(cmp) -> str:
    """A comparison (analysis.compare.Comparison) as one self-contained page:
    per metric its charts and table, then the winners and the method."""
    return page("compare.html.j2", **compare_context(cmp))


def compare_context(cmp) -> dict:
    """What compare.html.j2 shows of a comparison."""
    tables = comparison_tables(cmp)
    metrics = [{"title": title, "columns": cols, "rows": rows, "figures": charts.compare_charts(cmp, m)}
               for m, (title, cols, rows) in zip([m for m in cmp.metrics if metric_table(cmp, m)], tables)]
    return dict(title=f"Comparison against {cmp.baseline}", cmp=cmp, header=header_lines(cmp), metrics=metrics,
                summaries=tables[len(metrics):], notes=note_lines(cmp))


def _md_cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_table(rows: list[dict]) -> str:
    if not rows:
        return "_none_\n"
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(_md_cell(r[k]) for k in head) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def run_report_md(run: Run) -> str:
    """A Markdown summary for tickets: environment, summary table, notes,
    steady-state verdicts and diagnostics."""
    doc = run.to_dict()
    out = [f"# {run_title(run)}\n",
           md_table([{"": what, "value": value} for what, value in environment_rows(run)]),
           "## Summary\n", md_table(summary_rows(run)), f"_{summary_caption(run)}_\n"]
    out += [f"- {line}" for line, _ in summary_notes(run)]
    repeats = repeat_rows(run)
    if repeats:
        out += ["\n### Each run of the repeated tests\n", md_table(repeats)]
    steady = steady_rows(doc, charts.test_names(doc))
    if steady:
        out += ["\n## Steady state (SNIA PTS)\n", md_table([{k: v for k, v in r.items() if not k.endswith("why")}
                                                           for r in steady])]
    findings = diagnose(doc)
    out.append("\n## Diagnostics\n")
    out += [f"- {line}" for line, _ in diagnostics_lines(findings)] or ["No findings."]
    return "\n".join(out) + "\n"


def tables_of_run(run: Run) -> dict[str, list[dict]]:
    """The report's tables as plain rows (for the bundle's CSV/JSON files)."""
    doc = run.to_dict()
    tables = {"summary": summary_rows(run), "steady": steady_rows(doc, charts.test_names(doc)),
              "diagnostics": finding_rows(doc)}
    repeats = repeat_rows(run)
    return tables | {"repeats": repeats} if repeats else tables
