"""The typed run model reads its own export back: a real run's JSON comes
back byte for byte through Run.from_dict(...).to_dict(), methodology
records included, and records stored by an older iofleet export as they
were stored."""

import json
from pathlib import Path

import pytest

from iofleet.results.methodology import (FleetRecord, ResumeRecord, RunMethodology, SaturateRecord, SteadyVerdict,
                                         TestMethodology)
from iofleet.results.model import Run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXACT = sorted((FIXTURES / "exports").glob("*.json")) + [FIXTURES / "runs" / "ceph-fuse.json"]
OLDER = sorted((FIXTURES / "runs").glob("*.json")) + sorted((FIXTURES / "compare").glob("run*.json")) + \
    sorted((FIXTURES / "saturate").glob("*.json"))


@pytest.mark.parametrize("path", EXACT, ids=lambda p: p.name)
def test_a_real_runs_export_comes_back_byte_for_byte(path):
    text = path.read_text()
    run = Run.from_dict(json.loads(text))
    assert json.dumps(run.to_dict(), indent=2) + "\n" == text  # as `results export --format json` writes it


def test_the_records_are_typed():
    run = Run.from_dict(json.loads((FIXTURES / "exports" / "steady-window.json").read_text()))
    assert isinstance(run.methodology, RunMethodology) and run.methodology.prepare.passes == 2
    steady = run.tests[2].methodology
    assert isinstance(steady, TestMethodology) and steady.until == "steady"
    assert isinstance(steady.verdict("iops"), SteadyVerdict) and steady.verdict("iops").short() == "not steady"
    assert steady.shown_window()["all"]["iops"] == pytest.approx(13505.3, abs=0.1)
    assert run.tests[0].methodology.shown_window() is None  # a fixed-time test: the whole test
    sweep = Run.from_dict(json.loads((FIXTURES / "exports" / "saturate.json").read_text()))
    assert isinstance(sweep.methodology.saturate, SaturateRecord) and sweep.methodology.saturate.slo == "p99<=2ms"
    curve = Run.from_dict(json.loads((FIXTURES / "exports" / "curve.json").read_text()))
    assert curve.methodology.curve.source == "saturate run 2" and curve.methodology.saturate is None


@pytest.mark.parametrize("path", OLDER, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_older_exports_load_with_their_methodology_and_fleet_as_stored(path):
    """Exports of older iofleets lack keys added since (the CPU split): they
    load, and what they recorded of the method and the fleet is kept whole."""
    doc = json.loads(path.read_text())
    out = Run.from_dict(doc).to_dict()
    assert json.dumps(out["methodology"]) == json.dumps(doc["methodology"])
    for mine, stored in zip(out["tests"], doc["tests"], strict=True):
        assert json.dumps(mine["methodology"]) == json.dumps(stored["methodology"])
        assert json.dumps(mine["fleet"]) == json.dumps(stored["fleet"])
        added = set(mine["all"]) - set(stored["all"])  # a field derived from the stored ones, added since
        assert added <= {"lat_bound_percentiles"} and mine["hosts"].keys() == stored["hosts"].keys()
        assert {k: v for k, v in mine["all"].items() if k not in added} == stored["all"]


def test_a_record_missing_keys_exports_as_stored_and_keeps_keys_it_does_not_know():
    stored = {"steady": {"iops": {"metric": "iops", "steady": False, "reason": "x", "round_s": 60, "window": 5,
                                  "rounds": []}},
              "window": None, "gone": {"kept": 1}, "prepared": True}
    method = TestMethodology.from_dict(stored)
    assert method.until is None and method.cache == {} and method.verdict("iops").data_pct == 20.0
    assert json.dumps(method.to_dict()) == json.dumps(stored)


def test_a_resume_joins_an_old_runs_methodology_at_its_end():
    from dataclasses import replace
    old = {"prepare": None, "clear_cache": True}  # before measure and percentile were recorded
    method = RunMethodology.from_dict(old)
    resumed = replace(method, resumes=[ResumeRecord(at="t", tests=["a"], prepare=None, replaced={})])
    assert resumed.to_dict() == old | {"resumes": [{"at": "t", "tests": ["a"], "prepare": None, "replaced": {}}]}
    assert list(resumed.to_dict()) == ["prepare", "clear_cache", "resumes"]


def test_a_new_records_json_leaves_out_what_its_study_did_not_record():
    assert list(RunMethodology(percentile="p99").to_dict()) == ["prepare", "clear_cache", "measure", "percentile"]
    assert FleetRecord(hosts=["h1", "h2"]).to_dict() == {"hosts": ["h1", "h2"], "skew": None}
    assert "fio_steady" not in TestMethodology().to_dict()


def test_the_results_modules_import_in_one_direction():
    """No circle inside results/ (export ↔ model was one): every import,
    TYPE_CHECKING ones included, follows one order."""
    import ast

    root = Path(__file__).resolve().parents[2] / "src" / "iofleet" / "results"
    imports: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        package = name.rsplit(".", 1)[0] if "." in name and not path.name == "__init__.py" else \
            (name if path.name == "__init__.py" else "")
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                found |= {target} if node.module else {".".join([*base, a.name]) for a in node.names}
        imports[name] = found

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in imports.get(start, ()):
            if nxt == goal or (nxt not in seen and (seen.add(nxt) or reaches(nxt, goal, seen))):
                return True
        return False

    circles = [m for m in imports if reaches(m, m, set())]
    assert "model" in imports and "export" in imports["model"]
    assert circles == []


def test_a_record_stored_empty_is_nothing_recorded_as_its_dict_was():
    assert not RunMethodology.from_dict({}) and not TestMethodology.from_dict({})
    assert RunMethodology.from_dict({"percentile": "p99"}) and RunMethodology() and TestMethodology()
