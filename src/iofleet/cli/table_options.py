"""A study's command-line options generated from the parameter table, as
fio generates its own from its option table (options_to_lopts): one option
per row the study offers (plan/settings.py `offered`), named, typed and
documented by the row; a new study setting is one row of plan/params.py."""

import functools
import inspect
from typing import Any, Callable, Optional

import typer

from ..plan.params import Param
from ..plan.settings import offered, option_name, setting_help

_MISSING = object()


def option_help(p: Param, study: str, default: Any) -> str:
    """The study's sentence for the row (else the row's help), then the
    study's default as typer shows one (`\\[`: a bracket, not rich markup)."""
    return setting_help(p, study) + (f" \\[default: {p.format(default)}]" if default is not None else "")


def _option(name: str, p: Param, study: str, defaults_from: tuple) -> inspect.Parameter:
    default = next((getattr(cls, name) for cls in defaults_from if getattr(cls, name, _MISSING) is not _MISSING), None)
    flag = option_name(name)
    if p.kind == "bool":  # --direct/--no-direct; None: not given
        info, kind = typer.Option(None, f"{flag}/--no-{flag[2:]}", help=option_help(p, study, default)), bool
    else:  # text, parsed by the row (units, bounds) in studies/options.py
        info, kind = typer.Option(None, flag, help=option_help(p, study, default)), str
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=info, annotation=Optional[kind])


def table_options(study: str, *defaults_from: type, after: str) -> Callable:
    """Decorate a typer command: one option per row `study` offers, placed
    after its parameter `after`; it receives them together as `params`
    (row name → the value given, None when not). `defaults_from`: the
    study's settings classes whose defaults the help shows, first first."""
    rows = offered(study)

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)
        own = [p for p in signature.parameters.values() if p.name != "params"]
        at = next(i for i, p in enumerate(own) if p.name == after) + 1
        generated = [_option(name, p, study, defaults_from) for name, p in rows.items()]
        clash = {p.name for p in own} & set(rows)
        if clash:  # a row named like one of the command's own options: a bug to fix here
            raise AssertionError(f"{command.__name__}: {', '.join(sorted(clash))} is already an option")
        parameters = [*own[:at], *generated, *own[at:]]  # all with defaults: typer calls with keywords

        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            params = {name: kwargs.pop(name, None) for name in rows}
            return command(*args, params=params, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=parameters)
        wrapper.__annotations__ = {**{k: v for k, v in command.__annotations__.items() if k != "params"},
                                   **{p.name: p.annotation for p in generated}}
        return wrapper
    return decorate
