"""Crash and resume with the real fio: `kill -9` of `iofleet run` mid-plan,
then `iofleet run --resume RUN` runs only the tests that did not finish."""

import re
import sqlite3
import time
from datetime import datetime

import pytest

from iofleet.errors import IofleetError
from iofleet.fleet.fio_link.procs import fio_using
from iofleet.plan import expand
from iofleet.plan.load import load_plan
from iofleet.results.store import Store
from iofleet.studies.run import prepare_resume

from ..cli import iofleet, wait_for, write_plan

# Four short tests.
WORKLOADS = [{"name": "w", "bs": "4k", "matrix": {"read_pct": [100, 70, 30, 0]}}]
DEFAULTS = {"size": "16m", "runtime": "2s", "ramp": "0s", "iodepth": 4}


def stored_tests(db) -> list[tuple]:
    """(seq, test id, status, started_at) of the stored tests, read the way
    another program would while the run goes on: read-only."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT seq, test_id, status, started_at FROM tests ORDER BY seq").fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        conn.close()


def test_kill_9_mid_plan_then_resume_runs_only_the_rest(tmp_path, disk_dir, data_dir, spawn):
    plan = write_plan(tmp_path / "p.yaml", name="resume-me", defaults=DEFAULTS, workloads=WORKLOADS)
    ids = [s.id for s in expand(load_plan(plan))]
    assert len(ids) == 4
    db = data_dir / "results.db"
    proc = spawn("run", plan, "--target", disk_dir, data_dir=data_dir)

    # While it runs, nobody else may resume it.
    wait_for(lambda: len(stored_tests(db)) >= 1, what="test 1 stored")
    busy = iofleet("run", "--resume", "1", data_dir=data_dir, check_rc=2)
    assert busy.stderr.strip() == (f"error: run 1 is being run by another iofleet process (pid {proc.pid}); wait "
                                   f"for it to end, or stop it (Ctrl-C there), before resuming it")

    wait_for(lambda: len(stored_tests(db)) == 2, what="test 2 stored")
    proc.kill()  # SIGKILL: no handler, no clean-up
    proc.wait(timeout=10)
    killed_at = time.time()
    before = stored_tests(db)

    # The store is whole: two complete tests, the run left 'running' by no process.
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert [(seq, test, status) for seq, test, status, _ in before] == [(0, ids[0], "ok"), (1, ids[1], "ok")]
    with Store.open(data_dir) as store:
        run = store.get_run(1)
        assert run.status == "running" and store.list_runs()[0].held_by is None
        assert all(t.aggregate.all.iops > 0 and t.aggregate.all.percentiles_ns["p99"] > 0
                   for t in run.tests)
        # Another plan is refused: the stored one is what the run was.
        other = load_plan(write_plan(tmp_path / "other.yaml", name="resume-me", workloads=WORKLOADS,
                                     defaults=DEFAULTS | {"runtime": "3s"}))
        with pytest.raises(IofleetError, match="^plan 'resume-me' differs from the plan run 1 was started with "
                                               r"\(defaults\); resume without PLAN"):
            prepare_resume(store, 1, plan=other)
    # fio ended with iofleet (it would otherwise write on for its runtime).
    wait_for(lambda: not fio_using([disk_dir / "iofleet"]), timeout=5, what="the killed run's fio to end")
    assert "running (stale)" in iofleet("results", "list", data_dir=data_dir).stdout

    # No plan, no target: both come from the run's record.
    resumed = iofleet("run", "--resume", "1", data_dir=data_dir)
    assert f"Resuming run 1 (resume-me): 2 of 4 tests kept (2 ok); running 2: 3/4 {ids[2]}, 4/4 {ids[3]}" \
        in resumed.stdout
    assert f"ok      3/4 {ids[2]}" in resumed.stdout and f"ok      4/4 {ids[3]}" in resumed.stdout
    assert "Run 1 complete: 4 of 4 tests ok." in resumed.stdout
    assert "Run 1 · resume-me · complete" in resumed.stdout  # the summary of the whole run
    assert re.search(rf"^Resumed at \S+: ran {ids[2]}, {ids[3]}\.( The data files were written again first "
                     rf"\(\d+\.\d s\)\.)?$", resumed.stdout, re.M), resumed.stdout
    after = stored_tests(db)
    assert [(seq, test, status) for seq, test, status, _ in after] == [(i, ids[i], "ok") for i in range(4)]
    assert after[:2] == before  # the finished tests are untouched
    assert all(datetime.fromisoformat(started).timestamp() > killed_at for _, _, _, started in after[2:])
    with Store.open(data_dir) as store:
        run = store.get_run(1)
        assert run.status == "complete" and run.ended_at
        assert all(t.aggregate.all.iops > 0 for t in run.tests)
        assert run.methodology.resumes[0].tests == ids[2:]
        assert run.to_dict()["tests"][3]["all"]["iops"] > 0
    # The killed run's data files were reused, then removed with its directory.
    assert not (disk_dir / "iofleet").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    again = iofleet("run", "--resume", "1", data_dir=data_dir, check_rc=2)
    assert again.stderr.strip() == "error: run 1 is complete (4 of 4 tests ok); there is nothing to resume"
