"""The Results and Compare API and pages over plain HTTP, against a real
`iofleet serve`: filters, the run document, downloads (the same report, zip
and CSV as the CLI), 404s, path traversal, escaping of user text, and the
compare API against the compare study on the same store."""

import csv
import io
import json
import zipfile
from datetime import date, timedelta
from pathlib import Path

import pytest
from markupsafe import escape

from iofleet.report.compare import comparison_json
from iofleet.results.export import CSV_COLUMNS
from iofleet.results.model import Run
from iofleet.results.store import Store
from iofleet.studies.compare import run_compare

from ..conftest import ROOT
from ..webserver import start_server
from .results_store import HOSTILE, SECRET, stored_runs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return stored_runs(tmp_path_factory)


@pytest.fixture(scope="module")
def client(data):
    server = start_server(data)
    c = server.client()
    yield c
    c.close()
    server.stop()


def ids(response) -> list[int]:
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()]


def stored(data: Path, run_id: int) -> Run:
    with Store.open(data) as store:
        return store.get_run(run_id)


def test_list_and_its_filters(client, data):
    runs = client.get("/api/results").json()
    assert [r["id"] for r in runs] == [3, 2, 1]  # newest first
    first = runs[2]
    assert (first["label"], first["plan"], first["status"], first["source"], first["kind"], first["tests"]) == \
        ("alpha", "webres-a", "complete", "run", "run", 1)
    assert first["ended_at"] >= first["created_at"]
    day = date.fromisoformat(first["created_at"][:10])
    cases = {
        "label=alpha": [1], "label=ALP": [1], "label=gamma": [3], "label=alert": [2], "label=nothing": [],
        "plan=webres": [2, 1], "plan=webres-b": [2], "plan=import": [3],
        "status=interrupted": [3], "status=complete": [2, 1], "status=failed": [],
        f"since={day}&until={day}": [3, 2, 1], f"until={day - timedelta(days=1)}": [],
        f"since={day + timedelta(days=1)}": [], "plan=webres&status=complete&label=alpha": [1],
        "label=&plan=&status=&since=&until=": [3, 2, 1],  # what an untouched GET form sends
    }
    for query, expected in cases.items():
        assert ids(client.get(f"/api/results?{query}")) == expected, query


@pytest.mark.parametrize("query, problem", [("status=done", "status 'done': use one of running, complete"),
                                            ("since=2025-02-30", "since '2025-02-30': give a day as YYYY-MM-DD"),
                                            ("until=20250131", "until '20250131'")])
def test_a_bad_filter_is_a_400_saying_what_to_give(client, query, problem):
    r = client.get(f"/api/results?{query}")
    assert r.status_code == 400 and r.json()["error"].startswith(problem)


def test_list_page_filters_with_a_plain_get_form(client):
    page = client.get("/results?plan=webres&status=complete").text
    assert 'action="/results"' in page and 'method="get"' in page
    assert 'href="/results/1"' in page and 'href="/results/2"' in page and 'href="/results/3"' not in page
    assert '<option selected>complete</option>' in page and 'name="plan" value="webres"' in page
    # Checkboxes submit the ticked runs to the Compare page.
    assert 'action="/compare"' in page and 'name="runs" value="1"' in page
    # htmx asks for the table only.
    table = client.get("/results?label=gamma", headers={"HX-Request": "true"}).text
    assert table.startswith('<div id="runs">') and "<html" not in table and 'href="/results/3"' in table
    assert "No run matches" in client.get("/results?label=nothing").text
    bad = client.get("/results?since=yesterday")
    assert bad.status_code == 200 and "since &#39;yesterday&#39;: give a day as YYYY-MM-DD" in bad.text


def test_run_document_is_the_stored_run(client, data):
    doc = client.get("/api/results/1").json()
    assert doc == json.loads(json.dumps(stored(data, 1).to_dict()))
    assert doc["tests"][0]["all"]["iops"] > 0 and doc["label"] == "alpha"
    with_bins = client.get("/api/results/1?bins=true").json()
    assert with_bins["tests"][0]["all"]["lat_bins_ns"] and "lat_bins_ns" not in doc["tests"][0]["all"]


def disposition(response) -> str:
    assert response.status_code == 200, response.text
    return response.headers["content-disposition"]


def test_csv_download_holds_the_stored_iops(client, data):
    r = client.get("/api/results/1/tests.csv")
    assert disposition(r) == 'attachment; filename="iofleet-run-1-tests.csv"'
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    run = stored(data, 1).to_dict()
    got = [dict(zip(rows[0], row)) for row in rows[1:]]
    assert [(g["test_id"], float(g["all_iops"])) for g in got] == [(t["id"], t["all"]["iops"]) for t in run["tests"]]


def test_zip_bundle_has_the_report_and_run_json(client):
    r = client.get("/api/results/1/bundle.zip")
    assert disposition(r) == 'attachment; filename="iofleet-run-1.zip"'
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        names = set(z.namelist())
        assert {"iofleet-run-1/report.html", "iofleet-run-1/run.json", "iofleet-run-1/tests.csv"} <= names
        assert json.loads(z.read("iofleet-run-1/run.json"))["tests"][0]["id"] == "4k-r100-rand-j1-qd4"
        assert z.read("iofleet-run-1/report.html").startswith(b"<!DOCTYPE html>")
        assert "iofleet-run-1/tests/0000-4k-r100-rand-j1-qd4/job.fio" in names


def test_report_download_is_the_self_contained_report(client):
    r = client.get("/api/results/1/report.html")
    assert disposition(r) == 'attachment; filename="report-1.html"'
    html = r.text
    assert html.startswith("<!DOCTYPE html>") and "Run 1 · webres-a" in html
    assert "<script src=" not in html and "/static/" not in html, "plotly.js is inside, nothing is fetched"
    assert "default-src 'none'" in html and 'id="summary-table"' in html


def test_a_tests_raw_files_download_as_stored(client, data):
    doc = client.get("/api/results/1").json()
    run = stored(data, 1)
    names = run.tests[0].artifacts
    assert {"fio-output.json", "job.fio"} <= set(names)
    with Store.open(data) as store:
        for name in names:
            r = client.get(f"/api/results/1/tests/0/files/{name}")
            assert r.content == store.read_artifact(run.tests[0].pk, name)
            assert disposition(r) == f'attachment; filename="iofleet-run-1-0000-{doc["tests"][0]["id"]}-{name}"'
            assert r.headers["x-content-type-options"] == "nosniff"
    page = client.get("/results/1").text
    for name in names:
        assert f'href="/api/results/1/tests/0/files/{name}"' in page


@pytest.mark.parametrize("path", ["/api/results/99", "/api/results/99/report.html", "/api/results/99/bundle.zip",
                                  "/api/results/99/tests.csv", "/api/results/99/tests/0/files/job.fio",
                                  "/api/results/1/tests/7/files/job.fio"])
def test_missing_runs_and_tests_are_404(client, path):
    r = client.get(path)
    assert r.status_code == 404 and r.json()["error"].startswith(("no run 99", "run 1 has no test 7"))


def test_missing_run_page_is_a_404_page(client):
    r = client.get("/results/99")
    assert r.status_code == 404 and "no run 99" in r.text and r.headers["content-type"].startswith("text/html")


# Three levels up from a test's artifact folder is the data directory.
TRAVERSALS = [
    "../../../results.db", "../../../secret.txt", "../../../../data/secret.txt", "..%2f..%2f..%2fresults.db",
    "%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt", "%2e%2e/%2e%2e/%2e%2e/secret.txt",
    "..", "%2e%2e", "%2E%2E%2F%2E%2E%2Fsecret.txt", "..%5c..%5c..%5c..%5csecret.txt", "%252e%252e%252fsecret.txt",
    "/etc/passwd", "%2Fetc%2Fpasswd", "%2F" + "%2F".join(str(ROOT).split("/")[1:]) + "%2Fpyproject.toml",
    "extra.txt", "extra.txt.gz", "job.fio.gz", "job.fio%00", "job.fio/..", "./job.fio", ".%2fjob.fio",
]


@pytest.mark.parametrize("name", TRAVERSALS)
def test_downloads_never_leave_the_stores_file_list(client, name):
    # The raw target goes on the wire as is: httpx would otherwise resolve "..".
    target = f"/api/results/1/tests/0/files/{name}".encode()
    r = client.get("/api/results/1/tests.csv", extensions={"target": target})
    assert r.status_code == 404, (name, r.status_code)
    assert SECRET not in r.content and b"SQLite format" not in r.content and b"root:" not in r.content


def test_raw_targets_do_reach_the_server_unchanged(client):
    """The control for the traversal test: the target given is the one served."""
    r = client.get("/api/results/1/tests.csv", extensions={"target": b"/api/results/1/tests/0/files/job.fio"})
    assert r.status_code == 200 and r.text.startswith("; iofleet test")


def test_user_text_is_escaped_on_every_page(client):
    pages = {"list": ("/results", {}), "result": ("/results/2", {}),
             "compare": ("/compare", {"runs": ["1", "2"], "baseline": "1"}),
             "compare by label": ("/compare", {"runs": ["alpha", HOSTILE], "baseline": HOSTILE})}
    for what, (path, params) in pages.items():
        r = client.get(path, params=params)
        assert r.status_code == 200, what
        assert HOSTILE not in r.text, what
        assert str(escape(HOSTILE)) in r.text, what
        assert "script-src 'self'" in r.headers["content-security-policy"]


def test_compare_api_gives_what_the_compare_study_gives(client, data):
    r = client.get("/api/compare", params={"runs": ["1", "2"], "baseline": "2", "noise": 2})
    assert r.status_code == 200, r.text
    got = r.json()
    with Store.open(data) as store:
        assert got == json.loads(comparison_json(run_compare(store, ["1", "2"], "2", noise_pct=2)))
    # And the numbers are the runs' own: run 1's IOPS against run 2's.
    iops = {i: client.get(f"/api/results/{i}").json()["tests"][0]["all"]["iops"] for i in (1, 2)}
    row = next(row for row in got["tests"][0]["rows"] if row["metric"] == "iops")
    cells = {c["config"]: c for c in row["cells"]}
    assert cells["run 1"]["pct_change"] == pytest.approx((iops[1] - iops[2]) / iops[2] * 100)
    assert got["baseline"] == "run 2" and got["noise_pct"] == 2
    # By label: the label is the configuration's name; the baseline defaults to the first.
    by_label = client.get("/api/compare", params={"runs": ["alpha", HOSTILE]}).json()
    assert [c["name"] for c in by_label["configs"]] == ["alpha", HOSTILE] and by_label["baseline"] == "alpha"


@pytest.mark.parametrize("params, status, problem", [
    ({"runs": ["1", "99"]}, 400, "CONFIG 99: no run 99"),
    ({"runs": ["1", "no-such-label"]}, 400, "CONFIG 'no-such-label': no run has this label"),
    ({"runs": ["1"]}, 400, "compare needs at least two configurations"),
    ({}, 400, "compare needs at least two configurations"),
    ({"runs": ["1", "alpha"]}, 400, "CONFIG run 1 and alpha share run 1"),
    ({"runs": ["1", "2"], "noise": 150}, 422, None),
])
def test_compare_api_errors(client, params, status, problem):
    r = client.get("/api/compare", params=params)
    assert r.status_code == status, r.text
    if problem:
        assert r.json()["error"].startswith(problem)


def test_compare_page_shows_the_comparison_or_the_problem(client):
    page = client.get("/compare?runs=1&runs=2&baseline=2").text
    assert "Comparison against run 2" in page and "run 1 vs run 2" in page and 'data-chart="metric-1-1"' in page
    assert '<option value="2" selected>' in page and 'value="1" id="pick-1" checked' in page
    one = client.get("/compare?runs=1")
    assert one.status_code == 200 and 'id="compare-error"' in one.text
    assert "compare needs at least two configurations" in one.text and "Traceback" not in one.text
    empty = client.get("/compare").text
    assert "<h1>Compare</h1>" in empty and 'id="compare-error"' not in empty and "alpha" in empty
