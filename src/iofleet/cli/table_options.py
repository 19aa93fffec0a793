"""A study's command-line options generated from the parameter table, as
fio generates its own from its option table (options_to_lopts): one option
per row the study offers (plan/settings.py `offered`), named, typed and
documented by the row; a new study setting is one row of plan/params.py.
Its own settings (studies/kinds/: `Study.settings`) are options the same way."""

import functools
import inspect
from typing import Any, Callable, Optional

import typer

from ..plan.params import Param
from ..plan.settings import offered, option_name, setting_help
from ..studies.study import Setting, Study

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


def _own_help(s: Setting, default: Any) -> str:
    """A setting's help with its default: in words within the sentence, or as typer shows one."""
    if s.words and s.words != "none":
        return f"{s.help[:-1]} (default: {s.words})."
    if default is not None and not s.given_default and s.kind is not bool:
        return f"{s.help} \\[default: {default}]"
    return s.help


def _own_option(s: Setting, study: Study) -> inspect.Parameter:
    default = study.class_default(s.name)
    extra = {"metavar": s.metavar} if s.metavar else {}
    if s.kind is bool:  # a flag: --no-probe turns off what is on
        info = typer.Option(False, s.flag, help=_own_help(s, default), **extra)
    else:
        info = typer.Option(default if s.given_default else None, s.flag, help=_own_help(s, default), **extra)
    kind = s.kind if s.given_default or s.kind is bool else Optional[s.kind]
    return inspect.Parameter(s.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=info, annotation=kind)


def own_options(study: Study, after: str) -> Callable:
    """Decorate a typer command: one option per setting of the study's own,
    placed after its parameter `after`; it receives them together as `own`
    (setting → the value given, None when not; a flag that turns off: False when given)."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)
        mine = [p for p in signature.parameters.values() if p.name != "own"]
        at = next(i for i, p in enumerate(mine) if p.name == after) + 1
        generated = [_own_option(s, study) for s in study.settings]

        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            own = {s.name: kwargs.pop(s.name, None) for s in study.settings}
            own |= {s.name: not own[s.name] for s in study.settings if s.kind is bool and s.default is True}
            return command(*args, own=own, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[*mine[:at], *generated, *mine[at:]])
        wrapper.__annotations__ = {**{k: v for k, v in command.__annotations__.items() if k != "own"},
                                   **{p.name: p.annotation for p in generated}}
        return wrapper
    return decorate
