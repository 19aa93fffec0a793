"""The diagnostics under a real run's summary (real fio)."""

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
    assert found.startswith(
        "Diagnostics: [critical] 4k-r100-rand-j1-qd1: unprepared reads — read_pct 100 with prepare: none: "
        "the run wrote no data before its first test → remove `prepare: none` from the plan")
    assert "4k-r0-rand-j1-qd1: unprepared reads" not in found  # it only writes
    assert _diagnostics(iofleet("results", "show", "1", data_dir=data_dir).stdout) == found
