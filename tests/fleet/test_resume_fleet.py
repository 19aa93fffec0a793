"""`kill -9` of a fleet run, then `iofleet run --resume` on the same fio
servers, found again through the inventory path stored with the run."""

import time

import pytest

from iofleet.results.store import Store

from ..cli import iofleet, write_plan
from .helpers import SHORT, data_files, wait_for_jobs


@pytest.mark.scale  # about 28 s: `make test-scale` (make test keeps under 20 minutes)
def test_a_killed_fleet_run_is_resumed_on_the_same_hosts(tmp_path, make_fleet, data_dir, spawn):
    fleet = make_fleet(2)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="fleet-resume", prepare="none", defaults={**SHORT, "ramp": "0s"},
                      workloads=[{"name": "first"}, {"name": "long", "runtime": "6s", "read_pct": 0},
                                 {"name": "last", "read_pct": 50}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with Store.open(data_dir) as store:
            if store.list_runs() and store.list_runs()[0].tests_saved == 1:
                break
        time.sleep(0.2)
    for h in fleet.hosts:
        wait_for_jobs(fleet, h.name)
    proc.kill()
    proc.wait(timeout=10)
    # The fio client ends with iofleet, and tells the servers to stop their jobs.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(fleet.fio_processes(h.name) for h in fleet.hosts):
        time.sleep(0.2)
    assert {h.name: fleet.fio_processes(h.name) for h in fleet.hosts} == {h.name: [] for h in fleet.hosts}

    # Moved inventory: it must be given again.
    moved = inv.rename(tmp_path / "moved.yaml")
    refused = iofleet("run", "--resume", "1", data_dir=data_dir, check_rc=2)
    assert refused.stderr.strip() == (f"error: run 1 ran on hosts h1, h2 of {inv}, which is gone; give the "
                                      f"inventory again: iofleet run --resume 1 --hosts INVENTORY")
    other = tmp_path / "p.yaml"
    other.write_text(other.read_text().replace("6s", "2s"))  # not the run's plan: refused
    proc = iofleet("run", other, "--resume", "1", "--hosts", moved, data_dir=data_dir, check_rc=2)
    assert "differs from the plan run 1 was started with (workloads)" in proc.stderr

    resumed = iofleet("run", "--resume", "1", "--hosts", moved, data_dir=data_dir, timeout=200)
    assert "Resuming run 1 (fleet-resume): 1 of 3 tests kept (1 ok); running 2" in resumed.stdout
    assert "Run 1 complete: 3 of 3 tests ok." in resumed.stdout
    with Store.open(data_dir) as store:
        run = store.get_run(1)
    assert [t.status for t in run.tests] == ["ok", "ok", "ok"]
    assert all({j.host for j in t.jobs} == {"h1", "h2"} for t in run.tests)
    assert not data_files(fleet)
