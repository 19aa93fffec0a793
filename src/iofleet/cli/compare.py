"""`iofleet compare`: configurations (run ids or labels) against a baseline,
test by test, with significance. A thin shell over iofleet.studies.compare;
errors are raised as IofleetError for the caller's `user_errors` wrapper."""

import io
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from ..analysis.compare import DEFAULT_MATCH, DEFAULT_NOISE_PCT
from ..errors import IofleetError
from ..report.html import compare_page
from ..report.compare import comparison_csv, comparison_json, comparison_markdown, comparison_report
from ..results.store import Store, default_data_dir
from ..studies.compare import run_compare
from .output import write_output
from .common import DataDir

FORMATS = ("table", "md", "csv", "json")


def compare_command(
    configs: List[str] = typer.Argument(..., metavar="CONFIG",
                                        help="Run ids or labels (a label = every run with it)."),
    baseline: str = typer.Option(..., "--baseline", "-b",
                                 help="Run id or label to compare against (added if not among CONFIG)."),
    match: str = typer.Option(",".join(DEFAULT_MATCH), "--match",
                              help="Test parameters that must be equal for tests to be compared."),
    noise: float = typer.Option(DEFAULT_NOISE_PCT, "--noise",
                                help="Differences whose 95 % interval reaches inside ±PCT % are within noise."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, md, csv or json."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="File to write (default: stdout)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the comparison as an HTML page."),
    data_dir: Optional[str] = DataDir,
):
    """Compare configurations test by test: % change against the baseline,
    95 % bootstrap interval and Welch p-value where there are ≥ 3 repeats,
    rankings and winners (see docs/compare.md)."""
    if fmt not in FORMATS:
        raise IofleetError(f"--format {fmt!r}: use {', '.join(FORMATS)}")
    keys = tuple(k.strip() for k in match.split(",") if k.strip())
    if not 0 <= noise < 100:
        raise IofleetError(f"--noise {noise:g}: give a share from 0 to 100 %, e.g. 1")
    with Store.open(default_data_dir(data_dir)) as store:
        cmp = run_compare(store, configs, baseline, match=keys, noise_pct=noise)
    if html is not None:
        write_output(html, compare_page(cmp), "--html")
        typer.echo(f"Wrote {html}", err=True)
    if fmt == "table" and output is None:
        Console().print(comparison_report(cmp))
        return
    if fmt == "table":
        console = Console(file=io.StringIO(), width=200, record=True)
        console.print(comparison_report(cmp))
        text = console.export_text()
    else:
        text = {"md": comparison_markdown, "csv": comparison_csv, "json": comparison_json}[fmt](cmp)
    if output:
        write_output(output, text)
        typer.echo(f"Wrote {output}", err=True)
    else:
        sys.stdout.write(text)
