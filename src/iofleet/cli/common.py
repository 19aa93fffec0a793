"""What every command of the terminal front door shares: the consoles, the
--data-dir, --target and --destroy-data options, exit codes, printing
iofleet's own errors as one line, loading a plan, and stopping on Ctrl-C."""

import contextlib
import functools
import io
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.text import Text

from ..errors import IofleetError
from ..units import escaped

# The plan loader (with every importer) and the report's table fitting are
# imported by the functions that use them: commands without a plan start sooner.

STUDY_COMMANDS: dict = {}  # a study's own command (cli.study_commands), by the study's name
STUDY_SHOWS: dict = {}  # what `results show` prints of a study's run after its summary, by its record's key


def study_command(name: str):
    """Declare a typer command as the study `name`'s own (studies/kinds/)."""
    def register(command):
        STUDY_COMMANDS[name] = command
        return command
    return register


def study_show(name: str):
    """Declare `show(run, wide)` as what `results show` prints of the study `name`'s runs."""
    def register(show):
        STUDY_SHOWS[name] = show
        return show
    return register


class TrimmedLines(io.TextIOBase):
    """Piped output as a log wants it: no line padded with spaces to the
    console's width (rich pads a table's title and cells to the table's)."""

    def write(self, text: str) -> int:
        sys.stdout.write(re.sub(r"[ \t]+\n", "\n", text))  # sys.stdout as it is now (a test may swap it)
        return len(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return False


console = Console()
if not console.is_terminal and "COLUMNS" not in os.environ:
    # Logs and pipes: tables at their full width (up to 200), sentences on one line each, no padding.
    console = Console(file=TrimmedLines(), width=200, soft_wrap=True)
err_console = Console(stderr=True)

DataDir = typer.Option(None, "--data-dir", help="Results directory (default: $IOFLEET_DATA or ./iofleet-data).")
WideOpt = typer.Option(False, "--wide", help="Show every column in full (the table may wrap); by default a table "
                                             "narrower than the terminal leaves out what does not fit and says so.")
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
# parser=str: typer's Path('') would be '.', the current directory; the text is checked as a plan's targets.
TargetOpt = typer.Option(None, "--target", "-t", parser=str, metavar="PATH", help="Directory, or one block device (/dev/X), to test "
                                                       "(repeatable); replaces the plan's targets.")
DestroyOpt = typer.Option(None, "--destroy-data", metavar="/dev/X",
                          help="A device target whose data may be destroyed (repeatable): allows one that holds a "
                               "filesystem, partition table or other signature; never a mounted or in-use one.")


def table_width(wide: bool) -> int | None:
    """The width tables fit (report.fit): the terminal's, or None with --wide."""
    return None if wide else console.width


def print_table(renderable, wide: bool) -> None:
    """Print a fitted table, or with --wide every table at its full width."""
    from ..report.fit import print_wide
    print_wide(console, renderable) if wide else console.print(renderable)


def user_errors(fn):
    """Print iofleet's own errors as one line each and exit non-zero."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except IofleetError as exc:
            for line in str(exc).splitlines() or ["error"]:  # a line may quote the user's text: escaped
                err_console.print(Text.assemble(("error:", "red"), " ", escaped(line)), highlight=False,
                                  soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def check_label(label: Optional[str]) -> None:
    """A label given on the command line follows the rule of plans and the web API."""
    if label is not None:
        from ..plan.model import check_name
        try:
            check_name(label)
        except ValueError as exc:
            raise IofleetError(f"label {label!r}: {exc}") from None


@contextlib.contextmanager
def stop_on_signals():
    """Ctrl-C or SIGTERM sets the yielded event: the study stops fio, which
    still writes its results, and finished tests are kept."""
    stop = threading.Event()

    def on_signal(signum, frame):
        if not stop.is_set():
            err_console.print("[yellow]Stopping: waiting for fio to finish writing its results…[/]")
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def checked_targets(target: Optional[List[str]]) -> Optional[List[Path]]:
    """--target values, checked as a plan's targets are (refused in one line)."""
    from ..plan.load import check_targets
    return [Path(t) for t in check_targets(target)] if target else None


def plan_with_targets(plan_path: Path, targets: Optional[List[Path]], destroy_data: Optional[List[str]] = None):
    """The plan (a YAML plan, or a plain fio job file imported unchanged) and
    its text to store; what the import noted is printed as `note:` lines."""
    from ..importers import load_plan_source
    from ..plan.load import with_destroy_data, with_targets
    plan, text, notes = load_plan_source(plan_path)
    if targets:
        plan = with_targets(plan, targets)
    if destroy_data:
        plan = with_destroy_data(plan, destroy_data)
    for note in notes:
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    return plan, text
