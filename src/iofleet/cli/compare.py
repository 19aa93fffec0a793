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
from .output import write_output
from .common import DataDir, err_console

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.

FORMATS = ("table", "md", "csv", "json")
EXIT_REGRESSION = 3  # --fail-above: a figure is worse than the baseline beyond the threshold and noise
EXIT_INCONCLUSIVE = 4  # --fail-above: none is, but a figure worse than the threshold cannot be told from noise


def compare_command(
    configs: List[str] = typer.Argument(..., metavar="CONFIG",
                                        help="Run ids or labels (a label = every run with it)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b", show_default=False,
                                           help="Run id or label to compare against (default: the first "
                                                "CONFIG; added if not among CONFIG)."),
    match: str = typer.Option(",".join(DEFAULT_MATCH), "--match",
                              help="Test parameters that must be equal for tests to be compared."),
    noise: float = typer.Option(DEFAULT_NOISE_PCT, "--noise",
                                help="Differences whose 95 % interval reaches inside ±PCT % are within noise."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, md, csv or json."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="File to write (default: stdout)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the comparison as an HTML page."),
    fail_above: Optional[float] = typer.Option(
        None, "--fail-above", metavar="PCT", show_default=False,
        help=f"Exit {EXIT_REGRESSION} when a figure is worse than the baseline by more than PCT % and beyond noise; "
             f"{EXIT_INCONCLUSIVE} when one is worse by more than PCT % but too few repeats cannot tell it from noise."),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE", show_default=False,
                                         help="With --fail-above: write the gate's verdicts as JUnit XML."),
    data_dir: Optional[str] = DataDir,
):
    """Compare configurations test by test: % change against the baseline,
    95 % bootstrap interval and Welch p-value where there are ≥ 3 repeats,
    the winner of each test (see docs/compare.md)."""
    from ..analysis.compare import INCONCLUSIVE, REGRESSION, check_fail_above, gate
    from ..report.compare import gate_lines
    from ..report.junit import junit_xml
    from ..results.store import Store, default_data_dir
    from ..studies.compare import run_compare
    if fmt not in FORMATS:
        raise IofleetError(f"--format {fmt!r}: use {', '.join(FORMATS)}")
    if junit is not None and fail_above is None:
        raise IofleetError("--junit: give --fail-above PCT too, the threshold its failures are judged by")
    if fail_above is not None:
        check_fail_above(fail_above)
    keys = tuple(k.strip() for k in match.split(",") if k.strip())
    if not 0 <= noise < 100:
        raise IofleetError(f"--noise {noise:g}: give a share from 0 to 100 %, e.g. 1")
    with Store.open(default_data_dir(data_dir)) as store:
        cmp = run_compare(store, configs, baseline, match=keys, noise_pct=noise)
    if html is not None:
        from ..report.html import compare_page  # here: plotly takes ~0.3 s to import
        write_output(html, compare_page(cmp), "--html")
        typer.echo(f"Wrote {html}", err=True)
    _print_comparison(cmp, fmt, output)
    if fail_above is not None:
        checks = gate(cmp, fail_above)
        if junit is not None:
            write_output(junit, junit_xml(cmp, checks, fail_above), "--junit")
            typer.echo(f"Wrote {junit}", err=True)
        lines = gate_lines(cmp, checks, fail_above)
        err_console.print("\n".join(lines), style="red" if lines[0].startswith("FAILED") else
                          "yellow" if lines[0].startswith("INCONCLUSIVE") else None, highlight=False, soft_wrap=True)
        if any(c.outcome == REGRESSION for c in checks):
            raise typer.Exit(EXIT_REGRESSION)
        if any(c.outcome == INCONCLUSIVE for c in checks):
            raise typer.Exit(EXIT_INCONCLUSIVE)


def _print_comparison(cmp, fmt: str, output: Optional[Path]) -> None:
    from ..report.compare import comparison_csv, comparison_json, comparison_markdown, comparison_report
    if fmt == "table" and output is None:
        console = Console()
        console.print(comparison_report(cmp, width=console.width))
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
