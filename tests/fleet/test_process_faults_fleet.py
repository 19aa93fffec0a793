"""A process on a namespace host stopped over the SSH control channel for
its span and continued after, beside the real fio load; the remote shell
(whose command line holds the pattern) is never taken for it."""

import secrets
import sys

import yaml

from iofleet.results.store import Store

from ..cli import iofleet, sampled_while
from .sshfleet import ssh_fleet

LOAD = {"bs": "4k", "read_pct": 0, "iodepth": 1, "size": "8m", "runtime": "7s", "ramp": "1s", "engine": "psync",
        "rate_iops": 1000}


def _state(pid: int) -> str:
    """The process's state letter (T: stopped); the namespace hosts share this host's pids."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_process_stop_on_a_fleet_host_stops_it_for_its_span(tmp_path, make_fleet, data_dir):
    fleet = ssh_fleet(make_fleet, 1, fio_server=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    marker = f"iofleet-victim-{secrets.token_hex(4)}"
    # `ip netns exec` execs the command in place: the Popen's pid is the victim's.
    victim = fleet.spawn("h1", [sys.executable, "-c", "import time; time.sleep(120)", marker], label="victim")
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "stop", "load": LOAD, "events": [
        {"at": "2s", "fault": "process-stop", "host": "h1", "pattern": marker, "for": "2s"}]}))
    proc, seen = sampled_while(lambda: iofleet("scenario", f, "--hosts", inv, data_dir=data_dir, timeout=120),
                               lambda: _state(victim.pid))
    assert f"  at 2s: process-stop on h1 (pattern: {marker}) for 2s\n" in proc.stdout
    assert "event 1: process-stop on h1 applied at" in proc.stdout and "Run 1 complete." in proc.stdout
    assert "T" in seen and seen[-1] != "T" and _state(victim.pid) != "T"
    with Store.open(data_dir) as store:
        (event,) = store.get_run(1).methodology.scenario.to_dict()["events"]
    assert event["detail"] == {"pids": [victim.pid]} and not event["error"]
    assert event["undone_s"] - event["applied_s"] >= 1.5
