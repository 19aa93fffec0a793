"""Process faults on this host (`--target`): a process stopped by SIGSTOP
for its span and continued after, a process killed and its `restart`
command run; found by a pgrep pattern (never the fault's own shell, whose
command line holds the pattern too) or by a pid file. With the real fio
load running beside them."""

import secrets
import subprocess
import sys

import pytest
import yaml

from iofleet.fleet.control.faults import Fault, FaultError
from iofleet.plan.scenario import parse_scenario
from iofleet.results.store import Store

from ..cli import iofleet, sampled_while


def _victim(marker: str) -> subprocess.Popen:
    """A process whose command line holds `marker`, and nothing else's does."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])


def _state(pid: int) -> str:
    """The process's state letter (T: stopped), from /proc/PID/stat (after the command's closing paren)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def victims():
    started = []

    def start(marker: str) -> subprocess.Popen:
        started.append(_victim(marker))
        return started[-1]

    yield start
    for p in started:
        p.kill()
        p.wait()


def _event(**event):
    scenario = parse_scenario({"name": "p", "load": {"runtime": "20s"}, "events": [event]}, "p.yaml")
    return scenario.events[0]


def test_a_pattern_finds_the_process_and_never_the_faults_own_shell(victims):
    marker = f"iofleet-victim-{secrets.token_hex(4)}"
    victim, other = victims(marker), victims(f"{marker}-2")
    fault = Fault(_event(at=1, fault="process-stop", pattern=marker, **{"for": 1}), None)
    # The script's shell is `sh -c SCRIPT iofleet-fault pattern MARKER STOP`: were it not left out it
    # would stop itself (and hang) or be listed. Both victims match: both are stopped, and named.
    fault.apply()
    assert sorted(fault.detail["pids"]) == sorted([victim.pid, other.pid]) and _state(victim.pid) == _state(other.pid) == "T"
    fault.undo()
    assert _state(victim.pid) != "T" and _state(other.pid) != "T"
    fault.undo()  # idempotent
    missing = Fault(_event(at=1, fault="process-stop", pattern=f"{marker}-none", **{"for": 1}), None)
    with pytest.raises(FaultError) as exc:
        missing.apply()
    assert str(exc.value) == f"local: process-stop could not be applied: no process matches the pattern {marker}-none"
    missing.undo()  # continues nothing, fails on nothing
    gone = Fault(_event(at=1, fault="process-kill", pid_file="/nonexistent/x.pid", for_s=1), None)
    with pytest.raises(FaultError, match=r"^local: process-kill could not be applied: no pid file /nonexistent/x.pid$"):
        gone.apply()
    assert not gone.in_place  # nothing was killed: nothing to restart


def test_process_stop_and_kill_with_restart_beside_the_real_load(tmp_path, disk_dir, data_dir, victims):
    marker = f"iofleet-victim-{secrets.token_hex(4)}"
    stopped, killed = victims(f"{marker}-stop"), victims(f"{marker}-kill")
    pid_file, restarted = tmp_path / "killed.pid", tmp_path / "restarted"
    pid_file.write_text(f"{killed.pid}\n")
    # The restart command holds an ESC [2K and a CR, shown escaped in the listing.
    restart = f"true '\x1b[2K\r'; echo restarted > {restarted}"
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump({"name": "procs", "load": {
        "bs": "4k", "read_pct": 0, "iodepth": 1, "size": "8m", "runtime": "7s", "ramp": "1s", "engine": "psync",
        "rate_iops": 500}, "events": [
        {"at": "2s", "fault": "process-stop", "pattern": f"{marker}-stop", "for": "2s"},
        {"at": "3s", "fault": "process-kill", "pid_file": str(pid_file), "restart": restart, "for": "2s"}]}))
    iofleet("scenario", f, "--target", disk_dir, data_dir=data_dir, check_rc=2)  # the restart needs --yes
    proc, seen = sampled_while(
        lambda: iofleet("scenario", f, "--target", disk_dir, "--yes", data_dir=data_dir, timeout=120),
        lambda: _state(stopped.pid))  # the stopped process's state while the scenario runs
    assert f"  at 2s: process-stop on this host (pattern: {marker}-stop) for 2s\n" in proc.stdout
    assert (f"  at 3s: process-kill on this host (pid_file: {pid_file}) for 2s; restart at 5s: true '\\x1b[2K\\x0d'; "
            f"echo restarted > {restarted}\n") in proc.stdout
    assert "\x1b" not in proc.stdout and "\r" not in proc.stdout
    assert "event 1: process-stop on local applied at" in proc.stdout
    assert "event 2: process-kill on local undone at" in proc.stdout and "Run 1 complete." in proc.stdout
    # Stopped during its span, continued after; the other killed, and its restart ran.
    assert "T" in seen and seen[-1] != "T" and _state(stopped.pid) != "T"
    assert killed.wait(timeout=5) == -9 and restarted.read_text() == "restarted\n"
    with Store.open(data_dir) as store:
        sc = store.get_run(1).methodology.scenario.to_dict()
    stop, kill = sc["events"]
    assert stop["detail"] == {"pids": [stopped.pid]} and kill["detail"] == {"pids": [killed.pid]}
    assert stop["undone_s"] - stop["applied_s"] >= 1.5 and kill["undone_s"] is not None
    assert not stop["error"] and not kill["error"] and not kill.get("undo_error")
