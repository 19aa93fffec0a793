"""The terminal front door: thin typer commands over the studies and stores,
one module per group of commands; this one assembles them into `iofleet`.

Errors a user can cause are printed as one line each, without a traceback,
with a non-zero exit code.
"""

import typer
from typer.core import TyperOption

from .common import user_errors
from .compare import compare_command
from .curve import curve_command
from .hosts import hosts_app, server
from .importing import import_command
from .model import model_command
from .plans import params, validate
from .results import diagnose_command, report_command, results_app
from .run import easy_run_command, run
from .scenario import scenario_command
from .serve import serve_command
from .studies import saturate, scale

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

# The order of `iofleet --help`.
app.command("validate")(validate)
app.command("run")(run)
app.command("easy-run")(easy_run_command)
app.command("server", short_help="Start `fio --server` as iofleet expects it, on a fleet host.")(server)
app.command("import")(user_errors(import_command))
app.command("model")(user_errors(model_command))
app.command("compare", short_help="Compare runs or labels test by test, with significance.")(
    user_errors(compare_command))
app.command("serve", short_help="Serve the web UI and its REST API (docs at /api/docs).")(user_errors(serve_command))
app.command("params")(params)
app.command("report")(report_command)
app.command("scale")(scale)
app.command("diagnose")(diagnose_command)
app.command("saturate")(saturate)
app.command("curve", short_help="Latency against load: fixed-rate tests up to the most IOPS.")(curve_command)
app.command("scenario", short_help="Run a load at a fixed rate while hosts, links or devices fail.")(scenario_command)


def main():  # pragma: no cover
    app()
