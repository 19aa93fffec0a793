"""`iofleet model`: what the hardware should deliver, and with --run the
share of it a stored run achieved.

A thin shell over iofleet.analysis.theoretical and report.theoretical; it
reads the store only for `device: {run: N}` and --run. Errors are raised as
IofleetError for the caller's `user_errors` wrapper (this module cannot
import cli.main: main imports it).
"""

import io
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from ..errors import IofleetError
from .output import write_output
from .common import DataDir, WideOpt

# Each command imports its study, store and report when it runs: every `iofleet`
# command imports this module (cli.main registers them all) and starts sooner without them.

FORMATS = ("table", "md", "json", "csv")
# A narrow terminal keeps what each workload (test) should and did deliver, and what bounds it.
MODEL_KEEP = ("workload", "test", "expected IOPS", "expected MB/s", "measured IOPS", "achieved", "bound")
MODEL_DROP = ("write penalty", "as", "measured MB/s", "devices IOPS", "network IOPS")


def model_command(
    model_file: Path = typer.Argument(..., metavar="MODEL", help="Model file (YAML): devices, hosts, layout, NIC."),
    run_id: Optional[int] = typer.Option(None, "--run", help="Stored run to compare with the model."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, md, json or csv."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="File to write (default: stdout)."),
    data_dir: Optional[str] = DataDir,
    wide: bool = WideOpt,
):
    """Compute what the hardware should deliver (and a run's share).

    Theoretical IOPS and MB/s of a storage system from its device figures,
    layout and NICs, with the bound that applies; with --run, each test's
    measured share of it. Formulas: docs/model.md."""
    from ..plan.hardware import load_model
    from ..analysis.theoretical import device_from_run, entered_device, measured_vs_theoretical, model_table
    from ..report.fit import fit_group, print_wide
    from ..report.theoretical import RENDERERS, model_data, terminal_report
    from ..results.store import Store, default_data_dir
    if fmt not in FORMATS:
        raise IofleetError(f"--format {fmt!r}: use {', '.join(FORMATS)}")
    model = load_model(model_file)
    runs: dict = {}  # run id → Run
    wanted = [i for i in (model.device.run, run_id) if i is not None]
    if wanted:
        with Store.open(default_data_dir(data_dir)) as store:
            runs = {i: store.get_run(i) for i in dict.fromkeys(wanted)}
    device = device_from_run(runs[model.device.run]) if model.device.run is not None else entered_device(model)
    comparison = measured_vs_theoretical(runs[run_id], model, device) if run_id is not None else None
    data = model_data(model, device, model_table(model, device), comparison, run_id)
    if fmt == "table":
        console = Console(file=io.StringIO() if output else None)
        if output or (not console.is_terminal and "COLUMNS" not in os.environ):
            console.width = 200  # files and pipes: wide rows, unless COLUMNS says otherwise
        report = fit_group(terminal_report(data), None if wide else console.width, MODEL_KEEP, MODEL_DROP)
        print_wide(console, report) if wide else console.print(report)
        if output is None:
            return
        text = console.file.getvalue()
    else:
        text = RENDERERS[fmt](data)
    if output is None:
        sys.stdout.write(text)
        return
    write_output(output, text)
    typer.echo(f"Wrote {output}", err=True)
