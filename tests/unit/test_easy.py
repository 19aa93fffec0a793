"""Easy Run's rules: a plan from what the hosts are."""

from types import SimpleNamespace

import pytest

from iofleet.errors import IofleetError
from iofleet.plan import expand, parse_plan
from iofleet.plan.model import check_name
from iofleet.plan.easy import GiB, MiB, Durations, HostFacts, Load, easy_plan
from iofleet.studies.easy_run import choose_load, probe_label, probe_sweep


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
    assert any("spinning disk" in r and "rule of thumb, not measured" in r for r in reasons)


def test_nothing_visible_gives_safe_defaults_and_overrides_win():
    specs, reasons, _ = plan_tests([HostFacts("h1")], durations=Durations(runtime=30, ramp=5), working_set=64 * MiB)
    s = specs[0]
    assert (s.jobs, s.iodepth) == (2, 16) and s.size == 32 * MiB
    assert (s.until, s.runtime, s.ramp) == ("time", 30, 5)
    assert "jobs per host: 2 (rule of thumb, not measured: CPU count not visible)" in reasons


def test_not_enough_free_space_is_a_clear_error():
    with pytest.raises(IofleetError, match="not enough free space.*smaller --size"):
        easy_plan([HostFacts("local", cpus=4, free_bytes=2 * GiB)], ["/d"], Durations(), 4 * GiB)


def test_a_measured_load_replaces_the_rule_of_thumb_and_says_so():
    facts = [HostFacts("local", cpus=2, free_bytes=40 * GiB, rotational=True)]
    load = Load(2, 32, "jobs × iodepth: 2 × 32 per host (measured: …)")
    specs, reasons, _ = plan_tests(facts, working_set=1 * GiB, load=load)
    assert [(s.jobs, s.iodepth) for s in specs[:3]] == [(2, 32)] * 3
    # Sequential writes keep 8 outstanding IOs per host, split over the jobs.
    assert (specs[3].jobs, specs[3].iodepth) == (2, 4)
    assert specs[0].size == 512 * MiB  # the working set split over the measured jobs
    assert reasons[0] == load.why and not any("rule of thumb" in r for r in reasons)


def cell(jobs, iodepth, iops, runs=1):
    # choose_load reads only these fields of analysis.saturation.Cell.
    return SimpleNamespace(jobs=jobs, iodepth=iodepth, iops=iops, runs=runs, per_host=jobs * iodepth)


def test_the_probe_chooses_its_most_iops_and_says_what_was_measured():
    facts = [HostFacts("local", cpus=2, rotational=True)]  # rule of thumb: 1 × 8
    cells = [cell(1, 1, 20e3), cell(1, 8, 72e3), cell(1, 32, 120e3), cell(2, 32, 139e3, runs=3), cell(2, 64, 141e3)]
    # saturate's answer, 2 × 32, cannot be told from 2 × 64: Easy Run takes the most IOPS, and says so.
    load = choose_load(SimpleNamespace(peak=cells[3], cells=cells), 7, 1, facts, 61.4)
    assert (load.jobs, load.iodepth) == (2, 64)
    assert load.why == ("jobs × iodepth: 2 × 64 per host, 128 outstanding IOs, for random IO (measured: the most "
                        "4k random-read IOPS of 5 probe cells (7 runs), 141,000; 2 × 32 gave 139,000, within noise "
                        "of it with fewer IOs in flight (`iofleet saturate` prefers that one); the rule of thumb's "
                        "1 × 8 gave 72,000; probe run 7, 61 s)")
    # The peak is the top; a fleet says its IOPS are summed; 1 × 8 not probed: nothing said of it.
    cells = [cell(1, 16, 8e4), cell(2, 16, 9e4)]
    load = choose_load(SimpleNamespace(peak=cells[1], cells=cells), 3, 4, facts, 30)
    assert (load.jobs, load.iodepth) == (2, 16)
    assert "(measured: the most 4 hosts' summed 4k random-read IOPS of 2 probe cells, 90,000; probe run 3" in load.why
    assert choose_load(SimpleNamespace(peak=None, cells=[]), 3, 1, facts, 5) is None


def test_the_probe_is_short_4k_random_reads_over_the_runs_working_set():
    facts = [HostFacts("local", cpus=2, free_bytes=40 * GiB)]
    sweep = probe_sweep(facts, Durations(ramp=2, round=2, max_runtime=30), 256 * MiB)
    assert (sweep.bs, sweep.read_pct, sweep.random_pct, sweep.engine) == (4096, 100, 100, "auto")
    assert sweep.max_jobs == 2 and sweep.size == 128 * MiB  # 2 jobs' files make the 256 MiB working set
    assert (sweep.ramp, sweep.round, sweep.max_runtime, sweep.runtime) == (2, 1, 10, None)
    # Never longer than the profiles: a 3 s quick look probes in fixed 3 s cells without warm-up.
    sweep = probe_sweep(facts, Durations(runtime=3, ramp=0), 256 * MiB)
    assert (sweep.ramp, sweep.runtime) == (0, 3)
    with pytest.raises(IofleetError, match="not enough free space"):
        probe_sweep(facts, Durations(), 40 * GiB)


def test_the_probe_run_is_labelled_after_the_run_within_the_label_rule():
    assert probe_label(None) == "easy-run-probe" and probe_label("nvme.a") == "nvme.a-probe"
    assert check_name(probe_label("x" * 64)) == "x" * 58 + "-probe"
