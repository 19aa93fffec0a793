"""The SQLite results store: exact round trips, atomic test saves, migrations."""

import gzip
import os
import sqlite3
import zipfile
from pathlib import Path

import pytest

from iofleet.errors import IofleetError, StoreDamagedError, StoreError
from iofleet.results.store import schema as store_mod
from iofleet.fio.records import DiskUtil, Series
from iofleet.fleet.metrics.records import HostCpu
from iofleet.results.store import SCHEMA_VERSION, RunFilter, Store, default_data_dir

from .store_records import PLAN, aggregate, job, new_run, save, spec


@pytest.fixture
def st(tmp_path):
    with Store.open(tmp_path / "data") as s:
        yield s


# ---- opening ----------------------------------------------------------------

def test_open_creates_dir_db_wal_and_foreign_keys(tmp_path):
    with Store.open(tmp_path / "a" / "b") as st:
        assert st.path == tmp_path / "a" / "b" / "results.db"
        assert st.path.exists()
        assert st._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert st._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("IOFLEET_DATA", str(tmp_path / "env"))
    assert default_data_dir("/x/y") == default_data_dir("/x/y") and str(default_data_dir("/x/y")) == "/x/y"
    assert default_data_dir(None) == tmp_path / "env"
    monkeypatch.delenv("IOFLEET_DATA")
    assert str(default_data_dir(None)) == "iofleet-data"


def test_not_sqlite_file_is_refused_naming_it(tmp_path):
    (tmp_path / "results.db").write_text("this is a plan file, not a database\n" * 100)
    with pytest.raises(StoreDamagedError) as e:  # issue 16: with what to do (results check/recover)
        Store.open(tmp_path)
    assert str(tmp_path / "results.db") in str(e.value)
    assert "\n" not in str(e.value)


def test_empty_v0_db_is_migrated(tmp_path):
    sqlite3.connect(tmp_path / "results.db").close()  # valid, empty, user_version 0
    with Store.open(tmp_path) as st:
        assert st._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        run_id = new_run(st)
        assert st.get_run(run_id).status == "running"


def test_newer_schema_is_refused(tmp_path):
    Store.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "results.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="upgrade iofleet") as e:
        Store.open(tmp_path)
    assert "\n" not in str(e.value)
    # Refused, not touched.
    conn = sqlite3.connect(tmp_path / "results.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


def test_older_db_is_migrated_forward_keeping_data(tmp_path, monkeypatch):
    with Store.open(tmp_path) as st:
        run_id = new_run(st)
    monkeypatch.setattr(store_mod, "MIGRATIONS",
                        store_mod.MIGRATIONS + ["ALTER TABLE runs ADD COLUMN operator TEXT;"])
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with Store.open(tmp_path) as st:
        assert st._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert st._conn.execute("SELECT operator FROM runs WHERE id = ?", (run_id,)).fetchone()[0] is None
        assert st.get_run(run_id).id == run_id


def test_failed_migration_leaves_previous_version(tmp_path, monkeypatch):
    Store.open(tmp_path).close()
    monkeypatch.setattr(store_mod, "MIGRATIONS", store_mod.MIGRATIONS + [
        "ALTER TABLE runs ADD COLUMN operator TEXT; CREATE TABLE runs (x);"])
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError):
        Store.open(tmp_path)
    conn = sqlite3.connect(tmp_path / "results.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    assert "operator" not in cols


# ---- runs and tests ---------------------------------------------------------

def test_round_trip_two_tests_exactly(st):
    run_id = new_run(st, label="baseline")
    jobs0 = [job("h1", 0), job("h2", 0, reads=0), job("h2", 1)]
    jobs1 = [job("h1", 0, writes=0)]
    disks = [DiskUtil("h1", "nvme0n1", 99.87, 1000, 400), DiskUtil("h2", "sdb", 12.0, 0, 5)]
    pk0 = save(st, run_id, 0, jobs=jobs0, disks=disks)
    pk1 = save(st, run_id, 1, jobs=jobs1, status="partial", error="fio: host h2 lost",
               host_cpu=HostCpu(0, None, None), test=spec("8k-r0-seq-j1-qd1", bs=8192, direct=False))
    st.finish_run(run_id, "partial", note="h2 lost")

    run = st.get_run(run_id)
    assert run.id == run_id and run.label == "baseline" and run.plan_text == PLAN
    assert run.plan_name == "demo" and run.source == "run" and run.status == "partial"
    assert run.fio_version == "fio-3.36" and run.tests_planned == 2 and run.note == "h2 lost"
    assert run.host_facts == {"hostname": "h1", "cpus": 16, "memory_bytes": 64 * 2**30}
    assert run.created_at.endswith("Z") and run.ended_at >= run.created_at

    t0, t1 = run.tests
    assert (t0.pk, t0.seq, t1.pk, t1.seq) == (pk0, 0, pk1, 1)
    assert t0.id == "4k-r70-rand-j2-qd8" and t0.workload == "oltp" and t0.repeat == 1
    assert t0.params == spec("x").params
    assert t0.status == "ok" and t0.error is None
    assert t0.started_at == "2024-05-01T10:00:00Z" and t0.ended_at == "2024-05-01T10:01:10Z"
    assert t0.host_cpu == HostCpu(70, 41.25, 97.5)
    assert t0.aggregate == aggregate(jobs0)
    assert t0.jobs == jobs0
    assert t0.disks == disks
    # Types survive too: bins keys are ints, big ints stay ints.
    b = t0.aggregate.read.bins
    assert all(type(k) is int for k in b) and 2**40 in b
    assert type(t0.jobs[0].read.lat_max_ns) is int

    assert t1.status == "partial" and t1.error == "fio: host h2 lost"
    assert t1.id == "8k-r0-seq-j1-qd1" and t1.params["direct"] is False
    assert t1.host_cpu == HostCpu(0, None, None)
    assert t1.jobs == jobs1 and t1.aggregate == aggregate(jobs1)
    # A study reading the test that just ended gets it alone, the same as in the whole run.
    (only,) = st.get_run(run_id, from_seq=1).tests
    assert only == t1


def test_failed_test_without_measurements(st):
    run_id = new_run(st)
    save(st, run_id, 0, status="failed", error="fio: pid=1, err=2/file:filesetup.c", jobs=[],
         aggregate=None, host_cpu=None, disks=[])
    t = st.get_run(run_id).tests[0]
    assert t.aggregate is None and t.host_cpu is None and t.jobs == [] and t.disks == []
    assert t.error == "fio: pid=1, err=2/file:filesetup.c"


def test_list_runs_newest_first_with_counts(st):
    assert st.list_runs() == [] and st.latest_run_id() is None
    a = new_run(st)
    save(st, a, 0)
    save(st, a, 1, status="failed", jobs=[], aggregate=None)
    st.finish_run(a, "complete")
    b = new_run(st, label="second", plan_name="other")
    save(st, b, 0, status="interrupted")
    runs = st.list_runs()
    assert [r.id for r in runs] == [b, a] and st.latest_run_id() == b
    assert runs[0].label == "second" and runs[0].plan_name == "other"
    assert runs[0].status == "running" and runs[1].status == "complete"
    assert runs[1].tests_by_status == {"ok": 1, "failed": 1, "interrupted": 0, "partial": 0}
    assert runs[0].tests_by_status == {"ok": 0, "failed": 0, "interrupted": 1, "partial": 0}
    assert runs[1].tests_saved == 2 and runs[1].tests_planned == 2
    assert runs[0].created_at


def test_list_runs_filters_and_says_which_are_stale(st):
    a = new_run(st, label="Base-line", plan_name="oltp")
    st.finish_run(a, "complete")
    b = new_run(st, label="tuned", plan_name="oltp-big")
    c = new_run(st, plan_name="seq")
    st.release_run(c)  # as after a crash: running, held by no process

    def ids(**where):
        return [r.id for r in st.list_runs(RunFilter(**where))]

    assert ids() == [c, b, a]
    assert ids(label="BASE") == [a] and ids(plan="oltp") == [b, a] and ids(status="running") == [c, b]
    assert ids(plan="oltp", status="complete") == [a] and ids(limit=2) == [c, b] and ids(label="none") == []
    day = st.list_runs()[0].created_at[:10]
    assert ids(since=day, until=day) == [c, b, a] and ids(until="2000-01-01") == []
    assert [(r.id, r.stale, r.held_by) for r in st.list_runs()] == [(c, True, None), (b, False, os.getpid()),
                                                                    (a, False, None)]
    for bad, message in ((dict(status="done"), "status 'done': use one of running, complete"),
                         (dict(since="2025-02-30"), "since '2025-02-30': give a day as YYYY-MM-DD"),
                         (dict(limit=0), "limit 0: give a number of runs, 1 or more")):
        with pytest.raises(IofleetError, match=message):
            RunFilter(**bad)


def test_update_run(st):
    run_id = new_run(st, fio_version=None, host_facts={})
    st.update_run(run_id, fio_version="fio-3.37", host_facts={"kernel": "6.8.0"})
    run = st.get_run(run_id)
    assert run.fio_version == "fio-3.37" and run.host_facts == {"kernel": "6.8.0"}
    with pytest.raises(TypeError):
        st.update_run(run_id, status="complete")


def test_missing_run(st):
    with pytest.raises(StoreError, match=r"no run 42 in .*results\.db; see `iofleet results list`"):
        st.get_run(42)
    with pytest.raises(StoreError, match="no run 42"):
        st.finish_run(42, "complete")
    with pytest.raises(StoreError, match="no run 42"):
        save(st, 42, 0)


def test_run_ids_are_not_reused(st):
    a = new_run(st)
    st._conn.execute("DELETE FROM runs WHERE id = ?", (a,))
    assert new_run(st) == a + 1


def test_bad_status_is_a_bug(st):
    run_id = new_run(st)
    with pytest.raises(ValueError):
        save(st, run_id, 0, status="done")
    with pytest.raises(ValueError):
        st.finish_run(run_id, "ok")


# ---- atomicity --------------------------------------------------------------

def _row_counts(st):
    return {t: st._conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("tests", "test_directions", "jobs", "job_directions", "disks", "series", "artifacts")}


def test_failing_insert_midway_leaves_nothing(st):
    run_id = new_run(st)
    save(st, run_id, 0, artifacts={"fio.json": b"{}"})
    before = _row_counts(st)
    files_before = sorted(p for p in st.data_dir.rglob("*") if p.is_file())
    # Two jobs with the same host and index: the second job insert fails, after
    # the test row, its aggregate and the first job were written.
    bad_jobs = [job("h1", 0), job("h1", 0)]
    with pytest.raises(sqlite3.IntegrityError):
        save(st, run_id, 1, jobs=bad_jobs, artifacts={"fio.json": b"x"})
    assert _row_counts(st) == before
    assert sorted(p for p in st.data_dir.rglob("*") if p.is_file()) == files_before
    # Still usable, and the same seq can be saved properly.
    save(st, run_id, 1)
    assert [t.seq for t in st.get_run(run_id).tests] == [0, 1]


def test_failure_after_artifacts_written_removes_them(st, monkeypatch):
    run_id = new_run(st)
    series = [Series("h1", 0, "iops", "read", [1000, 2000], [5.0, 6.0])]
    conn = st._conn
    seen_files = []

    class FailingConn:
        """The real connection, except that the artifacts insert (the last
        step, after files, series and jobs were written) fails."""

        def __getattr__(self, name):
            return getattr(conn, name)

        def executemany(self, sql, rows):
            if "INSERT INTO artifacts" in sql:
                seen_files.extend(p.name for p in st.data_dir.rglob("*") if p.is_file() and p.suffix != ".db")
                raise RuntimeError("disk full")
            return conn.executemany(sql, rows)

    monkeypatch.setattr(st, "_conn", FailingConn())
    with pytest.raises(RuntimeError, match="disk full"):
        save(st, run_id, 0, series=series, artifacts={"fio.json": b"{}", "job.fio": b"[x]"})
    monkeypatch.undo()
    assert "files.zip" in seen_files  # written before the commit
    assert all(n == 0 for n in _row_counts(st).values())
    assert not (st.data_dir / "artifacts" / f"run-{run_id}").exists()
    assert not st._conn.in_transaction
    save(st, run_id, 0, series=series, artifacts={"fio.json": b"{}"})
    assert len(st.get_run(run_id).tests) == 1


def test_duplicate_seq_does_not_touch_saved_artifacts(st):
    run_id = new_run(st)
    pk = save(st, run_id, 0, artifacts={"fio.json": b"original"})
    with pytest.raises(sqlite3.IntegrityError):
        save(st, run_id, 0, artifacts={"fio.json": b"overwritten"})
    assert st.read_artifact(pk, "fio.json") == b"original"


# ---- series and artifacts ---------------------------------------------------

def test_series_round_trip(st):
    run_id = new_run(st)
    series = [
        Series("h1", 0, "iops", "read", list(range(1000, 601_000, 1000)),
               [i * 1.1 + 1 / 3 for i in range(600)]),
        Series("h1", 0, "lat_ns", "write", list(range(1000, 601_000, 1000)),
               [float(2**53 - i) for i in range(600)]),
        Series("h2", 3, "bw_bytes_s", "read", [], []),
    ]
    pk = save(st, run_id, 0, series=series)
    other = save(st, run_id, 1, series=series[:1])
    assert st.get_series(pk) == series
    assert st.get_series(other) == series[:1]
    assert st.get_series(9999) == []
    # One row per series, not per sample.
    assert st._conn.execute("SELECT count(*) FROM series").fetchone()[0] == 4


def test_artifacts_round_trip_in_one_zip_per_test(st):
    run_id = new_run(st)
    data = {"fio.json": b'{"fio version": "fio-3.36"}' * 1000, "job.fio": b"[global]\nbs=4k\n",
            "empty.log": b""}
    pk = save(st, run_id, 3, artifacts=data)
    t = st.get_run(run_id).tests[0]
    assert sorted(t.artifacts) == sorted(data)
    d = st.data_dir / "artifacts" / f"run-{run_id}" / "0003-4k-r70-rand-j2-qd8"
    assert t.artifact_dir == str(d)
    assert [p.name for p in d.iterdir()] == ["files.zip"]  # one file a test, no temp file left
    with zipfile.ZipFile(d / "files.zip") as z:  # a plain zip: unzip opens it
        assert z.testzip() is None
        assert {i.filename: z.read(i) for i in z.infolist()} == data
        assert z.getinfo("fio.json").compress_size < len(data["fio.json"]) / 10
    for name, content in data.items():
        assert st.read_artifact(pk, name) == content
    assert dict(st.read_artifacts(t)) == data
    with pytest.raises(StoreError, match="no artifact 'nope'"):
        st.read_artifact(pk, "nope")


def test_artifacts_of_a_store_written_one_gzip_per_file_still_read(st):
    """Before issue 19 each artifact was <name>.gz in the test's directory."""
    run_id = new_run(st)
    data = {"fio-output.json": b'{"fio version": "fio-3.33"}', "job.fio": b"[x]\n", "series_iops.1.log": b""}
    pk = save(st, run_id, 0, artifacts=data)
    t = st.get_run(run_id).tests[0]
    d = Path(t.artifact_dir)
    (d / "files.zip").unlink()  # the test's directory as the old layout wrote it
    for name, content in data.items():
        (d / f"{name}.gz").write_bytes(gzip.compress(content))
    assert {n: st.read_artifact(pk, n) for n in data} == data
    assert dict(st.read_artifacts(t)) == data
    (d / "job.fio.gz").write_bytes(b"not gzip")
    with pytest.raises(StoreError, match=r"cannot read artifact .*job\.fio\.gz"):
        st.read_artifact(pk, "job.fio")


def test_a_damaged_archive_is_a_store_error(st):
    run_id = new_run(st)
    pk = save(st, run_id, 0, artifacts={"fio.json": b"{}" * 1000})
    archive = Path(st.get_run(run_id).tests[0].artifact_dir) / "files.zip"
    archive.write_bytes(archive.read_bytes()[:-30])  # cut short
    with pytest.raises(StoreError, match=r"cannot read artifact .*files\.zip"):
        st.read_artifact(pk, "fio.json")


def test_artifact_names_must_be_plain(st):
    run_id = new_run(st)
    with pytest.raises(ValueError):
        save(st, run_id, 0, artifacts={"../escape": b"x"})


def test_test_ids_with_odd_characters_make_safe_dirs(st):
    run_id = new_run(st)
    pk = save(st, run_id, 0, test=spec("my/wl.4k-r70"), artifacts={"a": b"1"})
    assert st.get_run(run_id).tests[0].artifact_dir.endswith("0000-my_wl.4k-r70")
    assert st.read_artifact(pk, "a") == b"1"


def test_reopen_sees_everything(tmp_path):
    with Store.open(tmp_path) as st:
        run_id = new_run(st)
        save(st, run_id, 0, artifacts={"a": b"1"})
        before = st.get_run(run_id)
    with Store.open(tmp_path) as st:
        assert st.get_run(run_id) == before


def test_crash_before_commit_leaves_no_row(tmp_path):
    """A process killed mid-save (files written, row not committed) leaves no test row."""
    import subprocess
    import sys
    import textwrap

    with Store.open(tmp_path) as st:
        run_id = new_run(st)
    code = textwrap.dedent(f"""
        import os
        from iofleet.results.store import Store, artifacts
        from iofleet.results.model import TestInfo
        artifacts.fsync_dir = lambda d: os._exit(9)  # die after the files, before COMMIT
        st = Store.open({str(tmp_path)!r})
        st.save_test({run_id}, seq=0, test=TestInfo("4k-r70-rand-j2-qd8", "w", 1, {{}}),
                     status="ok", error=None, started_at=None, ended_at=None, jobs=[],
                     aggregate=None, artifacts={{"fio.json": b"{{}}"}})
    """)
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == 9
    with Store.open(tmp_path) as st:
        assert st.get_run(run_id).tests == []
        assert all(n == 0 for n in _row_counts(st).values())
        leftover = tmp_path / "artifacts" / f"run-{run_id}" / "0000-4k-r70-rand-j2-qd8" / "files.zip"
        assert leftover.exists()  # an orphan file is harmless; a row without its file is not
        save(st, run_id, 0, artifacts={"fio.json": b"again"})  # the leftover file is replaced
        assert st.read_artifact(st.get_run(run_id).tests[0].pk, "fio.json") == b"again"
