"""The CLI on plans and imports (no long fio runs)."""

import json
from pathlib import Path

from ..cli import iofleet, show_json

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "fio"


def test_validate_lists_the_24_hcibench_tests(data_dir):
    out = iofleet("validate", ROOT / "examples" / "hcibench-24.yaml", data_dir=data_dir).stdout
    assert "hcibench-24: 24 tests" in out
    assert "4k-r0-rand-j1-qd4" in out and "128k-r70-rand-j2-qd4" in out
    assert "Estimated duration: 50h00m48s" in out  # 24 x (2 h + 5 min + 2 s start-up)


def test_validate_with_a_target_makes_the_runs_checks_before_its_first_test(tmp_path, data_dir):
    """As the web's Validate (HCIBench's Validate): the target checked, one line each, exit 1 on a failure."""
    plan = ROOT / "examples" / "quick.yaml"
    out = iofleet("validate", plan, "--target", tmp_path, data_dir=data_dir).stdout
    assert "Checks a run makes before its first test:" in out and f"✓ targets: {tmp_path}: free" in out
    assert "✓ engine: fio-" in out
    bad = iofleet("validate", plan, "--target", tmp_path / "missing", data_dir=data_dir, check_rc=1).stdout
    assert f"✗ targets: target {tmp_path / 'missing'} is not a directory" in " ".join(bad.split())
    assert not list(tmp_path.iterdir())  # nothing left behind by the checks


def test_bad_plan_gives_one_line_per_problem_without_traceback(tmp_path, data_dir):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nworkloads:\n  - name: w\n    matrix:\n      bs: [4k, 8k, 4x]\n    iodepth: 0\n")
    proc = iofleet("validate", bad, data_dir=data_dir, check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert f"error: {bad}: workloads[0].matrix.bs[2]: '4x' is not a size; use e.g. 4k, 128KiB, 20GiB (got '4x')" in lines
    assert any("workloads[0].iodepth: allowed: 1 to 4096 (got 0)" in l for l in lines)
    assert len(lines) == 2 and "Traceback" not in proc.stderr


def test_params_table_comes_from_the_parameter_table(data_dir):
    out = iofleet("params", data_dir=data_dir).stdout
    for name in ("bs", "read_pct", "random_pct", "iodepth", "jobs", "working_set_pct", "ramp", "engine"):
        assert name in out


def test_import_client_server_output_keeps_hosts_and_merges_bins(data_dir):
    iofleet("results", "import", FIXTURES / "clientserver-2hosts-json+.json", "--label", "cs",
            data_dir=data_dir)
    run = show_json(1, data_dir)
    assert run["source"] == "import" and run["label"] == "cs"
    (test,) = run["tests"]
    assert len(test["hosts"]) == 2
    assert test["all"]["lat_p99_us"] is not None
    assert test["all"]["iops"] == sum(h["all"]["iops"] for h in test["hosts"].values())
    (listed,) = json.loads(iofleet("results", "list", "--format", "json", data_dir=data_dir).stdout)
    assert listed == {"id": 1, "plan": run["plan_name"], "label": "cs", "source": "import", "kind": "import", "status": "complete",
                      "stale": False, "created_at": run["created_at"], "ended_at": run["ended_at"],
                      "fio_version": run["fio_version"], "tests": 1, "tests_planned": 1, "tests_ok": 1,
                      "tests_by_status": {"ok": 1, "failed": 0, "interrupted": 0, "partial": 0}, "note": None}
    md = data_dir / "r.md"
    err = iofleet("report", "1", "--format", "md", "-o", md, data_dir=data_dir).stderr
    assert md.stat().st_size < 1000 and err.strip() == f"Wrote {md} ({md.stat().st_size} bytes)"  # not "0.0 MB"


def test_import_plain_json_marks_merged_percentiles_unavailable(data_dir):
    proc = iofleet("results", "import", FIXTURES / "multi-job-json.json", data_dir=data_dir)
    assert "n/a" in proc.stdout
    run = show_json(1, data_dir)
    assert run["tests"][0]["all"]["lat_p99_us"] is None
    assert run["tests"][0]["all"]["iops"] > 0


def test_import_of_a_non_fio_file_is_refused_and_stores_nothing(tmp_path, data_dir):
    junk = tmp_path / "notes.json"
    junk.write_text(json.dumps({"hello": 1}))
    proc = iofleet("results", "import", FIXTURES / "single-job-json+.json", junk, data_dir=data_dir, check_rc=2)
    assert str(junk) in proc.stderr and "Traceback" not in proc.stderr
    assert "No runs" in iofleet("results", "list", data_dir=data_dir).stdout


def test_unknown_run_is_a_clear_error(data_dir):
    proc = iofleet("results", "show", "42", data_dir=data_dir, check_rc=2)
    assert "no run 42" in proc.stderr
