"""Diagnostics rules on recorded real runs (tests/fixtures/runs, README there).

Every rule has a test that triggers it and one that does not. Where this VM
cannot produce a condition, the test changes one figure (or setting) of a
recorded run and says so in its docstring."""

import copy
import json
import re
from pathlib import Path

import pytest

from iofleet.analysis.diagnostics import RULES, SEVERITIES, Finding, Thresholds
from iofleet.analysis.diagnostics import diagnose as diagnose_run
from iofleet.analysis.diagnostics.targets import setup_warnings
from iofleet.analysis.little import outstanding_io
from iofleet.analysis.stragglers import stragglers
from iofleet.errors import IofleetError
from iofleet.fleet.control.host import parse_facts
from iofleet.report.summary import diagnostics_lines
from iofleet.results.model import Run, TestRecord

ROOT = Path(__file__).parents[2]
RUNS = ROOT / "tests" / "fixtures" / "runs"
DOC = ROOT / "docs" / "diagnostics.md"
CONTROL_TARGETS = ["/tmp/ctl-t", "/dev/vda", "/dev/shm", "/nonexistent dir$(x)", "/proc", "/dev/loop0"]  # its README


def load(name: str) -> dict:
    return json.loads((RUNS / f"{name}.json").read_text())


def diagnose(doc: dict, thresholds: Thresholds | None = None) -> list[Finding]:
    """The findings over a recorded run's export (changed here and there), read as the typed run."""
    return diagnose_run(Run.from_dict(doc), thresholds)


def found(run: dict, rule: str, thresholds: Thresholds | None = None) -> list[Finding]:
    return [f for f in diagnose(run, thresholds) if f.rule == rule]


def by_id(run: dict, test_id: str) -> dict:
    (t,) = [t for t in run["tests"] if t["id"] == test_id]
    return t


def only(run: dict, keep) -> dict:
    """The run with only the tests `keep(test)` accepts."""
    run = copy.deepcopy(run)
    run["tests"] = [t for t in run["tests"] if keep(t)]
    return run


# ------------------------------------------------------------ outstanding_io_low


def test_outstanding_io_low_when_the_sweep_still_gains_at_its_top():
    (f,) = found(load("qd-shallow"), "outstanding_io_low")
    assert f.test == "4k-r100-rand-j1-qd2" and f.severity == "warning" and f.host is None
    assert "outstanding IO 1 → 2: IOPS 15,617 → 24,411 (+56 %), mean latency 0.063 ms → 0.081 ms (+28 %)" in f.evidence
    assert f.change == "increase iodepth from 2 to 4 per job: outstanding IO 2 → 4"


def test_outstanding_io_low_not_when_the_sweep_reached_saturation():
    assert found(load("qd-sweep"), "outstanding_io_low") == []


def test_outstanding_io_low_on_the_low_part_of_a_real_sweep_takes_the_best_test_per_level():
    """The recorded sweep cut at 4 outstanding IOs: at level 4, jobs 1 ×
    iodepth 4 (64,400 IOPS) beat jobs 2 × iodepth 2 (59,845), so the advice
    deepens that one."""
    run = only(load("qd-sweep"), lambda t: outstanding_io(TestRecord.from_dict(t)) <= 4)
    (f,) = found(run, "outstanding_io_low")
    assert f.test == "4k-r100-rand-j1-qd4"
    assert "outstanding IO 2 → 4: IOPS 39,583 → 64,400 (+63 %)" in f.evidence
    assert f.change == "increase iodepth from 4 to 8 per job: outstanding IO 4 → 8"


def test_outstanding_io_low_advises_jobs_when_iodepth_is_already_deep():
    """The sweep's jobs-1 tests up to iodepth 64, with the latency allowance
    raised (override) so its last step (+12 % IOPS, +78 % latency) counts."""
    run = only(load("qd-sweep"), lambda t: t["params"]["jobs"] == 1 and t["params"]["iodepth"] <= 64)
    assert found(run, "outstanding_io_low") == []
    (f,) = found(run, "outstanding_io_low", Thresholds().with_overrides(["oio_latency_vs_gain=10"]))
    assert f.test == "4k-r100-rand-j1-qd64"
    assert f.change.startswith("increase jobs from 1 to 2 (iodepth 64 per job is already deep)")


def test_outstanding_io_low_from_an_idle_device_in_a_lone_test():
    """Derived: the recorded cache-size run (each test alone in its sweep,
    4 outstanding IOs) with its 16m test's device busy time changed from
    74 % to 35 %: the device idled, so more outstanding IO had more to give."""
    run = load("cache-size")
    assert found(run, "outstanding_io_low") == []  # real: 74 % and 65 % busy
    t = by_id(run, "4k-r100-rand-j1-qd4-sz16m")
    t["disks"][0]["util_pct"] = 35.0
    (f,) = found(run, "outstanding_io_low")
    assert f.test == "4k-r100-rand-j1-qd4-sz16m"
    assert f.evidence == "device busy 35 % (vda on local) of the time (< 50 %) at 4 outstanding IO"
    assert f.change == "increase iodepth from 4 to 8 per job: outstanding IO 4 → 8"


def test_outstanding_io_low_not_from_an_idle_device_on_a_host_whose_cpu_is_spent():
    """Real: on the uneven fleet h4's disk was busy 41 % of the time at one
    outstanding IO, but every host's CPU was at 92 %: the client, not the
    queue depth, held it back (client_bound says so)."""
    run = load("fleet-uneven")
    assert by_id(run, "4k-r100-rand-j1-qd1")["disks"][0]["util_pct"] < 50
    assert found(run, "outstanding_io_low") == []
    assert found(run, "client_bound")


# ------------------------------------------------------------ past_knee


def test_past_knee_once_per_sweep_at_its_first_step_without_gain():
    (f,) = found(load("qd-sweep"), "past_knee")
    assert f.severity == "info" and f.test == "4k-r100-rand-j2-qd64"
    assert f.evidence == ("outstanding IO 64 → 128: IOPS 189,042 → 197,096 (+4 %), "
                          "mean latency 0.338 ms → 0.649 ms (+92 %)")
    assert f.change == ("lower the outstanding IO to 64 (jobs 2 × iodepth 32): "
                        "96 % of the IOPS at 52 % of the mean latency")


def test_past_knee_not_while_iops_still_grow():
    assert found(load("qd-shallow"), "past_knee") == []


# ------------------------------------------------------------ latency_limit


def test_latency_limit_per_direction_with_the_outstanding_io_that_meets_it():
    run = load("big-blocks")
    read, write = found(run, "latency_limit")
    assert read.test == "1m-r100-rand-j1-qd64" and read.evidence == "mean read latency 47.0 ms > 15 ms"
    assert read.change == ("lower the outstanding IO from 64 to 20 (jobs 1 × iodepth 20): at the same IOPS, "
                           "Little's law gives a mean read latency of 14.7 ms")
    assert write.test == "1m-r0-rand-j1-qd64" and write.evidence == "mean write latency 26.5 ms > 20 ms"
    assert "from 64 to 48" in write.change


def test_latency_limit_not_below_the_limits_and_limits_are_settable():
    assert found(load("qd-sweep"), "latency_limit") == []
    (f,) = found(load("big-blocks"), "latency_limit", Thresholds().with_overrides(["read_latency_ms=50"]))
    assert f.test == "1m-r0-rand-j1-qd64"


def test_latency_limit_at_one_outstanding_io_points_at_the_storage():
    """The recorded qd1 read (0.054 ms) against a limit lowered to 0.01 ms
    (override): no outstanding IO can meet it."""
    run = only(load("unprepared"), lambda t: t["params"]["read_pct"] == 100)
    (f,) = found(run, "latency_limit", Thresholds().with_overrides(["read_latency_ms=0.01"]))
    assert f.change.startswith("the storage takes 0.054 ms per read even at 1 outstanding IO")


# ------------------------------------------------------------ unpredictable_latency


def test_unpredictable_latency_when_p95_is_far_above_the_mean():
    (f,) = found(load("buffered"), "unpredictable_latency")
    assert f.test == "4k-r100-rand-j1-qd1-sz256m-rt6s-ramp0s"
    assert f.evidence == "read p95 0.317 ms = 4.1 × the mean 0.077 ms (> 3 ×)"
    assert f.change.startswith("use direct: true")  # buffered IO: the page cache serves part of it


def test_unpredictable_latency_not_for_a_tight_distribution():
    assert found(load("buffered-2"), "unpredictable_latency") == []
    assert found(load("qd-sweep"), "unpredictable_latency") == []


def test_unpredictable_latency_of_direct_io_asks_what_delays_some_ios():
    """The sweep's qd1 test (p95 = 1.3 × mean) with the limit lowered to 1.2 × (override)."""
    run = only(load("qd-sweep"), lambda t: t["id"] == "4k-r100-rand-j1-qd1")
    (f,) = found(run, "unpredictable_latency", Thresholds().with_overrides(["p95_over_mean=1.2"]))
    assert f.change.startswith("find what delays a share of the IOs")


# ------------------------------------------------------------ not_steady


def test_not_steady_from_the_snia_verdict_of_an_until_steady_test():
    """Derived: the recorded not-steady test relabelled until: steady (as if it had run to max_runtime)."""
    run = load("buffered-2")
    t = by_id(run, "4k-r100-rand-j1-qd1-sz256m-rt6s-ramp0s")
    t["methodology"]["until"] = "steady"
    (f,) = found(run, "not_steady")
    assert f.test == "4k-r100-rand-j1-qd1-sz256m-rt6s-ramp0s"
    assert f.evidence == "IOPS in rounds 1–5 of 1 s: data excursion 29% > 20%"
    assert f.change == "raise max_runtime (now 1h00m00s) so a steady window can be found"


def test_not_steady_is_silent_where_steady_state_was_not_asked_for():
    """Real: the same test as it ran, a fixed time (until: time): its verdict
    is information, not a finding; nor is a scenario's (its faults move the figures)."""
    run = load("buffered-2")
    assert by_id(run, "4k-r100-rand-j1-qd1-sz256m-rt6s-ramp0s")["methodology"]["until"] == "time"
    assert found(run, "not_steady") == []
    for t in run["tests"]:
        t["methodology"]["until"] = "steady"
    assert found(run, "not_steady") != []
    run["methodology"]["scenario"] = {"name": "fail-a-disk", "events": []}
    assert found(run, "not_steady") == []


def test_not_steady_not_for_steady_tests_nor_for_too_few_rounds():
    run = load("buffered-2")
    for t in run["tests"]:
        t["methodology"]["until"] = "steady"
    steady = [t["id"] for t in run["tests"] if t["methodology"]["steady"]["iops"]["steady"]]
    assert steady == ["4k-r100-rand-j1-qd1-sz128m-rt6s-ramp0s", "4k-r100-rand-j1-qd1-sz512m-rt6s-ramp0s"]
    assert {f.test for f in found(run, "not_steady")}.isdisjoint(steady)
    # 2 s tests with 60 s rounds: "n/a (0 rounds)", no finding.
    assert found(load("qd-sweep"), "not_steady") == []


# ------------------------------------------------------------ client_bound


def test_client_bound_never_advises_more_jobs_the_run_measured_to_give_no_more():
    """Derived: the recorded client-bound test as if at 1 job × iodepth 2, and
    (a) Easy Run's probe recorded 2 × 1 below 1 × 2, (b) the run's own test
    at 2 × 1 measured fewer IOPS: no finding (the run itself showed more jobs
    do not help); (c) a probe where 2 × 1 gave more: the finding stays."""
    def derived(probe_cells=None, own_iops=None):
        run = load("buffered")
        t = by_id(run, "4k-r100-rand-j1-qd1-sz16m-rt2s-ramp1s")
        t["params"]["iodepth"] = 2
        if probe_cells is not None:
            run["methodology"]["probe"] = {"run": 4, "cells": probe_cells}
        if own_iops is not None:
            twin = copy.deepcopy(t)
            twin["id"], twin["seq"] = "4k-r100-rand-j2-qd1-sz16m-rt2s-ramp1s", len(run["tests"])
            twin["params"] |= {"jobs": 2, "iodepth": 1}
            twin["all"]["iops"] = own_iops
            run["tests"].append(twin)
        return [f for f in found(run, "client_bound") if f.test == t["id"]]
    iops = by_id(load("buffered"), "4k-r100-rand-j1-qd1-sz16m-rt2s-ramp1s")["all"]["iops"]
    (f,) = derived()
    assert f.change.startswith("add jobs (from 1 to 2)")
    assert derived([{"jobs": 1, "iodepth": 2, "iops": 97553.0}, {"jobs": 2, "iodepth": 1, "iops": 67122.0}]) == []
    assert derived(own_iops=iops * 0.9) == []
    (f,) = derived([{"jobs": 1, "iodepth": 2, "iops": 67122.0}, {"jobs": 2, "iodepth": 1, "iops": 97553.0}])
    assert f.change.startswith("add jobs (from 1 to 2)")


def test_client_bound_when_fio_cannot_keep_its_ios_in_flight():
    """Real: a 16 MiB file read from the page cache: 1.2 M IOPS, fio's own
    time is a third of each IO's, so IOPS × latency is 0.70 of the 1 asked."""
    (f,) = found(load("buffered"), "client_bound")
    assert f.severity == "critical" and f.test == "4k-r100-rand-j1-qd1-sz16m-rt2s-ramp1s"
    assert "fio used 98 % of a CPU per job (≥ 90 %)" in f.evidence
    assert "IOPS × mean latency = 0.70 IOs in flight of 1 outstanding (ratio 0.70, outside 1 ± 0.15)" in f.evidence
    assert f.change == "add jobs (from 1 to 2): fio itself could not keep its IOs in flight"


def test_client_bound_when_the_hosts_cpu_is_spent_advises_hosts_not_jobs():
    (f,) = found(load("fleet-uneven"), "client_bound")
    assert f.evidence.startswith("host CPU 92 % avg (max 100 %) on h1, h2, h3, h4 > 90 %")
    assert f.change == "add hosts: the same outstanding IO spread over more clients"


def test_client_bound_not_when_littles_law_holds_and_cpu_is_free():
    assert found(load("qd-sweep"), "client_bound") == []
    loose = Thresholds().with_overrides(["little_tolerance_pct=35", "job_cpu_pct=100"])
    assert found(only(load("buffered"), lambda t: "sz16m" in t["id"]), "client_bound", loose) == []


# ------------------------------------------------------------ network_bound


def test_network_bound_for_a_host_at_its_nic():
    """Real run; h1's inventory states a 0.2 Gbit/s NIC (25 MB/s)."""
    (f,) = found(load("fleet-uneven"), "network_bound")
    assert f.host == "h1" and f.test == "4k-r100-rand-j1-qd1"
    assert f.evidence == "h1: 2,350.9 MB/s = 9404 % of its 0.2 Gbit/s NIC (25 MB/s; ≥ 90 %)"
    assert f.change.startswith("the network, not the storage, limits h1")


def test_network_bound_not_below_the_nic_nor_without_nic_gbps():
    """h2 (100 Gbit/s) and h4 (10 Gbit/s) are far below theirs; h3 states
    none and is skipped — until it is given one (derived: nic_gbps 1)."""
    run = load("fleet-uneven")
    assert [f.host for f in found(run, "network_bound")] == ["h1"]
    assert found(load("fleet-mixed"), "network_bound") == []
    (h3,) = [h for h in run["host_facts"]["hosts"] if h["name"] == "h3"]
    h3["nic_gbps"] = 1
    assert [f.host for f in found(run, "network_bound")] == ["h1", "h3"]


# ------------------------------------------------------------ host_imbalance


def test_host_imbalance_names_the_straggler():
    (f,) = found(load("fleet-uneven"), "host_imbalance")
    assert f.host == "h4"
    assert f.evidence == "h4: 14,473 IOPS = 3 % of the median host's 552,050 IOPS (< 80 %)"
    assert f.change.startswith("check what differs on h4")


def test_host_imbalance_compares_hosts_within_their_group_only():
    """Real mixed run: 4k readers (h1, h2) beside 1m writers (h3, h4). Over
    the whole fleet the writers would be stragglers; within groups no host is."""
    run = load("fleet-mixed")
    hosts = run["tests"][0]["hosts"]

    class Host:  # stragglers() reads a.all.iops
        def __init__(self, figures):
            self.all = type("all", (), {"iops": figures["all"]["iops"]})

    assert {h for h, _ in stragglers({h: Host(v) for h, v in hosts.items()})} == {"h3", "h4"}
    assert found(run, "host_imbalance") == []


# ------------------------------------------------------------ unprepared_reads


def test_unprepared_reads_for_tests_that_read():
    (f,) = found(load("unprepared"), "unprepared_reads")
    assert f.severity == "critical" and f.test == "4k-r100-rand-j1-qd1"  # not the write test
    assert f.evidence == "read_pct 100 with prepare: none: the run wrote no data before its first test"


def test_unprepared_reads_not_after_preparation_nor_for_imports():
    assert found(load("qd-sweep"), "unprepared_reads") == []
    run = load("unprepared")
    run["methodology"] = None  # an import: nothing is known about its data
    assert found(run, "unprepared_reads") == []


# ------------------------------------------------------------ working_set_cache


def test_working_set_cache_for_a_capacity_plan_on_the_page_cache():
    findings = found(load("buffered"), "working_set_cache")
    assert len(findings) == 4 and all(f.severity == "critical" for f in findings)
    assert findings[2].evidence == ("working set 512.0 MiB fits in the 23.5 GiB host RAM (buffered IO): "
                                    "the results measure the page cache")
    assert findings[2].change == "use direct: true, or a working set above 23.5 GiB per host"


def test_working_set_cache_for_a_cache_plan_whose_working_set_exceeds_the_cache():
    (f,) = found(load("cache-size"), "working_set_cache")  # measure: cache, cache_size 32m
    assert f.test == "4k-r100-rand-j1-qd4-sz64m"
    assert f.change == "lower size to at most 32.0 MiB per job so the working set fits the 32.0 MiB cache"


def test_working_set_cache_for_a_capacity_plan_with_a_stated_cache():
    """Derived: the cache-size run read as measure: capacity (the default):
    now the 16m test, which fits the 32 MiB cache, is the wrong one."""
    run = load("cache-size")
    del run["methodology"]["measure"]
    (f,) = found(run, "working_set_cache")
    assert f.test == "4k-r100-rand-j1-qd4-sz16m"
    assert f.evidence == ("working set 16.0 MiB fits in the 32.0 MiB plan cache_size: the results measure "
                          "that cache, not the storage behind it")
    assert f.change == "raise size to more than 32.0 MiB per job (a working set above the 32.0 MiB cache per host)"


def test_working_set_cache_not_without_a_cache_verdict():
    assert found(load("qd-sweep"), "working_set_cache") == []  # direct IO, no cache_size: no verdict


# ------------------------------------------------------------ runtime_too_short


def test_runtime_too_short_for_the_runs_percentile():
    read, write = found(load("unprepared"), "runtime_too_short")  # percentile: p99.9, 1 s at qd1
    assert read.test == "4k-r100-rand-j1-qd1"
    assert read.evidence == ("p99.9 of reads from 18,237 IOs: 18 beyond it (< 100); "
                             "100,000 reads take 5.5 s at 18,219 IOPS")
    assert read.change == write.change == "set runtime to at least 10s (now 1s)"


def test_runtime_too_short_always_checks_p99():
    run = load("big-blocks")  # percentile p99 (the default): 2,769 reads in 2 s
    assert [f.evidence.split(";")[0] for f in found(run, "runtime_too_short")] == [
        "p99 of reads from 2,769 IOs: 28 beyond it (< 100)", "p99 of writes from 4,888 IOs: 49 beyond it (< 100)"]


def test_runtime_too_short_not_with_enough_ios():
    assert found(load("qd-sweep"), "runtime_too_short") == []
    run = load("unprepared")
    del run["methodology"]["percentile"]  # runs made before the setting: p99, and 18,237 reads suffice
    assert found(run, "runtime_too_short") == []
    assert found(run, "runtime_too_short", Thresholds().with_overrides(["tail_ios=200"]))


# ------------------------------------------------------------ ram_target


def test_ram_target_on_a_real_tmpfs_run():
    (f,) = found(load("tmpfs"), "ram_target")
    assert (f.severity, f.test, f.host) == ("critical", None, None)
    assert f.evidence == ("target /mnt/ram is on tmpfs (RAM): the figures are memory speed, not storage (best: "
                          "83,719 IOPS, 342.9 MB/s, mean latency 0.012 ms in 4k-r100-rand-j1-qd1)")
    assert f.change == "use a directory on the storage under test"
    assert diagnose(load("tmpfs"))[0] == f  # run-wide: before every test's findings


def test_ram_target_not_on_a_disk_nor_without_target_facts():
    assert found(load("buffered"), "ram_target") == []  # ext4 on vda, recorded before target_facts existed
    run = load("tmpfs")
    run["host_facts"]["target_facts"]["/mnt/ram"] |= {"filesystem": "ext4", "memory": None, "device": "vda"}
    assert found(run, "ram_target") == []


def test_ram_target_on_a_fleet_host_from_its_ssh_facts():
    """The facts script's real output on this VM (tests/fixtures/control)
    lists /dev/shm (tmpfs) among its targets; tmpfs.json's host_facts
    swapped for a fleet host carrying those facts."""
    facts = parse_facts((ROOT / "tests/fixtures/control/facts-vm.txt").read_text(), CONTROL_TARGETS)
    run = load("tmpfs")
    run["host_facts"] = {"hosts": [{"name": "h1", "targets": ["/dev/shm"], "facts": facts.to_dict()}]}
    (f,) = found(run, "ram_target")
    assert f.host == "h1" and f.evidence.startswith("target /dev/shm is on tmpfs (RAM): ")
    assert setup_warnings(run["host_facts"]) == [
        "h1: target /dev/shm is on tmpfs (RAM): the figures will be memory speed, not storage; use a directory on "
        "the storage under test"]


def test_setup_warnings_of_a_local_run_and_of_none():
    assert setup_warnings(load("tmpfs")["host_facts"]) == [
        "target /mnt/ram is on tmpfs (RAM): the figures will be memory speed, not storage; use a directory on the "
        "storage under test"]
    assert setup_warnings(load("buffered")["host_facts"]) == setup_warnings({}) == []


# ------------------------------------------------------------ the engine


def test_findings_come_in_run_order_of_tests_then_rule_order():
    findings = diagnose(load("big-blocks"))
    assert [(f.test, f.rule) for f in findings] == [
        ("1m-r100-rand-j1-qd64", "latency_limit"), ("1m-r100-rand-j1-qd64", "runtime_too_short"),
        ("1m-r0-rand-j1-qd64", "latency_limit"), ("1m-r0-rand-j1-qd64", "runtime_too_short")]
    assert diagnose(load("big-blocks")) == findings


def test_only_ok_and_partial_tests_are_judged():
    run = load("unprepared")
    run["tests"][0]["status"] = "failed"
    assert all(f.test != "4k-r100-rand-j1-qd1" for f in diagnose(run))
    run["tests"][0]["status"] = "partial"
    assert any(f.test == "4k-r100-rand-j1-qd1" for f in diagnose(run))


def test_repeated_tests_are_named_with_their_repeat_and_averaged_in_a_sweep():
    """Derived: the qd-shallow tests twice, as repeats 1 and 2."""
    run = load("qd-shallow")
    again = copy.deepcopy(run["tests"])
    for t in again:
        t["repeat"] = 2
    run["tests"] += again
    (f,) = found(run, "outstanding_io_low")
    assert f.test == "4k-r100-rand-j1-qd2 #1"
    assert "IOPS 15,617 → 24,411" in f.evidence  # the mean of equal repeats


def test_finding_to_dict():
    (f,) = found(load("fleet-uneven"), "network_bound")
    assert f.to_dict() == {"rule": "network_bound", "severity": "warning", "test": "4k-r100-rand-j1-qd1",
                           "host": "h1", "evidence": f.evidence, "change": f.change}


def test_thresholds_overrides():
    th = Thresholds().with_overrides(["read_latency_ms=10", " p95_over_mean = 4 ", "tail_ios=50"])
    assert (th.read_latency_ms, th.p95_over_mean, th.tail_ios) == (10.0, 4.0, 50)
    assert Thresholds().read_latency_ms == 15.0


@pytest.mark.parametrize("item, message", [
    ("latency=10", "unknown threshold 'latency'; known: oio_gain_pct, "),
    ("read_latency_ms=fast", "threshold read_latency_ms: 'fast' is not a number; allowed: a number from 0"),
    ("tail_ios=1.5", "threshold tail_ios: '1.5' is not a number; allowed: a whole number from 1"),
    ("nic_pct=120", "threshold nic_pct: 120 is out of range; allowed: a number from 0 to 100"),
    ("p95_over_mean=nan", "threshold p95_over_mean: nan is out of range"),
    ("read_latency_ms", "threshold 'read_latency_ms': write NAME=VALUE, e.g. read_latency_ms=10"),
])
def test_bad_threshold_overrides_are_one_line_errors(item, message):
    with pytest.raises(IofleetError) as exc:
        Thresholds().with_overrides([item])
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_the_rule_table():
    names = [r.name for r in RULES]
    assert len(set(names)) == len(names) == 13
    assert all(r.severity in SEVERITIES for r in RULES)
    assert "15 ms" in next(r for r in RULES if r.name == "latency_limit").describe()


def test_every_rule_and_threshold_is_documented():
    text = DOC.read_text()
    for rule in RULES:
        assert f"`{rule.name}`" in text, rule.name
    for name in Thresholds.__dataclass_fields__:
        assert f"`{name}`" in text, name


def test_documented_findings_are_the_real_ones():
    """Each finding quoted in docs/diagnostics.md (a `[severity] …` line in
    a code block) is what the summary prints for one of the recorded runs."""
    printed = {line for name in sorted(p.stem for p in RUNS.glob("*.json"))
               for line, _ in diagnostics_lines(diagnose(load(name)))}
    quoted = re.findall(r"^(\[(?:critical|warning|info)\] .+)$", DOC.read_text(), re.M)
    assert quoted
    for line in quoted:
        assert line in printed, line


# ------------------------------------------------------------ the summary's lines


def test_summary_lines_collapse_the_same_advice_across_tests():
    lines = [line for line, _ in diagnostics_lines(diagnose(load("unprepared")))]
    assert lines == [
        "[critical] 4k-r100-rand-j1-qd1: unprepared reads — read_pct 100 with prepare: none: the run wrote no "
        "data before its first test → remove `prepare: none` from the plan: the default, prepare: random, writes "
        "the data before the first test",
        "[warning] 4k-r100-rand-j1-qd1, 4k-r0-rand-j1-qd1: runtime too short — e.g. 4k-r100-rand-j1-qd1: p99.9 of "
        "reads from 18,237 IOs: 18 beyond it (< 100); 100,000 reads take 5.5 s at 18,219 IOPS → set runtime to "
        "at least 10s (now 1s)",
    ]


def test_summary_lines_put_critical_first_and_name_hosts():
    lines = diagnostics_lines(diagnose(load("fleet-uneven")))
    assert [style for _, style in lines] == ["red", "yellow", "yellow"]
    assert lines[1][0].startswith("[warning] 4k-r100-rand-j1-qd1 on h1: network-bound — ")


def test_summary_lines_count_tests_beyond_the_first_four():
    lines = [line for line, _ in diagnostics_lines(diagnose(load("buffered")))]
    assert lines[0].startswith("[critical] 4k-r100-rand-j1-qd1-sz128m-rt6s-ramp0s, ")
    many = [Finding("not_steady", "warning", f"t{i}", None, "e", "c") for i in range(6)]
    assert diagnostics_lines(many)[0][0] == "[warning] t0, t1, t2, t3 and 2 more: not steady — e → c"


STRICT = ["oio_gain_pct=0", "oio_latency_vs_gain=1000", "disk_util_low_pct=100", "low_oio_per_host=100000",
          "knee_gain_pct=1000", "knee_latency_rise_pct=0", "read_latency_ms=0", "write_latency_ms=0",
          "p95_over_mean=1", "host_cpu_pct=0", "job_cpu_pct=0", "little_tolerance_pct=0", "nic_pct=0",
          "straggler_pct=100", "tail_ios=1000000000", "storage_cpu_pct=0"]


def test_every_rule_runs_on_every_recorded_run_mixed_and_fleet_included():
    """With thresholds that make every rule fire somewhere, and with an
    import-like document (no methodology, host names only)."""
    strict = Thresholds().with_overrides(STRICT)
    fired = set()
    for path in sorted(RUNS.glob("*.json")):
        run = json.loads(path.read_text())
        fired |= {f.rule for f in diagnose(run, strict)}
        run["methodology"] = None
        run["host_facts"]["hosts"] = [h["name"] for h in run["host_facts"].get("hosts", [])]
        for t in run["tests"]:
            t["methodology"] = None
        diagnose(run, strict)
    # No recorded run measured until steady without reaching it: the not-steady test relabelled so.
    derived = load("buffered-2")
    for t in derived["tests"]:
        t["methodology"]["until"] = "steady"
    fired |= {f.rule for f in diagnose(derived, strict)}
    assert fired == {r.name for r in RULES}
    mixed = diagnose(load("fleet-mixed"), strict)
    assert {"latency_limit", "client_bound", "host_imbalance"} <= {f.rule for f in mixed}
