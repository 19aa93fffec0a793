"""The study registry (studies/kinds/): each study declares itself once,
and the front doors, the record and the report loop over the registry;
no module outside a study's own asks which study it holds by name. The
end-to-end proof (a toy study in one new file) is
tests/integration/test_toy_study.py."""

import ast
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import iofleet
from iofleet.cli.main import app
from iofleet.errors import IofleetError
from iofleet.results.methodology import STUDY_RECORDS, CurveRecord, RunMethodology, SaturateRecord
from iofleet.studies.kinds import STUDIES, study

SRC = Path(iofleet.__file__).parent
NAMES = set(STUDIES)
# Where a study's name may be written: its own module, and the parameter
# table's rows, which name the studies that take them (Param.studies).
OWN_PLACES = ("studies/kinds/", "plan/param.py", "plan/params.py")
NOT_STUDIES = {"importers/vdbench.py": "vdbench's iorate=curve, told apart from a fixed rate"}


def test_the_studies_in_their_order():
    assert list(STUDIES) == ["easy-run", "scale", "saturate", "curve", "scenario"]
    assert [name for name, s in STUDIES.items() if s.title] == ["easy-run", "saturate", "curve", "scenario"]
    with pytest.raises(IofleetError, match="^no study 'fast'; the studies: easy-run, scale, saturate, curve"):
        study("fast")


def test_each_study_is_a_command_where_its_declaration_puts_it():
    commands = [c.name for c in app.registered_commands]
    assert commands == ["validate", "run", "easy-run", "server", "import", "model", "compare", "serve", "params",
                        "report", "scale", "diagnose", "saturate", "curve", "scenario"]


def _named(node: ast.AST) -> list[str]:
    """Study names this node compares with, or lists (two or more)."""
    if isinstance(node, ast.Compare):
        return [c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant) and c.value in NAMES]
    elems = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.Tuple, ast.List,
                                                                                         ast.Set)) else []
    found = [e.value for e in elems if isinstance(e, ast.Constant) and e.value in NAMES]
    return found if len(found) >= 2 else []


def test_no_module_dispatches_on_study_names():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where.startswith(OWN_PLACES) or where in NOT_STUDIES:
            continue
        found += [f"{where}:{n.lineno}: {', '.join(_named(n))}" for n in ast.walk(ast.parse(path.read_text()))
                  if _named(n)]
    assert found == [], "study names tested or listed outside the study's module (ask the registry):\n" + \
        "\n".join(found)


def test_a_study_record_is_written_where_it_was_and_read_by_its_key():
    stored = {"prepare": None, "clear_cache": True, "measure": "x", "percentile": "p99",
              "saturate": {"bs": 4096, "stopped": ["a"]}, "resumes": None}
    m = RunMethodology.from_dict(stored)
    assert m.to_dict() == stored and list(m.to_dict()) == list(stored)
    assert isinstance(m.saturate, SaturateRecord) and m.curve is None and m.study == "saturate"
    new = RunMethodology(percentile="p99", curve=CurveRecord(max_iops=5.0))
    assert list(new.to_dict()) == ["prepare", "clear_cache", "measure", "percentile", "curve"]
    both = replace(new, saturate=SaturateRecord(bs=8192))
    assert both.curve.max_iops == 5.0 and both.saturate.bs == 8192 and new.saturate is None
    assert list(STUDY_RECORDS)[:3] == ["saturate", "curve", "scenario"]
    with pytest.raises(AttributeError):
        _ = new.no_such_record


def test_a_curves_headline_is_its_most_iops():
    run = SimpleNamespace(methodology=SimpleNamespace(curve=CurveRecord(max_iops=1234.56, source="saturate run 3")))
    best = STUDIES["curve"].headline(run, {"iops": 1000.0, "iops_test": "t", "p99_ms": 1.0, "p99_text": "1 ms"})
    assert best["iops"] == 1234.6 and best["iops_test"] == "the most IOPS (saturate run 3)" and best["p99_ms"] is None
    assert STUDIES["saturate"].headline(run, {"iops": 1.0}) == {"iops": 1.0}


def test_own_settings_are_declared_once_for_both_front_doors(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    text = " ".join(CliRunner().invoke(app, ["saturate", "--help"]).output.split())
    fields = {f.name: f for f in STUDIES["saturate"].fields()}
    for s in STUDIES["saturate"].settings:
        assert s.flag in text and s.help[:-1] in text and s.help[:-1] in fields[s.name].help
    assert "--max-jobs <int> Most jobs per host (default: its CPUs)." in text
    assert fields["max_jobs"].default == "its CPUs"
    easy = {f.name: f for f in STUDIES["easy-run"].fields()}
    assert easy["probe"].help.startswith("Off: guess jobs × iodepth") and easy["probe"].default == "on"
    with pytest.raises(IofleetError, match=r"^--min-gain 0.0: give a share above 0"):
        STUDIES["saturate"].parse({"min_gain_pct": 0.0})
