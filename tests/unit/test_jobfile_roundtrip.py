"""A job file iofleet writes imports back as the same test (issue 18): the
fio options, the warm-up job group and the `; iofleet:` comment together
state every value of the test. No fio run: rendering and importing only."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from iofleet.errors import PlanError
from iofleet.fio.jobfile import IOFLEET_LINE, WARMUP_JOB, device_where, directory_where, render_test
from iofleet.importers import import_file
from iofleet.plan import expand, parse_plan
from iofleet.plan.load import load_plan
from iofleet.plan.params import AUTO_ENGINES, ENGINES, PARAMS, SPEC_PARAMS, STEADY_WINDOW_ROUNDS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PCT = st.integers(0, 100)


@st.composite
def valid_values(draw) -> dict:
    """Values of one valid test: every parameter of the table."""
    bs = 512 * draw(st.one_of(st.sampled_from([1, 8, 16, 128, 2048]), st.integers(1, 32768)))
    smallest = max(bs, PARAMS["size"].minimum)
    size = draw(st.one_of(st.sampled_from([smallest, 1024**3, 10 * 1024**3 + 4096]),
                          st.integers(smallest, PARAMS["size"].maximum)))
    until = draw(st.sampled_from(["time", "steady"]))
    round_s = draw(st.integers(1, 600))
    values = dict(
        bs=bs, size=size, read_pct=draw(PCT), random_pct=draw(PCT), iodepth=draw(st.integers(1, 4096)),
        jobs=draw(st.integers(1, 1024)), working_set_pct=draw(st.integers(1, 100)),
        runtime=draw(st.integers(1, 30 * 86400)), ramp=draw(st.one_of(st.just(0), st.integers(1, 86400))),
        engine=draw(st.sampled_from(ENGINES)), direct=draw(st.booleans()),
        compress_pct=draw(PCT), dedupe_pct=draw(PCT), until=until, round=round_s,
        max_runtime=draw(st.integers(STEADY_WINDOW_ROUNDS * round_s, 30 * 86400)),
        rate_iops=None, rate_mbps=None, rbd_cache=draw(st.sampled_from([None, True, False])))
    rate = draw(st.sampled_from([None, "rate_iops", "rate_mbps"]))  # one of them, or none
    if rate:
        values[rate] = draw(st.integers(1, PARAMS[rate].maximum))
    assert set(values) == set(SPEC_PARAMS)  # a new parameter belongs here too
    return values


def spec_of(values: dict):
    [spec] = expand(parse_plan({"name": "p", "workloads": [{"name": "w", **values}]}, "generated"))
    return spec


def imported(path: Path):
    result = import_file(path)
    assert not result.refused and not result.unsupported, result.notes
    [spec] = expand(parse_plan(result.plan, str(path)))
    return spec


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(valid_values(), st.sampled_from(AUTO_ENGINES))
def test_a_rendered_job_file_imports_as_the_same_test(tmp_path_factory, values, resolved):
    spec = spec_of(values)
    engine = resolved if spec.engine == "auto" else spec.engine
    directory = tmp_path_factory.mktemp("jobs")
    path = directory / "test.fio"
    path.write_text(render_test(spec, directory_where([directory]), engine))
    assert imported(path).values() == spec.values()


def test_the_warm_up_group_is_the_ramp_and_the_comment_wins(tmp_path):
    spec = spec_of(dict(bs=8192, read_pct=70, random_pct=50, size=1024**3, working_set_pct=50, ramp=10,
                        until="steady", max_runtime=600, round=30, engine="auto"))
    text = render_test(spec, directory_where([tmp_path]), "libaio")
    assert f"[{WARMUP_JOB}]" in text and "ioengine=libaio" in text and "runtime=600" in text
    assert f"{IOFLEET_LINE}size=1g working_set_pct=50 runtime=1m engine=auto until=steady" in text
    path = tmp_path / "job.fio"
    path.write_text(text)
    result = import_file(path)
    assert result.notes == [] and len(result.plan["workloads"]) == 1  # the warm-up is no workload
    assert imported(path).values() == spec.values()


def test_a_job_file_on_a_device_imports_with_the_device_noted(tmp_path):
    spec = spec_of(dict(jobs=2, size=1024**3))
    path = tmp_path / "job.fio"
    path.write_text(render_test(spec, device_where("/dev/sdz", 1024**3), "libaio"))
    assert "offset_increment=" in path.read_text()  # one region per job: iofleet's device layout
    assert imported(path).values() == spec.values()
    [note] = import_file(path).notes
    assert "filename=/dev/sdz: raw device targets are not carried over" in note


@pytest.mark.parametrize("line, says", [
    ("; iofleet: colour=red", "line 3: colour=red in the `; iofleet:` comment is not name=value with a test "
                              "parameter"),
    ("; iofleet: size", "line 3: size in the `; iofleet:` comment is not name=value"),
    ("; iofleet: working_set_pct=0", "line 3: working_set_pct=0 in the `; iofleet:` comment: allowed: 1 to 100"),
    ("; iofleet: until=sometimes", "line 3: until=sometimes in the `; iofleet:` comment: expected one of time, "
                                   "steady"),
])
def test_a_bad_iofleet_comment_is_a_one_line_error(tmp_path, line, says):
    path = tmp_path / "job.fio"
    path.write_text(f"; a job file\n; generated by iofleet\n{line}\n[t]\nrw=read\n")
    with pytest.raises(PlanError) as exc:
        import_file(path)
    [problem] = exc.value.problems
    assert problem.startswith(f"{path}: ") and says in problem and "\n" not in problem


@pytest.mark.parametrize("example", ["quick.yaml", "hcibench-24.yaml"])
def test_the_job_files_of_an_example_plan_import_back(tmp_path, example):
    for i, spec in enumerate(expand(load_plan(EXAMPLES / example))):
        engine = AUTO_ENGINES[i % len(AUTO_ENGINES)] if spec.engine == "auto" else spec.engine
        path = tmp_path / f"{i}.fio"
        path.write_text(render_test(spec, directory_where([tmp_path]), engine))
        assert imported(path).values() == spec.values(), spec.id


def test_a_fleet_hosts_job_file_states_the_tests_whole_rate(tmp_path):
    """On a fleet each host's file carries its share of the rate; the
    `; iofleet:` line keeps the test's total, so it imports as the same test."""
    spec = spec_of(dict(read_pct=70, jobs=2, rate_iops=6000))
    text = render_test(spec, directory_where([tmp_path]), "libaio", hosts=3)
    assert "rate_iops=700,300" in text and f"{IOFLEET_LINE}engine=auto rate_iops=6000" in text
    path = tmp_path / "job.fio"
    path.write_text(text)
    assert imported(path).values() == spec.values()
