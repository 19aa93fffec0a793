"""The test suite's own layout: no module of tests/ imports a test module
(test_*.py). What tests share lives in helper modules (tests/cli.py,
tests/fleet/helpers.py, tests/unit/store_records.py, ...), so that running,
moving or deleting one test file never changes another."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _imported_modules(source: str, package: tuple[str, ...]) -> set[str]:
    """Dotted names of the modules of the `tests` package that `source`
    imports, for a module of `package` (("tests", "unit") for tests/unit/x.py).
    `from PKG import NAME` counts PKG.NAME too, as NAME may be a module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    return {m for m in found if m == "tests" or m.startswith("tests.")}


def _is_test_module(dotted: str) -> bool:
    *package, name = dotted.split(".")
    return name.startswith("test_") and (TESTS.parent.joinpath(*package, f"{name}.py")).is_file()


def test_no_module_of_the_tests_imports_a_test_module():
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        package = path.relative_to(TESTS.parent).parent.parts
        for module in sorted(_imported_modules(path.read_text(), package)):
            if _is_test_module(module):
                wrong.append(f"{path.relative_to(TESTS.parent)} imports {module}")
    assert not wrong, "move what they share into a helper module: " + "; ".join(wrong)


def test_the_checker_sees_every_way_of_importing_a_test_module():
    unit = ("tests", "unit")
    assert _imported_modules("from .test_store import save\n", unit) >= {"tests.unit.test_store"}
    assert _imported_modules("from . import test_store\n", unit) >= {"tests.unit.test_store"}
    assert _imported_modules("from ..fleet.test_fleet_run import SHORT\n", unit) >= {"tests.fleet.test_fleet_run"}
    assert _imported_modules("import tests.unit.test_store\n", unit) == {"tests.unit.test_store"}
    assert _imported_modules("from tests.unit.test_store import save\n", unit) >= {"tests.unit.test_store"}
    # iofleet's own names that start with test_ are not test modules
    assert _imported_modules("from iofleet.analysis.methodology import test_totals\n", unit) == set()
    assert _is_test_module("tests.unit.test_store") and not _is_test_module("tests.unit.store_records")
