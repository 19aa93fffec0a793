"""Readers of a test's raw files over both artifact layouts (one zip per
test since issue 19; one gzip per file before), and a run's series read
one test at a time."""

import gzip
import io
import json
import zipfile
from array import array
from pathlib import Path

import pytest

from iofleet.errors import StoreDamagedError
from iofleet.fio.records import Series
from iofleet.report.bundle import run_bundle
from iofleet.results.recover import recover_store
from iofleet.results.store import Store

from .store_records import new_run, save

FILES = {"job.h1.fio": b"[4k]\nrw=randrw\n", "fio-output.h1.json": b'{"fio version": "fio-3.33"}',
         "fio-messages.txt": b"== h1\nhostname=h1\n", "series_iops.1.log.h1": b"1000, 5, 0, 0, 0\n"}


@pytest.fixture
def st(tmp_path):
    with Store.open(tmp_path / "data") as s:
        yield s


def to_old_layout(directory: Path) -> None:
    """Rewrite a test's files.zip as the store wrote them before issue 19."""
    archive = directory / "files.zip"
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            (directory / f"{name}.gz").write_bytes(gzip.compress(z.read(name)))
    archive.unlink()


def test_bundle_and_recover_read_old_and_new_layouts(st, tmp_path):
    run_id = new_run(st)
    save(st, run_id, 0, artifacts=FILES)
    save(st, run_id, 1, artifacts=FILES | {"job.h2.fio": b"[64k]\n"})
    run = st.get_run(run_id)
    to_old_layout(Path(run.tests[0].artifact_dir))
    folders = [Path(t.artifact_dir).name for t in run.tests]
    with zipfile.ZipFile(io.BytesIO(run_bundle(st, run))) as z:
        for folder, expected in zip(folders, (FILES, FILES | {"job.h2.fio": b"[64k]\n"})):
            top = f"iofleet-run-{run_id}/tests/{folder}/"
            assert {n[len(top):]: z.read(n) for n in z.namelist() if n.startswith(top)} == expected
    report = recover_store(st.data_dir, tmp_path / "recovered")
    assert report.saved == [run_id] and report.missing_files == 0
    with Store.open(tmp_path / "recovered") as new:
        for t in new.get_run(run_id).tests:
            assert dict(new.read_artifacts(t))["job.h1.fio"] == FILES["job.h1.fio"]


def test_run_series_are_read_one_test_at_a_time(st, monkeypatch):
    run_id = new_run(st)
    first = [Series("h1", 0, "iops", "read", [1000, 2000], [5.0, 6.0])]
    save(st, run_id, 0, series=first)
    save(st, run_id, 1, series=first * 2)
    run = st.get_run(run_id)
    asked = []
    get_series = st.get_series
    monkeypatch.setattr(st, "get_series", lambda pk: asked.append(pk) or get_series(pk))
    series = st.run_series(run)
    assert asked == [] and len(series) == 2 and list(series) == [0, 1]
    assert series[0] == first and series.get(1) == first * 2 and series.get(7, []) == []
    assert asked == [run.tests[0].pk, run.tests[1].pk]


def test_run_series_of_a_closed_store_say_so(tmp_path):
    with Store.open(tmp_path) as store:
        run_id = new_run(store)
        save(store, run_id, 0)
        series = store.run_series(store.get_run(run_id))
    with pytest.raises(RuntimeError, match="inside `with Store.open"):
        series[0]


def test_histograms_stored_as_json_before_issue_19_still_read(st):
    """Bins are int64 pairs now; a store written before kept them as JSON text."""
    run_id = new_run(st)
    save(st, run_id, 0)
    before = st.get_run(run_id)
    assert st._conn.execute("SELECT typeof(bins) FROM job_directions WHERE bins IS NOT NULL").fetchone()[0] == "blob"
    rows = st._conn.execute("SELECT rowid, bins FROM job_directions WHERE bins IS NOT NULL").fetchall()
    with st._conn:
        for rowid, blob in rows:
            pairs = array("q", blob).tolist()
            st._conn.execute("UPDATE job_directions SET bins = ? WHERE rowid = ?",
                             (json.dumps([pairs[i:i + 2] for i in range(0, len(pairs), 2)]), rowid))
    assert st._conn.execute("SELECT typeof(bins) FROM job_directions WHERE bins IS NOT NULL").fetchone()[0] == "text"
    assert st.get_run(run_id) == before
    with st._conn:
        st._conn.execute("UPDATE job_directions SET bins = x'0102030405060708090a0b0c' WHERE rowid = ?", (rows[0][0],))
    with pytest.raises(StoreDamagedError, match="histogram is unreadable"):
        st.get_run(run_id)
