"""The Plans editor's form and its YAML kept in step: plan data → form
values, form values merged into plan data, problems placed at their form
field. Pure functions, no web objects.

The YAML stays the source of truth. The form shows the plan and each of
its workloads (workload i's inputs are named `wI-NAME`, the first's plain
`NAME`); a form edit changes only the fields the user changed, so every
key the form does not know survives. A workload parameter lives where the
YAML already has it: one value under `defaults:` (or the workload, if it
sets it; with several workloads a changed shared default becomes that
workload's own), several values under the workload's `matrix:`.
"""

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

import yaml

from ..plan.model import Plan
from ..plan.params import PARAMS, RUN_PARAMS


@dataclass(frozen=True)
class FormField:
    name: str  # the input's name: the plan key it edits (or `workload`: the workload's name)
    label: str
    kind: str  # text | lines | choice | values (one value, or a comma-separated matrix)
    help: str
    choices: tuple = ()
    param: bool = False  # a workload parameter (else a top-level plan setting)
    workload: int = 0  # of a workload's field: which workload

    @property
    def input(self) -> str:
        """The input's name (and, after `f-`, its id)."""
        return key(self.workload, self.name) if self.param or self.name == "workload" else self.name

    @property
    def default(self) -> str:
        """What an empty field means (its placeholder)."""
        if self.param:
            p = PARAMS[self.name]
            return p.format(p.default)
        return str(Plan.model_fields[self.name].default) if self.kind == "choice" else ""


def _param(name: str) -> FormField:
    """A workload parameter's field, from the table: a list of values, or a
    choice (true/false for a switch)."""
    p = PARAMS[name]
    choices = p.choices or (("true", "false") if p.kind == "bool" else ())
    return FormField(name, p.label, "choice" if choices else "values", p.help, choices, param=True)


def _setting(name: str, label: str) -> FormField:
    p = RUN_PARAMS[name]
    return FormField(name, label, "choice", p.help, p.choices)


PLAN_FIELDS = (
    FormField("name", "Name", "text", "letters, digits, . _ - (the saved file's name)"),
    FormField("description", "Description", "text", "what the plan measures"),
    FormField("label", "Label", "text", "stored with each run; `iofleet compare` groups runs by it"),
    FormField("targets", "Targets", "lines",
              "directories on the storage under test, one per line (or one block device, /dev/…)"),
    _setting("on_error", "On a failed test"),
    _setting("prepare", "Prepare data"),
)
WORKLOAD_FIELDS = (
    FormField("workload", "Workload name", "text", "names the workload in test ids and reports"),
    *(_param(name) for name in PARAMS),
)
FIELDS = {f.name: f for f in PLAN_FIELDS + WORKLOAD_FIELDS}
MAX_WORKLOADS = 12  # the form shows at most this many workloads; more are edited in the YAML


def key(index: int, name: str) -> str:
    """Workload `index`'s input for `name`: the first workload's keep their plain names."""
    return name if index == 0 else f"w{index}-{name}"


def workload_fields(count: int) -> list[FormField]:
    """Every workload's fields, in order."""
    return [replace(f, workload=i) for i in range(max(count, 1)) for f in WORKLOAD_FIELDS]

# Where a new key goes among the existing ones, so the YAML reads like docs/plans.md.
TOP_ORDER = ("name", "description", "label", "targets", "hosts", *RUN_PARAMS, "defaults", "workloads")
WORKLOAD_ORDER = ("name", "description", "hosts", *PARAMS, "matrix")
NEW_PLAN = {"name": "new-plan",
            "defaults": {"size": "1g", "runtime": "1m", "ramp": "10s"},
            "workloads": [{"name": "main", "matrix": {"bs": ["4k", "64k"], "read_pct": [100, 0]}}]}
_WORKLOAD_PATH = re.compile(r"^(?:defaults|workloads\[(\d+)\](?:\.matrix)?)\.(\w+)(?:\[\d+\])?$")


def parse_list(text: str) -> list[str]:
    """'4k, 64k' → ['4k', '64k']. Only commas separate: a size or duration
    may hold a space ('64 MB', '1h 30m')."""
    return [item.strip() for item in text.split(",") if item.strip()]


def typed(field: FormField, text: str) -> Any:
    """A typed word as YAML would read it for this field: `4` → 4 for counts and
    percentages, `true` → True for a switch; anything else stays text, so
    validation names the field and quotes what was typed."""
    if field.param and PARAMS[field.name].kind == "bool":
        return {"true": True, "false": False}.get(text.lower(), text)
    if field.param and PARAMS[field.name].kind != "choice" and re.fullmatch(r"\d+", text):
        return int(text)
    return text


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    return "" if value is None else str(value)


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _workloads(data: dict) -> list:
    return data.get("workloads") if isinstance(data.get("workloads"), list) else []


def workloads_on_form(data: Any) -> bool:
    """Whether the form can stand for the plan's workloads: not a mixed plan
    (its workloads run side by side on host groups), each one a mapping."""
    workloads = _workloads(data) if isinstance(data, dict) else []
    return (isinstance(data, dict) and not data.get("mixed") and len(workloads) <= MAX_WORKLOADS
            and all(isinstance(w, dict) for w in workloads))


def workload_count(data: Any) -> int:
    return max(len(_workloads(data)), 1) if isinstance(data, dict) else 1


def form_values(data: Any) -> dict[str, str]:
    """The form's text per field, from plan data. A workload parameter shows its
    matrix list if it has one, else the workload's own value, else the default's."""
    data = _mapping(data)
    defaults, workloads = _mapping(data.get("defaults")), _workloads(data) or [{}]
    values = {}
    for f in PLAN_FIELDS:
        value = data.get(f.name)
        values[f.name] = "\n".join(map(_shown, value)) if f.kind == "lines" and isinstance(value, list) \
            else _shown(value)
    for i, workload in enumerate(map(_mapping, workloads)):
        matrix = _mapping(workload.get("matrix"))
        values[key(i, "workload")] = _shown(workload.get("name"))
        for f in WORKLOAD_FIELDS[1:]:
            source = next((m for m in (matrix, workload, defaults) if f.name in m), {})
            values[key(i, f.name)] = _shown(source.get(f.name))
    return values


def unshown(data: Any) -> list[str]:
    """What the YAML says that the form cannot show: kept as it is, edited in the YAML."""
    if not isinstance(data, dict):
        return [] if data is None else ["the whole plan (the YAML is not a mapping of plan settings)"]
    out = [k for k in data if k not in FIELDS and k not in ("defaults", "workloads")]
    out += [f"defaults.{k}" for k in _mapping(data.get("defaults")) if not _on_form(k)]
    workloads = _workloads(data)
    if not workloads_on_form(data):
        out.append(f"workloads ({len(workloads)} workloads{', mixed' if data.get('mixed') else ''}: "
                   f"the form edits up to {MAX_WORKLOADS} workloads of a plan that is not mixed)")
        return out
    for i, workload in enumerate(workloads):
        out += [f"workloads[{i}].{k}" for k in workload if k not in ("name", "matrix") and not _on_form(k)]
        out += [f"workloads[{i}].matrix.{k}" for k in _mapping(workload.get("matrix")) if not _takes_list(k)]
    return out


def _on_form(key: str) -> bool:
    return key in FIELDS and FIELDS[key].param


def _takes_list(key: str) -> bool:
    return _on_form(key) and FIELDS[key].kind == "values"


def disabled(data: Any) -> set[str]:
    """Fields the form cannot edit for this YAML: the workload's, when there are
    several workloads; a select whose parameter the matrix varies."""
    if not isinstance(data, dict):
        return set(FIELDS) if data is not None else set()
    if not workloads_on_form(data):
        return {f.name for f in WORKLOAD_FIELDS}
    return {key(i, k) for i, w in enumerate(_workloads(data)) for k in _mapping(w.get("matrix"))
            if _on_form(k) and not _takes_list(k)}


def merge(data: Any, form: Mapping[str, str]) -> dict:
    """Plan data with the form's changes: a field missing from `form` (disabled)
    or showing what the data already says is left alone, so keys, values and
    their spelling that the user did not change stay as they are."""
    data = _copy(data if isinstance(data, dict) else {})
    before, fixed = form_values(data), disabled(data)
    count = workload_count(data) if workloads_on_form(data) else 1
    fields = [*PLAN_FIELDS, *workload_fields(count)]
    changed = [(f, form[f.input]) for f in fields if f.input in form and f.input not in fixed
               and _differs(f, form[f.input], before.get(f.input, ""))]
    for f, text in changed:
        if f.param:  # a select's one value parses as a list of one
            _set_param(data, f, [typed(f, word) for word in parse_list(text)], shared=count == 1)
        elif f.name == "workload":
            _set(_nth_workload(data, f.workload), "name", text.strip() or None, WORKLOAD_ORDER)
        elif f.kind == "lines":
            _set(data, f.name, _lines(text) or None, TOP_ORDER)
        else:
            _set(data, f.name, text.strip() or None, TOP_ORDER)
    return data


def act(data: dict, action: str) -> bool:
    """The form's workload buttons: `add` a workload (named to be unique),
    `remove-I` workload I (never the last one). Whether anything changed."""
    workloads = _workloads(data)
    if action == "add" and workloads_on_form(data) and len(workloads) < MAX_WORKLOADS:
        names = {w.get("name") for w in workloads if isinstance(w, dict)}
        name = next(f"workload{n}" for n in range(len(workloads) + 1, 10 * MAX_WORKLOADS) if f"workload{n}" not in names)
        _first_workload(data)  # a plan without workloads gets its first, then the new one
        data["workloads"].append({"name": name})
        return True
    m = re.fullmatch(r"remove-(\d+)", action)
    if m and len(workloads) > 1 and int(m[1]) < len(workloads):
        del workloads[int(m[1])]
        return True
    return False


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _differs(f: FormField, new: str, old: str) -> bool:
    if f.kind == "values":
        return parse_list(new) != parse_list(old)
    if f.kind == "lines":
        return _lines(new) != _lines(old)
    return new.strip() != old.strip()


def _copy(value: Any) -> Any:
    """A deep copy of YAML data (mappings keep their order)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _first_workload(data: dict) -> dict:
    """The plan's first workload, made (as `main`) when the plan has none yet."""
    if not _workloads(data) or not isinstance(data["workloads"][0], dict):
        _set(data, "workloads", [{"name": "main"}], TOP_ORDER)
    return data["workloads"][0]


def _nth_workload(data: dict, index: int) -> dict:
    return _first_workload(data) if index == 0 else data["workloads"][index]


def _set_param(data: dict, f: FormField, values: list, shared: bool = True) -> None:
    """One value: where the YAML had it (the workload's own, else `defaults:`
    when `shared`: the plan has one workload); several: the workload's matrix;
    none: nowhere (the default applies)."""
    workload = _nth_workload(data, f.workload)
    had_own = f.name in workload or not shared  # several workloads: a change is this workload's own
    for holder in (workload.get("matrix"), workload, data.get("defaults") if shared else None):
        if isinstance(holder, dict):
            holder.pop(f.name, None)
    if len(values) > 1:
        matrix = workload.get("matrix") if isinstance(workload.get("matrix"), dict) else {}
        _set(matrix, f.name, values, WORKLOAD_ORDER)
        _set(workload, "matrix", matrix, WORKLOAD_ORDER)
    elif values and had_own:
        _set(workload, f.name, values[0], WORKLOAD_ORDER)
    elif values:
        defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
        _set(defaults, f.name, values[0], WORKLOAD_ORDER)
        _set(data, "defaults", defaults, TOP_ORDER)
    for holder, key in ((workload, "matrix"), (data, "defaults")):
        if holder.get(key) == {}:
            del holder[key]


def _set(mapping: dict, key: str, value: Any, order: tuple) -> None:
    """mapping[key] = value in place (None removes it); a new key goes before
    the first key that comes after it in `order`, keys `order` lacks stay put."""
    if value is None:
        mapping.pop(key, None)
        return
    if key in mapping or key not in order:
        mapping[key] = value
        return
    rank = order.index(key)
    items = list(mapping.items())
    at = next((i for i, (k, _) in enumerate(items) if k in order and order.index(k) > rank), len(items))
    items.insert(at, (key, value))
    mapping.clear()
    mapping.update(items)


class _PlanDumper(yaml.SafeDumper):
    """Block mappings, lists of plain values on one line (`bs: [4k, 64k]`),
    list items indented under their key, as in docs/plans.md."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _represent_list(dumper, items):
    flat = all(not isinstance(v, (dict, list)) for v in items)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=flat)


_PlanDumper.add_representer(list, _represent_list)


def to_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_PlanDumper, sort_keys=False, allow_unicode=True, width=4096)


def has_comments(text: str) -> bool:
    """Whether the YAML seems to hold comments (which a form edit rewrites away)."""
    return re.search(r"(^|\s)#", text, re.MULTILINE) is not None


def field_of(path: str, on_form: set[str] | None = None) -> str | None:
    """The form field a problem's path belongs to ('workloads[0].matrix.bs[1]' →
    'bs'; 'workloads[2].bs' → 'w2-bs'), or None when the form does not show
    it (`on_form`: the inputs shown; None: any)."""
    top = re.match(r"^(\w+)(?:\[\d+\])?$", path)
    if top and top[1] in FIELDS and not FIELDS[top[1]].param and top[1] != "workload":
        name = top[1]
    elif (w := re.fullmatch(r"workloads\[(\d+)\]\.name", path)):
        name = key(int(w[1]), "workload")
    else:
        m = _WORKLOAD_PATH.match(path)
        name = key(int(m[1] or 0), m[2]) if m and _on_form(m[2]) else None
    return name if on_form is None or name in on_form else None


def place_problems(problems: list[dict], on_form: set[str]) -> tuple[dict[str, list[str]], list[dict]]:
    """Validation's [{field, message}] split into the messages at each form
    field and the problems of everything else (shown with their path)."""
    at_field: dict[str, list[str]] = {}
    others = []
    for p in problems:
        name = field_of(p["field"], on_form)
        if name is None:
            others.append(p)
        else:
            at_field.setdefault(name, []).append(p["message"])
    return at_field, others
