"""The studies' settings from text, a plan's preview and a fleet check's notes:
what the CLI renders and the web can show alike."""

import pytest

from iofleet.errors import IofleetError
from iofleet.fleet.check import HostCheck, TargetCheck
from iofleet.fleet.inventory import Host
from iofleet.plan import parse_plan
from iofleet.plan.easy import Durations
from iofleet.plan.expand import expand
from iofleet.studies.hosts import FleetCheck, check_notes
from iofleet.studies.options import easy_run_options, sweep_from_options
from iofleet.studies.preview import preview_plan
from iofleet.studies.run import estimate_seconds
from iofleet.studies.saturate import Sweep


def test_a_sweep_keeps_its_own_defaults_for_what_is_not_given():
    assert sweep_from_options() == Sweep()
    assert sweep_from_options(bs=None, round=None, bisect=None) == Sweep()
    sweep = sweep_from_options("p99<=2ms", bs="64k", size="32m", max_jobs=2, noise_pct=5.0, prepare="none")
    assert (sweep.bs, sweep.size, sweep.max_jobs, sweep.noise_pct, sweep.prepare) == (65536, 32 << 20, 2, 5.0, "none")
    assert sweep.slo.text == "p99<=2ms" and sweep.round == Sweep.round


@pytest.mark.parametrize("given, message", [
    ({"bs": "4q"}, "--bs 4q: '4q' is not a size"),
    ({"read_pct": "101"}, "--read-pct 101: allowed"),
    ({"max_iodepth": 0}, "--max-iodepth 0: allowed: 1 to 4096"),
    ({"min_gain_pct": 0.0}, "--min-gain 0.0: give a share above 0"),
    ({"repeats": 11}, "--repeats 11: allowed 1 to 10 runs of a cell"),
    # The window's message names the default --round the user did not give.
    ({"max_runtime": "3s"}, r"--max-runtime 3s: shorter than the steady-state window \(5 rounds of --round 1s\)"),
])
def test_sweep_settings_are_refused_in_one_line_naming_the_option(given, message):
    with pytest.raises(IofleetError, match=message):
        sweep_from_options(**given)


def test_a_fixed_runtime_needs_no_steady_state_window():
    assert sweep_from_options(runtime="1s", max_runtime="3s").runtime == 1


def test_easy_run_options_keep_easy_runs_defaults():
    assert easy_run_options() == (Durations(), None)
    durations, working_set = easy_run_options(runtime="1s", round="2s", size="16m")
    assert (durations.runtime, durations.round, durations.ramp, working_set) == (1, 2, Durations().ramp, 16 << 20)
    with pytest.raises(IofleetError, match="^--max-runtime 0s: allowed"):
        easy_run_options(max_runtime="0s")


def test_a_mixed_plans_duration_is_its_steps_not_its_tests():
    plan = parse_plan({"name": "m", "mixed": True, "workloads": [
        {"name": "oltp", "hosts": {"role": "db"}, "runtime": "10s", "matrix": {"iodepth": [1, 4]}},
        {"name": "backup", "hosts": {"role": "bk"}, "runtime": "10s", "bs": "1m"}]})
    preview = preview_plan(plan)
    assert len(preview.specs) == 3 and len(preview.steps) == 2 and len(preview.rows) == 3
    assert preview.estimate_s == estimate_seconds(preview.steps) < estimate_seconds(expand(plan))
    assert not preview.on_device and preview.data_bytes > 0


def test_a_plain_plans_preview_times_its_tests():
    plan = parse_plan({"name": "p", "targets": ["/dev/loop7"], "workloads": [{"name": "w", "matrix": {"jobs": [1, 2]}}]})
    preview = preview_plan(plan)
    assert preview.steps == [] and preview.on_device and preview.estimate_s == estimate_seconds(preview.specs)


def test_check_notes_name_the_host_and_what_to_do():
    host = Host(name="h1", address="10.0.0.1", targets=["/data"], metrics="http://10.0.0.1:9100/metrics")
    ok = HostCheck(host, reachable=True, fio_version="fio-3.33", targets=[TargetCheck("/data")])
    assert check_notes([ok], "fleet.yaml") == []
    left = HostCheck(host, reachable=True, fio_version="fio-3.33", targets=[TargetCheck("/data")],
                     metrics="connection refused", leftovers=True)
    notes = check_notes([left], "fleet.yaml")
    assert notes[0] == "host h1: metrics endpoint http://10.0.0.1:9100/metrics: connection refused"
    assert notes[1].startswith("host h1: iofleet's data files from an earlier run are left on target /data")
    assert "`iofleet hosts clean fleet.yaml` removes them" in notes[1]
    bad = HostCheck(host, problems=["fio server not reachable"])
    assert FleetCheck("fio-3.33", [left, bad], [], notes).ready == 1


def test_the_run_pages_study_fields_are_the_commands_options_with_the_studies_defaults():
    from iofleet.plan.settings import offered
    from iofleet.studies.kinds import STUDIES
    for name in ("easy-run", "saturate", "curve"):
        fields = {f.name: f for f in STUDIES[name].fields()}
        assert list(fields) == [*offered(name), *(s.name for s in STUDIES[name].settings)]
    saturate = {f.name: f.default for f in STUDIES["saturate"].fields()}
    assert saturate["bs"] == "4k" and saturate["max_iodepth"] == str(Sweep.max_iodepth) and saturate["slo"] == "none"
    assert saturate["noise_pct"] == f"{Sweep.noise_pct:g}" and saturate["max_jobs"] == "its CPUs"
    assert {f.name: f.default for f in STUDIES["easy-run"].fields()}["probe"] == "on"
    # Given as the page sends them: text for the table's rows, typed for the study's own.
    assert STUDIES["saturate"].given({"bs": "8k", "max_jobs": "2", "slo": "", "noise_pct": 5}) == {
        "bs": "8k", "max_jobs": 2, "noise_pct": 5}
    assert STUDIES["easy-run"].given({"probe": False, "runtime": "10s"}) == {"probe": False, "runtime": "10s"}
    with pytest.raises(IofleetError, match=r"^curve setting points: 'ten' is not a number$"):
        STUDIES["curve"].given({"points": "ten"})
    with pytest.raises(IofleetError, match=r"^easy-run has no setting 'slo'; its settings: size, runtime, .*probe$"):
        STUDIES["easy-run"].given({"slo": "p99<1ms"})
