"""A target belongs to one run at a time, and iofleet deletes only what it
created (issue 16, items 2 and 4), with the real fio and the real CLI."""

import json
import os

import pytest

from iofleet.fleet.fio_link.procs import fio_using
from iofleet.plan import expand
from iofleet.plan.load import load_plan
from iofleet.results.store import Store
from iofleet.studies.run import RunSession

from ..cli import iofleet, wait_for, write_plan
from ..target_lock import DEFAULTS, ONE, TWO, holder, runs_in


def busy_line(target, pid, run, data_dir) -> str:
    return (f"error: target {target} is being tested by another iofleet run (pid {pid}, run {run}, results in "
            f"{data_dir}); wait for it to end, or stop it (Ctrl-C there), then run again")


def listing(d) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_second_run_on_a_busy_target_is_refused(tmp_path, disk_dir, spawn):
    """Two `iofleet run` on one target with different data dirs: the second
    is refused at once, naming the first; the first is not disturbed."""
    plan = write_plan(tmp_path / "p.yaml", name="busy", defaults=DEFAULTS | {"runtime": "2s"}, workloads=TWO)
    a, b = tmp_path / "a", tmp_path / "b"
    first = spawn("run", plan, "--target", disk_dir, data_dir=a)
    wait_for(lambda: "run" in holder(disk_dir / "iofleet" / ".iofleet-lock"), timeout=30,
             what="the first run's lock")
    second = iofleet("run", plan, "--target", disk_dir, data_dir=b, check_rc=None)
    assert second.returncode == 2
    assert second.stderr.strip() == busy_line(disk_dir, first.pid, 1, a.resolve())
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    assert "Run 1 complete: 2 of 2 tests ok" in out
    assert runs_in(b) == []  # the refused run stored nothing
    assert not (disk_dir / "iofleet").exists()  # the first run's cleanup ended whole


def test_a_run_between_tests_still_holds_its_target(tmp_path, disk_dir):
    """The lock covers the whole run, not only the moments fio has a file
    open: between two tests (no fio running) a second run is refused."""
    path = write_plan(tmp_path / "p.yaml", name="held", defaults=DEFAULTS, workloads=ONE,
                      targets=[str(disk_dir)])
    plan = load_plan(path)
    a, b = tmp_path / "a", tmp_path / "b"
    with Store.open(a) as store:
        session = RunSession(plan, path.read_text(), store, specs=expand(plan))
        try:
            assert not fio_using([disk_dir / "iofleet"])
            refused = iofleet("run", path, "--target", disk_dir, data_dir=b, check_rc=None)
            assert refused.returncode == 2
            assert refused.stderr.strip() == busy_line(disk_dir, os.getpid(), session.run_id, a.resolve())
        finally:
            session.__exit__(None, None, None)
    # Released with the session: the next run goes.
    assert "Run 1 complete: 1 of 1 tests ok" in iofleet("run", path, "--target", disk_dir, data_dir=b).stdout


def test_kill_9_leaves_no_lock(tmp_path, disk_dir, spawn):
    """The lock is the kernel's: a killed run holds nothing, and its data
    files are known as iofleet's, reused and removed by the next run."""
    plan = write_plan(tmp_path / "p.yaml", name="killed", defaults=DEFAULTS | {"runtime": "2s"}, workloads=ONE)
    a, b = tmp_path / "a", tmp_path / "b"
    proc = spawn("run", plan, "--target", disk_dir, data_dir=a)
    data = disk_dir / "iofleet" / "iofleet-data.0.0"
    wait_for(lambda: data.exists() and fio_using([disk_dir / "iofleet"]), timeout=30, what="the first run's test")
    proc.kill()
    proc.wait(timeout=10)
    wait_for(lambda: not fio_using([disk_dir / "iofleet"]), timeout=10, what="the killed run's fio to end")
    assert data.exists()

    quick = write_plan(tmp_path / "q.yaml", name="next", defaults=DEFAULTS, workloads=ONE)
    assert "Run 1 complete: 1 of 1 tests ok" in iofleet("run", quick, "--target", disk_dir, data_dir=b).stdout
    assert os.listdir(disk_dir / "iofleet") == []  # the killed run's file reused, then removed
    resumed = iofleet("run", "--resume", "1", data_dir=a)
    assert "Run 1 complete: 1 of 1 tests ok" in resumed.stdout
    assert not (disk_dir / "iofleet").exists()  # the killed run made it: its resume removed it


def test_symlinked_iofleet_dir_is_refused(tmp_path, disk_dir):
    target, other = disk_dir / "t2", disk_dir / "other"
    target.mkdir()
    other.mkdir()
    (other / "iofleet-data.keep").write_bytes(b"a user's file\n")
    (other / "notes.txt").write_bytes(b"notes\n")
    (target / "iofleet").symlink_to(other)
    before = listing(other)
    plan = write_plan(tmp_path / "p.yaml", name="link", defaults=DEFAULTS, workloads=ONE)
    proc = iofleet("run", plan, "--target", target, data_dir=tmp_path / "d", check_rc=None)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: target {target}: {target}/iofleet is a symbolic link (to {other}), and iofleet writes only in a "
        f"directory of its own; remove the link (`rm {target}/iofleet`), then run again")
    assert listing(other) == before  # nothing written there, nothing deleted
    assert (target / "iofleet").is_symlink()


@pytest.mark.parametrize("name", ["iofleet-data.keep", "iofleet-data.0.0"])
def test_a_users_file_in_iofleets_dir_is_refused(tmp_path, disk_dir, name):
    own = disk_dir / "iofleet"
    own.mkdir()
    (own / name).write_bytes(b"a user's file\n")
    plan = write_plan(tmp_path / "p.yaml", name="mine", defaults=DEFAULTS, workloads=ONE)
    proc = iofleet("run", plan, "--target", disk_dir, data_dir=tmp_path / "d", check_rc=None)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: target {disk_dir}: {own}/{name} was not made by iofleet (it is not in {own}/.iofleet-files, "
        f"iofleet's record of its files there); move it out of {own}, then run again")
    assert listing(own) == {name: b"a user's file\n"}  # neither overwritten nor deleted, nothing added
    assert runs_in(tmp_path / "d") == []


def test_kept_files_are_reused_then_removed(tmp_path, disk_dir):
    """keep_files leaves iofleet's files (recorded as its own); the next
    run reuses and removes them, and leaves a user's other files alone."""
    own = disk_dir / "iofleet"
    own.mkdir()
    (own / "notes.txt").write_bytes(b"mine\n")
    keep = write_plan(tmp_path / "k.yaml", name="keep", keep_files=True, defaults=DEFAULTS | {"jobs": 2},
                      workloads=ONE)
    iofleet("run", keep, "--target", disk_dir, data_dir=tmp_path / "d")
    assert sorted(os.listdir(own)) == [".iofleet-files", "iofleet-data.0.0", "iofleet-data.1.0", "notes.txt"]
    assert sorted(json.loads((own / ".iofleet-files").read_text())["files"]) == ["iofleet-data.0.0",
                                                                                 "iofleet-data.1.0"]
    clean = write_plan(tmp_path / "c.yaml", name="clean", defaults=DEFAULTS, workloads=ONE)
    assert "Run 2 complete: 1 of 1 tests ok" in iofleet("run", clean, "--target", disk_dir,
                                                       data_dir=tmp_path / "d").stdout
    assert listing(own) == {"notes.txt": b"mine\n"}
