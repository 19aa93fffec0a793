"""`results import` refuses what fio cannot have written and labels that
break the one label rule (issue 16, items 10 and 11): one line naming the
file and the field, and nothing stored; real fio outputs still import."""

import json
from pathlib import Path

import pytest

from iofleet.errors import ImportFormatError, IofleetError
from iofleet.results.ingest import import_outputs
from iofleet.results.store import Store

from ..conftest import ROOT

FIO = ROOT / "tests" / "fixtures" / "fio"


def changed(tmp_path: Path, fixture: str, path: tuple, value) -> Path:
    """A recorded real fio output with one field set to `value`."""
    raw = json.loads((FIO / fixture).read_text())
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    out = tmp_path / f"changed-{fixture}"
    out.write_text(json.dumps(raw))  # NaN and Infinity as Python's json writes them
    return out


@pytest.mark.parametrize("fixture, path, value, says", [
    ("single-job-json+.json", ("jobs", 0, "read", "iops"), -1e308, "jobs[0].read.iops should be a number from 0"),
    ("single-job-json+.json", ("jobs", 0, "read", "bw_bytes"), -5, "jobs[0].read.bw_bytes should be a number"),
    ("single-job-json+.json", ("jobs", 0, "read", "iops"), float("inf"), "got inf"),
    ("single-job-json+.json", ("jobs", 0, "read", "lat_ns", "mean"), float("nan"), "jobs[0].read.lat_ns.mean "),
    ("single-job-json+.json", ("jobs", 0, "read", "io_bytes"), 2**64 - 1, "jobs[0].read.io_bytes should be a "
                                                                          "non-negative integer below 2^63"),
    ("single-job-json+.json", ("jobs", 0, "usr_cpu"), -0.5, "jobs[0].usr_cpu should be a number from 0"),
    ("multi-job-json.json", ("jobs", 0, "read", "lat_ns", "percentile", "99.000000"), -1.0,
     "jobs[0].read.lat_ns.percentile.99.000000 should be a number from 0"),
    ("multi-job-json+.json", ("disk_util", 0, "util"), -3.0, "disk_util[0].util should be a number from 0"),
])
def test_impossible_figures_are_refused_naming_file_and_field(tmp_path, fixture, path, value, says):
    bad = changed(tmp_path, fixture, path, value)
    with Store.open(tmp_path / "data") as store:
        with pytest.raises(ImportFormatError) as e:
            import_outputs(store, [FIO / "single-job-json+.json", bad])
        assert str(e.value).startswith(f"{bad}: not fio JSON output: ") and says in str(e.value)
        assert "\n" not in str(e.value)
        assert store.list_runs() == []


def test_counts_that_add_up_beyond_what_the_store_holds_are_refused(tmp_path):
    raw = json.loads((FIO / "multi-job-json+.json").read_text())
    for job in raw["jobs"]:  # each possible alone, not their sum
        job["read"]["total_ios"] = 2**62
    bad = tmp_path / "sum.json"
    bad.write_text(json.dumps(raw))
    with Store.open(tmp_path / "data") as store:
        with pytest.raises(ImportFormatError, match=rf"^{bad}: job 'multi': the jobs' read ios add up to 1.84e\+19, "
                                                    r"more than fio can have counted$"):
            import_outputs(store, [bad])
        assert store.list_runs() == []


def test_real_outputs_still_import(tmp_path):
    files = sorted(FIO.glob("*.json")) + [FIO / "status-stream-json+.txt"]
    with Store.open(tmp_path) as store:
        run = store.get_run(import_outputs(store, files, label="real.outputs_1"))
    assert run.status == "complete" and run.label == "real.outputs_1" and len(run.tests) >= len(files)
    assert all(t.status == "ok" and t.aggregate.all.iops > 0 for t in run.tests)


@pytest.mark.parametrize("label", ["a b", "../x", "x" * 65, "-x", "", "a\nb", "é", "x;rm -rf /"])
def test_import_labels_follow_the_rule_of_plans_and_results_label(tmp_path, label):
    with Store.open(tmp_path) as store:
        with pytest.raises(IofleetError) as e:
            import_outputs(store, [FIO / "single-job-json+.json"], label=label)
        assert str(e.value) == (f"label {label!r}: use 1-64 letters, digits, '.', '_' or '-', "
                                f"starting with a letter or digit")
        assert store.list_runs() == []
