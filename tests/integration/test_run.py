"""End to end with the real fio: plan → fio → parse → aggregate → store → summary."""

import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from iofleet.fio.merge import percentile_from_bins
from iofleet.fleet.fio_link.procs import fio_using
from iofleet.results.store import Store

from ..cli import iofleet, show_json, write_plan

SHORT = {"size": "8m", "runtime": "2s", "ramp": "1s", "iodepth": 4}


def running_test_fio(target: Path) -> list[int]:
    """fio processes running an iofleet test job (their job file is in
    iofleet-test-*, not a preparation's) on this target: other test
    sessions on the machine may run fio too."""
    out = []
    for pid in fio_using([target / "iofleet"]):
        try:
            if b"iofleet-test-" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


def wait_for_test_fio(target: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not running_test_fio(target):
        time.sleep(0.1)


def test_run_stores_exact_results_and_prints_summary(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="e2e", defaults=SHORT, workloads=[
        {"name": "mix", "bs": "4k", "read_pct": 70, "jobs": 2},
        {"name": "seq", "bs": "64k", "read_pct": 100, "random_pct": 0, "working_set_pct": 50},
    ])
    proc = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir)
    assert "4k-r70-rand-j2-qd4" in proc.stdout and "64k-r100-seq-j1-qd4" in proc.stdout
    assert "complete" in proc.stdout and "2 of 2 tests ok" in proc.stdout
    # iofleet's files are gone, the target itself is untouched.
    assert disk_dir.exists() and not (disk_dir / "iofleet").exists()

    run = show_json(1, data_dir)
    assert run["status"] == "complete" and run["fio_version"].startswith("fio-3")
    mix, seq = run["tests"]
    assert mix["status"] == seq["status"] == "ok"
    assert mix["fio_jobs"] == 2
    for t in (mix, seq):
        assert t["all"]["iops"] > 0 and t["all"]["lat_p99_us"] > 0 and t["all"]["lat_p50_us"] > 0
        assert t["host_cpu_avg_pct"] is not None
    assert mix["read"]["iops"] > mix["write"]["iops"] > 0  # 70 % reads
    assert seq["write"]["ios"] == 0

    with Store.open(data_dir) as store:
        stored = store.get_run(1)
        t = stored.tests[0]
        # Rates add up across jobs; percentiles come from the merged bins.
        assert t.aggregate.all.iops == pytest.approx(sum(j.all.iops for j in t.jobs))
        merged: dict[int, int] = {}
        for j in t.jobs:
            for direction in (j.read, j.write):
                for k, v in direction.bins.items():
                    merged[k] = merged.get(k, 0) + v
        assert t.aggregate.all.percentiles_ns["p99"] == percentile_from_bins(merged, 99.0)
        # Per-second series and raw artifacts are kept.
        series = store.get_series(t.pk)
        assert {s.metric for s in series} == {"iops", "bw_bytes_s", "lat_ns"}
        assert all(len(s.values) >= 1 for s in series)
        assert b'"fio version"' in store.read_artifact(t.pk, "fio-output.json")
        assert b"[iofleet-warmup]" in store.read_artifact(t.pk, "job.fio")
        # The warm-up is logged too, marked as such, before the measured part.
        warm = [s for s in series if s.phase == "warmup"]
        assert warm and max(s.t_ms[-1] for s in warm) <= min(s.t_ms[0] for s in series if s.phase == "measured")

    csv_text = iofleet("results", "export", "1", "--format", "csv", data_dir=data_dir).stdout
    assert csv_text.splitlines()[0].startswith("run_id,") and len(csv_text.splitlines()) == 3
    listing = iofleet("results", "list", data_dir=data_dir).stdout
    assert "e2e" in listing and "2/2" in listing
    assert "e2e" in iofleet("results", "list", "--status", "complete", "--plan", "E2", data_dir=data_dir).stdout
    assert "matches these filters" in iofleet("results", "list", "--status", "failed", data_dir=data_dir).stdout


def test_ctrl_c_stops_fio_keeps_finished_tests_and_cleans_up(tmp_path, disk_dir, data_dir, spawn, monkeypatch):
    plan = write_plan(tmp_path / "p.yaml", name="stopme",
                      defaults={"size": "8m", "ramp": "0s", "iodepth": 2},
                      workloads=[{"name": "first", "runtime": "2s"},
                                 {"name": "long", "runtime": "60s", "read_pct": 0}])
    monkeypatch.setenv("IOFLEET_PROGRESS_EVERY", "0.5")  # piped output: a progress line every 0.5 s, not 10 s
    proc = spawn("run", plan, "--target", disk_dir, data_dir=data_dir)
    # Wait until the second (long) test is running.
    db = data_dir / "results.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists():
            with sqlite3.connect(db) as c:
                try:
                    if c.execute("SELECT count(*) FROM tests").fetchone()[0] == 1:
                        break
                except sqlite3.OperationalError:
                    pass  # the file is there a moment before its tables are
        time.sleep(0.2)
    wait_for_test_fio(disk_dir)
    time.sleep(1)
    assert running_test_fio(disk_dir), "the long test's fio should be running"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 10, "fio did not stop within a few seconds"
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    # The log said the long test was alive, then how to finish the run ($IOFLEET_DATA: no --data-dir).
    assert re.search(r"^  test 2/2 4k-r0-rand-j1-qd2-rt1m00s: measuring, 0:00:\d\d of 0:01:00, "
                     r"([\d,]+ IOPS|no IOPS reported yet); the plan: 0:0\d:\d\d left$", out, re.M), out
    assert out.rstrip().endswith("Run its unfinished tests with: iofleet run --resume 1")
    run = show_json(1, data_dir)
    assert run["status"] == "interrupted"
    assert [t["status"] for t in run["tests"]] == ["ok", "interrupted"]
    assert run["tests"][0]["all"]["iops"] > 0
    assert not (disk_dir / "iofleet").exists()
    assert not running_test_fio(disk_dir)


def test_sigterm_behaves_like_ctrl_c(tmp_path, disk_dir, data_dir, spawn):
    plan = write_plan(tmp_path / "p.yaml", name="term", defaults={"size": "8m", "ramp": "0s"},
                      workloads=[{"name": "long", "runtime": "60s"}])
    proc = spawn("run", plan, "--target", disk_dir, data_dir=data_dir)
    wait_for_test_fio(disk_dir)  # the test's fio does IO (not just preparing the data)
    time.sleep(1)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 10, "fio did not stop within a few seconds"
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    run = show_json(1, data_dir)
    assert run["status"] == "interrupted"
    assert [(t["status"], t["error"]) for t in run["tests"]] == [("interrupted", "stopped by the user")]
    assert run["tests"][0]["all"]["iops"] > 0  # fio wrote its results when stopped
    assert not (disk_dir / "iofleet").exists()


# A target filling up (and other faults): test_faults.py.


def test_missing_target_is_a_one_line_error(tmp_path, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="x", workloads=[{"name": "w"}])
    proc = iofleet("run", plan, "--target", tmp_path / "nope", data_dir=data_dir, check_rc=2)
    assert proc.stderr.strip().startswith("error: target") and "not a directory" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    proc = iofleet("run", plan, data_dir=data_dir, check_rc=2)
    assert "no targets" in proc.stderr and "--target" in proc.stderr
