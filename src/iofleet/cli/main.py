"""The terminal front door: thin typer commands over the studies and stores,
one module per group of commands; this one assembles them into `iofleet`.

Errors a user can cause are printed as one line each, without a traceback,
with a non-zero exit code.
"""

import typer
from typer.core import TyperOption

from .common import user_errors
from .compare import compare_command
from .hosts import hosts_app, server
from .importing import import_command
from .kubernetes import kubernetes_app
from .model import model_command
from .plans import params, validate
from .results import diagnose_command, report_command, results_app
from .run import run
from .serve import serve_command
from .study_commands import command_of
from . import curve, run as _run, scenario, studies  # noqa: F401,E402 (their studies' commands: study_command)

_value_type = TyperOption.display_type_rich


def _flag_type(self, ctx):
    """typer 0.29 labels flags, which take no value, "<bool>" in --help."""
    return None if self.is_flag else _value_type(self, ctx)


TyperOption.display_type_rich = _flag_type

app = typer.Typer(
    help="iofleet: how fast is this storage, really, and why? (fio-based benchmarking)",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
app.add_typer(results_app, name="results")
app.add_typer(hosts_app, name="hosts")
app.add_typer(kubernetes_app, name="kubernetes")

# The order of `iofleet --help`: these, and each study after the command its declaration names.
COMMANDS = [
    ("validate", validate, None),
    ("run", run, None),
    ("server", server, "Start `fio --server` as iofleet expects it, on a fleet host."),
    ("import", user_errors(import_command), None),
    ("model", user_errors(model_command), None),
    ("compare", user_errors(compare_command), "Compare runs or labels test by test, with significance."),
    ("serve", user_errors(serve_command), "Serve the web UI and its REST API (docs at /api/docs)."),
    ("params", params, None),
    ("report", report_command, None),
    ("diagnose", diagnose_command, None),
]


def _with_studies(commands: list) -> list:
    """The commands with each study's after the one it names (in the order of STUDIES), else last."""
    from ..studies.kinds import STUDIES
    out, waiting = list(commands), list(STUDIES.values())
    while waiting:
        names = [name for name, _, _ in out]
        study = next((s for s in waiting if s.after in names), waiting[0])
        waiting.remove(study)
        at = names.index(study.after) + 1 if study.after in names else len(out)
        out.insert(at, (study.name, command_of(study), study.short_help))
    return out


for _name, _command, _short in _with_studies(COMMANDS):
    app.command(_name, short_help=_short)(_command)


def main():  # pragma: no cover
    app()
