"""A scenario's `watch:`: the file's field, the state of a sample (real
`ceph health --format json` outputs, recorded on the Ceph test cluster:
tests/fixtures/scenario/ceph-health.json), each event's recovery in the
storage's own account, and how they are shown."""

import json
from pathlib import Path

import pytest

from iofleet.analysis.watch_recovery import MAX_STATE, state_of, storage_recovery
from iofleet.errors import IofleetError, PlanError
from iofleet.fleet.inventory import Inventory
from iofleet.plan.scenario import parse_scenario
from iofleet.report.scenario import scenario_chart, scenario_lines, watch_lines
from iofleet.results.methodology import ScenarioRecord
from iofleet.results.watch import WatchSample
from iofleet.studies.scenario import check_scenario
from iofleet.studies.watch import watch_host

FIXTURES = Path(__file__).parents[1] / "fixtures" / "scenario"
CEPH = json.loads((FIXTURES / "ceph-health.json").read_text())["samples"]
FLEET = json.loads((FIXTURES / "fleet-faults.json").read_text())
EVENT = {"at": "5s", "fault": "device-slow", "iops": 100, "for": "2s"}
LOAD = {"bs": "4k", "runtime": "20s", "ramp": "2s"}


def _inventory() -> list:
    """h1 with `ssh:`, h2 without."""
    return Inventory.model_validate({"hosts": [{"name": "h1", "address": "10.0.0.1", "targets": ["/mnt/a"], "ssh": {}},
                                               {"name": "h2", "address": "10.0.0.2", "targets": ["/mnt/a"]}]}).hosts


def _scenario(watch, *events):
    return parse_scenario({"name": "s", "load": LOAD, "events": list(events) or [EVENT], "watch": watch}, "s.yaml")


def _problems(watch) -> list[str]:
    with pytest.raises(PlanError) as exc:
        _scenario(watch)
    return exc.value.problems


def _ceph_states() -> list[tuple[float, str]]:
    return [(s["t"], state_of(s["rc"], s["stdout"], s["stderr"])) for s in CEPH if "t" in s]


# ---- the file ------------------------------------------------------------------

def test_a_watch_takes_a_command_an_interval_and_a_host():
    w = _scenario({"command": "ceph health --format json", "every": "2s", "host": "h1"}).watch
    assert (w.command, w.every, w.host) == ("ceph health --format json", 2, "h1")
    assert w.describe() == "watch: ceph health --format json on h1 every 2s"
    w = _scenario({"command": "cat /tmp/state"}).watch
    assert (w.every, w.host) == (1, None) and w.describe() == "watch: cat /tmp/state on this host every 1s"
    assert _scenario(None).watch is None


@pytest.mark.parametrize("watch, where, text", [
    ({"command": "a\nb"}, "watch", "command is one line"),
    ({"command": "a\0b"}, "watch", "command is one line"),
    ({"command": "x" * 4097}, "watch.command", "at most 4096 characters"),
    ({"command": ""}, "watch.command", "at least 1 character"),
    ({"command": "x", "every": "0s"}, "watch", "every: at least 1s"),
    ({"command": "x", "every": "soon"}, "watch.every", "not a duration"),
    ({"command": "x", "host": "h 1"}, "watch.host", "letters, digits"),
    ({"command": "x", "each": "1s"}, "watch.each", "unknown field"),
    ({"every": "1s"}, "watch.command", "required field is missing"),
    ("ceph health", "watch", "mapping"),
])
def test_a_bad_watch_is_named_by_file_and_field(watch, where, text):
    (line,) = _problems(watch)
    assert line.startswith(f"s.yaml: {where}: ") and text in line, line


def test_the_watch_host_is_a_host_of_the_inventory_with_ssh():
    w = _scenario({"command": "ceph health", "host": "h1"}).watch
    assert watch_host(w, "s.yaml", _inventory()).name == "h1"
    with pytest.raises(IofleetError, match=r"^s.yaml: watch.host: h1 is a fleet host, and the scenario runs on "
                                           r"--target; leave `host` out \(the command runs on this host\)"):
        watch_host(w, "s.yaml", None)
    with pytest.raises(IofleetError, match=r"^s.yaml: watch.host: h3 is not a host of the inventory \(h1, h2\)"):
        watch_host(_scenario({"command": "x", "host": "h3"}).watch, "s.yaml", _inventory())
    with pytest.raises(IofleetError, match=r"^s.yaml: watch: the watch on h2 needs the SSH control channel; "
                                           r"add `ssh:` to h2 in the inventory"):
        watch_host(_scenario({"command": "x", "host": "h2"}).watch, "s.yaml", _inventory())
    assert watch_host(_scenario({"command": "x"}).watch, "s.yaml", _inventory()) is None  # this host


def test_the_watch_command_is_shown_and_needs_yes():
    s = _scenario({"command": "ceph health --format json", "host": "h1"},
                  {"at": "5s", "fault": "run", "host": "h1", "command": "systemctl restart ceph-osd@3",
                   "for": "5s"})
    with pytest.raises(IofleetError, match=r"runs commands on hosts as root \(h1: systemctl restart ceph-osd@3; "
                                           r"h1, every 1s: ceph health --format json\); check them and run again "
                                           r"with --yes"):
        check_scenario(s, "s.yaml", _inventory(), None, yes=False)
    local = _scenario({"command": "cat /tmp/x/state", "every": "2s"})
    with pytest.raises(IofleetError, match=r"\(this host, every 2s: cat /tmp/x/state\)"):
        check_scenario(local, "s.yaml", None, "/tmp/t", yes=False)
    assert len(check_scenario(local, "s.yaml", None, "/tmp/t", yes=True)) == 1


# ---- a sample's state ----------------------------------------------------------------

def test_ceph_health_json_is_its_status_and_the_names_of_its_checks():
    states = [s for _, s in _ceph_states()]
    assert states[0] == "HEALTH_OK"
    assert states[1] == "HEALTH_WARN OSD_DOWN"
    assert "HEALTH_WARN OSD_DOWN, PG_DEGRADED" in states  # sorted, comma-separated
    assert states[-2] == "HEALTH_WARN PG_DEGRADED" and states[-1] == "HEALTH_OK"
    # The same state whatever the counts in the checks' messages (7 PGs degraded, then 2, then 1).
    assert len(set(states)) == 4


def test_a_failed_command_is_its_exit_status_and_the_first_line_of_its_stderr():
    (bad,) = [s for s in CEPH if s["note"] == "bad conf"]
    assert state_of(bad["rc"], bad["stdout"], bad["stderr"]) == (
        "exit 1: Error initializing cluster client: ObjectNotFound('RADOS object not found (error calling "
        "conf_read_file)')")
    assert state_of(127, "", "\nsh: 1: cephx: not found\nmore\n") == "exit 127: sh: 1: cephx: not found"
    assert state_of(3, "out only\n", "") == "exit 3: out only"
    assert state_of(2, "", "") == "exit 2"
    assert state_of(None, "", "", "not done in 0.9 s") == "no answer: not done in 0.9 s"


def test_other_output_is_its_first_line_bounded():
    assert state_of(0, "\n  degraded \nsecond line\n") == "degraded"
    assert state_of(0, "") == ""
    assert state_of(0, '{"health": "ok"}') == '{"health": "ok"}'  # JSON without `status`: its line
    assert state_of(0, '["HEALTH_OK"]') == '["HEALTH_OK"]'
    assert state_of(0, '{"status": "HEALTH_OK", "checks": []}') == "HEALTH_OK"
    long = state_of(0, "x" * 10_000)
    assert len(long) == MAX_STATE and long.endswith("…")


# ---- each event's recovery, in the storage's account ---------------------------------------

def _samples(states: list[tuple[float, str]], shift: float = 0.0) -> list[WatchSample]:
    return [WatchSample(t_s=round(t + shift, 2), state=s) for t, s in states]


def test_an_osd_killed_and_started_again_is_back_to_health_ok_when_ceph_says_so():
    # The recorded cluster: osd.0 killed at about 0.5 s, started again at about 10.4 s; here 30 s later.
    samples = _samples(_ceph_states(), 30)
    (a,) = storage_recovery(samples, [{"index": 0, "at_s": 30.5, "end_s": 40.4}])
    assert (a.before, a.before_t_s) == ("HEALTH_OK", 30.23)
    assert (a.changed_s, a.changed_to) == (30.71, "HEALTH_WARN OSD_DOWN")
    assert (a.back_s, a.back_after_s) == (50.75, 10.35)
    assert a.index == 0 and a.until_s is None and a.samples == len(samples) - 1


def test_not_back_by_the_end_or_before_the_next_event():
    states = [(0.5, "ok"), (1.5, "ok"), (2.5, "bad"), (3.5, "ok"), (4.5, "bad"), (5.5, "bad")]
    (a,) = storage_recovery(_samples(states), [{"at_s": 2.0, "end_s": 3.0}])
    # Back at 3.5 s, but not for good: bad again at 4.5 s until the end.
    assert a.changed_s == 2.5 and a.back_s is None and a.until_s is None
    first, second = storage_recovery(_samples(states), [{"at_s": 2.0, "end_s": 3.0}, {"at_s": 4.0, "end_s": None}])
    # The first event's span ends where the second begins: back at 3.5 s, 0.5 s after its end.
    assert (first.until_s, first.back_s, first.back_after_s) == (4.0, 3.5, 0.5)
    assert (second.before, second.changed_to, second.back_s) == ("ok", "bad", None)


def test_an_event_without_an_end_counts_from_its_start_and_a_blip_during_the_fault_counts_as_back():
    states = [(0.5, "ok"), (1.5, "bad"), (2.5, "ok"), (3.5, "ok")]
    (a,) = storage_recovery(_samples(states), [{"at_s": 1.0, "end_s": None}])
    assert (a.back_s, a.back_after_s) == (2.5, 1.5)
    (a,) = storage_recovery(_samples(states), [{"at_s": 1.0, "end_s": 5.0}])
    assert a.back_after_s == -2.5  # back before the fault ended


def test_no_change_and_no_sample_before():
    (a,) = storage_recovery(_samples([(0.5, "ok"), (1.5, "ok")]), [{"at_s": 1.0, "end_s": 2.0}])
    assert a.before == "ok" and a.changed_s is None and a.back_s is None and a.samples == 1
    (a,) = storage_recovery(_samples([(1.5, "bad"), (2.5, "ok")]), [{"at_s": 1.0, "end_s": 2.0}])
    assert a.before is None and a.changed_s is None and a.back_s is None


# ---- shown -------------------------------------------------------------------------------

def _record(samples, accounts) -> ScenarioRecord:
    record = json.loads(json.dumps(FLEET))
    record["watch"] = {"command": "ceph health --format json", "host": "h1", "every_s": 1, "timeout_s": 0.9,
                       "samples": [s.to_dict() for s in samples], "events": [a.to_dict() for a in accounts]}
    return ScenarioRecord.from_dict(record)


def _sample(t, state, exit_code=0, output=None) -> WatchSample:
    return WatchSample(t, 0.3, exit_code, state if output is None else output, state)


def test_the_summary_gives_the_storage_account_of_each_event():
    samples = [_sample(0.5, "HEALTH_OK"), _sample(1.5, "HEALTH_OK"), _sample(2.5, "HEALTH_WARN OSD_DOWN"),
               _sample(3.0, "HEALTH_WARN OSD_DOWN"), _sample(4.0, "no answer: not done in 0.9 s", None, ""),
               _sample(4.5, "HEALTH_WARN OSD_DOWN"), _sample(6.5, "HEALTH_OK"), _sample(7.5, "HEALTH_OK")]
    # fleet-faults.json: link-slow h1 at 3s for 1s (applied at 1.48 s on fio's clock), host-down h2 at 5s (3.62 s).
    accounts = storage_recovery(samples, [{"index": 0, "at_s": 1.48, "end_s": 2.42},
                                          {"index": 1, "at_s": 3.62, "end_s": None}])
    lines = watch_lines(_record(samples, accounts))
    assert lines == [
        "  storage's account: `ceph health --format json` on h1 every 1s, 8 samples, 1 failed or unanswered "
        "(first: no answer: not done in 0.9 s):",
        "    link-slow h1 at 3s, in place 1.5–2.4 s: storage HEALTH_OK before, reported HEALTH_WARN OSD_DOWN at "
        "2.5 s; not back to HEALTH_OK before the next event (at 3.6 s)",
        "    host-down h2 at 5s, in place from 3.6 s: storage HEALTH_WARN OSD_DOWN before, reported no answer: not "
        "done in 0.9 s at 4.0 s; not back to HEALTH_WARN OSD_DOWN by the end"]
    assert scenario_lines(_record(samples, accounts))[-3:] == lines
    accounts = storage_recovery(samples, [{"index": 1, "at_s": 2.0, "end_s": 3.0}])
    (_, line) = watch_lines(_record(samples, accounts))
    assert line.endswith("back to its state before the fault (HEALTH_OK) at 6.5 s (3.5 s after the fault ended)")
    accounts = storage_recovery(samples, [{"index": 1, "at_s": 0.6, "end_s": None}])
    assert watch_lines(_record(samples, accounts))[1].endswith(
        "back to its state before the fault (HEALTH_OK) at 6.5 s (5.9 s after the fault began)")
    accounts = storage_recovery(samples, [{"index": 0, "at_s": 0.2, "end_s": 1.0}])
    assert watch_lines(_record(samples, accounts))[1] == (
        "    link-slow h1 at 3s, in place 0.2–1.0 s: no storage sample before it began")
    accounts = storage_recovery(samples[:2], [{"index": 0, "at_s": 1.0, "end_s": 2.0}])
    assert watch_lines(_record(samples[:2], accounts))[1] == (
        "    link-slow h1 at 3s, in place 1.0–2.0 s: storage stayed HEALTH_OK (1 sample)")
    assert watch_lines(ScenarioRecord.from_dict(FLEET)) == []  # no watch: no lines


def test_the_chart_draws_the_states_on_the_time_axis():
    samples = [_sample(0.5, "HEALTH_OK", output='{"status":"HEALTH_OK"}'), _sample(1.5, "HEALTH_WARN OSD_DOWN"),
               _sample(2.5, "HEALTH_WARN OSD_DOWN"), _sample(3.5, "exit 1: <no conf>", 1, ""),
               _sample(4.5, "HEALTH_OK")]
    fig = scenario_chart(_record(samples, []))
    (trace,) = [t for t in fig.data if t.name.startswith("storage")]
    assert list(trace.x) == [0.5, 1.5, 2.5, 3.5, 4.5]
    assert trace.hovertext[0] == 'HEALTH_OK<br>{&quot;status&quot;:&quot;HEALTH_OK&quot;}'
    assert trace.hovertext[3] == "exit 1: &lt;no conf&gt;"  # the output is text, not HTML
    colours = list(trace.marker.color)
    assert colours[0] == colours[4] != colours[1] == colours[2] != colours[3]
    texts = [a.text for a in fig.layout.annotations]
    assert texts[-4:] == ["HEALTH_OK", "HEALTH_WARN OSD_DOWN", "exit 1: &lt;no conf&gt;", "HEALTH_OK"]
    band = [(s.x0, s.x1) for s in fig.layout.shapes if s.yref == "paper" and s.y1 == 0.03]
    assert band == [(0.5, 1.5), (1.5, 3.5), (3.5, 4.5), (4.5, 5.5)]
    plain = scenario_chart(ScenarioRecord.from_dict(FLEET))
    assert not [t for t in plain.data if t.name.startswith("storage")]


def test_a_run_stored_before_watch_existed_reads_and_exports_as_it_was():
    record = ScenarioRecord.from_dict(FLEET)
    assert record.watch is None and record.to_dict() == FLEET
    fresh = ScenarioRecord(name="x")
    assert "watch" not in fresh.to_dict()
    assert _record([], []).to_dict()["watch"]["command"] == "ceph health --format json"
