"""Easy Run's rules: a plan from what the hosts are."""

import pytest

from iofleet.errors import IofleetError
from iofleet.plan import expand, parse_plan
from iofleet.plan.easy import GiB, MiB, Durations, HostFacts, easy_plan


def plan_tests(facts, **kw):
    data, reasons = easy_plan(facts, ["/data"], kw.pop("durations", Durations()), **kw)
    return expand(parse_plan(data)), reasons, data


def test_four_standard_profiles_until_steady_by_default():
    specs, reasons, data = plan_tests([HostFacts("local", cpus=16, memory_bytes=64 * GiB, free_bytes=500 * GiB,
                                               rotational=False)])
    assert [(s.bs, s.read_pct, s.random_pct) for s in specs] == [
        (4096, 100, 100), (4096, 70, 100), (8192, 50, 100), (256 * 1024, 0, 0)]
    assert data["prepare"] == "random"
    s = specs[0]
    # 16 CPUs → 8 jobs (half, at most 8); flash → 32 outstanding → qd 4 per job.
    assert (s.jobs, s.iodepth) == (8, 4) and specs[3].iodepth == 1
    # 10 % of 500 GiB is 50 GiB, capped at 32 GiB per host: 4 GiB per job file.
    assert s.size == 4 * GiB and s.direct
    assert (s.until, s.round, s.max_runtime, s.ramp) == ("steady", 60, 1800, 60)
    assert any("until steady" in r for r in reasons)


def test_small_host_spinning_disk_and_the_smallest_host_decides():
    hosts = [HostFacts("a", cpus=2, free_bytes=40 * GiB, rotational=True),
             HostFacts("b", cpus=32, free_bytes=900 * GiB, rotational=False)]
    specs, reasons, _ = plan_tests(hosts)
    s = specs[0]
    assert (s.jobs, s.iodepth) == (1, 8)  # 2 CPUs → 1 job; a spinning disk → 8 outstanding
    assert s.size == 4 * GiB  # 10 % of the smallest free space (40 GiB)
    assert any("spinning disk" in r for r in reasons)


def test_nothing_visible_gives_safe_defaults_and_overrides_win():
    specs, reasons, _ = plan_tests([HostFacts("h1")], durations=Durations(runtime=30, ramp=5), working_set=64 * MiB)
    s = specs[0]
    assert (s.jobs, s.iodepth) == (2, 16) and s.size == 32 * MiB
    assert (s.until, s.runtime, s.ramp) == ("time", 30, 5)
    assert "jobs per host: 2 (CPU count not visible)" in reasons


def test_not_enough_free_space_is_a_clear_error():
    with pytest.raises(IofleetError, match="not enough free space.*smaller --size"):
        easy_plan([HostFacts("local", cpus=4, free_bytes=2 * GiB)], ["/d"], Durations(), 4 * GiB)
