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


# ---- no import circle ------------------------------------------------------
# A circle between modules means neither can be understood (or imported) on
# its own; DESIGN.md's floors keep packages apart, this keeps modules apart.
# Module-level imports count (those under `if TYPE_CHECKING:` too: the
# dependency is there all the same); an import inside a function runs later
# and does not, unless it is there only to dodge a circle.

ALLOWED_CYCLES: list[set[str]] = []  # none: a circle is a module in the wrong place


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(source: str, module: str, is_package: bool, modules: set[str]) -> tuple[set[str], dict[str, int]]:
    """The iofleet modules `module` imports at module level, and those it
    imports inside a function ({module: line}). `from .pkg import name`
    imports the module pkg.name when there is one, else pkg."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    top, deferred = set(), {}

    def targets(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for name in targets(child):
                    if name in modules and name != module:
                        if inner:
                            deferred.setdefault(name, child.lineno)
                        else:
                            top.add(name)
            visit(child, inner)

    visit(ast.parse(source), False)
    return top, deferred


def _packages_run_first(module: str, imported: str, modules: set[str]) -> set[str]:
    """The packages whose `__init__` Python runs when `module` imports
    `imported` (a.b.c runs a/__init__ and a/b/__init__ first): those above
    `imported` that are not already running around `module` itself."""
    parts = imported.split(".")
    above = {".".join(parts[:n]) for n in range(1, len(parts))}
    mine = module.split(".")
    around = {".".join(mine[:n]) for n in range(1, len(mine) + 1)}
    return {p for p in above - around if p in modules}


def _graph(sources: dict[str, tuple[str, bool]]) -> tuple[dict[str, set[str]], dict[str, dict[str, int]]]:
    """{module: (source, is_package)} → module-level imports, imports in
    functions; importing a submodule imports the packages above it too."""
    modules = set(sources)
    graph, deferred = {}, {}
    for name, (source, is_package) in sources.items():
        top, later = _imports(source, name, is_package, modules)
        graph[name] = top | {p for m in top for p in _packages_run_first(name, m, modules)}
        deferred[name] = dict(later)
        for m, line in later.items():
            for p in _packages_run_first(name, m, modules):
                deferred[name].setdefault(p, line)
    return graph, deferred


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules `start` imports, directly or through others."""
    seen, todo = set(), list(graph.get(start, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules that import each other, at module level
    (strongly connected components of more than one module)."""
    reach = {name: _reachable(graph, name) for name in graph}
    groups: list[set[str]] = []
    for name in sorted(graph):
        group = {other for other in reach[name] if name in reach[other]}
        if name in group and group not in groups:
            groups.append(group)
    return groups


def _circle_dodges(graph, deferred) -> list[str]:
    """Imports inside a function whose module imports the importer back:
    deferred only to dodge a circle."""
    return [f"{name} imports {other} in a function (line {line}), and {other} imports {name}"
            for name, found in sorted(deferred.items()) for other, line in sorted(found.items())
            if name in _reachable(graph, other)]


def _package_graph():
    return _graph({_module_name(p): (p.read_text(), p.name == "__init__.py") for p in ROOT.rglob("*.py")})


def test_no_module_imports_itself_through_others():
    graph, _ = _package_graph()
    circles = [sorted(c) for c in _cycles(graph) if c not in ALLOWED_CYCLES]
    assert not circles, circles


def test_no_import_is_deferred_to_dodge_a_circle():
    graph, deferred = _package_graph()
    assert not _circle_dodges(graph, deferred)


def test_the_checker_sees_circles_and_dodges():
    sources = {
        "iofleet.studies": ("", True),
        "iofleet.studies.run": ("from .progress import RunProgress\ndef f():\n    from .live import P\n", False),
        "iofleet.studies.progress": ("from . import run\n", False),
        "iofleet.studies.live": ("from .progress import RunProgress\n", False),
        "iofleet.web.live": ("from ..studies.live import P\nimport iofleet.studies.run\n", False),
    }
    graph, deferred = _graph(sources)
    assert graph["iofleet.web.live"] == {"iofleet.studies.live", "iofleet.studies.run", "iofleet.studies"}
    assert _cycles(graph) == [{"iofleet.studies.run", "iofleet.studies.progress"}]
    assert _circle_dodges(graph, deferred) == [
        "iofleet.studies.run imports iofleet.studies.live in a function (line 3), and iofleet.studies.live "
        "imports iofleet.studies.run"]


def test_the_checker_counts_the_packages_a_submodule_import_runs():
    # fleet/local.py → fleet/targets/__init__ → device → fleet/local.py: no
    # module imports local's importer directly, but importing
    # fleet.targets.device_checks runs fleet/targets/__init__ first.
    sources = {
        "iofleet": ("", True),
        "iofleet.fleet": ("", True),
        "iofleet.fleet.local": ("from .targets.device_checks import holders\n", False),
        "iofleet.fleet.targets": ("from . import device\n", True),
        "iofleet.fleet.targets.device": ("from ..local import facts\nfrom .device_checks import holders\n", False),
        "iofleet.fleet.targets.device_checks": ("", False),
        "iofleet.results.model": ("from ..fleet.targets.device import Device\n", False),
    }
    graph, _ = _graph(sources)
    assert graph["iofleet.fleet.local"] == {"iofleet.fleet.targets.device_checks", "iofleet.fleet.targets"}
    # a package's own __init__ and those around the importer are not counted again
    assert graph["iofleet.fleet.targets.device"] == {"iofleet.fleet.local", "iofleet.fleet.targets.device_checks"}
    assert graph["iofleet.results.model"] == {"iofleet.fleet.targets.device", "iofleet.fleet.targets", "iofleet.fleet"}
    assert _cycles(graph) == [{"iofleet.fleet.local", "iofleet.fleet.targets", "iofleet.fleet.targets.device"}]
