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
from ..analysis.diagnostics import RULES, diagnose
from ..analysis.host_facts import host_line, recorded_hosts
from ..analysis.links import network_check
from ..fio.records import Series
from ..fleet.facts_records import MachineFacts
from ..plan.units import format_bytes
from ..results.aggregate import shared_by_host
from ..results.model import Run
from . import charts
from .compare import comparison_tables, header_lines, metric_table, note_lines
from .sections import built_sections
from .summary import (diagnostics_lines, network_lines, repeat_rows, run_title, summary_caption,
                      summary_notes, summary_rows)

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
    # A network check runs no fio: its inventory instead.
    tool = ("inventory", facts["inventory"]) if facts.get("inventory") else ("fio", run.fio_version or "unknown")
    rows = [("plan", run.plan_name), ("label", run.label or "—"), ("status", run.status),
            ("started / ended (UTC)", f"{run.created_at} / {run.ended_at or '—'}"), tool, ("source", run.source)]
    here = MachineFacts.from_dict(facts)
    if here.hostname:
        rows.append(("controller host", f"{here.hostname} · {'?' if here.cpus is None else here.cpus} CPUs · "
                     f"{format_bytes(here.memory_bytes) if here.memory_bytes else '? '} RAM"))
    if here.kernel:
        rows.append(("kernel", here.kernel))
    if facts.get("targets"):
        rows.append(("targets", ", ".join(facts["targets"])))
    for h in recorded_hosts(facts):
        nic = f" · NIC {h.nic_gbps:g} Gbit/s" if h.nic_gbps else ""
        seen = f" · {host_line(h.facts)}" if h.facts else ""
        targets = f" · targets {', '.join(h.targets)}" if h.targets else ""
        rows.append((f"host {h.name}", f"{h.address}{targets}{nic}{seen}"))
    return rows


def steady_rows(run: Run, names: dict[int, str]) -> list[dict]:
    """Each test's verdicts; a fixed-time test's only when one could be
    given (it never asked for steady state: "not enough data" is no news)."""
    rows = []
    for t in run.tests:
        steady = t.methodology.steady if t.methodology else {}
        fixed = t.methodology is not None and t.methodology.has("until") and t.methodology.until == "time"
        if not steady or (fixed and all(v is None or v.first_round is None for v in steady.values())):
            continue
        row = {"test": names[t.seq]}
        for key, label in (("iops", "IOPS"), ("lat", "latency")):
            v = steady.get(key)
            row[label] = v.short() if v else "n/a"
            row[f"{label} why"] = (v.reason if v else None) or ""
        rows.append(row)
    return rows


def finding_rows(run: Run) -> list[dict]:
    titles = {r.name: r.title for r in RULES}
    return [{"severity": f.severity, "test": f.test or "(run)", "host": f.host or "", "finding": titles[f.rule],
             "evidence": f.evidence, "change": f.change} for f in diagnose(run)]


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
    its chart is drawn. The sections with charts (sweep, curve, scenario,
    overview, tests) come from the chart registry (sections.py)."""
    return dict(title=run_title(run), run=run, environment=environment_rows(run),
                rows=summary_rows(run), caption=summary_caption(run), notes=summary_notes(run),
                repeats=repeat_rows(run), **built_sections(run, series),
                steady=steady_rows(run, charts.test_names(run)), findings=finding_rows(run))


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
    out = [f"# {run_title(run)}\n",
           md_table([{"": what, "value": value} for what, value in environment_rows(run)])]
    net = network_check(run)
    if net:
        matrix, found = network_lines(net, 100)
        return "\n".join(out + ["## Network\n", "```", *matrix, "```\n"] + [f"- {line}" for line in found]) + "\n"
    out += ["## Summary\n", md_table(summary_rows(run)), f"_{summary_caption(run)}_\n"]
    out += [f"- {line}" for line, _ in summary_notes(run)]
    repeats = repeat_rows(run)
    if repeats:
        out += ["\n### Each run of the repeated tests\n", md_table(repeats)]
    steady = steady_rows(run, charts.test_names(run))
    if steady:
        out += ["\n## Steady state (SNIA PTS)\n", md_table([{k: v for k, v in r.items() if not k.endswith("why")}
                                                           for r in steady])]
    findings = diagnose(run)
    out.append("\n## Diagnostics\n")
    out += [f"- {line}" for line, _ in diagnostics_lines(findings)] or ["No findings."]
    return "\n".join(out) + "\n"


def tables_of_run(run: Run) -> dict[str, list[dict]]:
    """The report's tables as plain rows (for the bundle's CSV/JSON files)."""
    tables = {"summary": summary_rows(run), "steady": steady_rows(run, charts.test_names(run)),
              "diagnostics": finding_rows(run)}
    repeats = repeat_rows(run)
    return tables | {"repeats": repeats} if repeats else tables
