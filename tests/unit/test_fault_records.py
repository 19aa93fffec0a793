"""A scenario's faults as the file gives them and as the hosts keep them:
two faults of one kind on one host at once refused before the load (the
second would replace the first, one undo end both); an event applied late,
or never, said and failing the scenario; each fault's record on its host
written by the command that applies it and removed by the one that undoes
it, and an undo rebuilt from a record's values, never from stored shell
text (fleet/control/faults.py, fault_records.py, left_faults.py,
studies/scenario.py's Timeline)."""

import os
import shlex
import subprocess
import threading
import time

import pytest

from iofleet.fleet.control import fault_records
from iofleet.fleet.control.fault_records import FaultRecord, parse_records, read_records, recorded, unrecorded
from iofleet.fleet.control.fault_kind import script
from iofleet.fleet.control.fault_kinds._processes import PROCESS_CONT
from iofleet.fleet.control.fault_kinds.device_slow import DEVICE_UNDO
from iofleet.fleet.control.fault_kinds.host_down import HOST_UP
from iofleet.fleet.control.fault_kinds.link_slow import LINK_UNDO
from iofleet.fleet.control.faults import FaultError, plan_faults
from iofleet.fleet.control.left_faults import undo_command, undo_left_faults, what_is_left
from iofleet.fleet.inventory import Inventory
from iofleet.plan.scenario import parse_scenario
from iofleet.studies.events import RunOutcome
from iofleet.studies.scenario import LATE_BOUND_S, ScenarioOutcome, Timeline

from ..cli import iofleet

LOAD = {"bs": "4k", "read_pct": 70, "iodepth": 4, "size": "16m", "runtime": "20s", "ramp": "2s"}


def _scenario(*events, **load):
    return parse_scenario({"name": "s", "load": {**LOAD, **load}, "events": list(events)}, "s.yaml")


def _hosts():
    return Inventory.model_validate({"hosts": [{"name": n, "address": f"10.0.0.{i}:8765", "targets": ["/mnt/a"],
                                                "ssh": {}} for i, n in enumerate(["h1", "h2", "h3"], 1)]}).hosts


def _refused(*events, hosts=True) -> str:
    with pytest.raises(FaultError) as exc:
        plan_faults(_scenario(*events), "s.yaml", _hosts() if hosts else None, None if hosts else "/t", "tok")
    return str(exc.value)


def _slow(host, at, for_s=None, **kw):
    e = {"at": f"{at}s", "fault": "link-slow", "host": host, "mbit": 10, **kw}
    return e | ({"for": f"{for_s}s"} if for_s else {})


# ---- overlaps: refused before the load starts ----------------------------------------

def test_two_faults_of_one_kind_on_one_host_at_once_are_refused_naming_both():
    assert _refused(_slow("h2", 2, 10), _slow("h1", 3, 2), _slow("h3", 4, 2), _slow("h2", 5, 15)) == (
        "s.yaml: events[3]: link-slow on h2 (5s–20s) overlaps events[0] (link-slow on h2, 2s–12s); one link-slow at "
        "a time on a host: move or shorten one")
    # An event without `for` lasts to the end of the test.
    assert _refused(_slow("h1", 8, 2), {"at": "3s", "fault": "device-slow", "host": "h1", "iops": 9},
                    {"at": "15s", "fault": "device-slow", "host": "h1", "mbps": 5, "for": "2s"}) == (
        "s.yaml: events[2]: device-slow on h1 (15s–17s) overlaps events[1] (device-slow on h1, 3s to the end); "
        "one device-slow at a time on a host: move or shorten one")
    # This host (--target) is one host too.
    assert "events[1]: device-slow on this host (4s–6s) overlaps events[0] (device-slow on this host, 3s–5s)" in \
        _refused({"at": "3s", "fault": "device-slow", "iops": 9, "for": "2s"},
                 {"at": "4s", "fault": "device-slow", "iops": 9, "for": "2s"}, hosts=False)


def test_faults_that_do_not_overlap_are_planned():
    faults = plan_faults(_scenario(
        _slow("h1", 2, 3), _slow("h1", 5, 3),  # one ends when the next begins
        _slow("h2", 2, 10), {"at": "3s", "fault": "device-slow", "host": "h2", "iops": 9, "for": "3s"},  # two kinds
        {"at": "3s", "fault": "run", "host": "h3", "command": "a", "for": "1s"}, {"at": "3s", "fault": "run", "host": "h3",
                                                                     "command": "b", "for": "1s"},  # runs without `undo`
    ), "s.yaml", _hosts(), None, "tok")
    assert len(faults) == 6


def test_nothing_happens_on_a_host_after_its_host_down():
    down = {"at": "5s", "fault": "host-down", "host": "h2"}
    assert _refused(down, _slow("h1", 6, 2), _slow("h2", 9, 2)) == (
        "s.yaml: events[2]: link-slow on h2 starts at 9s, when h2 is down (events[0]: host-down at 5s takes it for "
        "the rest of the test); move it before 5s or to another host")
    # listed first, the later event is refused all the same; a second host-down too
    assert _refused({"at": "7s", "fault": "run", "host": "h2", "command": "x", "for": "1s"}, down).startswith(
        "s.yaml: events[0]: run on h2 starts at 7s, when h2 is down (events[1]: host-down at 5s")
    assert "events[1]: host-down on h2 starts at 5s, when h2 is down" in _refused(down, down)
    # before it, or on another host: planned; a fault in place at the host-down is undone at the end
    assert len(plan_faults(_scenario(_slow("h2", 2, 8), down, _slow("h1", 9, 2)), "s.yaml", _hosts(), None, "t")) == 3


def test_runs_conflict_only_when_both_have_an_undo():
    run = {"fault": "run", "host": "h1", "command": "x"}
    assert len(plan_faults(_scenario({**run, "at": "2s", "for": "5s", "undo": "y"}, {**run, "at": "3s", "for": "2s"}),
                           "s.yaml", _hosts(), None, "t")) == 2
    assert "events[1]: run on h1 (3s–5s) overlaps events[0] (run on h1, 2s–7s)" in _refused(
        {**run, "at": "2s", "for": "5s", "undo": "y"}, {**run, "at": "3s", "for": "2s", "undo": "z"})


def test_the_cli_refuses_an_overlap_in_one_line_before_anything_runs(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n- {name: h2, address: 10.0.0.2, targets: [/mnt/a], ssh: {}}\n")
    f = tmp_path / "s.yaml"
    f.write_text("name: s\nload: {runtime: 20s}\nevents:\n- {at: 2s, fault: link-slow, host: h2, mbit: 9, for: 10s}\n"
                 "- {at: 5s, fault: link-slow, host: h2, mbit: 5, for: 15s}\n")
    proc = iofleet("scenario", f, "--hosts", inv, data_dir=tmp_path / "d", check_rc=2)
    assert proc.stderr == (f"error: {f}: events[1]: link-slow on h2 (5s–20s) overlaps events[0] (link-slow on h2, "
                           f"2s–12s); one link-slow at a time on a host: move or shorten one\n")
    assert not (tmp_path / "d").exists()


# ---- lateness: said, and a failure ------------------------------------------------------

class _Slow:
    """A fault whose apply takes `seconds` (as an SSH command does)."""

    def __init__(self, event, seconds):
        self.event, self.seconds, self.applied, self.undone, self.detail = event, seconds, False, False, {}

    @property
    def in_place(self):
        return self.applied and not self.undone

    def apply(self):
        time.sleep(self.seconds)
        self.applied = True

    def undo(self):
        self.undone = True


def test_a_host_whose_faults_queue_has_them_late_or_not_applied_and_other_hosts_do_not_wait():
    # Ten 0.4 s faults due at once on h1, and one on h2; the load ends 2 s later.
    s = _scenario(*[{"at": "1s", "fault": "run", "host": "h1", "command": str(i), "for": "1s"} for i in range(10)],
                  {"at": "1s", "fault": "run", "host": "h2", "command": "h2's", "for": "1s"})
    faults = [_Slow(e, 0.4) for e in s.events]
    said = []
    tl = Timeline(faults, threading.Event(), on_event=said.append)
    tl.begin(-0.99)
    time.sleep(2.0)
    tl.finish()
    h1, h2 = tl.records[:10], tl.records[10]
    applied = [r for r in h1 if r["applied_s"] is not None]
    # One after the other on h1: the k-th applied at least 0.4·k s after its time.
    assert 2 <= len(applied) < 10 and [r["index"] for r in applied] == list(range(len(applied)))
    for k, r in enumerate(applied):
        assert r["applied_s"] >= 1 + 0.4 * (k + 1) - 0.05
        began = r["applied_s"] - 0.4  # lateness is when the apply began, not its own length
        if round(began - 1, 1) > LATE_BOUND_S + 0.1:
            assert r["late_s"] == pytest.approx(began - 1, abs=0.15) and r["late_bound_s"] == LATE_BOUND_S
        elif round(began - 1, 1) < LATE_BOUND_S - 0.1:
            assert "late_s" not in r
    assert any(r.get("late_s") for r in applied)
    # The rest never began: not applied, saying why, and said as they were recorded.
    for r in h1[len(applied):]:
        assert r["applied_s"] is None and r["error"].startswith("the load ended at ") and \
            "s after its time, while h1's earlier faults were still being applied or undone" in r["error"]
        assert any(x["index"] == r["index"] and x["error"] == r["error"] for x in said)
    # h2's fault did not wait for h1's.
    assert h2["applied_s"] is not None and h2["applied_s"] < applied[-1]["applied_s"]
    out = ScenarioOutcome(RunOutcome(run_id=1, status="complete", tests_planned=1), tl.records)
    assert not out.ok
    assert any(p.startswith("event ") and f" applied {p.split(' applied ')[1].split()[0]} s late (bound "
               f"{LATE_BOUND_S:g} s)" in p for p in out.problems)
    assert "event 10 (run on h1) not applied: the load ended at " in "\n".join(out.problems)


def test_a_scenario_whose_events_happened_in_time_is_ok():
    rec = {"index": 0, "fault": "run", "host": "h1", "at_s": 2, "for_s": None, "command": "x", "applied_s": 2.3,
           "undone_s": None, "error": None, "detail": {}}
    run = RunOutcome(run_id=1, status="complete", tests_planned=1)
    assert ScenarioOutcome(run, [rec]).ok
    assert not ScenarioOutcome(run, [dict(rec, late_s=3.1, late_bound_s=1.0)]).ok
    assert ScenarioOutcome(run, [dict(rec, late_s=3.1, late_bound_s=1.0)]).problems == [
        "event 1 (run on h1) applied 3.1 s late (bound 1 s)"]
    assert not ScenarioOutcome(run, [dict(rec, undo_error="h1: x")]).ok


def test_the_summary_says_how_late_an_event_was():
    from iofleet.report.scenario import _event_line
    e = {"fault": "link-slow", "host": "h2", "at_s": 6, "for_s": 2, "error": None, "applied_s": 10.2,
         "late_s": 4.2, "late_bound_s": 1.0}
    assert _event_line(e, None, "±10 %") == "  link-slow h2 at 6s for 2s (applied 4.2 s late, bound 1 s)"
    e = dict(e, applied_s=None, late_s=None, error="the load ended at 8.0 s, before its time")
    assert _event_line(e, None, "") == "  link-slow h2 at 6s for 2s: not applied: the load ended at 8.0 s, before its time"


# ---- records on the host ------------------------------------------------------------------

@pytest.fixture
def records_root(tmp_path, monkeypatch):
    root = tmp_path / "faults"
    monkeypatch.setattr(fault_records, "RECORDS_ROOT", str(root))
    return root


def _sh(command: str) -> int:
    return subprocess.run(command, shell=True, capture_output=True).returncode


def test_a_fault_is_recorded_by_its_apply_and_unrecorded_by_its_undo(records_root):
    rec = f"{fault_records.records_dir(None)}/tok-0"
    values = [("kind", "device-slow"), ("scenario", "s"), ("event", "1"), ("cgroup", "/x; rm -rf /")]
    apply = "sh -c " + shlex.quote(fault_records.FACTS + 'fact device 7:0; printf "arg=%s\\n" a "b c" | facts')
    assert _sh(recorded(apply, rec, values, fixed=True)) == 0
    assert (records_root / "local").stat().st_mode & 0o777 == 0o700  # root's only
    (r,) = read_records(None)[0]
    assert r.name == "tok-0" and r.kind == "device-slow" and r.values["cgroup"] == "/x; rm -rf /"
    assert r.values["device"] == "7:0" and r.args == ["a", "b c"] and r.values["since"].endswith("Z")
    assert _sh(unrecorded("false", rec)) != 0 and os.path.exists(rec)  # a failed undo keeps it
    assert _sh(unrecorded("true", rec)) == 0 and not os.path.exists(rec)
    # A fixed script that refused (exit 3) did nothing: no record. Another failure may have done part: kept.
    assert _sh(recorded("sh -c 'exit 3'", rec, values, fixed=True)) == 3 and not os.path.exists(rec)
    assert _sh(recorded("sh -c 'exit 1'", rec, values, fixed=True)) == 1 and os.path.exists(rec)
    assert _sh(recorded("exit 3", f"{rec}-user", values, fixed=False)) == 3 and os.path.exists(f"{rec}-user")


def test_each_fault_that_leaves_something_to_undo_knows_its_record():
    s = _scenario(_slow("h2", 2, 3), {"at": "3s", "fault": "device-slow", "host": "h3", "iops": 9, "for": "2s"},
                  {"at": "4s", "fault": "host-down", "host": "h1"}, {"at": "3s", "fault": "run", "host": "h2",
                                                                     "command": "x", "for": "1s"})
    slow, disk, down, run = plan_faults(s, "s.yaml", _hosts(), None, "ab12cd")
    assert slow.record == "/run/iofleet/faults/10.0.0.2-8765/ab12cd-0"
    assert disk.record == "/run/iofleet/faults/10.0.0.3-8765/ab12cd-1"
    values = dict(disk.record_values)
    assert values["kind"] == "device-slow" and values["scenario"] == "s" and values["event"] == "2"
    assert values["token"] == "ab12cd" and values["cgroup"] == "/sys/fs/cgroup/blkio/iofleet-ab12cd-1"
    assert values["iops"] == "9" and values["port"] == "8765" and values["pid"] == str(os.getpid())
    assert dict(slow.record_values)["address"] == "10.0.0.2" and dict(down.record_values)["kind"] == "host-down"
    assert run.record == ""  # done once, nothing to undo


def _record(kind, args=(), **values):
    return FaultRecord(None, "tok-0", {"kind": kind, "scenario": "s", "event": "1", "since": "2025-01-01T00:00:00Z",
                                       "pid": "1", "controller": "elsewhere", **values}, list(args))


def test_an_undo_is_rebuilt_from_the_records_values_never_from_shell_text():
    assert undo_command(_record("link-slow", address="10.0.0.2", dev="eth0")) == script(LINK_UNDO, "10.0.0.2")
    cg = "/sys/fs/cgroup/blkio/iofleet-ab12cd-1"
    assert undo_command(_record("device-slow", cgroup=cg)) == script(DEVICE_UNDO, cg)
    assert undo_command(_record("host-down", ["fio", "--server=ip:10.0.0.2,8765"], port="8765", exe="/usr/bin/fio")) \
        == script(HOST_UP, "8765", "/usr/bin/fio", "--server=ip:10.0.0.2,8765")
    assert undo_command(_record("host-down", port="8765")) == script(HOST_UP, "8765")  # the script says: deploy
    # Values that are not what iofleet wrote: refused, the record named.
    for bad in (_record("device-slow", cgroup="/sys/fs/cgroup/blkio"), _record("link-slow", address="a;b"),
                _record("host-down", port="$(reboot)"), _record("disk-fire")):
        with pytest.raises(FaultError, match=r"^this host: the record /run/iofleet/faults/local/tok-0 of a .* holds "
                                             r"nothing this iofleet can undo it from; undo it by hand"):
            undo_command(bad)


def test_a_users_own_undo_runs_only_with_yes(records_root):
    rec = FaultRecord(None, "tok-0", {"kind": "run", "scenario": "s", "event": "3", "command": "x",
                                      "undo": f"touch {records_root}/ran", "pid": "1", "controller": "elsewhere"})
    os.makedirs(records_root / "local")
    (records_root / "local" / "tok-0").write_text("kind=run\n")
    out = undo_left_faults([rec], yes=False)
    assert out.lines == [] and not (records_root / "ran").exists()
    (line,) = out.problems
    assert line.startswith("this host: run left in place since ?, by scenario s (event 3; iofleet pid 1 on "
                           "elsewhere may still run: not known from here): run done; its undo not run yet: touch ")
    assert line.endswith(f"its undo is your shell text, run as root: check it and if it is still needed, run it by "
                         f"hand and remove {records_root}/local/tok-0")
    out = undo_left_faults([rec], yes=True)
    assert (records_root / "ran").exists() and not (records_root / "local" / "tok-0").exists()
    assert out.lines == [f"this host: undid run since ?, by scenario s (event 3; iofleet pid 1 on elsewhere may "
                         f"still run: not known from here): ran its undo: touch {records_root}/ran"]


def test_a_fault_of_an_iofleet_still_running_is_not_undone():
    (mine,) = parse_records(None, "record=tok-0\n.kind=link-slow\n.controller={}\n.pid={}\n.pid_start={}\n".format(
        *(v for _, v in fault_records.controller())))
    assert mine.running and "iofleet pid" in mine.origin() and "still runs it" in mine.origin()
    out = undo_left_faults([mine], yes=True)
    assert out.lines == [] and out.problems[0].endswith("not undone: that scenario undoes it when it ends")
    gone = parse_records(None, f"record=tok-0\n.kind=link-slow\n.controller={fault_records.controller()[0][1]}\n"
                               f".pid={os.getpid()}\n.pid_start=1\n")[0]
    assert not gone.running  # the pid, used again by another process


def test_a_left_process_stop_is_continued_from_its_record_on_a_real_process(records_root):
    """An iofleet killed while an OSD was stopped leaves it stopped: hosts clean (here the next scenario's
    clean-up on this host) continues the pids the record names."""
    victim = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(victim.pid, 19)  # SIGSTOP, as the fault did
        rec = FaultRecord(None, "tok-0", {"kind": "process-stop", "scenario": "s", "event": "1",
                                          "pattern": "no-such-process-xyz", "pids": str(victim.pid), "pid": "1",
                                          "controller": "elsewhere"})
        assert undo_command(rec) == script(PROCESS_CONT, "pattern", "no-such-process-xyz", str(victim.pid))
        undo_lines_before = what_is_left(rec)
        os.makedirs(records_root / "local")
        (records_root / "local" / "tok-0").write_text("kind=process-stop\n")
        out = undo_left_faults([rec], yes=False)  # fixed scripts: no --yes needed
        assert out.problems == [] and out.lines[0].endswith(f": processes {victim.pid} continued (SIGCONT)")
        assert f"processes {victim.pid} stopped (SIGSTOP; pattern no-such-process-xyz)" in undo_lines_before
        state = open(f"/proc/{victim.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        assert state != "T" and not (records_root / "local" / "tok-0").exists()
    finally:
        victim.kill()
        victim.wait()
    bad = FaultRecord(None, "tok-1", {"kind": "process-stop", "pattern": "x", "pids": "1;reboot"})
    with pytest.raises(FaultError, match="holds nothing this iofleet can undo it from"):
        undo_command(bad)
