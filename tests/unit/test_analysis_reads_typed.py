"""Analysis and the report read the typed run (results.model.Run,
TestRecord and their records), never the exported dict: `to_dict` is for
the edges (export, bundle files, API and JSON output, the store). An AST
scan, so neither spacing nor a getattr hides a call."""

import ast
from pathlib import Path

SRC = Path(__file__).parents[2] / "src" / "iofleet"
READERS = ("analysis", "report")


def _to_dict_uses(source: str, name: str) -> list[str]:
    """Where a module reads `to_dict`: an attribute (called or passed on),
    or its name as a string (getattr); defining one is no use of it."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Attribute) and node.attr == "to_dict":
            found.append(f"{name}:{node.lineno}: .to_dict")
        elif isinstance(node, ast.Constant) and node.value == "to_dict":
            found.append(f"{name}:{node.lineno}: 'to_dict'")
    return found


def test_analysis_and_report_never_read_the_export_shape():
    files = [p for stage in READERS for p in sorted((SRC / stage).rglob("*.py"))]
    assert len(files) > 20  # the scan sees the stages' modules
    assert [use for p in files for use in _to_dict_uses(p.read_text(), str(p.relative_to(SRC)))] == []


def test_the_scan_finds_a_use_however_it_is_written():
    source = ("a = run.to_dict ()\nb = getattr(run, 'to_dict')()\nc = [t.to_dict for t in run.tests]\n"
              "class Finding:\n    def to_dict(self):\n        return {}\n")
    assert sorted(_to_dict_uses(source, "m.py")) == ["m.py:1: .to_dict", "m.py:2: 'to_dict'", "m.py:3: .to_dict"]
