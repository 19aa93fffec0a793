"""An output file (-o, --junit, --html): written whole, then moved into
place; a symlink there is replaced, its target never written through."""

import pytest

from iofleet.cli.output import write_output
from iofleet.errors import IofleetError


def test_a_symlink_at_the_output_is_replaced_not_written_through(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    link = tmp_path / "gate.xml"
    link.symlink_to(precious)
    write_output(link, "<testsuites/>\n", "--junit")
    assert precious.read_text() == "keep me\n"
    assert not link.is_symlink() and link.read_text() == "<testsuites/>\n"
    write_output(link, b"again\n", "--junit")  # an existing file is replaced as a whole
    assert link.read_bytes() == b"again\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gate.xml", "precious"]  # no temporary left


def test_an_unwritable_place_is_one_line_naming_the_option(tmp_path):
    with pytest.raises(IofleetError, match=r"^--html .*nowhere/x.html: cannot write \(No such file or directory\)"):
        write_output(tmp_path / "nowhere" / "x.html", "x", "--html")
