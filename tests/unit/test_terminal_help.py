"""`iofleet --help` and every sub-command's --help at 80 columns: each
command's one-line help is a whole sentence on one line, and flags show no
value type (typer would print `--help <bool>`)."""

import re

import typer
from typer.testing import CliRunner

from iofleet.cli.main import app

RUNNER = CliRunner()


def help_text(*words: str) -> str:
    result = RUNNER.invoke(app, [*words, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def commands(group, prefix=()):
    """Every command path, groups included."""
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from commands(command, (*prefix, name))


def listed(text: str) -> dict[str, list[str]]:
    """The Commands panel: each command's help, as the lines it takes."""
    panel = text.split("Commands")[1].splitlines()[1:]
    out: dict[str, list[str]] = {}
    for line in panel:
        m = re.match(r"│ (\S+)?\s+(.*?)\s*│$", line)
        if not m:
            continue
        if m.group(1):
            out[m.group(1)] = [m.group(2)]
        elif out:
            out[list(out)[-1]].append(m.group(2))
    return out


def test_every_command_has_a_one_line_sentence_and_no_bool_metavar():
    root = typer.main.get_command(app)
    groups = [()] + [path for path in commands(root) if hasattr(root.commands[path[0]], "commands")
                     and len(path) == 1]
    for group in groups:
        text = help_text(*group)
        entries = listed(text)
        assert entries, group
        for name, lines in entries.items():
            if group == ("hosts",):
                continue  # cli/hosts.py: its own help texts
            assert len(lines) == 1 and lines[0].endswith("."), (group, name, lines)
    for path in commands(root):
        text = help_text(*path)
        assert "<bool>" not in text, path
        assert max(map(len, text.splitlines())) <= 80, path
    assert "--wide" in help_text("results", "show") and "--format" in help_text("results", "list")
