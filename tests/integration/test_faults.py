"""Faults with the real fio: a target or the results' disk filling up, fio
killed mid-test, fio missing or too old. Each gives a clear line naming
the place and the fix, the plan follows `on_error`, and the store stays
whole."""

import os
import signal
import sqlite3
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from iofleet.fleet.fio_link.procs import fio_using
from iofleet.results.ingest import import_outputs
from iofleet.results.store import Store

from ..cli import iofleet, wait_for, write_plan

FIXTURES = Path(__file__).parents[1] / "fixtures" / "fio"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")


@pytest.fixture
def small_fs(tmp_path):
    """Mount a tmpfs of the size asked for; unmounted after the test."""
    mounted = []

    def mount(size: str, name: str = "small") -> Path:
        d = tmp_path / name
        d.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)]).returncode:
            pytest.skip("this machine does not allow mounting a tmpfs")
        mounted.append(d)
        return d

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], check=False)


def fill(fs: Path) -> Path:
    """Fill a filesystem to the last byte; returns the file to remove."""
    filler = fs / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# ---- the target fills up ------------------------------------------------------

@needs_root
def test_a_target_too_small_for_the_data_files_is_refused_before_anything_runs(tmp_path, small_fs, data_dir):
    target = small_fs("8m")
    plan = write_plan(tmp_path / "p.yaml", name="toobig", defaults={"size": "16m", "runtime": "1s"},
                      workloads=[{"name": "w"}])
    proc = iofleet("run", plan, "--target", target, data_dir=data_dir, check_rc=2)
    assert one_line(proc.stderr) == (
        f"error: not enough space on {target}: the plan's data files need 16.0 MiB there, 8.0 MiB is free; free "
        f"space, give another --target, or lower `size` (`iofleet validate PLAN` shows the data files)")
    assert not any(target.iterdir())  # nothing written, not even iofleet's directory
    with Store.open(data_dir) as store:
        assert store.list_runs() == []  # no run was started


@needs_root
@pytest.mark.parametrize("on_error,expected", [("continue", ["ok", "failed", "ok"]), ("stop", ["ok", "failed"])])
def test_a_target_filling_up_mid_run_fails_the_test_saying_where_and_follows_on_error(
        tmp_path, small_fs, data_dir, spawn, on_error, expected):
    target = small_fs("8m")
    # The data files fit (6 MiB of 8), so the run starts; then something
    # else fills the target while test 1 runs, and test 2's file cannot grow.
    plan = write_plan(tmp_path / "p.yaml", name="fills", on_error=on_error, prepare="none",
                      defaults={"runtime": "1s", "ramp": "0s", "direct": False},
                      workloads=[{"name": "first", "size": "1m"},
                                 {"name": "grows", "size": "6m", "read_pct": 0, "bs": "64k", "random_pct": 0},
                                 {"name": "fits", "size": "1m"}])
    proc = spawn("run", plan, "--target", target, data_dir=data_dir)
    data_file = target / "iofleet" / "iofleet-data.0.0"
    # (fio may be in the directory a moment before its file is there)
    wait_for(lambda: fio_using([target / "iofleet"]) and data_file.exists()
             and data_file.stat().st_blocks * 512 >= 2**20,
             what="test 1's fio, its file laid out")
    filler = fill(target)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err
    with Store.open(data_dir) as store:
        run = store.get_run(1)
    assert [t.status for t in run.tests] == expected
    assert run.status == "failed"
    error = run.tests[1].error
    assert error.startswith(f"no space left on {target}: fio: io_u error on file {target}/iofleet/iofleet-data.0.0: "
                            f"No space left on device")
    assert error.endswith("the plan's data files need 6.0 MiB there, 0 B is free now")
    assert f"failed 2/3 grows.64k-r0-seq-j1-qd1-sz6m: no space left on {target}" in out
    filler.unlink()
    assert not (target / "iofleet").exists()  # iofleet's files are removed all the same


# ---- fio killed mid-test --------------------------------------------------------

def _cmdline(pid: str) -> bytes:
    """A process's command line; empty once it has exited (a probe's fio may end between pgrep and the read)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def test_fio_killed_mid_test_fails_that_test_with_the_signal_and_the_run_goes_on(tmp_path, disk_dir, data_dir,
                                                                                 spawn):
    plan = write_plan(tmp_path / "p.yaml", name="killfio", on_error="continue",
                      defaults={"size": "8m", "ramp": "0s"},
                      workloads=[{"name": "victim", "runtime": "30s"}, {"name": "next", "runtime": "1s"}])
    proc = spawn("run", plan, "--target", disk_dir, data_dir=data_dir)

    def test_fio() -> list[str]:
        """iofleet's fio running the test itself (job.fio), not its engine probe, preparation or layout."""
        children = subprocess.run(["pgrep", "-P", str(proc.pid), "-x", "fio"], capture_output=True,
                                  text=True).stdout.split()
        return [pid for pid in children if b"job.fio" in _cmdline(pid)]

    # Once the test's fio has a job process doing IO, kill fio's main process (iofleet's child).
    wait_for(lambda: test_fio() and fio_using([disk_dir / "iofleet"]).keys() - set(map(int, test_fio())),
             what="the first test's fio and its job process")
    (main,) = test_fio()
    os.kill(int(main), signal.SIGKILL)
    killed_at = datetime.now(timezone.utc)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 1, out + err
    with Store.open(data_dir) as store:
        victim, after = store.get_run(1).tests
    # Ended long before its 30 s runtime: its job processes were killed, not waited for.
    assert (datetime.fromisoformat(victim.ended_at) - killed_at).total_seconds() < 20, (victim.ended_at, killed_at)
    assert victim.status == "failed" and after.status == "ok"
    assert victim.error.startswith("fio was killed by signal 9 (SIGKILL) ")
    assert victim.aggregate is None and victim.jobs == []  # its last status is no result
    assert after.aggregate.all.iops > 0
    assert "failed 1/2 4k-r100-rand-j1-qd1-rt30s: fio was killed by signal 9 (SIGKILL)" in out
    assert not fio_using([disk_dir / "iofleet"]) and not (disk_dir / "iofleet").exists()


# ---- fio missing or too old -----------------------------------------------------

def test_fio_missing_or_too_old_is_one_line_with_the_fix(tmp_path, disk_dir, data_dir, monkeypatch):
    plan = write_plan(tmp_path / "p.yaml", name="nofio", workloads=[{"name": "w"}])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))  # no fio on it
    proc = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir, check_rc=2)
    assert one_line(proc.stderr) == ("error: fio not found (not on PATH): install it with `sudo apt-get install fio` "
                                     "(Debian/Ubuntu) or `sudo dnf install fio` (Fedora/RHEL)")
    fake = bin_dir / "fio"
    fake.write_text("#!/bin/sh\necho fio-3.1\n")
    fake.chmod(0o755)
    proc = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir, check_rc=2)
    assert one_line(proc.stderr).startswith("error: fio-3.1 is too old: iofleet needs fio >= 3.33; install a newer "
                                            "one: Debian 12 and Ubuntu 24.04 ship fio 3.33 or later")
    assert not (disk_dir / "iofleet").exists()
    with Store.open(data_dir) as store:
        assert store.list_runs() == []


# ---- the results' disk fills up --------------------------------------------------

@needs_root
def test_results_disk_full_is_one_line_keeps_the_store_whole_and_the_run_resumable(tmp_path, small_fs, disk_dir,
                                                                                     spawn):
    data_dir = small_fs("2m") / "data"
    plan = write_plan(tmp_path / "p.yaml", name="store-full", prepare="none",
                      defaults={"size": "4m", "runtime": "1s", "ramp": "0s"}, workloads=[{"name": "w"}])
    with Store.open(data_dir) as store:  # an earlier run: run 1
        import_outputs(store, [FIXTURES / "multi-job-json+.json"])
        earlier = store.get_run(1)
    proc = spawn("run", plan, "--target", disk_dir, data_dir=data_dir)
    wait_for(lambda: fio_using([disk_dir / "iofleet"]), what="run 2's fio")
    filler = fill(data_dir.parent)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, out + err
    assert one_line(err) == (f"error: cannot write results to {data_dir}: no space left on device; free space or "
                             f"use --data-dir")
    assert not (disk_dir / "iofleet").exists()  # the target is cleaned up all the same

    filler.unlink()  # space is back: nothing was corrupted, run 1 is whole
    with sqlite3.connect(data_dir / "results.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Store.open(data_dir) as store:
        assert store.get_run(1) == earlier
        run2 = store.get_run(2)
        assert run2.tests == [] and run2.status in ("running", "failed")
    # Its test could not be stored: the run finishes with a resume.
    resumed = iofleet("run", "--resume", "2", data_dir=data_dir)
    assert "Run 2 complete: 1 of 1 tests ok." in resumed.stdout
