"""Process faults (process-stop, process-kill), `run:` with a span and an
undo, and user text shown with its control characters escaped: the schema's
one-line errors, what each event says before the run, the --yes error
listing every command, the scripts' quoting."""

import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest

from iofleet.errors import IofleetError, PlanError
from iofleet.fleet.control.fault_kind import script
from iofleet.fleet.control.fault_kinds._processes import PROCESS_CONT, PROCESS_SIGNAL
from iofleet.fleet.control.faults import FaultError, plan_faults
from iofleet.fleet.inventory import Inventory
from iofleet.plan.scenario import parse_scenario
from iofleet.results.ingest import import_outputs
from iofleet.results.store import Store
from iofleet.studies.scenario import check_scenario
from iofleet.units import escaped

from ..cli import iofleet

LOAD = {"bs": "4k", "size": "16m", "runtime": "20s", "ramp": "2s"}
FIXTURES = Path(__file__).parents[1] / "fixtures" / "fio"
# What a command may hold to clear the line that shows it, and how it is shown.
HOSTILE, SHOWN = "echo hi \x1b[2K\rrm -rf /", "echo hi \\x1b[2K\\x0drm -rf /"


def _scenario(*events):
    return parse_scenario({"name": "s", "load": LOAD, "events": list(events)}, "s.yaml")


def _problem(event) -> str:
    with pytest.raises(PlanError) as exc:
        _scenario(event)
    (line,) = exc.value.problems
    return line


def _hosts():
    return Inventory.model_validate({"hosts": [{"name": "h1", "address": "10.0.0.1", "targets": ["/mnt/a"],
                                                "ssh": {}}]}).hosts


STOP = {"at": "5s", "fault": "process-stop", "host": "h1"}
KILL = {"at": "5s", "fault": "process-kill", "host": "h1"}
RUN = {"at": "5s", "fault": "run", "host": "h1", "command": "x"}


@pytest.mark.parametrize("event, text", [
    ({**STOP, "for": "2s"}, "events[0]: process-stop needs one of `pattern` (pgrep -f's, e.g. pattern: "
                            "'ceph-osd --id 3') or `pid_file` (e.g. pid_file: /run/ceph/osd.3.pid), not both"),
    ({**STOP, "pattern": "a", "pid_file": "/a", "for": "2s"}, "events[0]: process-stop needs one of `pattern`"),
    ({**STOP, "pattern": "osd"}, "events[0]: process-stop needs `for` (a stopped process is continued at its end, "
                                 "e.g. for: 30s)"),
    ({**KILL, "pattern": "osd"}, "events[0]: process-kill needs `for`: the span its impact is measured over (and "
                                 "when its `restart` runs, if any), e.g. for: 30s"),
    ({**KILL, "pattern": "osd", "restart": "x"}, "events[0]: process-kill needs `for`"),
    ({**KILL, "pid_file": "run/osd.pid"}, "events[0].pid_file: not an absolute path; give the file's whole path on "
                                          "the host, e.g. /run/ceph/osd.3.pid (got 'run/osd.pid')"),
    ({**KILL, "pattern": "a\nb"}, "events[0].pattern: pattern is one line (no newline or NUL); fix it"),
    ({**KILL, "pattern": "a\0b"}, "events[0].pattern: pattern is one line"),
    ({**KILL, "pattern": "x" * 1025}, "events[0].pattern: String should have at most 1024 characters"),
    ({**KILL, "pattern": ""}, "events[0].pattern: String should have at least 1 character"),
    ({**KILL, "pattern": "osd", "restart": "a\nb", "for": "2s"},
     "events[0].restart: restart is one line (no newline or NUL); join commands with ';' or '&&'"),
    ({**STOP, "pattern": "osd", "for": "2s", "restart": "x"}, "events[0]: process-stop does not take restart"),
    ({**RUN, "undo": "y"}, "events[0]: run needs `for`: the span its impact is measured over (and when its `undo` "
                           "runs), e.g. for: 30s"),
    ({**RUN, "undo": "x" * 4097, "for": "2s"}, "events[0].undo: String should have at most 4096 characters"),
    ({**RUN, "pattern": "osd"}, "events[0]: run does not take pattern"),
    ({"at": "5s", "fault": "link-slow", "host": "h1", "mbit": 9, "pid_file": "/a"},
     "events[0]: link-slow does not take pid_file"),
])
def test_bad_process_and_run_events_name_the_field_and_the_fix(event, text):
    line = _problem(event)
    assert line.startswith("s.yaml: ") and text in line, line


def test_each_event_says_what_it_does_and_on_what():
    stop, kill, run, bare = _scenario(
        {**STOP, "pattern": "ceph-osd --id 3", "for": "10s"},
        {**KILL, "pid_file": "/run/ceph/osd.3.pid", "restart": "systemctl start ceph-osd@3", "for": "12s"},
        {**RUN, "command": "tc qdisc add dev eth0 root netem delay 5ms", "undo": "tc qdisc del dev eth0 root",
         "for": "3s"},
        {"at": "6s", "fault": "process-kill", "pattern": "fio --server", "for": "2s"}).events
    assert stop.describe() == "at 5s: process-stop on h1 (pattern: ceph-osd --id 3) for 10s"
    assert kill.describe() == ("at 5s: process-kill on h1 (pid_file: /run/ceph/osd.3.pid) for 12s; restart at 17s: "
                               "systemctl start ceph-osd@3")
    assert run.describe() == ("at 5s: run on h1 for 3s: tc qdisc add dev eth0 root netem delay 5ms; undo at 8s: "
                              "tc qdisc del dev eth0 root")
    assert bare.describe() == "at 6s: process-kill on this host (pattern: fio --server) for 2s"
    # What the overlap check reads: process faults of one kind on one host are one fault when this is equal.
    assert (stop.subject, kill.subject, run.subject) == (("pattern", "ceph-osd --id 3"),
                                                         ("pid_file", "/run/ceph/osd.3.pid"), None)
    assert (stop.end_s, kill.end_s, bare.end_s) == (15, 17, 8)


def test_every_user_command_needs_yes_and_is_listed_escaped():
    s = _scenario({**RUN, "command": HOSTILE, "undo": "tc qdisc del dev eth0 root", "for": "3s"},
                  {**KILL, "pattern": "ceph-osd", "restart": "systemctl start ceph-osd@3", "for": "2s"},
                  {**STOP, "pattern": "ceph-osd", "for": "2s"})
    with pytest.raises(IofleetError) as exc:
        check_scenario(s, "s.yaml", _hosts(), None, yes=False)
    assert str(exc.value) == (f"s.yaml: the scenario runs commands on hosts as root (h1: {SHOWN}; h1 (undo): tc qdisc "
                              f"del dev eth0 root; h1 (restart): systemctl start ceph-osd@3); check them and run again "
                              f"with --yes")
    assert len(check_scenario(s, "s.yaml", _hosts(), None, yes=True)) == 3
    assert s.events[0].describe() == f"at 5s: run on h1 for 3s: {SHOWN}; undo at 8s: tc qdisc del dev eth0 root"
    # A process-stop runs no user text: no --yes needed.
    assert len(check_scenario(_scenario({**STOP, "pattern": "a", "for": "2s"}), "s.yaml", _hosts(), None, False)) == 1


def test_process_faults_apply_on_this_host_and_run_still_needs_a_fleet():
    s = _scenario({"at": "5s", "fault": "process-stop", "pattern": "osd", "for": "2s"},
                  {"at": "6s", "fault": "process-kill", "pid_file": "/run/x.pid", "for": "2s"})
    stop, kill = plan_faults(s, "s.yaml", None, "/tmp/t", "tok")
    assert stop.host is None and kill.name == "local"
    with pytest.raises(FaultError, match=r"^s.yaml: events\[0\]: run needs a fleet host; run the scenario with "
                                         r"--hosts INVENTORY \(on --target only device-slow, process-stop, "
                                         r"process-kill apply\)$"):
        plan_faults(_scenario({"at": "5s", "fault": "run", "command": "x", "for": "1s"}), "s.yaml", None, "/tmp/t", "tok")
    with pytest.raises(FaultError, match=r"events\[0\].host: h1 is a fleet host, and the scenario runs on --target"):
        plan_faults(_scenario({**STOP, "pattern": "a", "for": "2s"}), "s.yaml", None, "/tmp/t", "tok")


def test_process_scripts_take_the_pattern_and_pid_file_as_quoted_arguments():
    evil = "x'; touch /tmp/pwned; '"
    words = shlex.split(script(PROCESS_SIGNAL, "pattern", evil, "STOP"))
    assert words == ["sh", "-c", PROCESS_SIGNAL, "iofleet-fault", "pattern", evil, "STOP"]
    assert shlex.split(script(PROCESS_CONT, "pid_file", "/run/a b.pid", 12, 13))[4:] == ["pid_file", "/run/a b.pid",
                                                                                         "12", "13"]
    for text in (PROCESS_SIGNAL, PROCESS_CONT):  # valid sh
        assert subprocess.run(["sh", "-n", "-c", text], capture_output=True).returncode == 0


def test_control_characters_are_escaped_and_the_rest_kept():
    assert escaped("a\x1b[2Kb\rc\td\x7fe\x9bf\x00") == "a\\x1b[2Kb\\x0dc\\x09d\\x7fe\\x9bf\\x00"
    assert escaped("évian ü — ceph-osd@3 'x' \\n") == "évian ü — ceph-osd@3 'x' \\n"
    assert escaped("a\u202eb") == "a\\u202eb"  # a bidi override would show what follows reversed


def test_the_cli_shows_a_command_with_control_characters_escaped_in_its_yes_error(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n- {name: h1, address: 10.0.0.1, targets: [/mnt/a], ssh: {}}\n")
    f = tmp_path / "s.yaml"
    f.write_text('name: s\nload: {runtime: 20s}\nevents:\n'
                 '- {at: 5s, fault: run, host: h1, command: "echo hi \\e[2K\\rrm -rf /", for: 2s}\n')
    proc = iofleet("scenario", f, "--hosts", inv, data_dir=tmp_path / "d", check_rc=2)
    assert proc.stderr == (f"error: {f}: the scenario runs commands on hosts as root (h1: {SHOWN}); check them and "
                           f"run again with --yes\n")


def test_labels_plan_names_and_host_names_are_shown_escaped_in_results_list_and_show(tmp_path):
    with Store.open(tmp_path / "d") as store:
        run_id = import_outputs(store, [FIXTURES / "single-job-json+.json"])
        store.update_run(run_id, host_facts={"hostname": "h\x1b]0;title\x07"})  # a host's own text
    # A store written by another version or by hand: the CLI shows whatever text it holds.
    with sqlite3.connect(tmp_path / "d" / "results.db") as conn:
        conn.execute("UPDATE runs SET plan_name = ?, label = ? WHERE id = ?", ("p\rq", "l\x1b[2Kx", run_id))
    listed = iofleet("results", "list", data_dir=tmp_path / "d").stdout
    assert "l\\x1b[2Kx" in listed and "p\\x0dq" in listed and "\x1b" not in listed and "\r" not in listed
    shown = iofleet("results", "show", str(run_id), data_dir=tmp_path / "d").stdout
    assert f"Run {run_id} · p\\x0dq · " in shown and "h\\x1b]0;title\\x07" in shown and "\x1b" not in shown
