"""No function in src/iofleet is over 80 lines, counted from its `def`
(decorators aside) to its last line: a longer one does several things."""

import ast
from pathlib import Path

import iofleet

ROOT = Path(iofleet.__file__).parent
LIMIT = 80


def _long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int, int]]:
    """(name, line of its def, lines) of each function over `limit` lines;
    a nested function or method counts on its own and inside its outer one."""
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


def test_no_function_is_over_80_lines():
    found = [f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)"
             for path in sorted(ROOT.rglob("*.py")) for name, line, n in _long_functions(path.read_text())]
    assert not found, found


def test_the_checker_counts_from_def_to_the_last_line():
    body = "".join(f"x{i} = {i}\n" for i in range(79))
    indent = lambda n: "".join(" " * n + line + "\n" for line in body.splitlines())  # noqa: E731
    source = f"@decorator\ndef fits():\n{indent(4)}\n\nclass C:\n    async def over(self):\n{indent(8)}        pass\n"
    assert _long_functions(source) == [("over", 85, 81)]  # fits: 80 lines, decorator aside
