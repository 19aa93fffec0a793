"""iofleet on a real Ceph cluster (conftest.py's `ceph`: 1 mon, 1 mgr, 3
BlueStore OSDs on loop devices, 1 MDS; and a 2-host namespace fleet whose
fio servers reach it): RBD images through fio's rbd engine and CephFS
through ceph-fuse, on this host and on the fleet; the image safety
refusals; storage-aware facts; the mount-namespace trap refused."""

import json
import re
import subprocess
import time

import yaml

from ..cli import iofleet, show_json, write_plan

SHORT = {"size": "16m", "runtime": "2s", "ramp": "0s", "iodepth": 4, "bs": "4k"}


def rbd_plan(path, ceph, target, **more):
    plan = dict(name="rbd", targets=[target], ceph={"conf": str(ceph.cluster.conf)}, prepare_passes=1,
                defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
    return write_plan(path, **plan | more)


def images(ceph) -> list[str]:
    return ceph.cluster.rbd("ls", ceph.cluster.rbd_pool).split()


def run_doc(data_dir) -> dict:
    """The newest run of a results directory, as `results show --format json` gives it."""
    listed = json.loads(iofleet("results", "list", "--format", "json", data_dir=data_dir).stdout)
    return show_json(max(r["id"] for r in listed), data_dir)


def test_an_rbd_image_is_created_tested_through_librbd_and_removed(ceph, tmp_path):
    plan = rbd_plan(tmp_path / "p.yaml", ceph, "rbd:rbd/iofleet-local",
                    workloads=[{"name": "w", "read_pct": 0, "matrix": {"rbd_cache": [True, False]}}])
    out = iofleet("run", plan, data_dir=tmp_path / "d", timeout=600)
    doc = run_doc(tmp_path / "d")
    tests = doc["tests"]
    assert [t["status"] for t in tests] == ["ok", "ok"], out.stdout
    assert all(t["all"]["iops"] > 0 for t in tests)
    assert {t["params"]["rbd_cache"] for t in tests} == {True, False}
    assert {t["params"]["engine_used"] for t in tests} == {"rbd"}
    rbd = doc["host_facts"]["rbd"]
    assert (rbd["pool"], rbd["image"], rbd["created"]) == ("rbd", "iofleet-local", True)
    assert rbd["cluster"]["fsid"] == ceph.cluster.fsid and rbd["cluster"]["version"].startswith("16.2.")
    assert "librbd's cache lives in fio's process" in tests[0]["methodology"]["cache"]["local"]
    assert "iofleet-local" not in images(ceph)  # iofleet created it, so iofleet removed it


def test_an_existing_image_is_refused_unless_destroy_data_names_it_and_then_kept(ceph, tmp_path):
    ceph.cluster.rbd("create", "--size", "64M", "rbd/theirs")
    try:
        plan = rbd_plan(tmp_path / "p.yaml", ceph, "rbd:rbd/theirs")
        said = iofleet("run", plan, data_dir=tmp_path / "d", check_rc=None)
        assert said.returncode != 0 and "Traceback" not in said.stderr
        assert "target rbd:rbd/theirs: refused: the image exists (64.0 MiB) and was not created by iofleet" \
            in said.stderr and "destroy_data: [rbd:rbd/theirs]" in said.stderr
        ok = iofleet("run", plan, "--destroy-data", "rbd:rbd/theirs", data_dir=tmp_path / "d2", timeout=600)
        assert "theirs" in images(ceph), ok.stdout  # the user's image: written as allowed, never removed
    finally:
        ceph.cluster.rbd("rm", "--no-progress", "rbd/theirs")


def test_an_image_open_elsewhere_is_refused_even_with_destroy_data(ceph, tmp_path):
    ceph.cluster.rbd("create", "--size", "64M", "rbd/inuse")
    job = tmp_path / "hold.fio"
    job.write_text("[hold]\nioengine=rbd\npool=rbd\nrbdname=inuse\nclientname=admin\nrw=randread\nbs=4k\n"
                   "time_based=1\nruntime=120\nrate_iops=10\n")
    holder = subprocess.Popen(["fio", str(job)], env=ceph.cluster.env | {"PATH": "/usr/bin:/bin"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not json.loads(ceph.cluster.rbd("status", "--format", "json", "rbd/inuse")).get("watchers"):
            assert time.monotonic() < deadline and holder.poll() is None, "fio never opened the image"
            time.sleep(0.2)
        plan = rbd_plan(tmp_path / "p.yaml", ceph, "rbd:rbd/inuse", destroy_data=["rbd:rbd/inuse"])
        said = iofleet("run", plan, data_dir=tmp_path / "d", check_rc=None)
        assert said.returncode != 0 and "refused: the image is open elsewhere (watchers" in said.stderr
        assert "iofleet never writes to an image in use" in said.stderr
    finally:
        holder.terminate()  # fio closes the image: its watch goes now (a killed one's lingers ~30 s)
        try:
            holder.wait(timeout=30)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
        ceph.cluster.rbd("rm", "--no-progress", "rbd/inuse")


def test_an_rbd_fio_job_file_imports_and_runs_as_an_rbd_target(ceph, tmp_path):
    job = tmp_path / "rbd.fio"
    job.write_text("[global]\nioengine=rbd\nclientname=admin\npool=rbd\nrbdname=imported\nrw=randwrite\n"
                   "bs=4k\nsize=16m\ntime_based=1\nruntime=2\n\n[rbd_iodepth8]\niodepth=8\n")
    iofleet("import", job, "-o", tmp_path / "plan.yaml", data_dir=tmp_path / "d")
    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    assert plan["targets"] == ["rbd:rbd/imported"] and plan["workloads"][0]["engine"] == "rbd"
    plan["ceph"] = {"conf": str(ceph.cluster.conf)}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    iofleet("run", tmp_path / "plan.yaml", data_dir=tmp_path / "d", timeout=600)
    doc = run_doc(tmp_path / "d")
    assert doc["tests"][0]["status"] == "ok" and doc["host_facts"]["rbd"]["image"] == "imported"


def test_cephfs_through_ceph_fuse_names_its_client_cache_and_no_local_disk(ceph, tmp_path):
    mount = ceph.cluster.mount_fuse(tmp_path / "cephfs")
    try:
        plan = write_plan(tmp_path / "p.yaml", name="fs", targets=[str(mount.mountpoint)], prepare_passes=1,
                          defaults=SHORT | {"direct": False, "engine": "psync"},
                          workloads=[{"name": "w", "read_pct": 0}])
        iofleet("run", plan, data_dir=tmp_path / "d", timeout=600)
        doc = run_doc(tmp_path / "d")
        test = doc["tests"][0]
        assert test["status"] == "ok" and test["all"]["iops"] > 0
        facts = doc["host_facts"]["target_facts"][str(mount.mountpoint)]
        assert (facts["filesystem"], facts["device"], facts["client"]) == ("fuse.ceph-fuse", None, "ceph-fuse")
        assert "ceph-fuse's object cacher (client_oc) is not dropped" in test["methodology"]["cache"]["local"]
        said = iofleet("diagnose", doc["id"], data_dir=tmp_path / "d").stdout
        assert "busiest disk" not in said  # the OSDs' loop devices are not the target's disk
    finally:
        mount.close()


def fleet_inventory(ceph, path, targets: dict[str, str], fstype: str | None = None):
    ceph.fleet.write_inventory(path)
    inv = yaml.safe_load(path.read_text())
    for h in inv["hosts"]:
        h["targets"] = [targets[h["name"]]]
        if fstype:
            h["fstype"] = fstype
    path.write_text(yaml.safe_dump(inv))
    return path


def test_a_fleet_gets_an_image_per_host_and_removes_them(ceph, tmp_path, monkeypatch):
    inv = fleet_inventory(ceph, tmp_path / "inv.yaml", {"h1": "rbd:rbd/fleet", "h2": "rbd:rbd/fleet"})
    monkeypatch.setenv("CEPH_CONF", str(ceph.cluster.conf))  # (`hosts check` has no plan: Ceph's own default)
    checked = iofleet("hosts", "check", inv, data_dir=tmp_path / "d", timeout=120)
    rows = [line for line in checked.stdout.splitlines() if "rbd:rbd/fleet" in line]
    # Free: the pool's max_avail, asked of the cluster (3 OSDs, size 3: a third of their raw room at most).
    assert len(rows) == 2 and all("n/a" not in r and re.search(r" \d+\.\d (MiB|GiB) ", r) for r in rows), \
        checked.stdout
    plan = rbd_plan(tmp_path / "p.yaml", ceph, "rbd:rbd/unused")
    out = iofleet("run", plan, "--hosts", inv, data_dir=tmp_path / "d", timeout=600)
    doc = run_doc(tmp_path / "d")
    test = doc["tests"][0]
    assert test["status"] == "ok", out.stdout
    per_host = {name: h["write"]["iops"] for name, h in test["hosts"].items()}
    assert set(per_host) == {"h1", "h2"} and all(v > 0 for v in per_host.values())
    assert {h["name"]: h["rbd"]["image"] for h in doc["host_facts"]["hosts"]} == {"h1": "fleet-h1", "h2": "fleet-h2"}
    assert not {"fleet-h1", "fleet-h2"} & set(images(ceph))


def test_cephfs_on_a_fleet_and_the_mount_namespace_trap_refused(ceph, tmp_path):
    """A mount in each fio server's own namespaces runs; a mount made by
    another `ip netns exec` (a mount namespace of its own) is not what the
    server sees: refused, naming the host, before anything is written."""
    mounts = {h.name: ceph.cluster.mount_fuse(h.target / "cephfs", pid=h.server_pid) for h in ceph.fleet.hosts}
    plan = write_plan(tmp_path / "p.yaml", name="fs", prepare_passes=1,
                      defaults=SHORT | {"direct": False, "engine": "psync"},
                      workloads=[{"name": "w", "read_pct": 0}])
    h2 = ceph.fleet.host("h2")
    try:
        targets = {name: str(m.mountpoint) for name, m in mounts.items()}
        inv = fleet_inventory(ceph, tmp_path / "inv.yaml", targets, fstype="fuse.ceph-fuse")
        iofleet("run", plan, "--hosts", inv, data_dir=tmp_path / "d", timeout=600)
        test = run_doc(tmp_path / "d")["tests"][0]
        assert test["status"] == "ok" and set(test["hosts"]) == {"h1", "h2"}
        assert all(h["write"]["iops"] > 0 for h in test["hosts"].values())

        mounts.pop("h2").close()
        trap = ceph.cluster.mount_fuse(h2.target / "trap", netns=h2.namespace)
        try:
            assert not trap.visible_to(h2.server_pid)
            targets["h2"] = str(trap.mountpoint)
            inv = fleet_inventory(ceph, tmp_path / "trap.yaml", targets, fstype="fuse.ceph-fuse")
            said = iofleet("run", plan, "--hosts", inv, data_dir=tmp_path / "d2", check_rc=None)
            assert said.returncode != 0 and "Traceback" not in said.stderr
            assert f"host h2 ({h2.endpoint}): target {trap.mountpoint} is on ext4 as its fio server sees it, " \
                   f"not fuse.ceph-fuse as the inventory says" in said.stderr, said.stderr
            assert "host h1" not in said.stderr
            assert not list((h2.target / "trap").iterdir())  # nothing written there (`hosts check` probes it)
            checked = iofleet("hosts", "check", inv, data_dir=tmp_path / "d2", check_rc=1)
            assert "1 of 2 hosts ready" in checked.stdout and "not fuse.ceph-fuse as the inventory says" in \
                checked.stdout + checked.stderr
        finally:
            trap.close()
    finally:
        for m in mounts.values():
            m.close()
