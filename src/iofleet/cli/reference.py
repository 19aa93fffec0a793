"""The command-line reference, docs/cli.md, generated from every command's
`--help` (as sqlite-utils does with cog).

It walks the command tree that `iofleet` runs and keeps what `--help`
prints, so it does not matter how a command declares its options. The help
is rendered in a child Python with a fixed environment: 80 columns, no
colour, no terminal, a neutral home and working directory; the file is then
the same on every machine. A test fails when docs/cli.md drifts.
Regenerate with `python -m iofleet.cli.reference docs/cli.md` (or `make docs`).
"""

import os
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

import iofleet

WIDTH = 80
COMMAND = "python -m iofleet.cli.reference docs/cli.md"
RENDER_HERE = "--render-in-this-environment"

HEADER = f"""# Command-line reference

<!-- Generated from every command's --help by iofleet.cli.reference; do not
edit by hand: regenerate with `{COMMAND}`
(or `make docs`). A test fails when this file drifts. -->

Every `iofleet` command and sub-command with what its `--help` prints, in the
order of `iofleet --help` ({WIDTH} columns, no colour).
"""


def fixed_environment() -> dict[str, str]:
    """The environment the help is rendered in: built from nothing, so no
    width, colour setting, data directory or home of this machine leaks in
    (HOME is "~": a default under the home would read `~/...`)."""
    source = str(Path(iofleet.__file__).resolve().parents[1])  # where this iofleet is imported from
    return {
        "PYTHONPATH": source, "PATH": os.defpath, "HOME": "~", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8",
        "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": str(WIDTH), "LINES": "24",
        "TERMINAL_WIDTH": str(WIDTH),  # typer's own width for its rich help
        "_TYPER_FORCE_DISABLE_TERMINAL": "1",  # typer: never style the help as for a terminal
    }


def commands(command, path: tuple[str, ...] = ()):
    """(path, command) for a command and every visible sub-command under it,
    in `--help`'s order. A group is whatever lists sub-commands (typer keeps
    its own copy of click, so its groups are not `click.Group`s)."""
    yield path, command
    if hasattr(command, "list_commands"):
        ctx = command.context_class(command, info_name="iofleet")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name))


def help_text(app: typer.Typer, path: tuple[str, ...]) -> str:
    """What `iofleet <path> --help` prints, without the spaces rich pads lines with."""
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="iofleet", terminal_width=WIDTH)
    if result.exit_code != 0:
        raise RuntimeError(f"`iofleet {' '.join(path)} --help` failed: {result.output}")
    return "\n".join(line.rstrip() for line in result.output.splitlines()).strip("\n")


def render() -> str:
    """The whole reference, rendered in this process (as its environment is)."""
    from .main import app

    out = [HEADER]
    for path, _ in commands(typer.main.get_command(app)):
        out += [f"## {' '.join(('iofleet', *path))}", "", "```", help_text(app, path), "```", ""]
    return "\n".join(out)


def markdown() -> str:
    """The reference as docs/cli.md holds it, rendered in the fixed environment."""
    child = subprocess.run([sys.executable, "-m", "iofleet.cli.reference", RENDER_HERE], env=fixed_environment(),
                           cwd="/", capture_output=True, encoding="utf-8", timeout=120)
    if child.returncode != 0:
        raise RuntimeError(f"rendering the command-line reference failed:\n{child.stderr}")
    return child.stdout


if __name__ == "__main__":  # python -m iofleet.cli.reference docs/cli.md (no file: print it)
    if sys.argv[1:] == [RENDER_HERE]:
        sys.stdout.write(render())
    elif len(sys.argv) == 2:
        Path(sys.argv[1]).write_text(markdown(), encoding="utf-8")
    else:
        sys.stdout.write(markdown())
