"""When a fleet host that has not ended is declared lost (fleet/fio_link/remote.py
_overdue): the rule the docs state in docs/fleet.md "When a host fails"."""

from iofleet.fleet.fio_link.remote import LATE_HOST_S, PREPARE_SLOWDOWN, _overdue


def test_a_test_host_is_lost_late_host_s_after_its_planned_end_plus_the_others_delay():
    planned = {"h1": 10.0, "h2": 10.0}
    done = {"h1": 11.5}  # h1 ended (without error) 1.5 s after its planned end
    assert _overdue("h2", 10 + 1.5 + LATE_HOST_S - 0.1, None, planned, done) is None
    why = _overdue("h2", 10 + 1.5 + LATE_HOST_S + 0.1, None, planned, done)
    assert why.startswith("no result 17 s after its planned end")
    # A host that failed is not in `done`: no measure of the others' pace.
    assert _overdue("h2", 100.0, None, planned, {}) is None


def test_while_no_host_has_ended_only_the_timeout_counts():
    assert _overdue("h1", 500.0, None, {"h1": 10.0}, {}) is None
    assert _overdue("h1", 131.0, 130.0, {"h1": 10.0}, {}) == "no result in 130 s; its connection was ended"


def test_preparation_is_judged_by_the_slowest_finished_hosts_rate_and_each_hosts_data():
    work = {"h1": 100 * 2**20, "h2": 1000 * 2**20, "h3": 100 * 2**20}  # h2 has ten times the data of h1
    done = {"h1": 2.0}  # h1: 50 MiB/s
    # h2 would take 20 s at h1's rate: it is given twice that plus LATE_HOST_S.
    assert _overdue("h2", PREPARE_SLOWDOWN * 20 + LATE_HOST_S - 0.5, None, None, done, work) is None
    assert "would have taken it 20 s" in _overdue("h2", PREPARE_SLOWDOWN * 20 + LATE_HOST_S + 0.5, None, None,
                                                   done, work)
    assert _overdue("h3", PREPARE_SLOWDOWN * 2 + LATE_HOST_S + 0.5, None, None, done, work)
    assert _overdue("h3", 500.0, None, None, {}, work) is None  # nobody has ended: no pace to judge by
