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

from ..analysis.compare import (ALPHA, BASELINE, BETTER, CONFIDENCE, INCONCLUSIVE, MIN_REPEATS, NOT_ENOUGH,
                                REGRESSION, WITHIN_NOISE, WORSE, Comparison, GateCheck, Metric, MetricRow)
from ..units import MISSING, format_value, shown_unit
from .fit import natural_width, wrapped

VERDICT_STYLE = {BETTER: "green", WORSE: "red", WITHIN_NOISE: "dim", NOT_ENOUGH: "yellow"}


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
        runs = ", ".join(f"{r.id}" + ("" if r.status == "complete" else f" ({r.status})") for r in c.runs)
        role = "" if c.name != cmp.baseline else " — baseline" if cmp.baseline_named else \
            f" — baseline ({cmp.baseline_note})"
        labels = sorted({r.label for r in c.runs if r.label and r.label != c.name})
        plans = sorted({r.plan_name or "?" for r in c.runs})
        extra = f", label {', '.join(labels)}" if labels else ""
        lines.append(f"{_config_name(c)}{role}: run{'s' if len(c.runs) > 1 else ''} {runs} "
                     f"(plan {', '.join(plans)}{extra})")
    lines.append(f"Tests matched by {', '.join(cmp.match)}; noise threshold ±{cmp.noise_pct:g} %.")
    if any(c.partial for c in cmp.configs):
        lines.append("partial: a run marked partial did not complete; only its ok tests are compared.")
    return lines


def winner(row) -> str:
    """The first place of a ranking: `a`, `a = b` (within noise of each
    other), `a ?` (ahead by means only: not enough repeats to tell) or none."""
    first = [p.config for p in row.ranking if p.rank == 1]
    if len(first) > 1 and len(first) == len(row.cells):
        return "none: all within noise"
    unsure = len(row.ranking) > len(first) and row.ranking[len(first)].tie == NOT_ENOUGH
    return " = ".join(first) + (" ?" if unsure else "")


def metric_table(cmp: Comparison, metric: Metric) -> tuple[list[str], list[list[str]]] | None:
    """Rows = matched tests; columns = each config's mean (with n), for
    each other config its change against the baseline, and the winner."""
    others = [c.name for c in cmp.configs if c.name != cmp.baseline]
    found = [(t, r) for t in cmp.tests for r in t.rows if r.metric == metric.name]
    if not found:
        return None
    # n goes in the header when a config has the same number of samples in every row.
    ns = {c.name: {r.cell(c.name).n for _, r in found} for c in cmp.configs}
    same = {name: next(iter(v)) for name, v in ns.items() if len(v) == 1}
    # The unit is in the table's title.
    cols = ["test"] + [_config_name(c) + (f" (n={same[c.name]})" if c.name in same else "") for c in cmp.configs]
    cols += [f"{o} vs {cmp.baseline}" for o in others] + ["winner"]
    rows = []
    for t, row in found:
        values = [format_value(c.mean, metric.unit) + ("" if c.config in same else f" (n={c.n})") for c in row.cells]
        rows.append([t.label] + values + [fmt_change(row.cell(o)) for o in others] + [winner(row)])
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
    lines.append("winner: the best mean; a = b: within noise of each other, both win; a ?: ahead by means "
                 "only (fewer than 3 samples on a side: not enough repeats to tell it from the next); none: every "
                 "configuration within noise of the best. Tests won counts a shared win for each, none for nobody.")
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
    cols, rows = wins_table(cmp)
    if len(cmp.tests) > 1 and rows:  # a count over several tests; for one, the winner column says it all
        out.append(("Tests won per metric", cols, rows))
    return out


def _styled(cell: str) -> Text:
    """A change cell in two lines, `-67.9 % worse` over `[-70.9, -64.6] p=0.005`:
    narrow enough for a terminal, the verdict in colour."""
    for verdict, style in VERDICT_STYLE.items():
        if cell.endswith(verdict):
            change, _, interval = cell[: -len(verdict)].rstrip().partition(" [")
            return Text.assemble(f"{change} ", (verdict, style), f"\n[{interval}" if interval else "")
    return Text(cell)


def comparison_report(cmp: Comparison, title: str | None = None, width: int | None = None) -> Group:
    """Everything for the terminal. A table wider than `width` becomes a
    block per test, its cells as "column: value" on lines wrapped between
    words (None: every table in full)."""
    parts = [Text(title or f"Comparison against {cmp.baseline}", style="bold")]
    parts += [Text(line) for line in header_lines(cmp)]
    for name, cols, rows in comparison_tables(cmp):
        table = Table(title=name, title_justify="left", box=box.SIMPLE_HEAD)
        cells = [[_styled(c) for c in row] for row in rows]
        for i, col in enumerate(cols):
            if col == "winner":  # names wrap at their " = ", rather than the figures
                table.add_column(col, max_width=24)
            else:
                table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
        for row in cells:
            table.add_row(*row)
        parts += [table] if width is None or natural_width(table) <= width else _blocks(name, cols, rows, width)
    parts.append(Text(""))
    parts += [Text(line, style="dim" if line == cmp.method else "") for line in note_lines(cmp)]
    return Group(*parts)


def _blocks(name: str, cols: list[str], rows: list[list[str]], width: int) -> list[Text]:
    """A table too wide for the terminal: one paragraph per row, "test:
    column value · column value …", wrapped between words."""
    out = [Text(""), Text(name, style="italic")]
    for row in rows:
        line = f"{row[0]}: " + " · ".join(f"{col} {cell}" for col, cell in zip(cols[1:], row[1:]))
        para = Text("\n".join(wrapped(line, width, then="    ")))
        for verdict, style in VERDICT_STYLE.items():  # in colour, as in the table
            para.highlight_words([verdict], style)
        out.append(para)
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def comparison_markdown(cmp: Comparison, title: str | None = None) -> str:
    out = [f"# {title or f'Comparison against {cmp.baseline}'}", ""]
    out += [f"- {line}" for line in header_lines(cmp)] + [""]
    for name, cols, rows in comparison_tables(cmp):
        out.extend([f"## {name}", "", "| " + " | ".join(map(_md_cell, cols)) + " |",
                    "|" + "|".join("---" if i == 0 or c == "winner" else "---:" for i, c in enumerate(cols)) + "|"])
        out.extend("| " + " | ".join(map(_md_cell, r)) + " |" for r in rows)
        out.append("")
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
    """`compare --format json` and GET /api/compare (docs/compare.md)."""
    return json.dumps(compare_to_json(cmp), indent=2) + "\n"


def compare_to_json(cmp: Comparison) -> dict:
    """A comparison as JSON: its configurations and runs, method, metrics,
    each matched test's cells and ranking, winners and wins."""
    return {
        "baseline": cmp.baseline,
        "configs": [{"name": c.name, "partial": c.partial,
                     "runs": [{"id": r.id, "label": r.label, "plan_name": r.plan_name, "status": r.status,
                               "created_at": r.created_at, "fio_version": r.fio_version} for r in c.runs]}
                    for c in cmp.configs],
        "match": list(cmp.match),
        "noise_pct": cmp.noise_pct,
        "alpha": ALPHA,
        "confidence_pct": CONFIDENCE,
        "min_repeats": MIN_REPEATS,
        "resamples": cmp.resamples,
        "seed": cmp.seed,
        "method": cmp.method,
        "metrics": [{"name": m.name, "label": m.label, "unit": m.unit, "higher_is_better": m.higher_is_better}
                    for m in cmp.metrics],
        "tests": [{"key": t.key, "label": t.label, "test_ids": t.test_ids, "rows": [_row_json(r) for r in t.rows]}
                  for t in cmp.tests],
        "unmatched": cmp.unmatched,
        "excluded": cmp.excluded,
        "winners": cmp.winners(),
        "wins": cmp.wins(),
    }


def _row_json(row: MetricRow) -> dict:
    return {"metric": row.metric,
            "cells": [{"config": c.config, "mean": c.mean, "n": c.n, "samples": list(c.samples),
                       "pct_change": c.pct_change, "ci_low": c.ci_low, "ci_high": c.ci_high,
                       "p_value": c.p_value, "verdict": c.verdict} for c in row.cells],
            "ranking": [{"rank": p.rank, "config": p.config, "mean": p.mean, "tie": p.tie} for p in row.ranking]}


def gate_lines(cmp: Comparison, checks: list[GateCheck], fail_above: float) -> list[str]:
    """The regression gate's verdict, its first line the outcome (FAILED,
    INCONCLUSIVE or passed), naming every figure that failed it or could
    not be judged."""
    failed = [c for c in checks if c.outcome == REGRESSION]
    unsure = [c for c in checks if c.outcome == INCONCLUSIVE]
    what = f"worse than {cmp.baseline} by more than {fail_above:g} % beyond noise"
    if failed:
        lines = [f"FAILED --fail-above {fail_above:g}: {len(failed)} of {len(checks)} figures {what}:"]
        lines += [f"  {c.config}, {c.test}, {c.metric.label}: {fmt_change(c.cell)}" for c in failed]
    elif unsure:
        lines = [f"INCONCLUSIVE --fail-above {fail_above:g}: no figure is {what}, but {len(unsure)} of {len(checks)} "
                 f"are worse by more than {fail_above:g} % with too few samples to tell it from noise; repeat the "
                 f"runs (≥ {MIN_REPEATS} a side: `repeat: {MIN_REPEATS}` in the plan, or runs with one label)"]
    else:
        lines = [f"passed --fail-above {fail_above:g}: none of {len(checks)} figures is worse than {cmp.baseline} "
                 f"by more than {fail_above:g} %"]
    if unsure:
        if failed:
            lines.append(f"inconclusive: {len(unsure)} more figures worse by more than {fail_above:g} % without "
                         f"enough samples to tell them from noise:")
        lines += [f"  {c.config}, {c.test}, {c.metric.label}: {fmt_change(c.cell)}" for c in unsure]
    return lines
