"""device-slow on this host (`--target`): a blkio (cgroup v1) throttle of
iofleet's own fio on a loop device's filesystem, undone at its end and on
Ctrl-C. Needs root, loop devices and the blkio controller (`loop_target`,
conftest.py)."""

import signal
from pathlib import Path

import yaml

from iofleet.fleet.control.fault_kinds.device_slow import BLKIO_ROOT
from iofleet.results.store import Store

from ..cli import iofleet, wait_for


def _ours() -> list[str]:
    return sorted(p.name for p in Path(BLKIO_ROOT).glob("iofleet-*"))


def test_device_slow_throttles_the_load_and_every_fault_is_undone_on_ctrl_c(tmp_path, loop_target, spawn,
                                                                          data_dir):
    before = _ours()
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "slow-disk", "load": {
        "bs": "4k", "read_pct": 0, "iodepth": 4, "size": "16m", "runtime": "30s", "ramp": "1s"}, "events": [
        {"at": "3s", "fault": "device-slow", "mbps": 1, "for": "2s"},
        {"at": "7s", "fault": "device-slow", "iops": 100}]}))
    proc = spawn("scenario", f, "--target", loop_target, data_dir=data_dir)
    # The second fault is in place (its cgroup exists, 2 s after the first was removed): stop the run.
    wait_for(lambda: len(_ours()) > len(before) and proc.poll() is None, timeout=40, what="the first cgroup")
    wait_for(lambda: not (set(_ours()) - set(before)), timeout=20, what="the first fault undone")
    wait_for(lambda: set(_ours()) - set(before) or proc.poll() is not None, timeout=20, what="the second fault")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert _ours() == before  # both cgroups gone
    with Store.open(data_dir) as store:
        run = store.get_run(1)
    assert run.status == "interrupted"
    sc = run.methodology.scenario.to_dict()
    first, second = sc["events"]
    assert first["detail"]["device"].startswith("7:") and first["undone_s"] - first["applied_s"] >= 1.5
    assert second["applied_s"] >= 6.5 and second["undone_s"] is not None and not second["error"]
    hit = sc["impact"]["events"][0]
    # 1 MB/s is 244 IOs of 4 KiB a second: far below an unthrottled loop device.
    assert hit["iops_change_pct"] < -50 and hit["during"]["iops"] < 0.5 * sc["impact"]["baseline"]["iops"]
    assert "event 2: device-slow on local undone" in out


def test_a_fixed_rate_loads_catch_up_after_a_slow_disk_is_reported_and_counts_as_back(tmp_path, loop_target, data_dir):
    """fio keeps a fixed rate's average: once the disk is back it issues what it fell behind on at once. That
    burst is the backlog draining, not impact, and the load is back when it has drained."""
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"name": "catch-up", "load": {
        "bs": "4k", "read_pct": 0, "iodepth": 4, "rate_iops": 2000, "size": "16m", "runtime": "10s",
        "ramp": "1s"}, "events": [{"at": "3s", "fault": "device-slow", "iops": 200, "for": "2s"}]}))
    proc = iofleet("scenario", f, "--target", loop_target, data_dir=data_dir, timeout=120)
    with Store.open(data_dir) as store:
        sc = store.get_run(1).methodology.scenario
    (hit,) = sc.impact.to_dict()["events"]  # as exported
    c = hit["catch_up"]
    # About 2 s at 200 of 2,000 IOPS: some 3,600 IOs behind, drained by a burst above the rate.
    assert c["behind_ios"] > 2000 and c["burst_iops"] > 2200, c
    assert c["drained_s"] is not None and hit["to_s"] < c["drained_s"] <= hit["to_s"] + 4
    assert hit["recovery_s"] is not None and hit["recovery_s"] <= c["drained_s"] - hit["to_s"] + 1
    assert f"backlog of {c['behind_ios']:,} IOs drained at {c['drained_s']:.1f} s" in proc.stdout
