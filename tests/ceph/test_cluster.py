"""The Ceph test cluster itself (cluster.py): healthy, usable through RBD
(the rbd CLI, fio's rbd engine locally and through a fleet host's fio
server) and CephFS (ceph-fuse in the root namespaces, in a fleet host's
namespaces, and the "trap" mount nobody else sees), and gone without a trace
after close()."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..fleet.processes import is_running
from .cluster import STATE_DIR, CephCluster, cleanup_stale, fuse_mounts, loop_devices

MiB = 2**20


def rbd_job(path: Path, pool: str, image: str) -> Path:
    """Write 16 MiB of an image with fio's rbd engine, then read them back."""
    path.write_text(textwrap.dedent(f"""\
        [global]
        ioengine=rbd
        clientname=admin
        pool={pool}
        rbdname={image}
        bs=1m
        size=16m
        iodepth=4

        [write]
        rw=write

        [read]
        stonewall
        rw=read
        """))
    return path


def fio_json(stdout: str) -> dict:
    """fio's JSON output (client mode prints lines of its own before it)."""
    return json.loads(stdout[stdout.index("{"):])


def io_bytes(jobs: list[dict]) -> dict[str, int]:
    """{job name: bytes it moved in its direction}, after checking no job failed."""
    assert all(j["error"] == 0 for j in jobs), jobs
    return {j["jobname"]: j[j["jobname"]]["io_bytes"] for j in jobs}


def test_cluster_is_healthy(ceph):
    c = ceph.cluster
    st = c.status()
    assert st["health"]["status"] == "HEALTH_OK", c.ceph("health", "detail")
    osdmap = st["osdmap"]
    assert (osdmap["num_osds"], osdmap["num_up_osds"], osdmap["num_in_osds"]) == (3, 3, 3)
    assert [r["status"] for r in st["fsmap"]["by_rank"]] == ["up:active"]
    assert st["fsid"] == c.fsid
    for var, value in (("size", 3), ("min_size", 2)):
        assert c.ceph("osd", "pool", "get", c.rbd_pool, var, json_out=True)[var] == value
    assert c.ceph("osd", "pool", "application", "get", c.rbd_pool, json_out=True) == {"rbd": {}}
    assert [fs["name"] for fs in c.ceph("fs", "ls", json_out=True)] == [c.fs_name]
    # the mon listens on the fleet's bridge, reachable from the root namespace and the hosts
    assert c.ceph("mon", "dump", json_out=True)["mons"][0]["public_addr"].startswith(f"{ceph.fleet.gateway}:")
    assert all(is_running(p) for p in [c.mon_pid, c.mgr_pid, c.mds_pid, *c.osd_pids])
    # 3 OSDs on loop devices over sparse files in the cluster's own directory
    assert len(loop_devices(c.dir)) == 3
    assert c.startup_seconds > 0
    print(f"cluster start-up: {c.startup_seconds:.1f} s")


def test_rbd_create_info_rm(ceph):
    c = ceph.cluster
    image = f"{c.rbd_pool}/harness-img"
    c.rbd("create", "--size", "64M", image)
    try:
        info = json.loads(c.rbd("info", "--format", "json", image))
        assert info["name"] == "harness-img" and info["size"] == 64 * MiB
    finally:
        c.rbd("rm", "--no-progress", image)
    assert "harness-img" not in c.rbd("ls", c.rbd_pool).split()


def test_fio_rbd_engine_from_the_root_namespace(ceph, tmp_path):
    c = ceph.cluster
    c.rbd("create", "--size", "32M", f"{c.rbd_pool}/fio-local")
    try:
        job = rbd_job(tmp_path / "rbd.fio", c.rbd_pool, "fio-local")
        # librados finds the cluster only through CEPH_CONF: nothing in /etc/ceph
        proc = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True,
                              timeout=120, env={**os.environ, **c.env})
        assert proc.returncode == 0, proc.stderr
        assert io_bytes(fio_json(proc.stdout)["jobs"]) == {"write": 16 * MiB, "read": 16 * MiB}
    finally:
        c.rbd("rm", "--no-progress", f"{c.rbd_pool}/fio-local")


def test_fio_rbd_engine_through_a_namespace_hosts_fio_server(ceph, tmp_path):
    c, h1 = ceph.cluster, ceph.fleet.host("h1")
    c.rbd("create", "--size", "32M", f"{c.rbd_pool}/fio-h1")
    try:
        job = rbd_job(tmp_path / "rbd.fio", c.rbd_pool, "fio-h1")
        # the client's own environment has no CEPH_CONF: only the server's counts
        proc = subprocess.run(["fio", f"--client={h1.fio_client_arg}", str(job), "--output-format=json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr + ceph.fleet.server_log("h1")
        # without the sum fio adds when a client reports more than one job
        stats = [s for s in fio_json(proc.stdout)["client_stats"] if s["jobname"] != "All clients"]
        assert {s["hostname"] for s in stats} == {h1.address}
        assert io_bytes(stats) == {"write": 16 * MiB, "read": 16 * MiB}
    finally:
        c.rbd("rm", "--no-progress", f"{c.rbd_pool}/fio-h1")
    assert ceph.fleet.wait_fio_gone("h1") == {}


def test_fuse_mount_in_the_root_namespace(ceph, tmp_path):
    c = ceph.cluster
    mnt = tmp_path / "cephfs"
    with c.mount_fuse(mnt) as m:
        assert m.visible_to("self") and str(mnt) in fuse_mounts()
        # FUSE's magic, which coreutils names "fuseblk" for every FUSE file system
        assert subprocess.run(["stat", "-f", "-c", "%t %T", str(mnt)], capture_output=True, text=True,
                              check=True).stdout.split() == ["65735546", "fuseblk"]
        (mnt / "root-ns.txt").write_text("written through ceph-fuse\n")
    # unmounted: the file is in CephFS, not in the directory underneath
    assert list(mnt.iterdir()) == []
    with c.mount_fuse(mnt):
        assert (mnt / "root-ns.txt").read_text() == "written through ceph-fuse\n"
        (mnt / "root-ns.txt").unlink()
    assert c.mounts == [] and str(mnt) not in fuse_mounts()


def test_trap_mount_is_invisible_to_the_hosts_fio_server(ceph, tmp_path):
    """`ip netns exec NS ceph-fuse` mounts in a mount namespace of its own:
    h1's fio server writes into the empty local directory underneath. A
    mount entered into the server's namespaces (pid=) is the one it sees."""
    c, fleet = ceph.cluster, ceph.fleet
    h1 = fleet.host("h1")
    trap_dir, real_dir = tmp_path / "trap", tmp_path / "real"
    with c.mount_fuse(trap_dir, netns=h1.namespace) as trap, c.mount_fuse(real_dir, pid=h1.server_pid) as real:
        assert trap.visible_to(trap.pid) and not trap.visible_to(h1.server_pid)
        assert real.visible_to(h1.server_pid) and not real.visible_to("self")
        assert str(trap_dir) not in fuse_mounts(h1.server_pid)

        job = tmp_path / "files.fio"
        job.write_text(textwrap.dedent(f"""\
            [global]
            ioengine=psync
            rw=write
            bs=64k
            size=1m

            [trap]
            directory={trap_dir}

            [real]
            directory={real_dir}
            """))
        proc = subprocess.run(["fio", f"--client={h1.fio_client_arg}", str(job), "--output-format=json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr + fleet.server_log("h1")
        # the trap job wrote to the local disk, seen from the root namespace
        assert [p.stat().st_size for p in trap_dir.iterdir()] == [MiB]
        # the other job wrote into CephFS: the trap mount (CephFS too) shows it
        in_trap_ns = ["nsenter", "-t", str(trap.pid), "-m"]
        in_cephfs = subprocess.run([*in_trap_ns, "ls", str(trap_dir)], capture_output=True, text=True,
                                   check=True).stdout.split()
        # (other tests share the file system: only this test's files are looked at)
        real = [f for f in in_cephfs if ".real." in f]
        assert len(real) == 1 and not any(".trap." in f for f in in_cephfs), in_cephfs
        subprocess.run([*in_trap_ns, "rm", str(trap_dir / real[0])], check=True)
    assert fleet.wait_fio_gone("h1") == {}


@pytest.mark.scale  # a second cluster, about 18 s: `make test-scale` (the session's own close() checks too)
def test_close_leaves_nothing(ceph, tmp_path):
    """A second cluster on the same address (its mon on other ports), with
    mounts of all three kinds and a stopped OSD: close() removes it all."""
    fleet = ceph.fleet
    cluster = CephCluster(fleet.base_dir, fleet.gateway, fleet.subnet)
    with cluster:
        directory, token = cluster.dir, cluster.token
        mounts = [cluster.mount_fuse(tmp_path / "root"),
                  cluster.mount_fuse(tmp_path / "h2", pid=fleet.host("h2").server_pid),
                  cluster.mount_fuse(tmp_path / "trap", netns=fleet.host("h2").namespace)]
        pids = [cluster.mon_pid, cluster.mgr_pid, cluster.mds_pid, *cluster.osd_pids, *(m.pid for m in mounts)]
        cluster.stop_osd(0)
        assert loop_devices(directory)
    cluster.close()  # again: a no-op

    assert not any(is_running(p) for p in pids)
    assert cluster.leftovers() == []
    assert loop_devices(directory) == [] and not directory.exists()
    assert not (STATE_DIR / f"{token}.lock").exists()
    for ns_pid in ("self", fleet.host("h2").server_pid):
        assert not any(m.startswith(str(tmp_path)) for m in fuse_mounts(ns_pid))
    # the session's cluster, on the same address, lives on
    assert all(is_running(p) for p in [ceph.cluster.mon_pid, *ceph.cluster.osd_pids])
    assert ceph.cluster.status()["osdmap"]["num_up_osds"] == 3


def test_cleanup_stale_removes_a_crashed_runs_leftovers(tmp_path):
    """What a killed test process leaves: its state file (unlocked), a
    process pointing into its directory, a loop device over its file."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices)")
    base = tmp_path / "base"
    directory = base / "ceph-0dead"
    directory.mkdir(parents=True)
    (directory / "osd.0.img").write_bytes(b"\0" * MiB)
    loop = subprocess.run(["losetup", "--find", "--show", str(directory / "osd.0.img")],
                          capture_output=True, text=True, check=True).stdout.strip()
    # a stand-in daemon: its command line points into the directory
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", f"{directory}/ceph.conf"],
                              start_new_session=True)
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    state = STATE_DIR / "0dead.lock"  # last: from here on any session's cleanup_stale may act
    state.write_text(json.dumps({"pid": 1, "dir": str(directory), "root_mounts": []}))
    try:
        cleanup_stale(base)
        # (the end state only: another session's cleanup_stale may have come first)
        assert daemon.wait(timeout=10) == -signal.SIGKILL
        assert loop_devices(directory) == [] and not directory.exists() and not state.exists()
    finally:
        if daemon.poll() is None:
            daemon.kill()
        if loop_devices(directory):
            subprocess.run(["losetup", "-d", loop])
        state.unlink(missing_ok=True)
