"""Results: the stored runs (filtered), a run's page — the HTML report's
tables and charts inside the web layout — and its downloads (the same report,
zip bundle and CSV as `iofleet report` and `iofleet results export`).

A test's raw files are read only through the store, by a name the store
lists for that test: no part of a request ever becomes a path."""

import re
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from ..errors import IofleetError, StoreDamagedError, StoreError
from ..report.bundle import run_bundle
from ..report.html import run_report_context, run_report_html
from ..results.model import run_to_csv
from ..results.model import Run
from ..results.store import RUN_STATUSES, RunFilter, Store
from ..studies.kinds import STUDIES
from ..units import format_value, to_ms
from .render import NotFound, error_response, fragment, open_store, render

router = APIRouter()


HEADLINED = 100  # the newest this many runs of a list get their headline figures (each is read whole)


def headline(run: Run) -> dict | None:
    """A run's headline figures: its best IOPS (with that test's p99) and best
    MB/s over the tests stored ok; None before any; a study may tell them
    otherwise (a curve's best IOPS: the most IOPS its sweep found)."""
    done = [t for t in run.tests if t.status == "ok" and t.aggregate is not None]
    if not done:
        return None
    top = max(done, key=lambda t: t.aggregate.all.iops)
    p99 = top.aggregate.all.percentiles_ns.get("p99")
    best = {"iops": round(top.aggregate.all.iops, 1), "iops_test": top.id,
            "mb_s": round(max(t.aggregate.all.bw_bytes_s for t in done) / 1e6, 3),
            "p99_ms": None if p99 is None else round(to_ms(p99, "ns"), 4),
            "p99_text": format_value(p99, "ns")}  # as the CLI shows it (not a second rounding of p99_ms)
    study = STUDIES.get(run.kind)  # a study may say what its best IOPS are (a curve's: its maximum)
    return study.headline(run, best) if study is not None else best


def filtered_runs(store: Store, f: RunFilter) -> list[dict]:
    listed = store.list_runs(f)
    rows = [r.to_dict() for r in listed]
    for run, row in zip(listed, rows):
        net = run.methodology.network if run.kind == "network check" else None
        row["problems"] = len(net.errors) + len(net.problems) if net else None  # a network check's headline
    for row in rows[:HEADLINED]:
        row["best"] = headline(store.get_run(row["id"])) if row["tests_by_status"].get("ok") else None
    return rows


def load_run(store: Store, run_id: int) -> Run:
    """The stored run; a 404 (not a 400) when there is none."""
    try:
        return store.get_run(run_id)
    except StoreError:
        raise NotFound(f"no run {run_id} in this store; see GET /api/results") from None


def damaged_store(request: Request, exc: StoreDamagedError) -> Response:
    """A damaged results database: 503 (the server cannot serve results until
    the store is recovered) with the one-line message; a page for pages,
    the JSON error for the API."""
    if request.url.path.startswith("/api/"):
        return error_response(exc, 503)
    return render(request, "store_damaged.html.j2", "Results store damaged", status_code=503, message=str(exc))


def attachment(body: bytes | str, filename: str, media_type: str) -> Response:
    """A download; the file name is built from ids and safe characters only."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", filename)
    return Response(body, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{safe}"'})


def raw_files(run: Run) -> list[dict]:
    """Per test, its raw files (names as the store lists them) and their download URLs."""
    return [{"seq": t.seq, "id": t.id, "status": t.status,
             "files": [{"name": n, "url": f"/api/results/{run.id}/tests/{t.seq}/files/{quote(n, safe='')}"}
                       for n in t.artifacts]} for t in run.tests]


# ---- API -----------------------------------------------------------------

@router.get("/api/results", tags=["results"])
def list_results(request: Request, label: str = "", plan: str = "", status: str = "", since: str = "",
                 until: str = ""):
    """Stored runs, newest first. Filters: `label` and `plan` (text the run's label or plan name
    contains, any case), `status` (running, complete, failed, interrupted, partial), `since` and
    `until` (YYYY-MM-DD, the run's UTC start day, both inclusive). `stale`: a run left running by a
    process that crashed (`iofleet run --resume ID` finishes it)."""
    with open_store(request) as store:
        return filtered_runs(store, RunFilter(label, plan, status, since, until))


@router.get("/api/results/{run_id}", tags=["results"])
def get_result(request: Request, run_id: int, bins: bool = False):
    """A run with every figure (docs/results-format.md), as `iofleet results show ID --format json`;
    `bins=true` adds the merged latency histograms."""
    with open_store(request) as store:
        return load_run(store, run_id).to_dict(include_bins=bins)


@router.get("/api/results/{run_id}/report.html", tags=["results"], response_class=HTMLResponse)
def download_report(request: Request, run_id: int):
    """The run's self-contained HTML report (as `iofleet report ID`): opens offline."""
    with open_store(request) as store:
        run = load_run(store, run_id)
        return attachment(run_report_html(run, store.run_series(run)), f"report-{run_id}.html", "text/html")


@router.get("/api/results/{run_id}/bundle.zip", tags=["results"])
def download_bundle(request: Request, run_id: int):
    """Everything of the run in one zip (as `iofleet results export ID --format zip`): report,
    summaries, tables, run.json, tests.csv, plan, and each test's raw fio output, job file and logs."""
    with open_store(request) as store:
        return attachment(run_bundle(store, load_run(store, run_id)), f"iofleet-run-{run_id}.zip", "application/zip")


@router.get("/api/results/{run_id}/tests.csv", tags=["results"])
def download_csv(request: Request, run_id: int):
    """One CSV row per test (as `iofleet results export ID --format csv`); units are in the column names."""
    with open_store(request) as store:
        run = load_run(store, run_id)
    return attachment(run_to_csv(run), f"iofleet-run-{run_id}-tests.csv", "text/csv")


@router.get("/api/results/{run_id}/tests/{seq}/files/{name}", tags=["results"])
def download_test_file(request: Request, run_id: int, seq: int, name: str):
    """One raw file of test `seq` (0-based): fio-output.json, job.fio or a per-second log.
    Only the names listed in the run document's test (GET /api/results/ID) exist."""
    with open_store(request) as store:
        run = load_run(store, run_id)
        test = next((t for t in run.tests if t.seq == seq), None)
        if test is None:
            raise NotFound(f"run {run_id} has no test {seq}")
        if name not in test.artifacts:  # the store's list, never the file system
            raise NotFound(f"test {seq} of run {run_id} has no file {name!r}; it has: "
                           f"{', '.join(test.artifacts) or 'none'}")
        data = store.read_artifact(test.pk, name)
    media = "application/json" if name.endswith(".json") else "text/plain; charset=utf-8"
    folder = Path(test.artifact_dir).name  # NNNN-ID, made safe by the store
    return attachment(data, f"iofleet-run-{run_id}-{folder}-{name}", media)


# ---- pages -----------------------------------------------------------------

@router.get("/results", include_in_schema=False)
def results_page(request: Request, label: str = "", plan: str = "", status: str = "", since: str = "",
                 until: str = ""):
    form = {"label": label, "plan": plan, "status": status, "since": since, "until": until}
    try:
        runs, error = list_results(request, **form), None
    except StoreDamagedError:
        raise  # a page of its own, not a filter's message
    except IofleetError as exc:
        runs, error = [], str(exc)
    context = dict(runs=runs, error=error, filtered=any(v.strip() for v in form.values()))
    if request.headers.get("HX-Request"):  # the filter form swaps only the table
        return HTMLResponse(fragment("results_table.html.j2", **context))
    return render(request, "results.html.j2", "Results", form=form, statuses=RUN_STATUSES, **context)


@router.get("/results/{run_id}", include_in_schema=False)
def result_page(request: Request, run_id: int):
    with open_store(request) as store:
        try:
            run = load_run(store, run_id)
        except NotFound as exc:
            return render(request, "results_missing.html.j2", "No such run", status_code=404, message=str(exc))
        context = run_report_context(run, store.run_series(run))  # reads each test's series: store open
    return render(request, "results_run.html.j2", **context, charts=True, run_id=run_id, files=raw_files(run))
