"""The results bundle of a run: one zip with the report, the summary, every
table as CSV and JSON, and each test's raw fio output, job file and logs —
what HCIBench users download with "Save Result"."""

import csv
import io
import json
import zipfile
from pathlib import Path

from rich.console import Console

from ..results.model import Run, run_to_csv, run_to_json
from ..results.store import Store
from .html import run_report_html, run_report_md, tables_of_run
from .saturation import saturation_report, sweep_of_run
from .summary import summary_table

README = """iofleet results bundle of run {id} ({plan})

report.html        the report with charts; opens offline in any browser
summary.txt        the summary as `iofleet results show {id}` prints it
summary.md         the summary in Markdown, for tickets
run.json           every figure of the run, with the merged latency histograms
                   (docs/results-format.md)
tests.csv          one row per test
tables/NAME.csv    the report's tables (summary, steady, diagnostics; repeats: each
                   run of the repeated tests), also as .json
plan.yaml          the plan as given
tests/NNNN-ID/     per test: fio-output.json (fio's own output), job.fio (the job
                   file fio ran), *.log (fio's per-second logs; warmup_* = warm-up)
"""


def rows_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue()


def summary_text(run: Run) -> str:
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(summary_table(run))
    sweep = sweep_of_run(run)
    if sweep is not None:
        console.print(saturation_report(*sweep, f"Saturation sweep of run {run.id}"))
    return console.export_text()


def run_bundle(store: Store, run: Run) -> bytes:
    """The zip file's bytes; every name is under `iofleet-run-ID/`."""
    top = f"iofleet-run-{run.id}/"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(top + "README.txt", README.format(id=run.id, plan=run.plan_name))
        z.writestr(top + "report.html", run_report_html(run, store.run_series(run)))
        z.writestr(top + "summary.txt", summary_text(run))
        z.writestr(top + "summary.md", run_report_md(run))
        z.writestr(top + "run.json", run_to_json(run, include_bins=True, indent=1))
        z.writestr(top + "tests.csv", run_to_csv(run))
        for name, rows in tables_of_run(run).items():
            z.writestr(f"{top}tables/{name}.csv", rows_csv(rows))
            z.writestr(f"{top}tables/{name}.json", json.dumps(rows, indent=1) + "\n")
        if run.plan_text:
            z.writestr(top + "plan.yaml", run.plan_text)
        for t in run.tests:
            if not t.artifact_dir:
                continue
            folder = f"{top}tests/{Path(t.artifact_dir).name}/"  # NNNN-ID, made safe by the store
            for name, data in store.read_artifacts(t):
                z.writestr(folder + name, data)
    return buf.getvalue()
