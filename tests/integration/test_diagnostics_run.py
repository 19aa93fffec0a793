"""The diagnostics under a real run's summary (real fio)."""

import json

from tests.cli import iofleet, write_plan


def _diagnostics(out: str) -> str:
    """The diagnostics block of a summary, rich's line wrapping undone."""
    block = out[out.index("Diagnostics:"):]
    return " ".join(block.split("Run 1 complete")[0].split())


def test_run_summary_and_results_show_end_with_the_diagnostics(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="diag", prepare="none",
                      defaults={"size": "4m", "ramp": "0s", "runtime": "1s"},
                      workloads=[{"name": "rr", "read_pct": 100}, {"name": "rw", "read_pct": 0}])
    found = _diagnostics(iofleet("run", plan, "--target", disk_dir, data_dir=data_dir).stdout)
    # Critical first; beside a busy neighbour client_bound (critical too) may come before it.
    assert found.startswith("Diagnostics: [critical] ")
    assert ("[critical] 4k-r100-rand-j1-qd1: unprepared reads — read_pct 100 with prepare: none: "
            "the run wrote no data before its first test → remove `prepare: none` from the plan") in found
    assert "4k-r0-rand-j1-qd1: unprepared reads" not in found  # it only writes
    assert _diagnostics(iofleet("results", "show", "1", data_dir=data_dir).stdout) == found


def test_diagnose_command_lists_findings_and_takes_thresholds(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="diag", prepare="none", percentile="p99.9",
                      defaults={"size": "4m", "ramp": "0s", "runtime": "1s"}, workloads=[{"name": "rr"}])
    summary = iofleet("run", plan, "--target", disk_dir, data_dir=data_dir).stdout
    assert "p99.9 ms" in summary and "p99 ms" not in summary  # the plan's percentile is the summary's
    table = " ".join(iofleet("diagnose", data_dir=data_dir).stdout.split())
    assert "Diagnostics of run 1 · diag" in table and "[critical] unprepared reads — 4k-r100-rand-j1-qd1" in table
    # At 80 columns: lines of whole words (every word of the findings is still there, none split).
    narrow = iofleet("diagnose", data_dir=data_dir, columns=80).stdout
    assert max(map(len, narrow.splitlines())) <= 80 and narrow.split() == table.split(), narrow

    found = json.loads(iofleet("diagnose", "1", "--format", "json", data_dir=data_dir).stdout)
    unprepared = [f for f in found if f["rule"] == "unprepared_reads"]
    assert [(f["severity"], f["test"]) for f in unprepared] == [("critical", "4k-r100-rand-j1-qd1")]
    # A mean read latency limit of 1 µs makes the real test's latency a finding.
    assert not any(f["rule"] == "latency_limit" for f in found)
    strict = json.loads(iofleet("diagnose", "1", "--format", "json", "--threshold", "read_latency_ms=0.001",
                                data_dir=data_dir).stdout)
    limit = [f for f in strict if f["rule"] == "latency_limit"]
    assert len(limit) == 1 and "0.001 ms" in limit[0]["evidence"]

    rules = " ".join(iofleet("diagnose", "--rules", "--threshold", "p95_over_mean=4", data_dir=data_dir).stdout.split())
    assert "unpredictable_latency warning p95 > 4 × the mean latency" in rules

    bad = iofleet("diagnose", "--threshold", "read_latency=3", data_dir=data_dir, check_rc=None)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown threshold 'read_latency'" in bad.stderr
