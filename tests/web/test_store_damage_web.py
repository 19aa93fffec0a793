"""The web server on huge run ids and on a results store damaged while it
serves (issue 16, items 8 and 9): a 404 naming the run, and a 503 with the
one-line message (JSON for the API, a page for pages); never a 500."""

import os

import pytest

from iofleet.results.ingest import import_outputs
from iofleet.results.store import DB_NAME, Store

from ..conftest import ROOT
from ..webserver import start_server

pytestmark = pytest.mark.integration

OUTPUT = ROOT / "tests" / "fixtures" / "fio" / "single-job-json+.json"
HUGE = "99999999999999999999"
PAGE = 4096


def test_huge_run_ids_are_404_and_a_damaged_store_is_503_with_what_to_do(tmp_path):
    data = tmp_path / "data"
    with Store.open(data) as store:
        for _ in range(3):
            import_outputs(store, [OUTPUT])
    server = start_server(data)
    try:
        client = server.client()
        for path in (f"/api/results/{HUGE}", f"/api/results/{HUGE}/report.html", f"/api/results/{HUGE}/bundle.zip",
                     f"/api/results/{HUGE}/tests.csv", f"/api/results/{HUGE}/tests/0/files/fio-output.json"):
            r = client.get(path)
            assert r.status_code == 404 and r.json()["error"] == f"no run {HUGE} in this store; see GET /api/results"
        page = client.get(f"/results/{HUGE}")
        assert page.status_code == 404 and f"no run {HUGE} in this store" in page.text
        r = client.get(f"/api/compare?runs=1&runs={HUGE}")
        assert r.status_code == 400 and r.json()["error"].startswith(f"CONFIG {HUGE}: no run {HUGE} in ")
        assert client.get("/api/results/1/tests/99999999999999999999/files/x").status_code == 404

        # Damaged while the server runs: the pages of the tests table and its index.
        db = data / DB_NAME
        with open(db, "r+b") as f:
            f.seek(3 * PAGE)
            f.write(os.urandom(2 * PAGE))
        message = (f"{db} is damaged (database disk image is malformed); see what with `iofleet results check "
                   f"--data-dir {data}`, and copy the runs that can still be read to a new store with "
                   f"`iofleet results recover --data-dir {data}`")
        for path in ("/api/results", "/api/results/1", "/api/results/1/report.html", "/api/results/1/bundle.zip",
                     "/api/results/1/tests.csv", "/api/compare?runs=1&runs=2"):
            r = client.get(path)
            assert r.status_code == 503 and r.json() == {"error": message, "problems": [message]}, path
        for path in ("/results", "/results?label=x", "/results/1", "/compare", "/compare?runs=1&runs=2"):
            r = client.get(path)
            assert r.status_code == 503 and "text/html" in r.headers["content-type"], path
            assert "<h1>Results store damaged</h1>" in r.text and "iofleet results recover --data-dir" in r.text
        assert client.get("/api/session").status_code == 200  # the server itself is fine
    finally:
        log = server.stop()
    assert "Traceback" not in log and " 500 " not in log
