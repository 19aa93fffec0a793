"""The store survives concurrent creation and says clearly when it is
damaged (issue 16, items 8, 9 and 14): a corrupted results.db is one
StoreDamagedError naming the file and the fix; `check` says what is damaged;
`recover` copies every run that can still be read to a new store and never
touches the damaged file; a huge run id is "no run N"; several processes
creating one new store at once all succeed."""

import json
import multiprocessing
import os
import random
import sqlite3
from pathlib import Path

import pytest

from iofleet.errors import StoreDamagedError, StoreError
from iofleet.results.ingest import import_outputs
from iofleet.results.model import TestInfo
from iofleet.results.recover import check_store, recover_store
from iofleet.results.store import DB_NAME, RUN_TABLES, SCHEMA_VERSION, Store

from ..conftest import ROOT

FIO = ROOT / "tests" / "fixtures" / "fio"
OUTPUTS = ["single-job-json+.json", "multi-job-json+.json", "multi-job-json.json", "clat-only-json+.json",
           "clientserver-2hosts-json+.json"]


# ---- concurrent creation ------------------------------------------------------

def _create(data_dir: str, barrier, results) -> None:
    """One process: wait for the others, then open (create) the store and write a run."""
    try:
        barrier.wait(30)
        with Store.open(Path(data_dir)) as store:
            run_id = store.create_run(plan_name="p", plan_text="", source="import", fio_version=None,
                                      host_facts={}, tests_planned=0)
            store.finish_run(run_id, "complete")
        results.put(("ok", run_id))
    except BaseException as exc:  # reported to the test, whatever it is
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_processes_creating_one_new_store_at_once_all_succeed(tmp_path):
    ctx = multiprocessing.get_context("fork")
    n = 8
    for round_ in range(5):
        data = tmp_path / f"round{round_}"
        barrier, results = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=_create, args=(str(data), barrier, results)) for _ in range(n)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(30)
        assert [o for o in outcomes if o[0] != "ok"] == [], f"round {round_}"
        assert sorted(o[1] for o in outcomes) == list(range(1, n + 1))
        db = sqlite3.connect(data / DB_NAME)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        db.close()


# ---- a damaged database ---------------------------------------------------------

PAGE = 4096  # the store's page size (SQLite's default)


def stored(data_dir: Path, runs: int = 12) -> dict[int, dict]:
    """A store of real fio outputs imported as `runs` runs; each run's document."""
    with Store.open(data_dir) as store:
        ids = [import_outputs(store, [FIO / OUTPUTS[i % len(OUTPUTS)]], label=f"r{i + 1}") for i in range(runs)]
        return {i: store.get_run(i).to_dict() for i in ids}


def garbage_in_the_middle(db: Path) -> None:
    """Some pages in the middle of the file overwritten with random bytes."""
    pages = db.stat().st_size // PAGE
    with open(db, "r+b") as f:
        for page in (pages // 2, pages // 2 + 1):
            f.seek(page * PAGE)
            f.write(random.Random(page).randbytes(PAGE))


def truncated(db: Path) -> None:
    os.truncate(db, db.stat().st_size * 3 // 4 + 100)


def not_a_database(db: Path) -> None:
    db.write_text("name: a plan, saved over the database by mistake\n" * 200)


def header_overwritten(db: Path) -> None:
    with open(db, "r+b") as f:
        f.write(random.Random(1).randbytes(PAGE))


DAMAGES = [garbage_in_the_middle, truncated, not_a_database, header_overwritten]


def assert_one_line_naming_the_fix(exc: BaseException, db: Path) -> None:
    message = str(exc)
    assert "\n" not in message
    assert message.startswith(f"{db} is damaged (")
    assert f"`iofleet results check --data-dir {db.parent}`" in message
    assert f"`iofleet results recover --data-dir {db.parent}`" in message


def read_everything(data_dir: Path, ids) -> dict[int, dict]:
    """What each store read gives: a run's document, or the damage error
    (never an sqlite3 error, a traceback's worth)."""
    db = data_dir / DB_NAME
    out = {}
    try:
        with Store.open(data_dir) as store:
            for call in (store.list_runs, store.latest_run_id):
                try:
                    call()
                except StoreDamagedError as exc:
                    assert_one_line_naming_the_fix(exc, db)
            for run_id in ids:
                try:
                    run = store.get_run(run_id)
                    for t in run.tests:
                        store.get_series(t.pk)
                    out[run_id] = run.to_dict()
                except StoreDamagedError as exc:
                    assert_one_line_naming_the_fix(exc, db)
    except StoreDamagedError as exc:  # at open
        assert_one_line_naming_the_fix(exc, db)
    return out


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.__name__)
def test_a_damaged_store_is_one_line_and_recover_keeps_the_runs_that_read(tmp_path, damage):
    data = tmp_path / "data"
    originals = stored(data)
    db = data / DB_NAME
    damage(db)
    before = db.read_bytes()

    readable = read_everything(data, originals)
    assert readable.keys() != originals.keys()  # the damage is seen...
    for run_id, doc in readable.items():
        assert doc == originals[run_id]  # what still reads is exactly what was stored

    if damage in (not_a_database, header_overwritten):
        with pytest.raises(StoreError, match=r"is not an SQLite database .*: no run can be read"):
            check_store(data)
        with pytest.raises(StoreError, match=r"is not an SQLite database"):
            recover_store(data, tmp_path / "new")
        assert db.read_bytes() == before
        return

    report = check_store(data)
    assert not report.ok and report.problems  # SQLite's integrity check said what
    assert set(report.readable) | set(report.unreadable) == set(originals)

    saved = recover_store(data, tmp_path / "new")
    assert db.read_bytes() == before  # the damaged file is never changed
    assert saved.saved and saved.lost, "this damage should cost some runs, not all"
    assert sorted(saved.saved + list(saved.lost)) == sorted(originals)
    assert set(saved.saved) == set(report.readable)
    assert all(why for why in saved.lost.values())
    with Store.open(tmp_path / "new") as new:
        assert [r.id for r in new.list_runs()] == sorted(saved.saved, reverse=True)
        for run_id in saved.saved:
            run = new.get_run(run_id)
            assert run.to_dict() == originals[run_id]
            assert json.loads(new.read_artifact(run.tests[0].pk, "fio-output.json"))["fio version"]
        # A lost run's id is never given to a new run.
        assert import_outputs(new, [FIO / OUTPUTS[0]]) == max(originals) + 1
    assert check_store(tmp_path / "new").ok


def test_check_of_an_intact_store_is_ok(tmp_path):
    originals = stored(tmp_path, runs=3)
    report = check_store(tmp_path)
    assert report.ok and report.readable == sorted(originals) and report.problems == []


def test_recover_refuses_to_write_over_a_store_or_into_the_damaged_one(tmp_path):
    stored(tmp_path / "a", runs=1)
    stored(tmp_path / "b", runs=1)
    with pytest.raises(StoreError, match=r"already holds a results store; give a new or empty directory"):
        recover_store(tmp_path / "a", tmp_path / "b")
    with pytest.raises(StoreError, match=r"recover into another directory"):
        recover_store(tmp_path / "a", tmp_path / "a")
    with pytest.raises(StoreError, match=r"no results database at"):
        check_store(tmp_path / "nothing")


def test_every_table_of_a_run_is_walked_by_recover(tmp_path):
    """A table added by a later migration must be added to RUN_TABLES, or recover would drop it."""
    with Store.open(tmp_path):
        pass
    db = sqlite3.connect(tmp_path / DB_NAME)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"runs", "sqlite_sequence", *(t for t, _, _ in RUN_TABLES)}


# ---- huge run ids ---------------------------------------------------------------------

@pytest.mark.parametrize("run_id", [2**63, 99999999999999999999, 2**200])
def test_a_huge_run_id_is_no_such_run(tmp_path, run_id):
    stored(tmp_path, runs=1)
    with Store.open(tmp_path) as store:
        for call in (lambda: store.get_run(run_id), lambda: store.update_run(run_id, label="x"),
                     lambda: store.finish_run(run_id, "complete"),
                     lambda: store.save_test(run_id, seq=0, test=TestInfo("t", "w", 1, {}),
                                             status="ok", started_at=None, ended_at=None, jobs=[], aggregate=None)):
            with pytest.raises(StoreError, match=rf"^no run {run_id} in {tmp_path / DB_NAME}; see"):
                call()
        assert store.discard_orphan_artifacts(run_id) == []
        assert store.get_run(1).id == 1
