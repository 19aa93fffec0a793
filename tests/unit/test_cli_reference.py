"""docs/cli.md is every command's --help as `iofleet` prints it now, and the
same file on every machine."""

from pathlib import Path
from typing import Annotated

import pytest
import typer

from iofleet.cli import reference
from iofleet.cli.main import app

DOC = Path(__file__).parents[2] / "docs" / "cli.md"


@pytest.fixture(scope="module")
def generated():
    return reference.markdown()


def test_the_cli_reference_is_generated_from_the_help(generated):
    assert generated == DOC.read_text(encoding="utf-8"), \
        f"docs/cli.md drifted from the commands' --help: run `{reference.COMMAND}` (or `make docs`)"


def test_every_command_and_sub_command_has_a_section(generated):
    headings = [line[3:] for line in generated.splitlines() if line.startswith("## ")]
    tree = typer.main.get_command(app)
    assert headings[0] == "iofleet"
    for group in ("results", "hosts"):
        sub = tree.commands[group]
        assert [f"iofleet {group} {name}" for name in sub.list_commands(None)] == \
            [h for h in headings if h.startswith(f"iofleet {group} ")]
    assert {"iofleet run", "iofleet easy-run", "iofleet results show", "iofleet hosts deploy"} <= set(headings)
    assert len(headings) == len(set(headings))


def test_the_reference_does_not_depend_on_this_machine(generated, monkeypatch, tmp_path):
    home, source = str(Path.home()), str(Path(reference.__file__).parents[3])
    for name, value in {"COLUMNS": "200", "TERMINAL_WIDTH": "200", "FORCE_COLOR": "1", "GITHUB_ACTIONS": "true",
                        "IOFLEET_DATA": str(tmp_path / "data"), "HOME": str(tmp_path), "LANG": "C"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert reference.markdown() == generated
    assert "\x1b" not in generated  # no colour codes
    assert max(len(line) for line in generated.splitlines()) <= reference.WIDTH
    assert source not in generated and home not in generated


def test_the_help_is_read_however_options_are_declared():
    toy = typer.Typer()
    group = typer.Typer(help="A group.")
    toy.add_typer(group, name="group")

    @toy.command()
    def plain(size: str = typer.Option("1g", help="Data file size.")):
        """Declared with a default."""

    @group.command()
    def annotated(depth: Annotated[int, typer.Option(help="Outstanding IOs.")] = 1):
        """Declared with Annotated."""

    paths = [path for path, _ in reference.commands(typer.main.get_command(toy))]
    assert paths == [(), ("plain",), ("group",), ("group", "annotated")]
    plain_help = reference.help_text(toy, ("plain",))
    assert "--size" in plain_help and "Data file size." in plain_help
    assert "--depth" in reference.help_text(toy, ("group", "annotated"))
