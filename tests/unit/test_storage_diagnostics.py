"""Diagnostics on a hyperconverged host: storage daemons beside fio
(storage_cpu, client_bound) and targets without a device of their own
(outstanding_io_low's busiest disk), on the recorded ceph-fuse run
(tests/fixtures/runs/README.md). Where a test changes a figure to make a
variant, its docstring says so."""

import copy
import json
import os
from dataclasses import replace
from pathlib import Path

from iofleet.analysis.diagnostics import Thresholds
from iofleet.analysis.diagnostics import diagnose as diagnose_run
from iofleet.analysis.diagnostics.context import JudgedRun
from iofleet.fleet.control.host import parse_facts
from iofleet.fleet.targets import kind_of, target_for
from iofleet.fleet.targets.facts import network_client, seen_target
from iofleet.results.model import Run

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
READS, WRITES = "4k-r100-rand-j2-qd16", "4k-r0-rand-j1-qd4"
SPLIT = ("cpu_fio_avg_pct", "cpu_storage_avg_pct", "cpu_other_avg_pct", "cpu_storage_by_name")


def diagnose(doc: dict, thresholds: Thresholds | None = None):
    """The findings over a recorded run's export (changed here and there), read as the typed run."""
    return diagnose_run(Run.from_dict(doc), thresholds)


def judged(host_facts: dict) -> JudgedRun:
    """A run with only these facts, judged."""
    return JudgedRun(Run.from_dict({"host_facts": host_facts}))


def load() -> dict:
    return json.loads((RUNS / "ceph-fuse.json").read_text())


def found(run: dict, rule: str, thresholds: Thresholds | None = None):
    return [f for f in diagnose(run, thresholds) if f.rule == rule]


def local(run: dict, test_id: str) -> dict:
    (t,) = [t for t in run["tests"] if t["id"] == test_id]
    return t["host_metrics"]["local"]


# ------------------------------------------------------------ storage_cpu and client_bound


def test_storage_daemons_that_took_the_cpu_are_named_and_client_bound_stays_silent():
    """Real: 91 % host CPU, 53 % of it ceph-osd and ceph-fuse, fio 6 %
    (iofleet before this said "client-bound → add hosts")."""
    run = load()
    (f,) = found(run, "storage_cpu")
    assert (f.test, f.severity, f.host) == (READS, "warning", None)
    assert f.evidence == ("host CPU 91 % avg (max 97 %) > 90 %: 53 % storage daemons (ceph-osd 29 %, ceph-fuse 23 %, "
                          "ceph-mon 1 %) beside fio's 6 % (other 32 %): a hyperconverged host, where fio competes "
                          "with the storage for CPU")
    assert f.change.startswith("run fio on hosts that do not serve the storage, or count this CPU as the storage's")
    assert found(run, "client_bound") == []
    assert not any("add hosts" in x.change or "add jobs" in x.change for x in diagnose(run))


def test_a_hot_host_mostly_used_by_others_than_the_storage_is_client_bound_with_fios_share():
    """Derived: the storage daemons' 53 % moved to `other` (a host busy
    with something that is not the storage)."""
    run = load()
    m = local(run, READS)
    m["cpu_other_avg_pct"] += m["cpu_storage_avg_pct"]
    m["cpu_storage_avg_pct"], m["cpu_storage_by_name"] = 0.0, {}
    assert found(run, "storage_cpu") == []
    (f,) = found(run, "client_bound")
    assert f.test == READS
    assert f.evidence.startswith("host CPU 91 % avg (max 97 %) > 90 %: fio 6 %, storage daemons 0 %, other 85 %")
    assert f.change.startswith("add hosts, or find what else kept the host's CPU busy")


def test_a_hot_host_mostly_used_by_fio_is_client_bound():
    """Derived: fio's and the storage daemons' shares swapped."""
    run = load()
    m = local(run, READS)
    m["cpu_fio_avg_pct"], m["cpu_storage_avg_pct"] = m["cpu_storage_avg_pct"], m["cpu_fio_avg_pct"]
    m["cpu_storage_by_name"] = {"ceph-osd": m["cpu_storage_avg_pct"]}
    assert found(run, "storage_cpu") == []
    (f,) = found(run, "client_bound")
    assert f.evidence.startswith("host CPU 91 % avg (max 97 %) > 90 %: fio 53 %, storage daemons 6 %, other 32 %")
    assert f.change == "add hosts: the same outstanding IO spread over more clients"


def test_the_storage_share_is_a_threshold():
    strict = Thresholds().with_overrides(["storage_cpu_pct=60"])  # 53 / 91 = 58 % of the busy CPU
    assert found(load(), "storage_cpu", strict) == []
    assert [f.test for f in found(load(), "client_bound", strict)] == [READS]
    loose = Thresholds().with_overrides(["storage_cpu_pct=57"])
    assert [f.test for f in found(load(), "storage_cpu", loose)] == [READS]


def test_without_the_split_a_hot_host_is_judged_as_before():
    """Derived: the split removed, as from a node_exporter host (null, never 0)."""
    run = load()
    for t in run["tests"]:
        for name in SPLIT:
            t["host_metrics"]["local"][name] = None
    assert found(run, "storage_cpu") == []
    (f,) = found(run, "client_bound")
    assert f.evidence == "host CPU 91 % avg (max 97 %) > 90 %"


def test_storage_cpu_names_the_host_in_a_fleet():
    """Derived: the run's reads test as if two hosts had run it, h2 like
    the recorded host, h1 with a quiet CPU."""
    run = load()
    t = next(t for t in run["tests"] if t["id"] == READS)
    hot = t["host_metrics"].pop("local")
    t["host_metrics"] = {"h1": dict(hot, cpu_avg_pct=40.0), "h2": hot}
    figures = t["hosts"].pop("local")
    t["hosts"] = {"h1": figures, "h2": copy.deepcopy(figures)}
    (f,) = found(run, "storage_cpu")
    assert f.host == "h2" and f.evidence.startswith("h2: host CPU 91 % avg")


# ------------------------------------------------------------ targets without a device


def test_the_busiest_disk_of_a_host_whose_target_has_no_device_is_not_judged():
    """Real: the host's disk did 8,324 IOPS (the OSD's) for the client's
    988, 20 % busy, at 4 outstanding IO; the target is on ceph-fuse."""
    run = load()
    m = local(run, WRITES)
    assert m["disk_busy_avg_pct"] < 50 and m["disk_iops_avg"] > 0.5 * 988
    assert run["host_facts"]["target_facts"]["/mnt/cephfs/diag"]["client"] == "ceph-fuse"
    assert found(run, "outstanding_io_low") == []


def test_without_the_targets_client_the_busiest_disk_is_judged_as_before():
    """Derived: the target's facts as a run before this recorded them (no
    client): the host's busiest disk stands for the target's device."""
    run = load()
    del run["host_facts"]["target_facts"]["/mnt/cephfs/diag"]["client"]
    (f,) = found(run, "outstanding_io_low")
    assert f.test == WRITES and f.evidence.startswith("device busy 20 % (busiest disk on local)")


# Recorded: control.facts_command(["/mnt/cephfs/diag", "/tmp/ctl-t"]) run by sh
# on this VM with the ceph-fuse mount of the fixture's README (first lines cut).
FACTS = """\
kernel=6.18.44-fc-v657
hostname=vm
cpus=2
memory_kib=24731708
t0.kind=directory
t0.filesystem=fuse.ceph-fuse
t0.source=ceph-fuse
t0.free_kib=3510272
t1.kind=directory
t1.filesystem=ext4
t1.source=/dev/vda
t1.free_kib=78637348
t1.device=vda
t1.size_sectors=536870912
t1.model=
t1.firmware=
t1.scheduler=[mq-deadline] none
t1.rotational=1
"""


def test_a_fleet_hosts_fuse_target_from_its_ssh_facts():
    facts = parse_facts(FACTS, ["/mnt/cephfs/diag", "/tmp/ctl-t"])
    fuse, disk = facts.targets["/mnt/cephfs/diag"], facts.targets["/tmp/ctl-t"]
    assert fuse.to_dict() == {"kind": "directory", "filesystem": "fuse.ceph-fuse", "source": "ceph-fuse",
                    "free_bytes": 3510272 * 1024, "device": None, "rotational": None, "network_fs": True,
                    "client": "ceph-fuse"}
    assert disk.device == "vda" and disk.client is None and "client" not in disk.to_dict()
    # A host with only the FUSE target has no device; with both, one is on its disk.
    only_fuse = {"hosts": [{"name": "h1", "facts": replace(facts, targets={"/mnt/cephfs/diag": fuse}).to_dict()}]}
    both = {"hosts": [{"name": "h1", "facts": facts.to_dict()}]}
    assert judged(only_fuse).target_client("h1") == "ceph-fuse"
    assert judged(both).target_client("h1") is None
    assert judged({}).target_client("h1") is None  # nothing known


def test_an_rbd_image_has_no_device_on_the_host():
    """The host facts a run records with an RBD image target: the local
    place's target facts (the kind's own), a fleet host's targets by name."""
    local = {"rbd": {"pool": "rbd", "image": "iofleet"},
             "target_facts": {"rbd:rbd/iofleet": target_for(["rbd:rbd/iofleet"]).fixed_facts("rbd:rbd/iofleet")
                              .to_dict()}}
    assert judged(local).target_client("local") == "librbd"
    fleet = {"hosts": [{"name": "h1", "targets": ["rbd:rbd/iofleet"]}, {"name": "h2", "targets": ["/mnt/x"]}]}
    run = judged(fleet)
    assert run.target_client("h1") == "librbd" and run.target_client("h2") is None
    assert judged({"target_facts": {"/srv/x": {"kind": "directory", "device": "vda"}}}) \
        .target_client("local") is None


def test_network_clients_by_filesystem():
    assert network_client("fuse.ceph-fuse") == "ceph-fuse" and network_client("fuse.glusterfs") == "glusterfs"
    assert network_client("ceph") == "kernel ceph" and network_client("nfs4") == "kernel nfs4"
    assert network_client("cifs") == "kernel cifs" and network_client("9p") == "kernel 9p"
    assert network_client("fuse") == "fuse"
    for local_fs in ("ext4", "xfs", "btrfs", "tmpfs", "fuseblk", "fuse.mergerfs", None, ""):
        assert network_client(local_fs) is None, local_fs


def test_target_facts_of_a_directory_on_a_fuse_mount(tmp_path):
    """The recorded mountinfo line of the ceph-fuse mount, given the device
    number of a real directory here (no FUSE mount in the unit tests)."""
    dev = tmp_path.stat().st_dev
    number = f"{os.major(dev)}:{os.minor(dev)}"
    line = (f"42 27 {number} / /mnt/cephfs rw,nosuid,nodev,relatime - fuse.ceph-fuse ceph-fuse "
            f"rw,user_id=0,group_id=0,allow_other\n")
    facts = seen_target(tmp_path, mountinfo=line)
    assert facts.client == "ceph-fuse" and facts.to_dict() == {"kind": "directory", "filesystem": "fuse.ceph-fuse", "source": "ceph-fuse", "device": None,
                     "rotational": None, "memory": None, "network_fs": True, "client": "ceph-fuse"}
    assert seen_target(tmp_path).client is None  # the real mount of tmp_path: a local filesystem
    assert kind_of("rbd:rbd/iofleet").fixed_facts("rbd:rbd/iofleet").to_dict() == {
        "kind": "rbd", "device": None, "rotational": None, "memory": None, "client": "librbd"}


# ------------------------------------------------------------ free space of a FUSE target


def test_check_space_says_why_when_a_targets_free_space_cannot_be_read(tmp_path, monkeypatch):
    """statvfs failing as on a FUSE mount whose client died (ENOTCONN): one
    line naming the target, not a traceback."""
    import errno

    import pytest

    from iofleet.fleet.targets import space
    from iofleet.plan.expand import expand
    from iofleet.plan.load import parse_plan

    specs = expand(parse_plan({"name": "p", "workloads": [{"name": "w", "bs": "4k", "size": "1m"}]}))
    space.check_space([tmp_path], specs)  # fits: the real statvfs

    def dead(path):
        raise OSError(errno.ENOTCONN, os.strerror(errno.ENOTCONN))

    monkeypatch.setattr(space.os, "statvfs", dead)
    with pytest.raises(space.IofleetError) as exc:
        space.check_space([tmp_path], specs)
    assert str(exc.value) == (f"cannot read the free space of {tmp_path} (Transport endpoint is not connected); "
                              f"check that it is mounted and readable, or give another --target")
