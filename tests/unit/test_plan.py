"""Plan files: units, validation with field paths, matrix expansion."""

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from iofleet.errors import PlanError
from iofleet.plan import expand, load_plan, parse_plan
from iofleet.plan.expand import data_per_target_set, expand_mixed
from iofleet.plan.units import parse_duration, parse_size

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("text,expected", [
    ("4k", 4096), ("4K", 4096), ("128KiB", 131072), ("20GiB", 20 * 1024**3),
    ("1m", 1024**2), ("1.5g", 1536 * 1024**2), (512, 512), ("64 MB", 64 * 1024**2),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["4x", "", "k", "-4k", "1.1b", "KiB", "4kk", None, True, [4]])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("text,expected", [
    ("90s", 90), ("2h", 7200), ("5m", 300), ("1h30m", 5400), (45, 45), ("60", 60), ("2min", 120),
])
def test_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["2x", "", "h", "1.5s", "-5s", "1h 30x"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_hcibench_plan_expands_into_the_24_classic_tests():
    specs = expand(load_plan(EXAMPLES / "hcibench-24.yaml"))
    assert len(specs) == 24
    assert {(s.bs, s.read_pct, s.jobs) for s in specs} == {
        (bs * 1024, r, j) for bs in (4, 16, 64, 128) for r in (0, 20, 70) for j in (1, 2)
    }
    assert all(s.random_pct == 100 and s.working_set_pct == 100 and s.runtime == 7200 for s in specs)
    # Documented order: bs outermost, then read_pct, then jobs.
    assert [s.id for s in specs[:4]] == [
        "4k-r0-rand-j1-qd4", "4k-r0-rand-j2-qd4", "4k-r20-rand-j1-qd4", "4k-r20-rand-j2-qd4"]
    assert specs[-1].id == "128k-r70-rand-j2-qd4"
    assert len({s.id for s in specs}) == 24


def test_quick_plan_fits_in_a_minute():
    specs = expand(load_plan(EXAMPLES / "quick.yaml"))
    assert sum(s.ramp + s.runtime for s in specs) < 45


def test_bad_plan_names_field_path_value_and_what_is_allowed():
    data = {"name": "p", "workloads": [
        {"name": "a"},
        {"name": "b", "matrix": {"bs": ["4k", "8k", "4x"]}, "iodepth": 0, "raed_pct": 5},
    ]}
    with pytest.raises(PlanError) as info:
        parse_plan(data, "bad.yaml")
    lines = info.value.problems
    assert "bad.yaml: workloads[1].matrix.bs[2]: '4x' is not a size; use e.g. 4k, 128KiB, 20GiB (got '4x')" in lines
    assert any(l.startswith("bad.yaml: workloads[1].iodepth: allowed: 1 to 4096") for l in lines)
    assert any(l.startswith("bad.yaml: workloads[1].raed_pct: unknown field") for l in lines)
    assert all("\n" not in l for l in lines)


def test_yaml_syntax_error_is_one_line_with_position(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("name: x\nworkloads:\n  - name: [unclosed\n")
    with pytest.raises(PlanError) as info:
        load_plan(p)
    assert len(info.value.problems) == 1
    assert str(p) in info.value.problems[0] and "line" in info.value.problems[0]


def test_missing_plan_file(tmp_path):
    with pytest.raises(PlanError, match="no such plan file"):
        load_plan(tmp_path / "nope.yaml")


@pytest.mark.parametrize("target", ["/dev", "/dev/sd b", "/dev/a:b", "/dev/a,b", "/dev/../etc/passwd", "/dev/x/",
                                    "/dev/sdb\nexec_prerun=ls", "/dev/sdb\n", "/data;rm -rf /", "/a:/b", "/x\nexec_prerun=ls",
                                    "/data/${HOME}", "/d`id`", " /lead"])
def test_unsafe_targets_are_refused(target):
    with pytest.raises(PlanError) as info:
        parse_plan({"name": "p", "targets": [target], "workloads": [{"name": "w"}]}, "t.yaml")
    assert "targets[0]" in str(info.value)
    if target.startswith("/dev"):
        assert "a device is /dev/NAME" in str(info.value)


@pytest.mark.parametrize("name", ["a b", "x\nexec_prerun=rm", "$(id)", "", "-x", "a;b"])
def test_unsafe_names_are_refused(name):
    with pytest.raises(PlanError):
        parse_plan({"name": "p", "workloads": [{"name": name}]})


def test_matrix_order_ids_and_repeats():
    plan = parse_plan({"name": "p", "defaults": {"runtime": "5s"}, "workloads": [
        {"name": "w", "repeat": 2, "matrix": {"iodepth": [1, 8], "bs": ["4k", "64k"]}}]})
    specs = expand(plan)
    assert [(s.id, s.repeat) for s in specs] == [
        ("4k-r100-rand-j1-qd1", 1), ("4k-r100-rand-j1-qd1", 2),
        ("4k-r100-rand-j1-qd8", 1), ("4k-r100-rand-j1-qd8", 2),
        ("64k-r100-rand-j1-qd1", 1), ("64k-r100-rand-j1-qd1", 2),
        ("64k-r100-rand-j1-qd8", 1), ("64k-r100-rand-j1-qd8", 2),
    ]


def test_ids_gain_suffixes_and_workload_prefix_only_when_needed():
    plan = parse_plan({"name": "p", "workloads": [
        {"name": "a", "matrix": {"working_set_pct": [50, 100]}},
        {"name": "b", "working_set_pct": 50}]})
    ids = [s.id for s in expand(plan)]
    assert ids == ["a.4k-r100-rand-j1-qd1-ws50", "a.4k-r100-rand-j1-qd1-ws100",
                   "b.4k-r100-rand-j1-qd1-ws50"]


def test_size_smaller_than_block_is_refused():
    with pytest.raises(PlanError, match="smaller than bs"):
        expand(parse_plan({"name": "p", "workloads": [{"name": "w", "bs": "1m", "size": "64k"}]}))


def test_working_set_is_whole_blocks_and_data_total():
    plan = parse_plan({"name": "p", "workloads": [
        {"name": "w", "bs": "4k", "size": "10m", "working_set_pct": 33, "matrix": {"jobs": [1, 3]}},
        {"name": "v", "size": "20m", "jobs": 2}]})
    specs = expand(plan)
    assert specs[0].working_set == (10 * 1024**2 * 33 // 100) // 4096 * 4096
    # job file 0: max(10m, 10m, 20m); file 1: max(10m, 20m); file 2: 10m
    assert data_per_target_set(specs) == (20 + 20 + 10) * 1024**2


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "workloads", "matrix", "bs", "jobs", "targets", "defaults", "x"]),
        children, max_size=4),
    max_leaves=12))
def test_any_yaml_shape_gives_plan_error_not_a_crash(data):
    try:
        plan = parse_plan(data, "fuzz.yaml")
        expand(plan)
    except PlanError as exc:
        assert all(p.startswith("fuzz.yaml") or "workload" in p or "test" in p for p in exc.problems)


def _mixed(**extra):
    return {"name": "m", "mixed": True, "workloads": [
        {"name": "oltp", "hosts": {"role": "db"}, "matrix": {"iodepth": [1, 4, 16]}},
        {"name": "backup", "hosts": {"role": "bk"}, "bs": "1m", "random_pct": 0}], **extra}


def test_mixed_steps_pair_the_workloads_tests_and_repeat_a_single_one():
    steps = expand_mixed(parse_plan(_mixed()))
    assert [s.groups["oltp"].iodepth for s in steps] == [1, 4, 16]
    assert all(s.groups["backup"].bs == 1024 * 1024 for s in steps)
    assert steps[1].id == "oltp.4k-r100-rand-j1-qd4+backup.1m-r100-seq-j1-qd1"
    assert steps[0].params()["groups"]["backup"]["test"] == "1m-r100-seq-j1-qd1"


def test_mixed_plans_need_host_groups_and_even_workloads():
    data = _mixed()
    del data["workloads"][1]["hosts"]
    with pytest.raises(PlanError, match=r"^<plan>: workloads\[1\]\.hosts: a mixed plan gives every workload"):
        parse_plan(data)
    data = _mixed()
    data["mixed"] = False
    with pytest.raises(PlanError, match=r"workloads\[0\]\.hosts: host groups per workload need `mixed: true`"):
        parse_plan(data)
    data = _mixed()
    data["workloads"][1]["matrix"] = {"iodepth": [1, 2]}
    with pytest.raises(PlanError, match="'oltp': 3, 'backup': 2"):
        expand_mixed(parse_plan(data))
