"""Loading plan files with readable, one-line-per-problem errors."""

import re
from pathlib import Path

import yaml
from pydantic import ValidationError

from ..errors import PlanError
from .model import Plan
from .units import shown as show_value

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


def with_destroy_data(plan: Plan, devices: list[str], source: str = "--destroy-data") -> Plan:
    """The plan with more devices whose data may be destroyed (given on the
    command line), checked like the file's own `destroy_data:`."""
    named = list(dict.fromkeys([*plan.destroy_data, *map(str, devices)]))
    return parse_plan(plan.model_dump(exclude_none=True) | {"destroy_data": named}, source)


def read_yaml(path: Path, what: str = "plan"):
    """A YAML file's data; PlanError naming the file (and the line) otherwise."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PlanError([f"{path}: no such {what} file"]) from None
    except UnicodeDecodeError as exc:
        raise PlanError([f"{path}: byte {exc.start} is not UTF-8 text; save the {what} as UTF-8"]) from None
    except OSError as exc:
        raise PlanError([f"{path}: cannot read the {what} ({exc.strerror or exc})"]) from None
    return yaml_data(text, str(path))


def yaml_data(text: str, source: str):
    """YAML text's data; PlanError naming the source and the line otherwise."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        # (PyYAML appends Python's own error to some: "failed to decode base64 data: <codec error>")
        problem = (getattr(exc, "problem", None) or "invalid YAML").split(": ", 1)[0]
        raise PlanError([f"{source}: not valid YAML{where}: {problem}"],
                        fields=[("", f"not valid YAML{where}: {problem}")]) from None
    except (ValueError, TypeError, LookupError, AttributeError, OverflowError, RecursionError) as exc:
        # PyYAML's value constructors raise these (2001-13-45, `!!int x`,
        # a 5000-digit number), and deep nesting exhausts the stack.
        problem = YAML_VALUE_PROBLEM if not isinstance(exc, RecursionError) else "nested too deeply"
        raise PlanError([f"{source}: not valid YAML: {problem}"],
                        fields=[("", f"not valid YAML: {problem}")]) from None


def parse_plan_text(text: str, source: str = "<plan>") -> Plan:
    """A plan from its YAML text (the web UI's editor, the API)."""
    return parse_plan(yaml_data(text, source), source)


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file; raise PlanError with every problem."""
    path = Path(path)
    return parse_plan(read_yaml(path), str(path))
