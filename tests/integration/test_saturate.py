"""`iofleet saturate` with real fio on a file target: the sweep, the knee,
the best configuration, the latency target with bisection, Little's law."""

import pytest

from iofleet.analysis.saturation import more_iops, saturation_of_run
from iofleet.results.model import Run
from tests.cli import iofleet, show_json

# Fixed 1 s cells: the search and its report, fast (steady cells below).
SHORT = ("--size", "32m", "--runtime", "1s", "--ramp", "0s", "--prepare", "none")


def test_sweep_finds_the_knee_and_the_best_configuration(disk_dir, data_dir):
    # 256 KiB random reads are bandwidth-bound on this VM after 2-4 IOs in
    # flight: a short sweep reaches the bend. The loose target is met everywhere.
    proc = iofleet("saturate", "--target", disk_dir, "--bs", "256k", "--max-jobs", "2", "--max-iodepth", "8",
                   "--slo", "p99<=1s", *SHORT, data_dir=data_dir)
    out = proc.stdout
    assert "Most IOPS under the target: jobs" in out and "Best configuration: jobs" in out
    assert "Target p99<=1000ms: met by the answer" in out and "no step of the sweep broke it" in out
    assert "Little" in out and "Little's law holds in every cell" in out
    assert "sweep: jobs 1: " in out  # why the row ended

    run = show_json(1, data_dir)
    assert run["status"] == "complete" and run["tests_planned"] == len(run["tests"]) >= 3
    assert run["methodology"]["saturate"]["slo"] == "p99<=1000ms"
    sat = saturation_of_run(Run.from_dict(run))
    # The first row starts at iodepth 1; every cell is a stored test.
    assert [(c.jobs, c.iodepth) for c in sat.cells][:2] == [(1, 1), (1, 4)]  # IOPS grow in step from 1
    assert sat.best.iops >= 0.95 * sat.peak.iops and sat.slo_best is sat.peak
    # The answer: no cell has more IOPS beyond noise.
    assert not any(more_iops(c, sat.peak) for c in sat.cells)
    for c in sat.cells:
        assert 0.85 <= c.little <= 1.15, c

    # The stored run shows the same analysis later.
    shown = iofleet("results", "show", "1", data_dir=data_dir).stdout
    assert "Saturation sweep of run 1" in shown and "Most IOPS under the target: jobs" in shown


@pytest.mark.scale  # about 17 s: `make test-scale` (make test keeps under 20 minutes)
def test_latency_target_is_refined_by_bisection(disk_dir, data_dir):
    # 4k random reads on this VM: mean latency ~0.2 ms at iodepth 32 and
    # ~0.34 ms at 64, while IOPS still grow, so the target breaks between
    # them (at lower depths when other loads share the disk).
    iofleet("saturate", "--target", disk_dir, "--max-jobs", "1", "--max-iodepth", "64", "--bisect", "2",
            "--slo", "mean<=0.25ms", *SHORT, data_dir=data_dir)
    run = show_json(1, data_dir)
    sat = saturation_of_run(Run.from_dict(run))
    limit = 250.0
    for c in sat.cells:
        # Met only when every run met it. A cell is repeated when its verdict is
        # near the limit, or (only a cell that met it) to tell the answer from
        # the cell with the most IOPS.
        assert c.slo_ok == all(v <= limit for v in c.slo_runs)
        assert c.runs == 1 or c.slo_ok or any(limit / 1.08 <= v <= 1.08 * limit for v in c.slo_runs), c
    answer = sat.slo_best
    assert answer is not None and answer.slo_value_us <= limit
    assert not any(more_iops(c, answer) for c in sat.cells if c.slo_ok)
    # The row's steps (1, 4, …) up to the first that broke the target, then bisection.
    by_seq = sorted(sat.cells, key=lambda c: c.seq)
    failed = [i for i, c in enumerate(by_seq) if not c.slo_ok]
    assert failed, "the target never broke: this VM is faster than the test assumes"
    sweep = by_seq[:failed[0] + 1]
    first_fail = sweep[-1].iodepth
    last_pass = max(c.iodepth for c in sweep if c.slo_ok and c.iodepth < first_fail)
    # Bisection measured depths strictly between the last passing and first failing step.
    between = [c.iodepth for c in sat.cells if last_pass < c.iodepth < first_fail]
    assert len(between) == min(2, len(set(range(last_pass + 1, first_fail)))) and between
    assert all(c.iodepth < first_fail for c in sweep[:-1])  # the sweep stopped where the target broke


def test_bad_arguments_are_one_line_errors(disk_dir, data_dir):
    for args, message in (
        (("--slo", "p99=2ms"), "--slo 'p99=2ms': give a latency target like 'p99<=2ms'"),
        (("--bs", "4q"), "--bs 4q:"),
        (("--max-iodepth", "0"), "--max-iodepth 0:"),
        (("--min-gain", "0"), "--min-gain 0.0: give a share above 0"),
        (("--repeats", "0"), "--repeats 0: allowed 1 to 10"),
        (("--round", "2s", "--max-runtime", "5s"), "--max-runtime 5s: shorter than the steady-state window"),
    ):
        proc = iofleet("saturate", "--target", disk_dir, *args, data_dir=data_dir, check_rc=None)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    proc = iofleet("saturate", data_dir=data_dir, check_rc=None)
    assert proc.returncode == 2 and "saturate needs a place to test" in proc.stderr


def test_cells_end_when_steady_and_use_their_window(disk_dir, data_dir):
    # Real until-steady cells of 1 s rounds: each ends once 5 rounds are
    # steady (or at 6 s), and the sweep's figures are the window's.
    proc = iofleet("saturate", "--target", disk_dir, "--bs", "256k", "--max-jobs", "1", "--max-iodepth", "1",
                   "--size", "32m", "--round", "1s", "--max-runtime", "6s", "--ramp", "0s", "--prepare", "none",
                   data_dir=data_dir)
    run = show_json(1, data_dir)
    sat = saturation_of_run(Run.from_dict(run))
    assert [(c.jobs, c.iodepth) for c in sat.cells] == [(1, 1)]  # one cell: the suite is short of time
    assert run["methodology"]["saturate"]["cell"] == {"until": "steady", "round": 1, "max_runtime": 6, "ramp": 0}
    for t in run["tests"]:
        m = t["methodology"]
        assert m["until"] == "steady" and t["params"]["round"] == 1 and t["params"]["max_runtime"] == 6
        # 6 s hold 5 whole rounds: every test has a window, and its cell uses it.
        cell = next(c for c in sat.cells if c.test == t["id"])
        assert m["window"]["all"]["iops"] in cell.iops_runs and m["window"]["all"]["iops"] != t["all"]["iops"]
    assert "Most IOPS: jobs 1 × iodepth" in proc.stdout
