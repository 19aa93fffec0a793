"""One host's failure costs that host's data only, and a bounded time
(docs/fleet.md): a frozen host is lost soon after the test's planned end
with the other hosts' results kept, and a lost host's data files are named
as left behind, found by `hosts check` and removed once it is back."""

import json
import time

import pytest

from iofleet.fleet.fio_link.remote import LATE_HOST_S

from iofleet.results.store import Store

from ..cli import iofleet, show_json, write_plan
from .helpers import SHORT, host_files, wait_for_jobs


@pytest.mark.scale  # about 24 s: `make test-scale` (make test keeps under 20 minutes)
def test_a_frozen_host_is_lost_soon_after_the_planned_end_and_the_others_kept(tmp_path, make_fleet, data_dir,
                                                                               spawn):
    fleet = make_fleet(3)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    runtime = 4
    plan = write_plan(tmp_path / "p.yaml", name="freeze", prepare="none",
                      defaults={**SHORT, "ramp": "0s", "runtime": f"{runtime}s"}, workloads=[{"name": "w"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    wait_for_jobs(fleet, "h3")  # returns about 1 s into the test
    started = time.monotonic() - 1
    time.sleep(1)
    # Its IO hangs while its fio server still answers fio's client (which
    # so never gives up on it by itself).
    frozen = fleet.freeze("h3", io_only=True)
    assert frozen
    try:
        out, err = proc.communicate(timeout=runtime + 120)
        elapsed = time.monotonic() - started
    finally:
        fleet.thaw(frozen)
    # docs/fleet.md: lost LATE_HOST_S after its planned end, plus the delay
    # the finished hosts took (about a second); a few seconds more for the
    # clean-up of the others and the summary.
    assert elapsed < runtime + LATE_HOST_S + 6, out + err
    assert proc.returncode == 1, out + err
    run = show_json(1, data_dir)
    (test,) = run["tests"]
    assert run["status"] == "partial" and test["status"] == "partial"
    assert test["error"].startswith("lost host h3: no result ") and "after its planned end" in test["error"]
    assert set(test["hosts"]) == {"h1", "h2"}
    assert all(test["hosts"][h]["all"]["ios"] > 0 for h in ("h1", "h2"))
    assert test["all"]["ios"] == test["hosts"]["h1"]["all"]["ios"] + test["hosts"]["h2"]["all"]["ios"]
    assert "partial 1/1" in out and "lost host h3" in out
    with Store.open(data_dir) as store:
        (stored,) = store.get_run(1).tests
        assert {s.host for s in store.get_series(stored.pk)} == {"h1", "h2"}  # no second lacks a host
        kept = store.read_artifact(stored.pk, "fio-output.json").decode()
    # fio's client's own document, each host by its address (not its relay's).
    named = {e["hostname"] for e in json.loads(kept)["client_stats"]}
    assert {fleet.host("h1").address, fleet.host("h2").address} <= named and "127.100." not in kept
    # The frozen host was not waited for at clean-up: it is named, its files kept.
    assert "Removed iofleet's data files from 2 hosts, not from h3 (lost during the run" in out
    assert not host_files(fleet, "h1") and not host_files(fleet, "h2") and host_files(fleet, "h3")


@pytest.mark.scale  # about 21 s: `make test-scale` (make test keeps under 20 minutes)
def test_a_host_frozen_while_preparing_the_data_ends_the_run_in_bounded_time(tmp_path, make_fleet, data_dir,
                                                                              spawn):
    fleet = make_fleet(2)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="freeze-prep", defaults={**SHORT, "size": "256m"},
                      workloads=[{"name": "w"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    deadline = time.monotonic() + 60
    while not host_files(fleet, "h2"):  # preparation has begun writing h2's file
        assert time.monotonic() < deadline and proc.poll() is None, "h2's preparation never began"
        time.sleep(0.005)
    frozen = fleet.freeze("h2", io_only=True)
    started = time.monotonic()
    try:
        out, err = proc.communicate(timeout=180)
        elapsed = time.monotonic() - started
    finally:
        fleet.thaw(frozen)
    # docs/fleet.md: twice as long as its data takes at h1's pace, plus
    # LATE_HOST_S (h1 writes 256 MiB in well under 5 s here).
    assert elapsed < 2 * 5 + LATE_HOST_S + 6, out + err
    assert proc.returncode != 0
    assert "preparing the data failed: lost host h2: no result" in err + out
    assert "iofleet's data files are left on h2: once back, `iofleet hosts clean INVENTORY`" in err
    assert not host_files(fleet, "h1") and host_files(fleet, "h2")


def test_a_lost_hosts_files_are_named_then_found_and_removed_when_it_is_back(tmp_path, make_fleet, data_dir,
                                                                           spawn):
    fleet = make_fleet(2)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="kill", prepare="none",
                      defaults={**SHORT, "ramp": "0s", "runtime": "4s", "jobs": 3}, workloads=[{"name": "w"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    wait_for_jobs(fleet, "h2")
    fleet.kill_server("h2")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    assert "Removed iofleet's data files from the hosts." not in out
    assert ("Removed iofleet's data files from 1 host, not from h2 (lost during the run, or the removal failed): "
            "once back, `iofleet hosts check INVENTORY` finds them and `iofleet hosts clean INVENTORY` removes "
            "them") in " ".join(out.split())
    assert not host_files(fleet, "h1")
    assert len(host_files(fleet, "h2")) == 3

    fleet.restart_server("h2")
    check = iofleet("hosts", "check", inv, data_dir=data_dir)
    notes = [line for line in " ".join(check.stderr.split()).split("note: ") if "data files" in line]
    assert len(notes) == 1 and notes[0].startswith(
        f"host h2: iofleet's data files from an earlier run are left on target {fleet.host('h2').target}"), check.stderr
    assert f"`iofleet hosts clean {inv}` removes them" in notes[0]

    clean = iofleet("hosts", "clean", inv, data_dir=data_dir)
    assert clean.stdout.splitlines() == ["h1: 0 data files removed", "h2: 3 data files removed"], clean.stdout
    assert not host_files(fleet, "h2")


def test_the_next_run_removes_the_files_an_earlier_run_with_more_jobs_left(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(1)
    h1 = fleet.host("h1")
    # What a lost 5-job run leaves in iofleet's directory on the host
    # (fio names it <target>/<address>.iofleet), beside a file of the user's.
    own = h1.target / f"{h1.address}.iofleet"
    own.mkdir()
    for job in range(5):
        (own / f"iofleet-data.{job}.0").write_bytes(b"x" * 65536)
    (own / "notes.txt").write_text("not iofleet's")
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    small = write_plan(tmp_path / "small.yaml", name="small", prepare="none",
                       defaults={**SHORT, "ramp": "0s", "runtime": "1s", "jobs": 1}, workloads=[{"name": "w"}])
    out = iofleet("run", small, "--hosts", inv, data_dir=data_dir).stdout
    assert "Removed iofleet's data files from the hosts." in out
    assert not host_files(fleet, "h1")
    assert (own / "notes.txt").read_text() == "not iofleet's"
