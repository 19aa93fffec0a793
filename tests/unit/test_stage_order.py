"""DESIGN.md: a stage imports only the stages before it, and no stage
imports studies, cli or web."""

import ast
from pathlib import Path

import iofleet

STAGES = ["errors", "units", "plan", "fio", "importers", "fleet", "results", "analysis", "report"]
TOP = ["studies", "cli", "web"]
ROOT = Path(iofleet.__file__).parent


def _imported_packages(source: str, package: str, depth: int = 1) -> set[str]:
    """First-level iofleet packages imported by a module of `package`, that
    lies `depth` packages below iofleet (2 in analysis/diagnostics/)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("iofleet."):
                found.add(node.module.split(".")[1])
            elif 0 < node.level <= depth:
                found.add(package)
            elif node.level == depth + 1 and node.module:
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("iofleet.")}
    return found


def test_no_stage_imports_a_later_one():
    order = STAGES + TOP
    wrong = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        own = rel.parts[0].removesuffix(".py")
        if own not in order or len(rel.parts) == 1:
            continue
        for other in _imported_packages(path.read_text(), own, len(rel.parts) - 1) - {own}:
            if other not in order:
                continue
            later = order.index(other) > order.index(own)
            if (own in STAGES and later) or (own in TOP and other in TOP and later and own != "cli"):
                wrong.append(f"{rel} imports iofleet.{other}")
    assert not wrong, wrong


def test_the_checker_sees_backward_imports():
    source = "from ..results.model import Aggregate\nfrom .jobfile import render_test\nimport iofleet.web.app\n"
    assert _imported_packages(source, "fio") == {"results", "fio", "web"}
    nested = "from ...report.summary import x\nfrom ..little import y\nfrom . import latency\n"
    assert _imported_packages(nested, "analysis", depth=2) == {"report", "analysis"}
