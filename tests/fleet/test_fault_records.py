"""What a scenario leaves on hosts when iofleet dies, and how many events a
short load takes: on namespace hosts with sshd and fio servers (and this
host for --target).

- `iofleet scenario` killed (SIGKILL, with its fio client: the controller
  gone) while a link-slow and a device-slow are in place: `hosts check`
  names both and counts the hosts not ready, a run and the next scenario
  are refused, `hosts clean` undoes both (tc qdisc gone, the cgroup gone)
  and the hosts are ready again;
- 100 cheap events over a short load: every event applied within its bound,
  or recorded late or not applied, and the scenario fails when one is;
- on this host, a killed scenario's device-slow is recorded in
  /run/iofleet/faults/local and undone by the next scenario there.
"""

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from iofleet.fleet.control.fault_kinds.device_slow import BLKIO_ROOT
from iofleet.results.store import Store

from ..cli import iofleet, wait_for, write_plan
from .processes import kill, parent_pid, running_processes
from .sshd import FAULTS_ROOT
from .sshfleet import ssh_fleet

LOAD = {"bs": "4k", "read_pct": 0, "iodepth": 1, "size": "8m", "ramp": "1s", "engine": "psync", "rate_iops": 1000}
needs_blkio = pytest.mark.skipif(not Path(BLKIO_ROOT).is_dir(), reason="needs the blkio cgroup (v1)")


def _qdisc(fleet, name: str) -> str:
    return subprocess.run(["ip", "netns", "exec", fleet.host(name).namespace, "tc", "qdisc", "show", "dev", "eth0"],
                          capture_output=True, text=True).stdout


def _records(host) -> list[Path]:
    """The faults recorded for a test host (or `local`: this host)."""
    d = FAULTS_ROOT / (host if isinstance(host, str) else f"{host.address}-{host.port}")
    return sorted(d.glob("*")) if d.is_dir() else []


def _kill_controller(proc) -> None:
    """SIGKILL iofleet and every process under it (its fio): the controller gone at once."""
    parents = {pid: parent_pid(pid) for pid in running_processes()}
    tree = [proc.pid]
    for pid in tree:  # grows as it goes
        tree += [p for p, parent in parents.items() if parent == pid]
    for pid in tree:
        kill(pid)
    proc.wait(timeout=10)


def _scenario(path: Path, runtime: str, events: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"name": path.stem, "load": {**LOAD, "runtime": runtime}, "events": events}))
    return path


def _ours() -> set[str]:
    return {p.name for p in Path(BLKIO_ROOT).glob("iofleet-*")}


@needs_blkio
def test_faults_a_killed_scenario_left_are_named_refused_and_undone(tmp_path, make_fleet, data_dir, spawn):
    fleet = ssh_fleet(make_fleet, 3, fio_server=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    h2, h3 = fleet.host("h2"), fleet.host("h3")
    cgroups = _ours()
    s = _scenario(tmp_path / "left.yaml", "20s", [
        {"at": "1s", "fault": "link-slow", "host": "h2", "mbit": 50, "for": "15s"},
        {"at": "1s", "fault": "device-slow", "host": "h3", "iops": 200, "for": "15s"}])
    proc = spawn("scenario", s, "--hosts", inv, data_dir=data_dir)
    wait_for(lambda: "rate 50Mbit" in _qdisc(fleet, "h2") and _ours() - cgroups and _records(h3)
             or proc.poll() is not None, timeout=60, what="both faults in place")
    assert proc.poll() is None, proc.communicate()
    _kill_controller(proc)
    (slow,) = _records(h2)
    (disk,) = _records(h3)
    (cgroup,) = _ours() - cgroups
    assert slow.stat().st_mode & 0o777 == 0o600 and slow.parent.stat().st_mode & 0o777 == 0o700
    assert f"cgroup={BLKIO_ROOT}/{cgroup}\n" in disk.read_text() and "kind=device-slow\n" in disk.read_text()

    check = iofleet("hosts", "check", inv, data_dir=data_dir, check_rc=1)
    said = " ".join((check.stdout + check.stderr).split())
    assert (f"error: host h2 ({h2.endpoint}): link-slow left in place since " in said
            and "by scenario left (event 1; iofleet pid " in said
            and f"has ended): tc tbf at 50 Mbit/s on eth0; undo it with `iofleet hosts clean {inv}`" in said)
    assert (f"error: host h3 ({h3.endpoint}): device-slow left in place since " in said
            and "blkio throttle (200 IOPS) on disk " in said and f"cgroup {BLKIO_ROOT}/{cgroup}; undo it" in said)
    assert "1 of 3 hosts ready." in said
    # A run over those hosts, and the next scenario, are refused before anything starts.
    plan = write_plan(tmp_path / "p.yaml", name="after", defaults={"size": "4m", "runtime": "1s", "ramp": "0s"},
                      workloads=[{"name": "w"}])
    run = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, check_rc=2)
    assert "error: host h2" in run.stderr and "no test was started" in run.stderr
    again = iofleet("scenario", s, "--hosts", inv, data_dir=data_dir, check_rc=2)
    (line,) = again.stderr.splitlines()
    assert line.startswith("error: faults are in place on the scenario's hosts: h2: link-slow left in place since ")
    assert line.endswith(f"; undo them with `iofleet hosts clean {inv}`, then run again") and "h3: device-slow" in line
    with Store.open(data_dir) as store:
        assert [r.id for r in store.list_runs()] == [1]  # the killed one only

    clean = iofleet("hosts", "clean", inv, data_dir=data_dir)
    said = " ".join(clean.stdout.split())
    assert "h2: undid link-slow since " in said and "tc tbf removed from eth0" in said
    assert "h3: undid device-slow since " in said and f"cgroup {BLKIO_ROOT}/{cgroup} removed" in said
    assert "tbf" not in _qdisc(fleet, "h2") and cgroup not in _ours() and not _records(h2) and not _records(h3)
    assert "3 of 3 hosts ready." in iofleet("hosts", "check", inv, data_dir=data_dir).stdout


def test_many_events_are_each_applied_in_time_or_said_late_or_not_applied(tmp_path, make_fleet, data_dir):
    fleet = ssh_fleet(make_fleet, 2, fio_server=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    # 100 commands due within 2 s on two hosts, each an SSH command of about 0.1 s: more than a host can do
    # in time (on this machine; the test holds whatever the machine's speed).
    events = [{"at": f"{1 + i % 2}s", "fault": "run", "host": f"h{1 + i % 2}", "command": "true",
               "for": "1s"} for i in range(100)]
    s = _scenario(tmp_path / "many.yaml", "3s", events)
    proc = iofleet("scenario", s, "--hosts", inv, "--yes", data_dir=data_dir, timeout=120, check_rc=None)
    with Store.open(data_dir) as store:
        run = store.get_run(1)
    records = run.methodology.scenario.to_dict()["events"]
    late = [r for r in records if r.get("late_s")]
    skipped = [r for r in records if r["error"]]
    for r in records:
        if r["error"]:
            assert r["applied_s"] is None and r["error"].startswith("the load ended at "), r
        elif r.get("late_s"):  # late by when it began: before it was in place
            assert r["late_s"] > r["late_bound_s"] == 1.0 and r["late_s"] <= r["applied_s"] - r["at_s"] + 0.06, r
        else:
            assert r["applied_s"] is not None, r
    out = " ".join(proc.stdout.split())
    for r in late:
        assert f"event {r['index'] + 1}: run on {r['host']} applied at {r['applied_s']:.1f} s ({r['late_s']:.1f} s " \
               f"late; bound 1 s)" in out
    assert out.count("not applied: the load ended at ") == len(skipped)
    if late or skipped:
        assert proc.returncode == 1 and run.status == "partial" and run.note.startswith("scenario not as written: ")
        assert "Run 1 partial." in out
    else:
        assert proc.returncode == 0 and run.status == "complete"


@needs_blkio
def test_a_killed_scenarios_fault_on_this_host_is_recorded_and_undone_by_the_next(tmp_path, disk_dir, data_dir,
                                                                                 spawn):
    if os.geteuid() != 0:
        pytest.skip("device-slow on this host needs root")
    cgroups, before = _ours(), set(_records("local"))
    s = _scenario(tmp_path / "here.yaml", "20s", [{"at": "1s", "fault": "device-slow", "mbps": 5, "for": "15s"}])
    proc = spawn("scenario", s, "--target", disk_dir, data_dir=data_dir)
    wait_for(lambda: set(_records("local")) - before and _ours() - cgroups or proc.poll() is not None, timeout=60,
             what="the fault in place")
    assert proc.poll() is None, proc.communicate()
    _kill_controller(proc)
    (record,) = set(_records("local")) - before
    (cgroup,) = _ours() - cgroups
    values = dict(line.split("=", 1) for line in record.read_text().splitlines())
    assert values["kind"] == "device-slow" and values["scenario"] == "here" and values["event"] == "1"
    assert values["cgroup"] == f"{BLKIO_ROOT}/{cgroup}" and values["target"] == str(disk_dir.resolve())
    assert values["mbps"] == "5" and values["device"].count(":") == 1 and values["since"].endswith("Z")
    assert values["pid"] == str(proc.pid) and record.name == f"{values['token']}-0"

    s = _scenario(tmp_path / "next.yaml", "2s", [{"at": "1s", "fault": "device-slow", "iops": 500, "for": "1s"}])
    proc = iofleet("scenario", s, "--target", disk_dir, data_dir=data_dir, timeout=60)
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"this host: undid device-slow since {values['since']}, by scenario here (event 1; "
                            f"iofleet pid {values['pid']} has ended): cgroup {BLKIO_ROOT}/{cgroup} removed")
    assert "Run 2 complete." in proc.stdout
    assert cgroup not in _ours() and set(_records("local")) == before  # and the next one's own went at its end
