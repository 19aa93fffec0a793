"""Scenarios on the real Ceph cluster (conftest.py's `ceph`): an OSD hung
(SIGSTOP) and an OSD killed and restarted under a fixed-rate load on an
RBD image through librbd, with iofleet's process faults on this host
(`--target`). What the issue asked of them: the series has no hole, the
stall is named with its length, the span's p99 counts the waiting, and
the impact is measured over each event's own span."""

import signal
import time

import yaml

from iofleet.results.store import Store

from ..cli import iofleet
from .cluster import CephError, N_OSDS

IMAGE = "rbd:rbd/iofleet-scenario"
LOAD = {"bs": "4k", "read_pct": 0, "iodepth": 4, "rate_iops": 200, "size": "16m", "ramp": "2s"}


def _healthy_again(cluster, timeout: float = 120.0) -> None:
    """Wait until every OSD is up and in and every PG active+clean (the next test starts from a healthy cluster)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            st = cluster.status()
        except CephError:
            st = None
        if st and st["health"]["status"] == "HEALTH_OK" and cluster._osds_and_pgs_ready(st):
            return
        time.sleep(1)
    raise AssertionError(f"the cluster is not healthy {timeout:.0f} s after the scenario:\n{cluster.diagnose()}")


def _scenario(tmp_path, ceph, monkeypatch, doc: dict, *args):
    monkeypatch.setenv("CEPH_CONF", str(ceph.cluster.conf))
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc))
    out = iofleet("scenario", f, "--target", IMAGE, *args, data_dir=tmp_path / "d", timeout=400)
    print(out.stdout)  # what the user saw (pytest -s), for the docs
    with Store.open(tmp_path / "d") as store:
        run = store.get_run(1)
    return out.stdout, run.methodology.scenario


def test_an_osd_hung_for_20_s_is_a_stall_of_at_least_20_s_not_a_hole(ceph, tmp_path, monkeypatch):
    c = ceph.cluster
    pid_file = c.dir / "run" / "osd.1.pid"
    # Ceph would mark the hung OSD down after its heartbeat grace (20 s) and re-peer once it is back (some seconds
    # more of pause); with a longer grace the pause is the hang's own: what iofleet must name.
    c.ceph("config", "set", "global", "osd_heartbeat_grace", "60")
    try:
        said, sc = _scenario(tmp_path, ceph, monkeypatch, {
            "name": "osd-hang", "load": {**LOAD, "runtime": "28s"},
            "events": [{"at": "4s", "fault": "process-stop", "pid_file": str(pid_file), "for": "20s"}]})
    finally:
        c.cont_osd(1)  # a failed test must not leave the OSD stopped
        c.ceph("config", "rm", "global", "osd_heartbeat_grace")
    imp = sc.impact.to_dict()  # the impact as exported
    series = imp["series"]
    steps = [b - a for a, b in zip(series["t_s"], series["t_s"][1:])]
    assert all(0.8 <= d <= 1.2 for d in steps), f"a hole in the series: {series['t_s']}"
    # Every PG of the 3-OSD pool (size 3) has osd.1: every write waits for it, at least while it is stopped
    # (Ceph may take longer to serve IO again, even in a second pause as it peers: once 24 s more here). The
    # stalls named are the series' own seconds without an IO, to 2 s each.
    stalls = imp["stalls"]
    stall = stalls[0]  # while osd.1 was stopped
    zero = [t for t, i in zip(series["t_s"], series["iops"]) if i == 0]
    assert stall["to_s"] - stall["from_s"] >= 18 and stall["waited_s"] >= 18, stall
    assert abs(sum(s["to_s"] - s["from_s"] for s in stalls) - len(zero)) <= 2 * len(stalls), (stalls, zero)
    assert zero == [t for t, s in zip(series["t_s"], series["stalled"]) if s]
    (hit,) = imp["events"]
    during = hit["during"]
    # The span's p99 counts the IOs that waited through the stall: at least most of its part of the wait, and a
    # lower bound.
    waited_in_span = min(stall["to_s"], hit["to_s"]) - max(stall["from_s"], hit["from_s"])
    assert during["p99_lower_bound"] is True and during["p99_ms"] >= 0.8 * waited_in_span * 1000, hit
    assert hit["catch_up"] is not None and hit["catch_up"]["behind_ios"] > 2000
    assert all(f"IO paused from {s['from_s']:.1f} to {s['to_s']:.1f} s" in said for s in stalls), said
    assert "p99 ≥ " in said and "p99 is fio's latency from issue" in said
    _healthy_again(c)


def test_an_osd_killed_and_restarted_is_measured_over_its_own_span_beside_cephs_account(ceph, tmp_path,
                                                                                           monkeypatch):
    c = ceph.cluster
    pid_file = c.dir / "run" / "osd.2.pid"
    restart = f"ceph-osd -c {c.conf} -i 2"  # daemonizes once the OSD has started
    try:
        said, sc = _scenario(tmp_path, ceph, monkeypatch, {
            "name": "osd-crash", "load": {**LOAD, "runtime": "30s"},
            "events": [{"at": "4s", "fault": "process-kill", "pid_file": str(pid_file), "restart": restart,
                        "for": "6s"}],
            "watch": {"command": "ceph health --format json", "every": "1s"}}, "--yes")
    finally:
        # The restarted OSD is not the cluster object's child: stop it, and start osd.2 as the cluster's own again.
        _restore_osd(c, 2, pid_file)
    (event,) = sc.events
    assert event["applied_s"] is not None and not event["error"] and event["detail"]["pids"]
    (hit,) = sc.impact.to_dict()["events"]
    # Its own span: from the kill until the restart returned (the OSD started), not to the end of the test.
    assert hit["to_s"] - hit["from_s"] >= 5.5 and not event.get("undo_late_s")
    assert hit["to_s"] == round(event["undone_s"] - sc.clock_shift_s, 2) and hit["to_s"] < 27
    assert hit["during"]["iops"] is not None and "process-kill local at 4s for 6s, measured" in said
    # Ceph's own account: the OSD reported down after the kill, and the health back to HEALTH_OK later.
    (account,) = sc.watch.events
    assert account.before == "HEALTH_OK" and "OSD_DOWN" in account.changed_to, account
    assert hit["from_s"] <= account.changed_s <= hit["from_s"] + 10
    assert account.back_s is not None and account.back_s > hit["to_s"], sc.watch.samples
    assert "storage HEALTH_OK before, reported HEALTH_WARN" in said and "back to its state before the fault" in said
    _healthy_again(c)


def _restore_osd(cluster, i: int, pid_file) -> None:
    import os
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
    except (OSError, ValueError):
        pass  # gone (or never restarted)
    daemon = cluster._daemons[f"osd.{i}"]
    if daemon.poll() is not None:
        cluster.start_osd(i)
    assert i < N_OSDS
