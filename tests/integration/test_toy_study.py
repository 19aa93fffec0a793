"""A study is one file of studies/kinds/: copy the package, add a toy study's
file and nothing else, and find it end to end — its command and option in
`iofleet --help`, its field on the Run page, Validate, a real fio run, its
record stored (and exported), its report section and its kind in the list."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import iofleet

SRC = Path(iofleet.__file__).parent

# One short test whose IO is `blocks` blocks of 4 KiB; its record says how many.
TOY = '''
"""toy: one short test of `blocks` × 4 KiB IOs (a study in one file)."""

from dataclasses import dataclass
from types import SimpleNamespace

from ...report.own_sections import StudySection, add_section
from ...results.methodology import study_record
from ...results.records import Record
from ..study import Setting, Study


@study_record("toy")
@dataclass
class ToyRecord(Record):
    blocks: int | None = None


class Toy(Study):
    name = "toy"
    title = "toy: one short test"
    about_help = "Run one short test of BLOCKS × 4 KiB IOs."
    settings = (Setting("blocks", int, "Blocks of 4 KiB per IO.", default=2, words="2",
                        allowed=lambda v: 1 <= v <= 64, why="allowed 1 to 64 blocks"),)

    def plan(self, where, settings):
        from ...plan import parse_plan
        return parse_plan({"name": "toy", "targets": [str(t) for t in where.targets or []],
                           "defaults": {"size": "1m", "runtime": "1s", "ramp": "0s", "engine": "psync",
                                        "direct": False},
                           "workloads": [{"name": "toy", "bs": f"{4 * settings['blocks']}k"}]}, "toy")

    def preview(self, where, settings):
        return self.plan(where, settings)

    def about(self, settings):
        return f"one test of {settings['blocks']} × 4 KiB IOs"

    def run(self, where, settings):
        from ...results.methodology import RunMethodology
        from ..run import run_plan
        out = run_plan(self.plan(where, settings), "", where.store, hosts=where.hosts, label=where.label,
                       observer=where.observer, stop=where.stop)
        method = where.store.get_run(out.run_id).methodology or RunMethodology()
        method.toy = ToyRecord(blocks=settings["blocks"])
        where.store.set_run_methodology(out.run_id, method)
        return SimpleNamespace(run=out)

    def lines(self, outcome):
        return ["toy: done"]


def _section(run, series):
    record = run.methodology.toy if run.methodology is not None else None
    if not record:
        return None
    return StudySection("toy", "Toy study", [f"{record.blocks} blocks of 4 KiB per IO"], [{"blocks": record.blocks}])


add_section("toy", _section)
'''

WEB = '''
import json, sys
from fastapi.testclient import TestClient
from iofleet.web.app import create_app
from iofleet.web.render import Settings
client = TestClient(create_app(Settings(data_dir=__import__("pathlib").Path(sys.argv[1]))), base_url="http://127.0.0.1")
client.headers["X-CSRF-Token"] = client.get("/api/session").json()["csrf_token"]
page = client.get("/run").text
body = {"study": "toy", "targets": [sys.argv[2]], "settings": {"blocks": "3"}}
bad = client.post("/api/runs/validate", json={**body, "settings": {"blocks": "99"}}).json()
print(json.dumps({"choice": '<option value="toy">toy: one short test</option>' in page,
                  "field": 'data-setting="blocks"' in page,
                  "validate": client.post("/api/runs/validate", json=body).json(), "refused": bad}))
'''


def iofleet_cli(copy: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iofleet", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(copy), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                            "COLUMNS": "200", "IOFLEET_DATA": str(cwd / "data")})


@pytest.fixture
def toy_package(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy / "iofleet", ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(copy) for p in copy.rglob("*")}
    (copy / "iofleet/studies/kinds/toy.py").write_text(TOY)
    assert {p.relative_to(copy) for p in copy.rglob("*")} - before == {Path("iofleet/studies/kinds/toy.py")}
    return copy


def test_a_new_study_is_one_file(toy_package, tmp_path):
    copy, target = toy_package, tmp_path / "target"
    target.mkdir()
    top = iofleet_cli(copy, tmp_path, "--help")
    assert top.returncode == 0 and "toy" in top.stdout.split("scenario")[-1], top.stdout  # last in the list
    help_ = iofleet_cli(copy, tmp_path, "toy", "--help")
    assert "--blocks" in help_.stdout and "Blocks of 4 KiB per IO (default: 2)." in help_.stdout, help_.stdout
    refused = iofleet_cli(copy, tmp_path, "toy", "--target", str(target), "--blocks", "99")
    assert refused.returncode != 0 and "--blocks 99: allowed 1 to 64 blocks" in refused.stderr
    assert "Traceback" not in refused.stderr

    web = subprocess.run([sys.executable, "-c", WEB, str(tmp_path / "web-data"), str(target)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(copy), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    assert web.returncode == 0, web.stderr
    seen = json.loads(web.stdout)
    assert seen["choice"] and seen["field"]
    checks = {c["name"]: c for c in seen["validate"]["checks"]}
    assert checks["study"]["detail"] == "toy: one test of 3 × 4 KiB IOs", seen["validate"]
    assert seen["refused"]["ok"] is False and "--blocks 99: allowed 1 to 64" in seen["refused"]["checks"][0]["detail"]

    ran = iofleet_cli(copy, tmp_path, "toy", "--target", str(target), "--blocks", "2")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "toy: done" in ran.stdout and "Run 1 complete" in ran.stdout
    shown = json.loads(iofleet_cli(copy, tmp_path, "results", "show", "1", "--format", "json").stdout)
    assert shown["methodology"]["toy"] == {"blocks": 2}
    assert shown["tests"][0]["params"]["bs"] == 8192
    listed = iofleet_cli(copy, tmp_path, "results", "list").stdout
    assert " toy " in listed, listed
    report = tmp_path / "report.html"
    assert iofleet_cli(copy, tmp_path, "report", "1", "-o", str(report)).returncode == 0
    html = report.read_text()
    assert '<h2 id="toy">Toy study</h2>' in html and "2 blocks of 4 KiB per IO" in html
