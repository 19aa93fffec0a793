"""Methodology with real fio: preparation, early stop at steady state,
cache clearing and cache vs capacity tests."""

import contextlib
import os
import subprocess

import pytest

from tests.cli import iofleet, show_json, write_plan

MiB = 1024 * 1024


def test_until_steady_stops_long_before_max_runtime_and_stores_the_window(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="steady", prepare="none", defaults={
        "size": "32m", "iodepth": 4, "ramp": "1s", "until": "steady", "round": "2s", "max_runtime": "3m"},
        workloads=[{"name": "rr"}])
    proc = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir)
    assert "steady (IOPS)" in proc.stdout
    t = show_json(1, data_dir)["tests"][0]
    m = t["methodology"]
    # iofleet's own SNIA check ended the test, far before the 180 s maximum, at the end
    # of the window its verdict afterwards calls steady: never "ended early, not steady".
    stopped = m["early_stop"]["stopped_at_s"]
    verdict, window = m["steady"]["iops"], m["window"]
    assert verdict["steady"] and window["steady"] and m["rounds_source"] == "fio status"
    assert verdict["end_s"] == window["end_s"] == stopped and t["all"]["runtime_ms"] < 60_000
    assert verdict["last_round"] == len(verdict["rounds"]) - 1  # no round judged after it
    assert verdict["round_s"] == 2 and 9 <= window["end_s"] - window["start_s"] <= 11
    assert "steady" in m["steady"]["lat"]
    # The window's figures are its own: IOs counted in it, percentiles from its histograms.
    w = window["all"]
    assert w["ios"] < t["all"]["ios"] and w["iops"] == window["iops"]
    assert w["iops"] == pytest.approx(verdict["average"], rel=0.02)  # its rounds' mean (rounds of ~2 s)
    assert w["lat_p50_us"] <= w["lat_p99_us"] <= w["lat_p99_9_us"]
    rounds = m["latency_rounds"]
    assert len(rounds["fleet"]["p99"]) == len(verdict["rounds"]) and rounds["hosts"] == {}
    assert "steady, ended early at" in proc.stdout
    assert m["measured_from_ms"] is not None


def test_fixed_time_test_gets_a_verdict_but_no_window(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="fixed", prepare="none", defaults={
        "size": "16m", "ramp": "0s", "runtime": "3s", "round": "1s"}, workloads=[{"name": "rr"}])
    iofleet("run", plan, "--target", disk_dir, data_dir=data_dir)
    m = show_json(1, data_dir)["tests"][0]["methodology"]
    assert m["until"] == "time" and m["window"] is None
    # 3 s of data in rounds of 1 s: fewer than the 5 rounds a window needs.
    assert m["steady"]["iops"]["steady"] is False and "not enough data" in m["steady"]["iops"]["reason"]


def _blocks(path, block=4096, every=256 * 1024, limit=None):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size if limit is None else limit
        for offset in range(0, size, every):
            f.seek(offset)
            yield f.read(block)


def test_preparation_writes_the_whole_working_set_with_random_data(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="prep", keep_files=True, prepare_passes=1,
                      defaults={"size": "8m", "ramp": "0s", "runtime": "1s", "read_pct": 100},
                      workloads=[{"name": "two", "jobs": 2}, {"name": "big", "jobs": 1, "size": "12m"}])
    proc = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir)
    assert "Preparation: random data written sequentially" in proc.stdout
    files = sorted((disk_dir / "iofleet").glob("iofleet-data.*"))
    assert [f.name for f in files] == ["iofleet-data.0.0", "iofleet-data.1.0"]
    # File 0 serves both workloads (the larger working set), file 1 only `two`.
    assert files[0].stat().st_size == 12 * MiB and files[1].stat().st_size == 8 * MiB
    for f in files:
        blocks = list(_blocks(f))
        assert blocks and all(any(b) for b in blocks), f"{f.name} has a never-written (zero) block"
        assert len(set(blocks)) == len(blocks)  # random, not one repeated buffer
    run = show_json(1, data_dir)
    prepared = run["methodology"]["prepare"]
    assert prepared["mode"] == "random" and prepared["working_set_per_host"] == {"local": 20 * MiB}
    assert prepared["written_per_host"] == {"local": (2 * 8 + 12) * MiB}  # file 0 is in both tiers

    # The same plan again: the kept data is used as it is, not written again (fleet/targets/kept.py).
    mtimes = [f.stat().st_mtime_ns for f in files]
    said = " ".join(iofleet("run", plan, "--target", disk_dir, data_dir=data_dir).stdout.split())
    assert ("Preparation: data prepared by run 1 and kept (keep_files) is used as it is on 1 host, as the last "
            "run's tests left it: not written again.") in said
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    run = show_json(2, data_dir)
    assert run["methodology"]["prepare"]["reused"] == {"local": 1}
    assert run["methodology"]["prepare"]["written_per_host"] == {}
    assert [t["methodology"]["prepared"] for t in run["tests"]] == [True, True]


def test_zero_preparation_and_unprepared_reads_are_said(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="zero", keep_files=True, prepare="zero", prepare_passes=1,
                      defaults={"size": "4m", "ramp": "0s", "runtime": "1s", "read_pct": 100},
                      workloads=[{"name": "rr"}])
    iofleet("run", plan, "--target", disk_dir, data_dir=data_dir)
    assert all(not any(b) for b in _blocks(disk_dir / "iofleet" / "iofleet-data.0.0"))

    # This run's target is a tmpfs mount (as root): said at the start and in the diagnostics.
    plan = write_plan(tmp_path / "n.yaml", name="none", prepare="none",
                      defaults={"size": "4m", "ramp": "0s", "runtime": "1s", "read_pct": 100},
                      workloads=[{"name": "rr"}])
    with tmpfs(tmp_path / "ram") as ram:
        out = iofleet("run", plan, "--target", ram or disk_dir, data_dir=data_dir).stdout
    assert "Preparation: none (prepare: none)" in out
    said = " ".join(out.split())
    assert "[critical] 4k-r100-rand-j1-qd1: unprepared reads" in said
    if ram:
        assert (f"warning: target {ram} is on tmpfs (RAM): the figures will be memory speed, not storage; use a "
                f"directory on the storage under test") in out
        assert f"[critical] run: target in RAM — target {ram} is on tmpfs (RAM): the figures are memory speed" in said


@contextlib.contextmanager
def tmpfs(point):
    """A small tmpfs mounted at `point` (root only; else None)."""
    if os.geteuid() != 0:
        yield None
        return
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(point)], check=True)
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=True)


def test_caches_and_cache_or_capacity_test_are_stated(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="cache", prepare="none", cache_size="4m",
                      defaults={"size": "8m", "ramp": "0s", "runtime": "1s"},
                      workloads=[{"name": "small", "size": "2m"}, {"name": "large", "jobs": 2}])
    out = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir).stdout
    dropped = "kernel caches dropped" if os.geteuid() == 0 else "kernel caches kept (not root)"
    assert f"Caches before each test on local: page cache of iofleet's files invalidated; {dropped}." in out
    assert "Cache tests (the working set fits in the cache): 4k-r100-rand-j1-qd1-sz2m" in out
    assert "Capacity tests (the working set exceeds the cache): 4k-r100-rand-j2-qd1-sz8m (16.0 MiB" in out
    tests = show_json(1, data_dir)["tests"]
    assert [t["methodology"]["working_set"]["local"]["kind"] for t in tests] == ["cache test", "capacity test"]

    # Buffered IO with no stated cache: the host's RAM is the cache.
    plan = write_plan(tmp_path / "b.yaml", name="buffered", prepare="none", clear_cache=False,
                      defaults={"size": "2m", "ramp": "0s", "runtime": "1s", "direct": False},
                      workloads=[{"name": "rr"}])
    out = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir).stdout
    assert "host RAM (buffered IO)" in out and "caches kept (clear_cache: false)" in out


def test_easy_run_needs_nothing_but_a_target(tmp_path, disk_dir, data_dir):
    proc = iofleet("easy-run", "--target", disk_dir, "--no-probe", "--size", "16m", "--ramp", "0s", "--runtime", "1s",
                   data_dir=data_dir)
    out = proc.stdout
    assert "Easy Run chose:" in out and "jobs per host:" in out and "working set: 16.0 MiB per host" in out
    assert "Run 1 complete: 4 of 4 tests ok" in out and "Preparation: random data" in out
    run = show_json(1, data_dir)
    assert run["label"] == "easy-run" and run["plan_name"] == "easy-run"
    assert [(t["params"]["bs"], t["params"]["read_pct"]) for t in run["tests"]] == [
        (4096, 100), (4096, 70), (8192, 50), (262144, 0)]
    assert "# chosen by iofleet easy-run:" in run["plan_text"]
    assert not (disk_dir / "iofleet").exists()
