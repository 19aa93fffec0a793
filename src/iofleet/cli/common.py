"""What every command of the terminal front door shares: the consoles, the
--data-dir option, exit codes, and printing iofleet's own errors as one line."""

import functools
from typing import Optional

import typer
from rich.console import Console
from rich.text import Text

from ..errors import IofleetError
from ..plan.model import check_name

console = Console()
if not console.is_terminal:
    console = Console(width=200)  # logs and pipes: never wrap a table row
err_console = Console(stderr=True)

DataDir = typer.Option(None, "--data-dir", help="Results directory (default: $IOFLEET_DATA or ./iofleet-data).")
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def user_errors(fn):
    """Print iofleet's own errors as one line each and exit non-zero."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except IofleetError as exc:
            for line in str(exc).splitlines() or ["error"]:
                err_console.print(Text.assemble(("error:", "red"), " ", line), highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def check_label(label: Optional[str]) -> None:
    """A label given on the command line follows the rule of plans and the web API."""
    if label is not None:
        try:
            check_name(label)
        except ValueError as exc:
            raise IofleetError(f"label {label!r}: {exc}") from None
