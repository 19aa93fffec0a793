"""Render a configuration comparison (iofleet.analysis.compare) as terminal
tables, Markdown, CSV or JSON. Every table is built once as plain rows of
strings (`comparison_tables`), which the terminal and Markdown share."""

import csv
import io
import json

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.compare import BASELINE, BETTER, NOT_ENOUGH, WITHIN_NOISE, WORSE, Comparison, Metric
from ..units import MISSING, format_value, shown_unit

ORDINALS = ("1st", "2nd", "3rd")
VERDICT_STYLE = {BETTER: "green", WORSE: "red", WITHIN_NOISE: "dim", NOT_ENOUGH: "yellow"}


def _ordinal(i: int) -> str:
    return ORDINALS[i - 1] if i <= len(ORDINALS) else f"{i}th"


def fmt_change(cell) -> str:
    """e.g. `+12.3 % [+10.1, +14.0] p=0.003 better`."""
    if cell.verdict == BASELINE:
        return "baseline"
    if cell.pct_change is None:
        return MISSING
    text = f"{cell.pct_change:+.1f} %"
    if cell.ci_low is not None:
        p = f"{cell.p_value:.3f}" if cell.p_value >= 0.001 else f"{cell.p_value:.0e}"
        text += f" [{cell.ci_low:+.1f}, {cell.ci_high:+.1f}] p={p}"
    return f"{text} {cell.verdict}"


def _config_name(c) -> str:
    return f"{c.name} (partial)" if c.partial else c.name


def header_lines(cmp: Comparison) -> list[str]:
    lines = []
    for c in cmp.configs:
        runs = ", ".join(f"{r['id']}" + ("" if r["status"] == "complete" else f" ({r['status']})") for r in c.to_dict()["runs"])
        role = " — baseline" if c.name == cmp.baseline else ""
        labels = sorted({r.get("label") for r in c.runs if r.get("label") and r.get("label") != c.name})
        plans = sorted({r.get("plan_name") or "?" for r in c.runs})
        extra = f", label {', '.join(labels)}" if labels else ""
        lines.append(f"{_config_name(c)}{role}: run{'s' if len(c.runs) > 1 else ''} {runs} "
                     f"(plan {', '.join(plans)}{extra})")
    lines.append(f"Tests matched by {', '.join(cmp.match)}; noise threshold ±{cmp.noise_pct:g} %.")
    if any(c.partial for c in cmp.configs):
        lines.append("partial: a run marked partial did not complete; only its ok tests are compared.")
    return lines


def metric_table(cmp: Comparison, metric: Metric) -> tuple[list[str], list[list[str]]] | None:
    """Rows = matched tests; columns = each config's mean (with n) and, for
    each other config, its change against the baseline."""
    others = [c.name for c in cmp.configs if c.name != cmp.baseline]
    found = [(t, r) for t in cmp.tests for r in t.rows if r.metric == metric.name]
    if not found:
        return None
    # n goes in the header when a config has the same number of samples in every row.
    ns = {c.name: {r.cell(c.name).n for _, r in found} for c in cmp.configs}
    same = {name: next(iter(v)) for name, v in ns.items() if len(v) == 1}
    cols = ["test"] + [f"{_config_name(c)} {shown_unit(metric.unit)}"
                       + (f" (n={same[c.name]})" if c.name in same else "") for c in cmp.configs]
    cols += [f"{o} vs {cmp.baseline}" for o in others]
    rows = []
    for t, row in found:
        values = [format_value(c.mean, metric.unit) + ("" if c.config in same else f" (n={c.n})") for c in row.cells]
        rows.append([t.label] + values + [fmt_change(row.cell(o)) for o in others])
    return cols, rows


def ranking_lines(cmp: Comparison) -> list[str]:
    metrics = {m.name: m for m in cmp.metrics}
    lines = []
    for t in cmp.tests:
        for r in t.rows:
            m = metrics[r.metric]
            parts = []
            for p in r.ranking:
                mark = {WITHIN_NOISE: f"={p.rank}", NOT_ENOUGH: f"{p.rank}?"}.get(p.tie, str(p.rank))
                parts.append(f"{mark} {p.config} {format_value(p.mean, m.unit)}")
            best = "highest" if m.higher_is_better else "lowest"
            lines.append(f"{t.label}, {m.label} ({shown_unit(m.unit)}, {best} first): " + " · ".join(parts))
    return lines


def winners_table(cmp: Comparison) -> tuple[list[str], list[list[str]]]:
    labels = {m.name: m.label for m in cmp.metrics}
    winners = cmp.winners()
    # Competition ranking: a place shared by k configurations leaves k − 1 columns empty.
    width = len(cmp.configs)
    cols = ["test", "metric"] + [_ordinal(i + 1) for i in range(width)]
    rows = []
    for w in winners:
        cells = [""] * width
        for p in w["places"]:
            cells[p["rank"] - 1] = " = ".join(p["configs"]) + (" ?" if p["order_not_established"] else "")
        rows.append([w["test"], labels[w["metric"]]] + cells)
    return cols, rows


def wins_table(cmp: Comparison) -> tuple[list[str], list[list[str]]]:
    labels = {m.name: m.label for m in cmp.metrics}
    names = [c.name for c in cmp.configs]
    return (["metric"] + names,
            [[labels[m]] + [str(counts[n]) for n in names] for m, counts in cmp.wins().items()
             if any(counts.values())])


def note_lines(cmp: Comparison) -> list[str]:
    lines = []
    for u in cmp.unmatched:
        missing = [c.name for c in cmp.configs if c.name not in u["configs"]]
        lines.append(f"unmatched: {u['label']} ({' '.join(f'{k}={v}' for k, v in u['key'].items())}) "
                     f"only in {', '.join(u['configs'])}; not in {', '.join(missing)}")
    for e in cmp.excluded:
        lines.append(f"excluded: {e['config']} run {e['run']} {e['test']} #{e['repeat']}: {e['status']}")
    lines.append("Rankings: =N shares place N (within noise of that place's best); N? ranked by means only "
                 "(fewer than 3 samples on a side: not enough repeats to tell it from the place above).")
    lines.append(cmp.method)
    return lines


def comparison_tables(cmp: Comparison) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, columns, rows) of every table, in display order."""
    out = []
    for m in cmp.metrics:
        t = metric_table(cmp, m)
        if t:
            name = m.label if shown_unit(m.unit) == m.label else f"{m.label}, {shown_unit(m.unit)}"
            out.append((f"{name} ({'higher' if m.higher_is_better else 'lower'} is better)", *t))
    out.append(("Winners per test and metric", *winners_table(cmp)))
    out.append(("Tests led per metric (1st place, alone or tied)", *wins_table(cmp)))
    return out


def _styled(cell: str) -> Text:
    for verdict, style in VERDICT_STYLE.items():
        if cell.endswith(verdict):
            return Text.assemble(cell[: -len(verdict)], (verdict, style))
    return Text(cell)


def comparison_report(cmp: Comparison, title: str | None = None) -> Group:
    """Everything for the terminal."""
    parts = [Text(title or f"Comparison against {cmp.baseline}", style="bold")]
    parts += [Text(line) for line in header_lines(cmp)]
    tables = comparison_tables(cmp)
    for name, cols, rows in tables[:-2]:
        table = Table(title=name, title_justify="left", box=box.SIMPLE_HEAD)
        for i, col in enumerate(cols):
            table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
        for row in rows:
            table.add_row(*[_styled(c) for c in row])
        parts.append(table)
    parts.append(Text("Rankings:", style="bold"))
    parts += [Text(f"  {line}") for line in ranking_lines(cmp)]
    for name, cols, rows in tables[-2:]:
        table = Table(title=name, title_justify="left", box=box.SIMPLE_HEAD)
        for col in cols:
            table.add_column(col)
        for row in rows:
            table.add_row(*row)
        parts.append(table)
    parts += [Text(line, style="dim" if line == cmp.method else "") for line in note_lines(cmp)]
    return Group(*parts)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def comparison_markdown(cmp: Comparison, title: str | None = None) -> str:
    out = [f"# {title or f'Comparison against {cmp.baseline}'}", ""]
    out += [f"- {line}" for line in header_lines(cmp)] + [""]
    tables = comparison_tables(cmp)

    def table(name, cols, rows):
        out.extend([f"## {name}", "", "| " + " | ".join(map(_md_cell, cols)) + " |",
                    "|" + "|".join("---" if i == 0 else "---:" for i in range(len(cols))) + "|"])
        out.extend("| " + " | ".join(map(_md_cell, r)) + " |" for r in rows)
        out.append("")

    for t in tables[:-2]:
        table(*t)
    out += ["## Rankings", ""] + [f"- {line}" for line in ranking_lines(cmp)] + [""]
    for t in tables[-2:]:
        table(*t)
    out += ["## Notes", ""] + [f"- {line}" for line in note_lines(cmp)]
    return "\n".join(out) + "\n"


CSV_COLUMNS = ("test", "metric", "unit", "config", "baseline", "partial", "mean", "n", "samples",
               "pct_change", "ci_low_pct", "ci_high_pct", "p_value", "verdict", "rank", "tie")


def _csv(value):
    if value is None:
        return ""  # unavailable: empty, never 0
    if isinstance(value, bool):
        return "true" if value else "false"  # as in the run exports
    return value


def comparison_csv(cmp: Comparison) -> str:
    """One row per matched test, metric and configuration (values in the
    stored units: µs for latency); rank and tie carry the rankings and
    winners. Unmatched tests follow with their configurations."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    partial = {c.name: c.partial for c in cmp.configs}
    units = {m.name: m.unit for m in cmp.metrics}
    for t in cmp.tests:
        for r in t.rows:
            places = {p.config: p for p in r.ranking}
            for c in r.cells:
                p = places.get(c.config)
                w.writerow([_csv(v) for v in (
                    t.label, r.metric, units[r.metric], c.config, c.config == cmp.baseline, partial[c.config],
                    c.mean, c.n, " ".join(repr(s) for s in c.samples), c.pct_change, c.ci_low, c.ci_high,
                    c.p_value, c.verdict, p.rank if p else None, p.tie if p else None)])
    for u in cmp.unmatched:
        for name in u["configs"]:
            w.writerow([u["label"], "", "", name, _csv(name == cmp.baseline), _csv(partial[name])] + [""] * 7
                       + ["unmatched", "", ""])
    return buf.getvalue()


def comparison_json(cmp: Comparison) -> str:
    return json.dumps(cmp.to_dict(), indent=2) + "\n"
