"""Loading plan files with readable, one-line-per-problem errors."""

import re
from pathlib import Path

import yaml
from pydantic import TypeAdapter, ValidationError

from ..errors import PlanError
from ..inputs import MAX_TEXT_BYTES, read_input_text
from .model import Plan, Targets
from .units import shown as show_value

MAX_YAML_BYTES = MAX_TEXT_BYTES  # a plan, inventory or model file: a few KiB
MAX_ALIAS_VALUES = 10_000  # values YAML aliases may add; `<<: *defaults` in a plan adds a few dozen
YAML_VALUE_PROBLEM = "a value cannot be read (an impossible date, a number too long, or a wrong !!tag)"


def loc_path(loc: tuple) -> str:
    """('workloads', 1, 'matrix', 'bs', 2) → 'workloads[1].matrix.bs[2]'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:  # an unknown key is the user's text: quoted if blank or not printable ('\n' would split the line)
            text = str(part)
            out += ("." if out else "") + (text if text.isprintable() and text.strip() else repr(text))
    return out or "(top level)"


def _message(err: dict) -> str:
    msg = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    if err["type"] == "extra_forbidden":
        msg = "unknown field; check the spelling (see `iofleet params` and docs/plans.md)"
    elif err["type"] == "missing":
        msg = "required field is missing"
    return msg


def field_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """(field path, message) per problem: 'workloads[0].matrix.bs[1]', "…";
    the path is '' for a problem of the whole document."""
    problems = []
    for err in exc.errors():
        # Pydantic adds the validator's name for Annotated/union steps; drop it.
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
        value = err.get("input")
        shown = "" if err["type"] in ("missing",) or isinstance(value, dict) else f" (got {show_value(value)})"
        message = _message(err)
        named = re.match(r"^([A-Za-z_][\w.\[\]]*): (.*)$", message) if not loc else None
        if named:  # a whole-plan check that names its own field
            problems.append((named[1], named[2]))
        else:
            problems.append((loc_path(loc) if loc else "", message + shown))
    return problems


def problem_lines(source: str, fields: list[tuple[str, str]]) -> list[str]:
    return [f"{source}: {where or '(top level)'}: {message}" for where, message in fields]


def format_validation_error(source: str, exc: ValidationError) -> list[str]:
    return problem_lines(source, field_problems(exc))


def parse_plan(data, source: str = "<plan>") -> Plan:
    if not isinstance(data, dict):
        raise PlanError([f"{source}: a plan is a YAML mapping with name, targets and workloads"],
                        fields=[("", "a plan is a YAML mapping with name, targets and workloads")])
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        fields = field_problems(exc)
        raise PlanError(problem_lines(source, fields), fields=fields) from None


def with_targets(plan: Plan, targets: list[str], source: str = "--target") -> Plan:
    """The plan with other targets (given on the command line or a page),
    which pass the same checks as the file's."""
    return parse_plan(plan.model_dump(exclude_none=True) | {"targets": [str(t) for t in targets]}, source)


_TARGETS = TypeAdapter(Targets)


def check_targets(targets: list, source: str = "--target") -> list[str]:
    """Targets given on the command line, checked as a plan's `targets:`
    are (an empty one would otherwise be the current directory)."""
    try:
        return _TARGETS.validate_python([str(t) for t in targets])
    except ValidationError as exc:
        fields = [("targets" + (where if where.startswith("[") or not where else "." + where), message)
                  for where, message in field_problems(exc)]
        raise PlanError(problem_lines(source, fields), fields=fields) from None


def with_destroy_data(plan: Plan, devices: list[str], source: str = "--destroy-data") -> Plan:
    """The plan with more devices whose data may be destroyed (given on the
    command line), checked like the file's own `destroy_data:`."""
    named = list(dict.fromkeys([*plan.destroy_data, *map(str, devices)]))
    return parse_plan(plan.model_dump(exclude_none=True) | {"destroy_data": named}, source)


def read_plan_text(path: Path, what: str = "plan") -> str:
    """A plan's (inventory's, model's) text: a regular file of at most
    1 MiB (inputs.py); PlanError naming the file otherwise."""
    return read_input_text(path, what, MAX_YAML_BYTES, error=lambda line: PlanError([line]))


def read_yaml(path: Path, what: str = "plan"):
    """A YAML file's data; PlanError naming the file (and the line) otherwise."""
    return yaml_data(read_plan_text(path, what), str(path))


def yaml_data(text: str, source: str):
    """YAML text's data; PlanError naming the source and the line otherwise.
    Bounded: at most 1 MiB of text, whose aliases may add at most
    MAX_ALIAS_VALUES values (a billion-laughs document is refused in
    milliseconds instead of filling the memory)."""
    def refuse(problem: str):
        return PlanError([f"{source}: {problem}"], fields=[("", problem)])

    if len(text) > MAX_YAML_BYTES:  # characters ≤ bytes: the web's text is bounded like a file
        raise refuse(f"{len(text) // 1024:,} KiB of YAML is too large (limit {MAX_YAML_BYTES // 1024:,} KiB)")
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # (reads the start of the text: may raise already)
        node = loader.get_single_node()
        if node is not None:
            added = _alias_values(node)
            if added is None:
                raise refuse("a YAML alias refers to the value that holds it; write the values out")
            if added > MAX_ALIAS_VALUES:
                raise refuse(f"too many YAML aliases (they would add more than {MAX_ALIAS_VALUES:,} values); "
                             f"write the values out")
        return loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        # (PyYAML appends Python's own error to some: "failed to decode base64 data: <codec error>")
        problem = (getattr(exc, "problem", None) or "invalid YAML").split(": ", 1)[0]
        raise refuse(f"not valid YAML{where}: {problem}") from None
    except (ValueError, TypeError, LookupError, AttributeError, OverflowError, RecursionError) as exc:
        # PyYAML's value constructors raise these (2001-13-45, `!!int x`,
        # a 5000-digit number), and deep nesting exhausts the stack.
        problem = YAML_VALUE_PROBLEM if not isinstance(exc, RecursionError) else "nested too deeply"
        raise refuse(f"not valid YAML: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _alias_values(root: yaml.Node) -> int | None:
    """How many values the document's aliases add once expanded (each alias
    stands for a copy of its anchor's whole value); None for an alias inside
    its own anchor's value. Linear in the document: each node's expanded
    size is computed once."""
    size: dict[int, int] = {}  # id(node) → values in it, expanded
    seen: set[int] = set()
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # iterative: deep nesting must not exhaust Python's stack here
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            if isinstance(node, yaml.MappingNode):
                kids = [n for pair in node.value for n in pair]
            else:
                kids = node.value
            size[key] = 1 + sum(size[id(k)] for k in kids)
            continue
        if key in size:
            continue
        if key in seen:  # met again before its size is known: it contains itself
            return None
        seen.add(key)
        distinct += 1
        if isinstance(node, yaml.ScalarNode):
            size[key] = 1
            continue
        stack.append((node, True))
        kids = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        stack.extend((k, False) for k in reversed(kids) if id(k) not in size)
    return size[id(root)] - distinct


def parse_plan_text(text: str, source: str = "<plan>") -> Plan:
    """A plan from its YAML text (the web UI's editor, the API)."""
    return parse_plan(yaml_data(text, source), source)


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file; raise PlanError with every problem."""
    path = Path(path)
    return parse_plan(read_yaml(path), str(path))
