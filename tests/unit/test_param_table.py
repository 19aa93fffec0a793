"""The parameter table is the one description of a parameter: the docs,
test specs and fio options come from it, and nothing drifts."""

import dataclasses
from pathlib import Path

import pytest

from iofleet.plan import reference
from iofleet.plan.expand import TestSpec
from iofleet.plan.model import Plan
from iofleet.plan.params import (PARAMS, RUN_PARAMS, SPEC_PARAMS, FioOptionError, fio_options, fio_rate, job_rate,
                                 params_from_fio, rate_note)

DOC = Path(__file__).parents[2] / "docs" / "plans.md"


def test_the_docs_reference_is_generated_from_the_table():
    text = DOC.read_text()
    assert reference.replaced(text) == text, \
        "docs/plans.md drifted from the parameter table: run `python -m iofleet.plan.reference docs/plans.md`"


def test_the_drift_check_sees_a_hand_edit():
    text = DOC.read_text().replace("| `bs` | 4k |", "| `bs` | 8k |")
    assert reference.replaced(text) != text


def test_every_run_setting_is_a_plan_field_and_in_the_reference():
    assert set(RUN_PARAMS) <= set(Plan.model_fields)
    for name in (*PARAMS, *RUN_PARAMS):
        assert f"| `{name}` |" in reference.markdown()


def test_a_test_spec_has_exactly_the_table_parameters():
    fields = [f.name for f in dataclasses.fields(TestSpec)]
    assert fields == ["id", "workload", *SPEC_PARAMS, "repeat", "repeats"]
    spec = TestSpec(id="t", workload="w")
    assert spec.values() == {name: PARAMS[name].default for name in SPEC_PARAMS}


@pytest.mark.parametrize("read_pct,random_pct,rw", [
    (100, 100, "randread"), (0, 100, "randwrite"), (70, 100, "randrw"),
    (100, 0, "read"), (0, 0, "write"), (70, 0, "rw"), (70, 30, "randrw")])
def test_fio_options_read_back_as_the_same_values(read_pct, random_pct, rw):
    values = TestSpec(id="t", workload="w", read_pct=read_pct, random_pct=random_pct, bs=8192, iodepth=16,
                      jobs=4, compress_pct=50, engine="libaio", direct=False).values()
    options = dict(fio_options(values))
    assert options["rw"] == rw
    as_written = {key: str(int(v) if isinstance(v, bool) else v) for key, v in options.items()}  # a job file's text
    back = params_from_fio(as_written)
    assert set(back) == {"bs", "read_pct", "random_pct", "iodepth", "jobs", "size", "engine", "direct",
                         "compress_pct"}
    assert back == {name: values[name] for name in back}


def test_a_fio_value_iofleet_cannot_take_names_the_option():
    with pytest.raises(FioOptionError, match="rw: only read, write"):
        params_from_fio({"rw": "trimwrite"})
    with pytest.raises(FioOptionError, match="iodepth: different values per direction"):
        params_from_fio({"iodepth": "4,8"})
    assert params_from_fio({"rw": "trimwrite", "bs": "8k"}, strict=False) == {"bs": 8192}


# ---- rates: the test's total, split over hosts × jobs and by read_pct ----

@pytest.mark.parametrize("total,hosts,jobs,read_pct,per_job", [
    (5000, 1, 1, 100, (5000, 0)), (5000, 1, 1, 0, (0, 5000)),
    (1000, 1, 1, 70, (700, 300)),  # fio follows the two rates, so the mix is kept
    (6000, 3, 2, 70, (700, 300)),  # 1000 a job
    (5001, 2, 2, 70, (876, 375)),  # 1250.25 → 1251 a job: rounded up
    (1, 1, 1, 70, (1, 1)),  # a 0 would leave that direction uncapped
    (3, 2, 4, 50, (1, 1))])
def test_a_rate_is_split_over_hosts_jobs_and_directions(total, hosts, jobs, read_pct, per_job):
    assert job_rate(total, hosts, jobs, read_pct) == per_job
    assert sum(per_job) * hosts * jobs >= total  # never below what the plan asks


def test_the_rate_options_a_test_becomes_on_a_fleet():
    values = TestSpec(id="t", workload="w", read_pct=70, jobs=2, rate_iops=6000).values()
    assert dict(fio_options(values))["rate_iops"] == "2100,900"
    assert dict(fio_options(values, hosts=3))["rate_iops"] == "700,300"
    reads = TestSpec(id="t", workload="w", read_pct=100, jobs=4, rate_mbps=100).values()
    assert dict(fio_options(reads, hosts=2))["rate"] == "12500000"  # bytes/s: MB/s is 10^6 bytes/s
    assert "rate_iops" not in dict(fio_options(TestSpec(id="t", workload="w").values()))


def test_a_rate_that_does_not_divide_evenly_is_said():
    values = TestSpec(id="t", workload="w", read_pct=70, jobs=4, rate_iops=5000).values()
    assert rate_note(values) is None  # 1250 a job: even
    assert rate_note(values, hosts=3) == ("rate_iops 5000 over 3 hosts × 4 jobs is 292+125 IOPS (reads+writes) "
                                         "per job: 5004 IOPS in all (rounded up per job)")
    assert fio_rate(values, "rate_iops", hosts=3) == 5004


@pytest.mark.parametrize("options,total", [
    ({"rw": "randrw", "rwmixread": "70", "rate_iops": "700,300", "numjobs": "2"}, 2000),
    ({"rw": "randrw", "rate_iops": "500"}, 1000),  # one value caps each direction: twice it in all (a 50/50 mix)
    ({"rw": "randread", "rate_iops": "500,"}, 500), ({"rw": "randwrite", "rate_iops": ",500"}, 500)])
def test_a_fio_rate_reads_back_as_the_tests_total(options, total):
    assert params_from_fio(options)["rate_iops"] == total


def test_a_fio_rate_iofleet_cannot_take_names_the_option():
    with pytest.raises(FioOptionError, match="rate_iops: a rate on one way of a read/write mix"):
        params_from_fio({"rw": "randrw", "rate_iops": "500,"})
    with pytest.raises(FioOptionError, match="rate_iops: expected whole numbers"):
        params_from_fio({"rw": "randread", "rate_iops": "5k"})
    with pytest.raises(FioOptionError, match="rate_iops: reads 500, writes 500 a second: fio follows these rates, "
                                             "not the 70/30 read/write mix; give reads,writes in the mix's ratio, "
                                             "e.g. rate_iops=700,300"):
        params_from_fio({"rw": "randrw", "rwmixread": "70", "rate_iops": "500"})
    with pytest.raises(FioOptionError, match="rate: 1500000 bytes/s in all is not a whole number of MB/s"):
        params_from_fio({"rw": "read", "rate": "1500000"})
    # Thousands of digits (found by tests/unit/test_fuzz.py): refused as any other bad number, not converted.
    with pytest.raises(FioOptionError, match="rate: expected whole numbers"):
        params_from_fio({"rw": "read", "rate": "9" * 5000})
    with pytest.raises(FioOptionError, match="rwmixwrite: expected a whole number, allowed: 0 to 100"):
        params_from_fio({"rw": "randrw", "rwmixwrite": "9" * 5000})


def test_a_plan_gives_one_rate_or_none():
    from iofleet.errors import PlanError
    from iofleet.plan import expand, parse_plan
    with pytest.raises(PlanError, match="both rate_iops and rate_mbps are set; give one of them"):
        expand(parse_plan({"name": "p", "workloads": [{"name": "w", "rate_iops": 10, "rate_mbps": 1}]}))
    with pytest.raises(PlanError, match=r"rate_iops.*allowed: 1 to 100000000"):
        parse_plan({"name": "p", "workloads": [{"name": "w", "rate_iops": 0}]})
    specs = expand(parse_plan({"name": "p", "workloads": [{"name": "w", "matrix": {"rate_iops": [100, 200]}}]}))
    assert [(s.id, s.params()["rate_iops"]) for s in specs] == [("4k-r100-rand-j1-qd1-iops100", 100),
                                                                ("4k-r100-rand-j1-qd1-iops200", 200)]
