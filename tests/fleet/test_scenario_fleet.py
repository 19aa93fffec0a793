"""Scenarios on namespace hosts with sshd and fio servers: a link slowed by
tc tbf on a host's interface and undone, a host's fio server throttled by
blkio on its target's disk and let go, a host lost mid-test with its data
kept up to the fault and its fio server started again afterwards."""

import subprocess

from pathlib import Path

import pytest
import yaml

from iofleet.fleet.control.fault_kinds.device_slow import BLKIO_ROOT
from iofleet.results.store import Store

from ..cli import iofleet, sampled_while
from .testhost import accepts
from .sshfleet import ssh_fleet

LOAD = {"bs": "4k", "read_pct": 0, "iodepth": 1, "size": "8m", "runtime": "9s", "ramp": "1s", "engine": "psync",
        "rate_iops": 2000}


def _load():
    """The load at a fixed rate once the parameter table has rate_iops (issue 21), full speed before."""
    from iofleet.plan.params import PARAMS
    return LOAD if "rate_iops" in PARAMS else {k: v for k, v in LOAD.items() if k != "rate_iops"}


def _qdisc(fleet, name: str) -> str:
    return subprocess.run(["ip", "netns", "exec", fleet.host(name).namespace, "tc", "qdisc", "show", "dev", "eth0"],
                          capture_output=True, text=True).stdout


def test_link_slow_is_undone_and_a_lost_host_keeps_its_data_up_to_the_fault(tmp_path, make_fleet, data_dir):
    if not Path(BLKIO_ROOT).is_dir():
        pytest.skip("needs the blkio cgroup (v1)")
    fleet = ssh_fleet(make_fleet, 2, fio_server=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "faults", "load": _load(), "events": [
        {"at": "5s", "fault": "link-slow", "host": "h1", "mbit": 50, "for": "1s"},
        {"at": "7s", "fault": "host-down", "host": "h2"},
        {"at": "4s", "fault": "device-slow", "host": "h1", "iops": 100, "for": "3s"}]}))
    proc, seen = sampled_while(lambda: iofleet("scenario", f, "--hosts", inv, data_dir=data_dir, timeout=120),
                               lambda: "rate 50Mbit" in _qdisc(fleet, "h1"), every_s=0.1)  # h1's root qdisc
    out = " ".join(proc.stdout.split())
    assert "event 1: link-slow on h1 applied at" in out and "event 1: link-slow on h1 undone at" in out
    assert "event 2: host-down on h2 applied at" in out
    assert "hosts lost: h2 (their data kept up to the loss)" in out and "Run 1 partial." in out
    # The qdisc was there while the fault lasted, and gone after.
    assert any(seen) and not seen[-1] and "tbf" not in _qdisc(fleet, "h1")
    # h2's fio server was started again once the run was over.
    assert accepts(fleet.host("h2").address, fleet.host("h2").port)
    with Store.open(data_dir) as store:
        run = store.get_run(1)
    (test,) = run.tests
    assert run.status == "partial" and test.status == "partial" and "lost host h2" in test.error
    sc = run.methodology.scenario.to_dict()
    assert sc["lost"] == ["h2"] == sc["downed"]
    slow, down, disk = sc["events"]
    # h1's fio server and its jobs were throttled by blkio on the target's disk, then let go.
    assert disk["detail"]["device"] and disk["undone_s"] - disk["applied_s"] >= 2.5 and not disk["error"]
    assert not list(Path(BLKIO_ROOT).glob("iofleet-*"))
    assert min(sc["impact"]["series"]["hosts"]["h1"]) <= 200
    assert slow["detail"] == {"dev": "eth0"} and slow["applied_s"] < slow["undone_s"] and not slow["error"]
    assert down["applied_s"] >= 6.5 and down["undone_s"] is not None and not down["error"]
    series = sc["impact"]["series"]
    h1, h2 = series["hosts"]["h1"], series["hosts"]["h2"]
    # h2 reported each second up to its loss, then none; h1 every second.
    kept = [v for v in h2 if v is not None]
    assert kept and all(v > 0 for v in kept) and h2[len(kept):] == [None] * (len(h2) - len(kept))
    assert len(kept) < len(h1) and all(v for v in h1) and len(h1) >= 5
    assert sc["impact"]["baseline"]["iops"] > 0
    assert series["hosts_reporting"][0] == 2 and series["hosts_reporting"][-1] == 1
