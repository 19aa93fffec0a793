"""The parameter table is the one description of a parameter: the docs,
test specs and fio options come from it, and nothing drifts."""

import dataclasses
from pathlib import Path

import pytest

from iofleet.plan import reference
from iofleet.plan.expand import TestSpec
from iofleet.plan.model import Plan
from iofleet.plan.params import (PARAMS, RUN_PARAMS, SPEC_PARAMS, FioOptionError, fio_options, params_from_fio)

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
