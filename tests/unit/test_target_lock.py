"""Target locks and iofleet's record of its files (no fio needed)."""

import json
import os
import signal
import time

import pytest

from iofleet.errors import IofleetError
from iofleet.fleet.targets import lock as targets_lock
from iofleet.fleet.targets.files import RECORD_NAME, TargetDirs, data_file_name
from iofleet.fleet.targets.space import _held
from iofleet.fleet.targets.lock import LOCK_NAME, TargetBusy, holder_facts, lock_at, lock_fleet_target


@pytest.fixture
def machine_locks(tmp_path, monkeypatch):
    d = tmp_path / "locks"
    monkeypatch.setattr(targets_lock, "MACHINE_LOCKS", d)
    return d


def test_a_held_target_is_refused_naming_its_holder(tmp_path):
    first = TargetDirs([tmp_path])
    first.prepare(holder_facts(data_dir="/data/a"))
    first.locks[0].note(run=7)
    with pytest.raises(TargetBusy) as err:
        TargetDirs([tmp_path]).prepare()
    assert str(err.value) == (f"target {tmp_path} is being tested by another iofleet run (pid {os.getpid()}, "
                              f"run 7, results in /data/a); wait for it to end, or stop it (Ctrl-C there), then "
                              f"run again")
    first.cleanup()
    first.release()
    assert not (tmp_path / "iofleet").exists()  # made by the run: removed with its lock and record
    again = TargetDirs([tmp_path])
    again.prepare()
    again.release()


def test_the_lock_dies_with_its_process(tmp_path):
    """kill -9 of the holder frees the target at once: the kernel's lock."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the holder
        try:
            TargetDirs([tmp_path]).prepare()
            os.write(ready_w, b"x")
            time.sleep(60)
        finally:
            os._exit(0)
    os.read(ready_r, 1)
    with pytest.raises(TargetBusy, match=f"pid {pid}"):
        TargetDirs([tmp_path]).prepare()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    after = TargetDirs([tmp_path])
    after.prepare()
    after.release()


def test_a_lock_file_removed_by_its_holder_is_not_taken(tmp_path):
    """Opened just before its holder removed it: that lock is no one's, the
    new file is taken instead (no two runs each holding a file)."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    held = lock_at(fd, LOCK_NAME, "t", {})
    stale = os.open(LOCK_NAME, os.O_RDWR, dir_fd=fd)  # what a second process had open
    held.release()
    fresh = lock_at(fd, LOCK_NAME, "t", {})
    os.close(stale)
    with pytest.raises(TargetBusy):
        lock_at(fd, LOCK_NAME, "t", {})
    fresh.release()
    os.close(fd)


def test_symlink_and_non_directory_are_refused(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "iofleet-data.0.0").write_text("theirs")
    t1, t2 = tmp_path / "t1", tmp_path / "t2"
    t1.mkdir()
    t2.mkdir()
    (t1 / "iofleet").symlink_to(other)
    (t2 / "iofleet").write_text("a file")
    with pytest.raises(IofleetError, match=f"^target {t1}: {t1}/iofleet is a symbolic link \\(to {other}\\)"):
        TargetDirs([t1]).prepare()
    with pytest.raises(IofleetError, match=f"^target {t2}: {t2}/iofleet is not a directory"):
        TargetDirs([t2]).prepare()
    assert sorted(os.listdir(other)) == ["iofleet-data.0.0"]


@pytest.mark.parametrize("name", ["iofleet-data.0.0", "iofleet-data.x", "iofleet-probe"])
def test_files_iofleet_did_not_make_are_refused(tmp_path, name):
    own = tmp_path / "iofleet"
    own.mkdir()
    (own / name).write_text("mine")
    with pytest.raises(IofleetError, match=f"{own}/{name} was not made by iofleet"):
        TargetDirs([tmp_path]).prepare()
    assert sorted(os.listdir(own)) == [name]  # no lock or record left behind
    assert _held(tmp_path) == 0  # and not counted as iofleet's space


def test_only_recorded_regular_files_are_removed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    dirs = TargetDirs([tmp_path])
    dirs.prepare()
    dirs.claim(3)
    own = tmp_path / "iofleet"
    (own / data_file_name(0)).write_bytes(b"x" * 8192)
    (own / data_file_name(1)).symlink_to(victim)  # swapped in during the run: not followed, not removed
    (own / "notes.txt").write_text("a user's")
    assert json.loads((own / RECORD_NAME).read_text())["files"] == [
        "iofleet-data.0.0", "iofleet-data.1.0", "iofleet-data.2.0", "iofleet-probe"]
    assert _held(tmp_path) == 8192
    assert dirs.cleanup() == [own / data_file_name(0)]
    dirs.release()
    assert victim.read_text() == "keep me"
    assert sorted(os.listdir(own)) == [data_file_name(1), "notes.txt"]  # the record is gone: nothing left in it
    with pytest.raises(IofleetError, match=f"{own}/{data_file_name(1)} was not made by iofleet"):
        TargetDirs([tmp_path]).prepare()  # and the next run will not write through the link


def test_a_recorded_name_replaced_by_a_link_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    dirs = TargetDirs([tmp_path])
    dirs.prepare()
    dirs.claim(1)
    (tmp_path / "iofleet" / data_file_name(0)).write_text("data")
    dirs.release()  # kept
    (tmp_path / "iofleet" / data_file_name(0)).unlink()
    (tmp_path / "iofleet" / data_file_name(0)).symlink_to(victim)
    with pytest.raises(IofleetError, match=f"/iofleet/{data_file_name(0)} is not a regular file"):
        TargetDirs([tmp_path]).prepare()
    assert victim.read_text() == "keep me"


def test_kept_files_stay_recorded_for_the_next_run(tmp_path):
    dirs = TargetDirs([tmp_path])
    dirs.prepare()
    dirs.claim(2)
    own = tmp_path / "iofleet"
    (own / data_file_name(0)).write_text("data")
    dirs.release()  # keep_files: no cleanup
    assert json.loads((own / RECORD_NAME).read_text())["files"] == [data_file_name(0)]  # only what is there
    assert LOCK_NAME not in os.listdir(own)
    nxt = TargetDirs([tmp_path])
    nxt.prepare()
    assert nxt.cleanup() == [own / data_file_name(0)]
    nxt.release()
    assert os.listdir(own) == []


def test_fleet_targets_are_locked_per_endpoint_and_target(machine_locks):
    held = lock_fleet_target("10.0.0.1", 8765, "/data", holder_facts(data_dir="/a"))
    with pytest.raises(TargetBusy, match=r"^target /data of 10.0.0.1:8765 is being tested by another iofleet run "
                                         rf"\(pid {os.getpid()}, results in /a\)"):
        lock_fleet_target("10.0.0.1", 8765, "/data", {})
    other = [lock_fleet_target("10.0.0.1", 8765, "/data2", {}), lock_fleet_target("10.0.0.2", 8765, "/data", {})]
    held.release()
    again = lock_fleet_target("10.0.0.1", 8765, "/data", {})
    for lock in [again, *other]:
        lock.release()
    assert os.listdir(machine_locks) == []
