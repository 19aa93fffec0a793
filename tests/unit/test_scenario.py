"""Scenario files (plan/scenario.py) and their faults checked before a run
(fleet/control/faults.py): one-line errors naming the file and field, the scripts
quoted, `run:` refused without --yes."""

import shlex
import subprocess

import pytest

from iofleet.errors import IofleetError, PlanError
from iofleet.fleet.control.fault_kind import script
from iofleet.fleet.control.fault_kinds.device_slow import DEVICE_SLOW, DEVICE_UNDO, cgroup, throttles
from iofleet.fleet.control.fault_kinds.host_down import HOST_DOWN, HOST_UP
from iofleet.fleet.control.fault_kinds.link_slow import LINK_SLOW, LINK_UNDO, tbf_burst
from iofleet.fleet.control.faults import FaultError, plan_faults
from iofleet.fleet.inventory import Inventory
from iofleet.plan.scenario import parse_scenario
from iofleet.studies.scenario import Timeline, check_scenario, clock_shift

from ..cli import iofleet, wait_for

LOAD = {"bs": "4k", "read_pct": 70, "iodepth": 4, "size": "16m", "runtime": "20s", "ramp": "2s"}


def _scenario(*events, **load):
    return parse_scenario({"name": "s", "load": {**LOAD, **load}, "events": list(events)}, "s.yaml")


def _problems(data) -> list[str]:
    with pytest.raises(PlanError) as exc:
        parse_scenario(data, "s.yaml")
    return exc.value.problems


def _inventory(ssh: bool = True) -> list:
    hosts = [{"name": n, "address": f"10.0.0.{i}", "targets": ["/mnt/a"]} for i, n in enumerate(["h1", "h2"], 1)]
    if ssh:
        hosts[0]["ssh"] = {}
    return Inventory.model_validate({"hosts": hosts}).hosts


def test_a_scenario_becomes_a_one_test_plan_with_one_second_rounds():
    s = _scenario({"at": "5s", "fault": "link-slow", "host": "h1", "mbit": 100, "for": "1m"}, runtime="2m")
    assert (s.events[0].at, s.events[0].for_s, s.events[0].end_s) == (5, 60, 65)
    plan = s.plan("s.yaml", ["/tmp/x"])
    (w,) = plan.workloads
    assert (w.round, w.bs, w.read_pct, w.runtime, w.ramp) == (1, 4096, 70, 120, 2)
    assert plan.on_host_loss == "continue" and plan.targets == ["/tmp/x"]
    assert s.events[0].describe() == "at 5s: link-slow on h1 (100 Mbit/s) for 60s"


@pytest.mark.parametrize("event, where, text", [
    ({"at": "25s", "fault": "host-down", "host": "h1"}, "", "events[0].at: 25s is not inside"),
    ({"at": "5s", "fault": "link-slow", "host": "h1", "mbit": 10, "for": "1m"}, "", "events[0].for: ends at 65s"),
    ({"at": "5s", "fault": "link-slow", "host": "h1"}, "events[0]", "link-slow needs `mbit`"),
    ({"at": "5s", "fault": "device-slow"}, "events[0]", "device-slow needs `mbps` or `iops`"),
    ({"at": "5s", "fault": "host-down", "host": "h1", "mbit": 3}, "events[0]", "host-down does not take mbit"),
    ({"at": "5s", "fault": "host-down", "host": "h1", "for": "2s"}, "events[0]", "host-down takes no `for`"),
    ({"at": "5s", "fault": "run", "host": "h1"}, "events[0]", "run needs `command`"),
    ({"at": "5s", "fault": "run", "host": "h1", "command": "a\nb", "for": 1}, "events[0]", "command is one line"),
    ({"at": "5s", "fault": "run", "host": "h1", "command": "x"}, "events[0]", "run needs `for`: the span its impact"),
    ({"at": "0s", "fault": "host-down", "host": "h1"}, "events[0]", "at least 1s"),
    ({"at": "5x", "fault": "host-down", "host": "h1"}, "events[0].at", "not a duration"),
    ({"at": "5s", "fault": "disk-fire", "host": "h1"}, "events[0].fault", "host-down"),
    ({"at": "5s", "fault": "host-down", "host": "h 1"}, "events[0].host", "letters, digits"),
    ({"at": "5s", "fault": "host-down", "host": "h1", "when": 1}, "events[0].when", "unknown field"),
])
def test_bad_events_are_named_by_file_and_field(event, where, text):
    (line,) = _problems({"name": "s", "load": LOAD, "events": [event]})
    assert line.startswith("s.yaml: ") and where in line and text in line, line


def test_the_load_is_checked_by_the_parameter_table_and_takes_one_test():
    (line,) = _problems({"name": "s", "load": {**LOAD, "iodepth": 0}, "events": [{"at": 1, "fault": "run",
                                                                                  "host": "h", "command": "x",
                                                                                  "for": 1}]})
    assert line.startswith("s.yaml: load.iodepth: ")
    (line,) = _problems({"name": "s", "load": {**LOAD, "repeat": 3}, "events": [{"at": 1, "fault": "run",
                                                                                 "host": "h", "command": "x",
                                                                                 "for": 1}]})
    assert "load.repeat: not in a scenario" in line
    assert _problems({"name": "s", "load": LOAD, "events": []}) == [
        "s.yaml: events: give 1 to 100 events, e.g. `- {at: 2m, fault: host-down, host: h2}` (got [])"]
    assert "a scenario is a YAML mapping" in _problems([1])[0]


def test_faults_are_checked_against_the_inventory_and_the_place():
    s = _scenario({"at": "5s", "fault": "host-down", "host": "h3"})
    with pytest.raises(FaultError, match=r"^s.yaml: events\[0\].host: h3 is not a host of the inventory \(h1, h2\)"):
        plan_faults(s, "s.yaml", _inventory(), None, "t")
    s = _scenario({"at": "5s", "fault": "link-slow", "host": "h2", "mbit": 10})
    with pytest.raises(FaultError, match=r"link-slow on h2 needs the SSH control channel; add `ssh:` to h2"):
        plan_faults(s, "s.yaml", _inventory(), None, "t")
    with pytest.raises(FaultError, match=r"link-slow needs a fleet host; run the scenario with --hosts"):
        plan_faults(s, "s.yaml", None, "/tmp/t", "t")
    s = _scenario({"at": "5s", "fault": "device-slow", "host": "h1", "iops": 100})
    with pytest.raises(FaultError, match=r"events\[0\].host: h1 is a fleet host, and the scenario runs on --target"):
        plan_faults(s, "s.yaml", None, "/tmp/t", "t")
    (f,) = plan_faults(s, "s.yaml", _inventory(), None, "tok")
    assert f.host.name == "h1" and f.target == "/mnt/a" and cgroup(f) == "/sys/fs/cgroup/blkio/iofleet-tok-0"


def test_run_commands_need_yes_and_are_shown():
    s = _scenario({"at": "5s", "fault": "run", "host": "h1", "command": "systemctl restart ceph-osd@3", "for": "5s"})
    with pytest.raises(IofleetError, match=r"runs commands on hosts as root \(h1: systemctl restart ceph-osd@3\); "
                                           r"check them and run again with --yes"):
        check_scenario(s, "s.yaml", _inventory(), None, yes=False)
    assert len(check_scenario(s, "s.yaml", _inventory(), None, yes=True)) == 1


def test_the_cli_refuses_run_commands_without_yes_before_anything_runs(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n- {name: h1, address: 10.0.0.1, targets: [/mnt/a], ssh: {}}\n")
    f = tmp_path / "s.yaml"
    f.write_text("name: s\nload: {runtime: 20s}\nevents:\n- {at: 5s, fault: run, host: h1, command: 'echo hi', for: 2s}\n")
    proc = iofleet("scenario", f, "--hosts", inv, data_dir=tmp_path / "d", check_rc=2)
    assert "check them and run again with --yes" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "d").exists()  # nothing ran, nothing stored


def test_fault_scripts_take_the_users_values_as_quoted_arguments_only():
    evil = "/mnt/a; touch /tmp/pwned"
    command = script(DEVICE_SLOW, evil, "/sys/fs/cgroup/blkio/iofleet-x-0", "read_bps_device", "1000000", "--", 1)
    assert shlex.split(command)[:4] == ["sh", "-c", DEVICE_SLOW, "iofleet-fault"]
    assert shlex.split(command)[4] == evil
    for text in (DEVICE_SLOW, DEVICE_UNDO, HOST_DOWN, HOST_UP, LINK_SLOW, LINK_UNDO):  # valid sh
        assert subprocess.run(["sh", "-n", "-c", text], capture_output=True).returncode == 0


def test_throttle_values_and_tbf_burst():
    s = _scenario({"at": "5s", "fault": "device-slow", "mbps": 20, "iops": 500})
    assert throttles(s.events[0]) == ["read_bps_device", "20000000", "write_bps_device", "20000000",
                                      "read_iops_device", "500", "write_iops_device", "500"]
    assert tbf_burst(1) == 16384 and tbf_burst(1000) == 1_250_000


def test_clock_shift_is_fio_start_up_bounded():
    assert clock_shift(21.4, 20) == 1.4
    assert clock_shift(19.0, 20) == 0.0 and clock_shift(40.0, 20) == 3.0 and clock_shift(None, 20) == 0.0


class _Fake:
    """A fault that only counts (the timeline's order and the undo at any exit)."""

    def __init__(self, event, log):
        self.event, self.log, self.applied, self.undone, self.detail = event, log, False, False, {}

    @property
    def in_place(self):
        return self.applied and not self.undone

    def apply(self):
        self.applied = True  # a failed apply may have done part of it: it is undone too
        self.log.append(("apply", self.event.fault))
        if self.event.fault == "link-slow":
            raise FaultError("h1: link-slow could not be applied: no interface has the address 10.0.0.1")

    def undo(self):
        if not self.undone:
            self.undone = True
            self.log.append(("undo", self.event.fault))


def test_the_timeline_fires_in_order_and_undoes_every_fault_when_stopped():
    import threading
    import time
    s = _scenario({"at": "1s", "fault": "device-slow", "iops": 9, "for": "1s"},
                  {"at": "1s", "fault": "run", "host": "h1", "command": "x", "for": "1s"},
                  {"at": "2s", "fault": "link-slow", "host": "h1", "mbit": 9})
    log, stop = [], threading.Event()
    faults = [_Fake(e, log) for e in s.events]
    tl = Timeline(faults, stop)
    tl.begin(-0.95)  # the measured part began 0.95 s ago: the 1 s events are due at once
    time.sleep(0.5)
    stop.set()  # Ctrl-C before the 2 s event
    tl.finish()
    tl.finish()  # idempotent
    # This host's faults and h1's are fired by a worker each: each one's in order.
    assert sorted(log) == [("apply", "device-slow"), ("apply", "run"), ("undo", "device-slow"), ("undo", "run")]
    assert log.index(("apply", "device-slow")) < log.index(("undo", "device-slow"))
    assert log.index(("apply", "run")) < log.index(("undo", "run"))
    assert [r["applied_s"] is not None for r in tl.records] == [True, True, False]
    assert tl.records[2]["error"].startswith("the run was stopped at ")  # never applied, and said so
    # A fault whose apply failed half-way is undone at the end too, and its error kept.
    log.clear()
    tl = Timeline([_Fake(s.events[2], log)], threading.Event())
    tl.begin(-1.95)
    wait_for(lambda: log, timeout=5, what="the 2 s event")
    tl.finish()
    assert log == [("apply", "link-slow"), ("undo", "link-slow")]
    assert "no interface has the address" in tl.records[0]["error"] and tl.records[0]["applied_s"] is None


def test_a_fault_applied_late_keeps_its_asked_for_length():
    """A slow apply (a loaded machine: here 0.6 s) starts the fault late; it
    is undone its `for` after it was in place, not at its planned end."""
    import threading
    import time

    class _Slow(_Fake):
        def apply(self):
            time.sleep(0.6)
            super().apply()

    s = _scenario({"at": "1s", "fault": "device-slow", "iops": 9, "for": "1s"})
    log = []
    tl = Timeline([_Slow(s.events[0], log)], threading.Event())
    tl.begin(-0.9)  # due 0.1 s from now; applied at about 0.7 s after its time
    wait_for(lambda: ("undo", "device-slow") in log, timeout=10, what="the undo")
    tl.finish()
    r = tl.records[0]
    assert r["applied_s"] >= 1.5  # began at 1 s, took 0.6 s
    assert r["undone_s"] - r["applied_s"] >= 1.0, r  # in place at least its asked-for 1 s
    assert "undo_late_s" not in r  # the shifted undo is on time against its own due time
