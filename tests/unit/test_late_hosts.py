"""When a fleet host that has not ended is declared lost (fleet/remote.py
_overdue): the rule the docs state in docs/fleet.md "When a host fails"."""

from iofleet.fleet.remote import LATE_HOST_S, PREPARE_SLOWDOWN, _overdue
from iofleet.fleet.runner import FioRun


def _ended(returncode: int = 0) -> FioRun:
    return FioRun(returncode=returncode, final_output="{}", stdout="", stderr="", stopped=False, killed=False,
                  wall_s=1.0)


def test_a_test_host_is_lost_late_host_s_after_its_planned_end_plus_the_others_delay():
    planned = {"h1": 10.0, "h2": 10.0}
    runs, ended = {"h1": _ended()}, {"h1": 11.5}  # h1 ended 1.5 s after its planned end
    assert _overdue("h2", 10 + 1.5 + LATE_HOST_S - 0.1, None, planned, ended, runs) is None
    why = _overdue("h2", 10 + 1.5 + LATE_HOST_S + 0.1, None, planned, ended, runs)
    assert why.startswith("no result 17 s after its planned end")
    # A host that failed is no measure of the others' pace.
    assert _overdue("h2", 100.0, None, planned, {"h1": 11.5}, {"h1": _ended(1)}) is None


def test_while_no_host_has_ended_only_the_timeout_counts():
    assert _overdue("h1", 500.0, None, {"h1": 10.0}, {}, {}) is None
    assert _overdue("h1", 131.0, 130.0, {"h1": 10.0}, {}, {}) == "no result in 130 s; its fio client was ended"


def test_preparation_is_judged_by_the_slowest_finished_hosts_rate_and_each_hosts_data():
    work = {"h1": 100 * 2**20, "h2": 1000 * 2**20, "h3": 100 * 2**20}  # h2 has ten times the data of h1
    runs, ended = {"h1": _ended()}, {"h1": 2.0}  # h1: 50 MiB/s
    # h2 would take 20 s at h1's rate: it is given twice that plus LATE_HOST_S.
    assert _overdue("h2", PREPARE_SLOWDOWN * 20 + LATE_HOST_S - 0.5, None, None, ended, runs, work) is None
    assert "would have taken it 20 s" in _overdue("h2", PREPARE_SLOWDOWN * 20 + LATE_HOST_S + 0.5, None, None,
                                                   ended, runs, work)
    assert _overdue("h3", PREPARE_SLOWDOWN * 2 + LATE_HOST_S + 0.5, None, None, ended, runs, work)
    assert _overdue("h3", 500.0, None, None, {}, {}, work) is None  # nobody has ended: no pace to judge by
