"""`iofleet validate --jobfiles DIR`: the job files as they would run, which
fio itself accepts and which import back as the same tests."""

import subprocess
from pathlib import Path

import yaml

from iofleet.plan.expand import expand
from iofleet.plan.load import load_plan, parse_plan

from ..cli import iofleet, write_plan

ROOT = Path(__file__).resolve().parents[2]


def test_jobfiles_are_what_fio_runs_and_import_back_as_the_same_tests(tmp_path, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="review", defaults={"size": "64m", "ramp": "2s"},
                      workloads=[{"name": "mix", "working_set_pct": 25, "until": "steady", "round": "2s",
                                  "max_runtime": "30s", "matrix": {"bs": ["4k", "64k"], "read_pct": [70, 0]}},
                                 {"name": "seq", "random_pct": 0, "engine": "psync", "direct": False,
                                  "ramp": 0}])
    out_dir = tmp_path / "jobs"
    out = iofleet("validate", plan, "--target", tmp_path, "--jobfiles", out_dir, data_dir=data_dir).stdout
    files = sorted(out_dir.glob("*.fio"))
    assert len(files) == 5 and f"Wrote 5 fio job files to {out_dir}" in out
    specs = expand(load_plan(plan))
    for spec, path in zip(specs, files):
        assert path.name.startswith("00") and spec.id in path.name
        check = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr  # fio itself reads every option
        imported = parse_plan(yaml.safe_load(iofleet("import", path, data_dir=data_dir).stdout))
        (back,) = expand(imported)
        assert back.values() == spec.values(), path.name
        assert imported.targets == [str(tmp_path)]


def test_jobfiles_to_a_place_that_cannot_be_written_is_one_line(tmp_path, data_dir):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = iofleet("validate", ROOT / "examples" / "quick.yaml", "--jobfiles", blocker / "sub", data_dir=data_dir,
                   check_rc=2)
    assert proc.stderr.startswith("error: --jobfiles") and "Traceback" not in proc.stderr
