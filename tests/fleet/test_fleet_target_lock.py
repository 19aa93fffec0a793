"""A fleet host's target belongs to one run at a time: two iofleet
processes on one controller cannot share it (issue 16, item 2)."""

import sqlite3

import pytest

from ..cli import iofleet, write_plan
from .helpers import SHORT, data_files, wait_for_jobs


@pytest.mark.scale  # about 20 s: `make test-scale` (make test keeps its 15 minutes)
def test_a_second_run_on_a_busy_fleet_target_is_refused(tmp_path, make_fleet, spawn):
    fleet = make_fleet(1)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="fleet-busy", prepare="none",
                      defaults={**SHORT, "ramp": "0s", "runtime": "3s"}, workloads=[{"name": "w"}])
    a, b = tmp_path / "a", tmp_path / "b"
    first = spawn("run", plan, "--hosts", inv, data_dir=a)
    wait_for_jobs(fleet, "h1")
    second = iofleet("run", plan, "--hosts", inv, data_dir=b, check_rc=None)
    host = fleet.hosts[0]
    assert second.returncode == 2
    assert second.stderr.strip() == (
        f"error: target {host.target} of {host.endpoint} is being tested by another iofleet run (pid {first.pid}, "
        f"run 1, results in {a.resolve()}); wait for it to end, or stop it (Ctrl-C there), then run again")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    assert "Run 1 complete: 1 of 1 tests ok" in out
    conn = sqlite3.connect(b / "results.db")
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    finally:
        conn.close()
    assert not data_files(fleet)
    # Released at the end: the next run goes.
    assert "Run 1 complete" in iofleet("run", plan, "--hosts", inv, data_dir=b, timeout=120).stdout
