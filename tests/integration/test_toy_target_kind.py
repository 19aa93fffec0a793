"""A target kind is its two files, one per stage (plan/target_kinds/ says
how a plan writes it, fleet/targets/ what iofleet does with it): copy the
package, add a toy kind's two files and nothing else, and find it end to end
— a plan naming it validates, its own row is a parameter (in `iofleet
params`, the web's plan form and a study's options), a real fio run goes
where the kind says, and the run is stored, listed, shown and reported."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import iofleet

SRC = Path(iofleet.__file__).parent

# How a plan writes the toy kind (shm:NAME) and its own row: a write back
# to the device every N writes (fio's fsync=N).
PLAN_HALF = '''
import re

from ..param import Param
from . import TargetName

SHM_RE = re.compile(r"^shm:[a-z]{1,16}\\Z")


class ShmName(TargetName):
    kind = "shm"
    order = 9
    what, example = "a directory in RAM", "shm:NAME"
    short = "RAM directory"
    fio_options = ("fsync",)
    rows = (Param("shm_fsync", "int", 0, "RAM directories: write back every N writes (0 = never)", "fsync",
                  minimum=0, maximum=1000, label="shm fsync", column="shm_fsync", id_part=lambda v: f"fsync{v}",
                  to_fio=lambda v: [("fsync", v["shm_fsync"])] if v["shm_fsync"] else []),)

    @classmethod
    def claims(cls, value):
        return value.startswith("shm:")

    @classmethod
    def check(cls, value):
        if not SHM_RE.match(value):
            raise ValueError("a RAM directory is shm:NAME, NAME 1-16 letters a-z")
        return value
'''

# What iofleet does with one: a directory of its own under ROOT, made at
# preparation and removed at the end; the rest is the directory kind's.
FLEET_HALF = '''
from pathlib import Path

from .base import Access
from .directory import Directories
from .space import free_bytes

ROOT = Path("{root}")


class ShmDirectory(Directories):
    kind = "shm"

    def __init__(self, names, access=Access()):
        self.shm_names = list(names)
        super().__init__([str(ROOT / n.removeprefix("shm:")) for n in names], access)

    def prepare(self, facts, destroy_data):
        for t in self.targets:
            t.mkdir(parents=True, exist_ok=True)
        super().prepare(facts, destroy_data)

    def free_bytes(self):
        return free_bytes(ROOT)

    def cleanup(self):
        removed = super().cleanup()
        for t in self.targets:
            shutil.rmtree(t, ignore_errors=True)
        return removed
'''

CHECK = '''
import json
from iofleet.plan.params import PARAMS
from iofleet.web.plan_form import FIELDS
print(json.dumps({"row": "shm_fsync" in PARAMS, "form": "shm_fsync" in FIELDS}))
'''

PLAN = """name: toy
targets: [shm:toy]
defaults: {bs: 4k, size: 8m, runtime: 1s, ramp: 0s, read_pct: 0, iodepth: 1, engine: psync, direct: false}
workloads: [{name: w, matrix: {shm_fsync: [0, 4]}}]
"""


@pytest.fixture
def toy_package(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy / "iofleet", ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(copy) for p in copy.rglob("*.py")}
    root = tmp_path / "shm-root"
    root.mkdir()
    (copy / "iofleet/plan/target_kinds/shm.py").write_text(PLAN_HALF)
    (copy / "iofleet/fleet/targets/shm.py").write_text("import shutil\n" + FLEET_HALF.format(root=root))
    added = {p.relative_to(copy) for p in copy.rglob("*.py")} - before
    assert added == {Path("iofleet/plan/target_kinds/shm.py"), Path("iofleet/fleet/targets/shm.py")}
    return copy, root


def iofleet_cli(copy: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iofleet", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(copy), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                            "COLUMNS": "200", "IOFLEET_DATA": str(cwd / "data")})


def test_a_new_target_kind_is_its_two_files(toy_package, tmp_path):
    copy, root = toy_package
    plan = tmp_path / "toy.yaml"
    plan.write_text(PLAN)

    found = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120,
                           env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {"row": True, "form": True}
    params = iofleet_cli(copy, tmp_path, "params")
    assert "shm_fsync" in params.stdout and "write back every N writes" in params.stdout

    valid = iofleet_cli(copy, tmp_path, "validate", str(plan))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert "fsync0" in valid.stdout and "fsync4" in valid.stdout  # the row's part of the test ids
    bad = plan.with_name("bad.yaml")
    bad.write_text(PLAN.replace("shm:toy", "shm:Toy1"))
    refused = iofleet_cli(copy, tmp_path, "validate", str(bad))
    assert refused.returncode != 0 and "a RAM directory is shm:NAME" in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr

    run = iofleet_cli(copy, tmp_path, "run", str(plan))
    assert run.returncode == 0, run.stdout + run.stderr
    assert not (root / "toy").exists()  # the kind removed its directory at the end

    listed = iofleet_cli(copy, tmp_path, "results", "list")
    assert listed.returncode == 0 and "toy" in listed.stdout
    exported = iofleet_cli(copy, tmp_path, "results", "export", "1", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    stored = json.loads(exported.stdout)
    assert list(stored["host_facts"]["target_facts"]) == [str((root / "toy").resolve())]  # where the kind put it
    tests = stored["tests"]
    assert [t["params"]["shm_fsync"] for t in tests] == [0, 4]
    assert all(t["status"] == "ok" and t["write"]["iops"] > 0 for t in tests)
    report = iofleet_cli(copy, tmp_path, "report", "1", "-o", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    assert "fsync4" in (tmp_path / "r.html").read_text()
