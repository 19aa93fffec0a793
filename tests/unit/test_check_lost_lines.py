"""A host's own check is run again when the fio server's lines naming its
problem were lost (fleet.check._lost_lines), on recorded real outputs."""

from pathlib import Path

import pytest

from iofleet.fleet.check import _lost_lines
from iofleet.fleet.fio_link.runner import FioRun

CHECK = Path(__file__).parent.parent / "fixtures" / "fio" / "check"


def recorded(name: str) -> FioRun:
    text = (CHECK / name).read_text()
    json_at = text.index("\n{\n") + 1  # fio's JSON document follows its normal output
    return FioRun(returncode=0, final_output=text[json_at:], stdout=text[:json_at], stderr="",
                  stopped=False, killed=False, wall_s=0.1)


@pytest.mark.parametrize("name, lost", [("refused-lines-lost.txt", True), ("refused.txt", False),
                                        ("ready.txt", False)])
def test_only_a_refusal_without_its_reason_counts_as_lost(name, lost):
    assert _lost_lines(recorded(name)) is lost


def test_a_server_that_never_answered_is_not_asked_again_here():
    silent = FioRun(returncode=1, final_output=None, stdout="", stderr="fio: connect: Connection refused\n",
                    stopped=False, killed=False, wall_s=0.1)
    assert not _lost_lines(silent)
