"""A study's settings on the parameter table: the rows a study takes
(`Param.studies`), its settings' fields built from them and their values as
a plan writes them, so that a new study setting is one row of params.py."""

from collections.abc import Mapping
from dataclasses import field, make_dataclass
from typing import Any, ClassVar, Optional

from .param import PLAN_DEFAULT, Param
from .params import PARAMS, RUN_PARAMS, UNTIL

TYPES = {"size": int, "duration": int, "int": int, "pct": int, "choice": str, "bool": bool}


def study_params(study: str, own_default: bool | None = None) -> dict[str, Param]:
    """The rows `study` takes, in table order (workload, then run settings).
    `own_default`: only those with (True) or without (False) a default of
    the study's own."""
    return {name: p for table in (PARAMS, RUN_PARAMS) for name, p in table.items() if study in p.studies
            and (own_default is None or (p.studies[study].default is not PLAN_DEFAULT) == own_default)}


def offered(study: str) -> dict[str, Param]:
    """The rows `study` offers as command-line options."""
    return {name: p for name, p in study_params(study).items() if p.studies[study].help is not False}


class TableSettings:
    """A study's settings whose fields are table rows (`rows`)."""

    rows: ClassVar[dict[str, Param]] = {}

    def table_values(self) -> dict:
        return {name: getattr(self, name) for name in self.rows}


def settings_fields(name: str, study: str, rows: Mapping[str, Param]) -> type:
    """A dataclass of one field per row, with the study's default: the base
    of a study's settings class (its own fields follow)."""
    fields = []
    for row_name, p in rows.items():
        default = p.study_default(study)
        kind = TYPES[p.kind]
        fields.append((row_name, Optional[kind] if default is None else kind, field(default=default)))
    return make_dataclass(name, fields, bases=(TableSettings,), namespace={"rows": dict(rows)})


def ending(values: Mapping[str, Any]) -> dict:
    """How a study's tests end, from its durations: a fixed runtime when it
    has one (not None), else until steady."""
    until = "time" if values.get(UNTIL["time"][0]) is not None else "steady"
    return {"until": until, **{name: values[name] for name in UNTIL[until]}}


def plan_entries(values: Mapping[str, Any], table: Mapping[str, Param] = PARAMS, text: bool = True) -> dict:
    """Values of `table`'s rows as a plan writes them, in table order, None
    left out; how the tests end (`ending`) where they first come, their
    `until` only when not a plan's default. `text`: sizes and durations in
    units (a plan file's text), else the values as they are."""
    ends = {"until", *(name for names in UNTIL.values() for name in names)}
    out: dict = {}
    for name, p in table.items():
        if name not in values or (values[name] is None and name not in ends):
            continue
        if name not in ends:
            out[name] = p.plan_text(values[name]) if text else values[name]
        elif not ends & set(out):  # the first of them: the whole group
            group = ending(values)
            if group["until"] == table["until"].default:
                del group["until"]
            out.update({n: table[n].plan_text(v) if text else v for n, v in group.items()})
    return out


def setting_help(p: Param, study: str) -> str:
    """The study's sentence for a row it offers, else the row's own help as one."""
    return p.studies[study].help or f"{p.help[0].upper()}{p.help[1:]}."


def option_name(name: str) -> str:
    """A row's command-line option: --max-runtime for max_runtime."""
    return "--" + name.replace("_", "-")
