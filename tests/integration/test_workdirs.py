"""Scratch directories survive no crash (issue 16, item 16): `kill -9` of
`iofleet run` mid-test leaves its directory in $TMPDIR; the next run (here
the resume) removes it, since its owner is dead."""

import subprocess
import sys
from pathlib import Path

from iofleet.fleet.fio_link.procs import fio_using
from iofleet.fleet.fio_link.workdir import reclaim

from ..cli import iofleet, wait_for, write_plan


def test_kill_9_leaves_scratch_that_the_resume_reclaims(tmp_path, disk_dir, data_dir, spawn, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the CLI's $TMPDIR, to list it
    plan = write_plan(tmp_path / "p.yaml", name="scratch", defaults={"size": "16m", "runtime": "2s", "ramp": "0s"},
                      workloads=[{"name": "w", "matrix": {"read_pct": [100, 0]}}])
    proc = spawn("run", plan, "--target", disk_dir, data_dir=data_dir)
    # Mid-test: the test's scratch directory (job file, fio's outputs) is there.

    def scratch():
        assert proc.poll() is None, f"the run ended first: {proc.communicate()}"
        try:
            return list(tmp.glob("**/iofleet-test-*"))
        except FileNotFoundError:  # a directory renamed while listed (workdir.py makes them so): look again
            return []
    try:
        left = wait_for(scratch, what="a test's scratch directory")[0]
    except AssertionError:
        proc.kill()
        raise AssertionError(f"no test's scratch directory in {sorted(tmp.rglob('*'))}: {proc.communicate()}")
    proc.kill()  # SIGKILL: no clean-up
    proc.wait(timeout=10)
    wait_for(lambda: not fio_using([disk_dir / "iofleet"]), timeout=10, what="the killed run's fio to end")
    assert left.exists()

    resumed = iofleet("run", "--resume", "1", data_dir=data_dir)
    assert "Run 1 complete: 2 of 2 tests ok." in resumed.stdout
    assert sorted(p.name for p in tmp.iterdir()) == []  # neither the dead run's nor the resume's own
    assert left.parent.name.startswith(f"iofleet-{proc.pid}-")  # it was under the dead process's parent


def test_reclaim_spares_a_live_process_and_only_its_own_names(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", "from iofleet.fleet.fio_link.workdir import work_dir\n"
                               "import sys, time\nwith work_dir('iofleet-test-') as d:\n"
                               "    print(d, flush=True)\n    time.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    try:
        scratch = Path(holder.stdout.readline().strip())
        others = [tmp_path / "iofleet-test-old", tmp_path / "iofleet-12-x"]  # not ours / no lock: kept
        for d in others:
            d.mkdir()
        assert reclaim(tmp_path) == [] and scratch.is_dir()  # its owner lives
        holder.kill()
        holder.wait()
        assert reclaim(tmp_path) == [scratch.parent] and not scratch.parent.exists()
        assert all(d.is_dir() for d in others)
    finally:
        holder.kill()
        holder.wait()
