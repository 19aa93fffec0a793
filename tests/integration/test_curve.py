"""`iofleet curve` with real fio on a file target: a short sweep finds the
most IOPS, then fixed-rate tests (one stored run, `params.rate_iops` on
each test) whose achieved IOPS track their targets below the maximum, and
a target beyond it marked as missed. Then a curve from the stored sweep."""

import math

from iofleet.analysis.curve import REACHED_SHARE, curve_of_run
from iofleet.results.model import Run
from tests.cli import iofleet, show_json

# 1 s cells and points, a sweep of at most 2 cells: about 10 s in all.
SHORT = ("--size", "16m", "--runtime", "1s", "--ramp", "0s", "--prepare", "none", "--max-jobs", "1",
         "--max-iodepth", "4")


def test_a_curve_tracks_its_targets_and_marks_the_one_beyond_the_maximum(disk_dir, data_dir):
    proc = iofleet("curve", "--target", disk_dir, "--loads", "20,40,300", *SHORT, data_dir=data_dir)
    out = proc.stdout
    assert "most IOPS: " in out and "(saturate run 1)" in out and "loads as given: 20 %, 40 %, 300 %" in out
    assert "latency against load: 4k 100% read random, jobs 1 × iodepth" in out

    sweep, run = show_json(1, data_dir), show_json(2, data_dir)
    assert sweep["methodology"]["saturate"] and run["status"] == "complete"
    info = run["methodology"]["curve"]
    assert info["source"] == "saturate run 1" and info["max_iops"] > 0
    # Each test carries its target (the test's total), a rounded share of the maximum.
    targets = [t["params"]["rate_iops"] for t in run["tests"]]
    assert targets == [round(info["max_iops"] * pct / 100) for pct in (20, 40, 300)]
    assert [t["id"].endswith(f"-iops{r}") for t, r in zip(run["tests"], targets)] == [True] * 3

    curve = curve_of_run(Run.from_dict(run))
    low, mid, beyond = sorted(curve.points, key=lambda p: p.target_iops)
    for p in (low, mid):  # fio paces the IOs: the achieved rate is the target, within a few %
        assert p.reached and abs(p.iops - p.target_iops) <= 0.05 * p.target_iops, p
        assert p.p50_us and p.p50_us <= p.p99_us <= p.p99_9_us
    assert not beyond.reached and beyond.iops < REACHED_SHARE * beyond.target_iops
    assert f"◀ {math.floor(beyond.achieved_pct)} %" in out
    assert (f"1 of 3 points did not reach their target rate (300 % load: {beyond.iops:,.0f}/{beyond.target_iops:,} "
            f"IOPS achieved)") in " ".join(out.split())

    # `results show` of the curve's run prints the same table and lines as `iofleet curve` did.
    shown = iofleet("results", "show", "2", data_dir=data_dir).stdout
    assert "Run 2 · latency against load: 4k 100% read random, jobs 1 × iodepth" in shown
    assert f"◀ {math.floor(beyond.achieved_pct)} %" in shown
    assert "1 of 3 points did not reach their target rate (300 % load:" in " ".join(shown.split())

    # From the stored sweep: no new sweep, the same maximum; its IO is the sweep's.
    again = iofleet("curve", "--target", disk_dir, "--from-run", "1", "--loads", "50", *SHORT, data_dir=data_dir)
    assert "(saturate run 1)" in again.stdout and "at most" not in again.stdout  # no sweep's progress
    third = show_json(3, data_dir)
    assert third["methodology"]["curve"]["max_iops"] == info["max_iops"]
    assert [t["params"]["rate_iops"] for t in third["tests"]] == [round(info["max_iops"] / 2)]

    # Refused in one line before anything runs (settings alone: tests/unit/test_curve.py).
    for args, message in (
        (("--from-run", "2"), "--from-run 2: run 2 is not a saturate run"),
        (("--from-run", "1", "--bs", "8k"), "--bs 8k: run 1 swept 4k; leave --bs out"),
    ):
        proc = iofleet("curve", "--target", disk_dir, *args, data_dir=data_dir, check_rc=None)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
