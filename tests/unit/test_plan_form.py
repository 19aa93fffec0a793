"""The Plans editor's form ↔ plan data: round trips, keys the form does not
know kept, matrix lists, problems placed at their field."""

from pathlib import Path

import pytest
import yaml

from iofleet.plan.load import parse_plan
from iofleet.web.plan_form import (FIELDS, NEW_PLAN, act, disabled, field_of, form_values, has_comments, merge,
                                   parse_list, place_problems, to_yaml, unshown)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text())


@pytest.mark.parametrize("text,expected", [
    ("4k, 64k", ["4k", "64k"]), ("4k,64k", ["4k", "64k"]), (" 1 ,4 , 16 ", ["1", "4", "16"]),
    ("4k,, 8k,", ["4k", "8k"]), ("", []), ("   ", []), ("64 MB, 1h 30m", ["64 MB", "1h 30m"]),
])
def test_comma_separated_lists(text, expected):
    assert parse_list(text) == expected


def test_a_filled_form_makes_a_valid_plan_that_shows_the_same_form():
    form = {"name": "oltp", "description": "8k mix", "label": "raid1", "targets": "/mnt/a\n\n /mnt/b \n",
            "on_error": "stop", "prepare": "zero", "workload": "mix", "bs": "4k, 64k", "read_pct": "70",
            "iodepth": "1, 4, 16", "jobs": "2", "size": "16m", "runtime": "2s", "ramp": "0",
            "engine": "psync", "direct": "false"}
    data = merge(None, form)
    plan = parse_plan(yaml.safe_load(to_yaml(data)))
    assert (plan.name, plan.label, plan.targets, plan.on_error, plan.prepare) == \
        ("oltp", "raid1", ["/mnt/a", "/mnt/b"], "stop", "zero")
    # One value is a default for the workload; several make its matrix.
    assert data["defaults"] == {"read_pct": 70, "jobs": 2, "size": "16m", "runtime": "2s", "ramp": 0,
                                "engine": "psync", "direct": False}
    assert data["workloads"] == [{"name": "mix", "matrix": {"bs": ["4k", "64k"], "iodepth": [1, 4, 16]}}]
    shown = form_values(yaml.safe_load(to_yaml(data)))
    assert shown == {name: value for name, value in form.items()} | {
        "targets": "/mnt/a\n/mnt/b", "iodepth": "1, 4, 16", "random_pct": "", "working_set_pct": "",
        # every other parameter of the table is on the form too, empty
        "compress_pct": "", "dedupe_pct": "", "rate_iops": "", "rate_mbps": "", "rbd_cache": "", "until": "", "max_runtime": "", "round": "", "repeat": ""}


def test_the_yaml_reads_like_the_docs():
    text = to_yaml(merge(None, {"name": "p", "targets": "/mnt/a", "bs": "4k, 64k", "runtime": "2s"}))
    assert text == ("name: p\ntargets: [/mnt/a]\ndefaults:\n  runtime: 2s\n"
                    "workloads:\n  - name: main\n    matrix:\n      bs: [4k, 64k]\n")


def test_an_unchanged_form_changes_nothing():
    for name in ("hcibench-24.yaml", "quick.yaml"):
        data = example(name)
        assert merge(data, form_values(data)) == data


def test_keys_the_form_does_not_know_are_kept():
    data = example("hcibench-24.yaml") | {"keep_files": True, "percentile": "p99.9"}
    data["defaults"]["compress_pct"] = 50
    data["workloads"][0]["repeat"] = 3
    changed = merge(data, form_values(data) | {"runtime": "30s", "label": "after-fw-update"})
    assert changed["keep_files"] is True and changed["percentile"] == "p99.9"
    assert changed["defaults"]["compress_pct"] == 50 and changed["workloads"][0]["repeat"] == 3
    assert changed["defaults"]["runtime"] == "30s" and changed["label"] == "after-fw-update"
    # Values the user did not touch keep their spelling (20GiB stays 20GiB).
    assert changed["defaults"]["size"] == "20GiB"
    assert list(changed)[:3] == ["name", "description", "label"]  # a new key goes where the docs put it
    assert unshown(changed) == ["keep_files", "percentile"]  # every workload parameter is on the form
    assert data["defaults"]["runtime"] == "2h", "merge works on a copy"


def test_a_value_moves_between_defaults_and_the_matrix():
    data = example("hcibench-24.yaml")
    one = merge(data, {"jobs": "4"})  # the matrix list becomes one value
    assert "jobs" not in one["workloads"][0]["matrix"] and one["defaults"]["jobs"] == 4
    several = merge(data, {"iodepth": "1, 32"})  # a default becomes a matrix list
    assert "iodepth" not in several["defaults"] and several["workloads"][0]["matrix"]["iodepth"] == [1, 32]
    # A workload's own value stays on the workload.
    own = merge({"name": "p", "workloads": [{"name": "w", "bs": "8k"}]}, {"bs": "16k"})
    assert own["workloads"] == [{"name": "w", "bs": "16k"}] and "defaults" not in own
    # An emptied field removes the value: the parameter's default applies.
    cleared = merge(data, {"bs": "", "size": ""})
    assert "matrix" in cleared["workloads"][0] and "bs" not in cleared["workloads"][0]["matrix"]
    assert "size" not in cleared["defaults"]


def test_several_workloads_are_each_on_the_form():
    data = example("quick.yaml")
    values = form_values(data)
    assert (values["workload"], values["bs"], values["iodepth"]) == ("rand-read", "4k", "8")
    assert (values["w3-workload"], values["w3-bs"], values["w3-random_pct"], values["w3-iodepth"]) == \
        ("seq-read", "128k", "0", "4")  # its own iodepth over the shared default
    assert disabled(data) == set() and unshown(data) == []
    # A workload's own value and a shared default changed in one workload: only that workload changes.
    changed = merge(data, {**values, "w2-bs": "16k", "w1-runtime": "9s", "w3-read_pct": "100, 70"})
    assert changed["workloads"][2]["bs"] == "16k" and changed["workloads"][1]["runtime"] == "9s"
    assert changed["workloads"][3]["matrix"] == {"read_pct": [100, 70]} and "read_pct" not in changed["workloads"][3]
    assert changed["defaults"] == data["defaults"] and changed["workloads"][0] == data["workloads"][0]
    assert len(parse_plan(changed, "form").workloads) == 4
    assert field_of("workloads[2].bs") == "w2-bs" and field_of("workloads[3].matrix.read_pct[1]") == "w3-read_pct"
    assert field_of("workloads[1].name") == "w1-workload"


def test_workloads_are_added_and_removed():
    data = example("quick.yaml")
    assert act(data, "add") and data["workloads"][-1] == {"name": "workload5"}
    assert act(data, "remove-0") and [w["name"] for w in data["workloads"]] == \
        ["rand-write", "oltp-mix", "seq-read", "workload5"]
    one = {"name": "p", "workloads": [{"name": "main"}]}
    assert not act(one, "remove-0") and not act(one, "remove-7") and not act(one, "drop")
    assert act(one, "add") and [w["name"] for w in one["workloads"]] == ["main", "workload2"]
    mixed = {"name": "m", "mixed": True, "workloads": [{"name": "a"}, {"name": "b"}]}
    assert not act(mixed, "add")
    assert {f.name for f in FIELDS.values() if f.param} | {"workload"} <= disabled(mixed)
    assert any(u.startswith("workloads (2 workloads, mixed") for u in unshown(mixed))


def test_a_select_the_matrix_varies_is_edited_in_the_yaml():
    data = {"name": "p", "workloads": [{"name": "w", "matrix": {"engine": ["psync", "libaio"], "bs": ["4k"]}}]}
    assert disabled(data) == {"engine"}
    assert unshown(data) == ["workloads[0].matrix.engine"]
    assert merge(data, {"engine": "sync"}) == data


def test_typed_values_stay_text_when_they_are_not_numbers():
    data = merge(None, {"iodepth": "abc", "direct": "maybe", "bs": "4q"})
    assert data["defaults"] == {"bs": "4q", "iodepth": "abc", "direct": "maybe"}


def test_new_plan_is_valid():
    assert parse_plan(yaml.safe_load(to_yaml(NEW_PLAN))).name == "new-plan"


@pytest.mark.parametrize("path,field", [
    ("name", "name"), ("targets[1]", "targets"), ("label", "label"), ("defaults.runtime", "runtime"),
    ("workloads[0].matrix.bs[1]", "bs"), ("workloads[0].iodepth", "iodepth"), ("workloads[0].name", "workload"),
    ("workloads[1].bs", "w1-bs"), ("defaults.compress_pct", "compress_pct"), ("workloads", None), ("", None),
    ("keep_files", None), ("workloads[0].matrix.engine[0]", "engine"),
])
def test_problem_paths_belong_to_form_fields(path, field):
    assert field_of(path) == field


def test_problems_are_placed_at_the_fields_on_the_form():
    problems = [{"field": "workloads[0].matrix.bs[1]", "message": "'4q' is not a size"},
                {"field": "defaults.runtime", "message": "'abc' is not a duration"},
                {"field": "keep_files", "message": "expected true or false"},
                {"field": "", "message": "not valid YAML at line 3, column 1: oops"}]
    at_field, others = place_problems(problems, set(FIELDS))
    assert at_field == {"bs": ["'4q' is not a size"], "runtime": ["'abc' is not a duration"]}
    assert [p["field"] for p in others] == ["keep_files", ""]
    # A field not on the form (the workload's, with several workloads) lists its problem with its path.
    at_field, others = place_problems(problems[:1], {"name"})
    assert at_field == {} and others == problems[:1]


def test_comments_are_noticed():
    assert has_comments((EXAMPLES / "quick.yaml").read_text())
    assert has_comments("name: p  # the plan\n")
    assert not has_comments(to_yaml(NEW_PLAN))


@pytest.mark.parametrize("plan, field", [
    ({"workloads": [{"name": "a"}, {"name": "b", "bs": 1000}]}, "w1-bs"),  # set by the workload
    ({"workloads": [{"name": "a", "matrix": {"bs": ["4k", 1000]}}]}, "bs"),  # by its matrix
    ({"defaults": {"bs": 1000}, "workloads": [{"name": "a"}]}, "bs"),  # by the defaults
    ({"workloads": [{"name": "a"}, {"name": "b", "size": "1k", "bs": "4k"}]}, "w1-size"),
    ({"workloads": [{"name": "a", "until": "steady", "max_runtime": "10s"}]}, "max_runtime"),
])
def test_problems_found_when_the_tests_are_made_are_at_their_field(plan, field):
    """expand's checks (the model takes these values, the tests refuse
    them) name the field that set the value, as the model's errors do."""
    from iofleet.errors import PlanError
    from iofleet.plan.expand import expand
    with pytest.raises(PlanError) as caught:
        expand(parse_plan({"name": "p", **plan}))
    (path, _), = caught.value.fields
    on_form = {field}
    assert place_problems([{"field": path, "message": "m"}], on_form) == ({field: ["m"]}, [])
