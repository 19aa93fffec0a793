"""Device targets: the safety checks' parsers (on outputs recorded on a
Debian 12 VM, util-linux 2.38.1, fio 3.33), the regions each job gets, and
what fio's job files say for a device."""

import os
import stat
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from iofleet.errors import DeviceError, FioError, PlanError
from iofleet.fio.jobfile import device_where, render_device_check, render_prepare, render_probe, render_test
from iofleet.fleet.targets.device_checks import (Backing, BlockLayer, LocalDevice, RemoteDevice, exporter_mounts, fit_regions,
                                   in_use, local_device, loop_backings, memory_backing, mounts_of, signature_of,
                                   spinning, swaps_of, write_locks)
from iofleet.fleet.targets.facts import _mount_of, seen_target
from iofleet.fleet.inventory import Inventory
from iofleet.fleet.targets import target_for
from iofleet.plan import expand, parse_plan

FIXTURES = Path(__file__).parents[1] / "fixtures"
MiB, GiB = 1024**2, 1024**3

# /proc/self/mountinfo of the VM, with /dev/loop0 (ext4) mounted on a
# directory whose name has a space (written as \040).
MOUNTINFO = r"""22 27 0:21 / /proc rw,relatime - proc proc rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12332544k,nr_inodes=3083136,mode=755
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
42 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw,discard,resv_strict
43 27 7:0 / /tmp/fx/sp\040ace rw,relatime - ext4 /dev/loop0 rw
"""
# A btrfs mount shows an anonymous device number; only its source names the device.
BTRFS_LINE = "51 27 0:45 / /srv/data rw,relatime shared:30 - btrfs /dev/sdb1 rw,space_cache=v2,subvolid=5,subvol=/\n"
# /proc/swaps with /dev/loop0 as swap (tabs as the kernel writes them).
SWAPS = ("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
         "/dev/loop0                              partition\t65532\t\t0\t\t-2\n")
# /proc/locks: an exclusive flock on /dev/loop1 (devtmpfs 00:06, inode 94), a waiter for it, udev's shared
# lock, an open file description lock (no process), and a POSIX lock on a file.
LOCKS = """1: FLOCK  ADVISORY  WRITE 4242 00:06:94 0 EOF
1: -> FLOCK  ADVISORY  WRITE 4243 00:06:94 0 EOF
2: FLOCK  ADVISORY  READ 301 00:06:96 0 EOF
3: OFDLCK ADVISORY  WRITE -1 00:06:95 0 EOF
4: POSIX  ADVISORY  READ 12850 fe:00:9987228 128 128
"""
# `blkid -p -o export DEV` (output, exit code).
BLKID_BLANK = ("", 2)
BLKID_EXT4 = ("DEVNAME=/dev/loop0\nUUID=eebed0f9-8d77-4733-9a66-c0e8cdcffc4c\nVERSION=1.0\nBLOCK_SIZE=1024\n"
              "TYPE=ext4\nUSAGE=filesystem\n", 0)
BLKID_SWAP = ("DEVNAME=/dev/loop0\nUUID=4ea13c21-38d4-4e06-87e4-2c8fcbd357ae\nVERSION=1\nTYPE=swap\nUSAGE=other\n", 0)
BLKID_DOS = ("DEVNAME=/dev/loop0\nPTTYPE=dos\n", 0)


def loop0(**kw) -> LocalDevice:
    return LocalDevice(**{"path": "/dev/loop0", "real": "/dev/loop0", "name": "loop0", "bytes": 64 * MiB,
                          "members": {"loop0": "7:0"}} | kw)


def test_mounts_by_device_number_or_source_with_escaped_mount_points():
    assert mounts_of(MOUNTINFO, {"7:0": "loop0"}, {"/dev/loop0": "loop0"}) == [("loop0", "/tmp/fx/sp ace")]
    assert mounts_of(MOUNTINFO, {"254:0": "vda"}, {}) == [("vda", "/"), ("vda", "/run/netns")]
    assert mounts_of(MOUNTINFO + BTRFS_LINE, {"8:16": "sdb", "8:17": "sdb1"},
                     {"/dev/sdb": "sdb", "/dev/sdb1": "sdb1"}) == [("sdb1", "/srv/data")]
    assert mounts_of(MOUNTINFO, {"7:1": "loop1"}, {"/dev/loop1": "loop1"}) == []


def test_swaps_and_signatures():
    assert swaps_of(SWAPS, {"/dev/loop0": "loop0"}) == ["loop0"]
    assert swaps_of(SWAPS, {"/dev/loop1": "loop1"}) == []
    assert signature_of(*BLKID_BLANK) is None
    assert signature_of(*BLKID_EXT4) == "it holds an ext4 filesystem"
    assert signature_of(*BLKID_SWAP) == "it holds a swap signature"
    assert signature_of(*BLKID_DOS) == "it holds a dos partition table"
    assert signature_of("", 8) == "blkid cannot settle what it holds (exit code 8)"  # ambivalent probe
    assert "blkid (util-linux) is not installed" in signature_of("", -1)
    assert "this user may not read the device" in signature_of("", -2)


def sysfs(root: Path, **devices: dict) -> Path:
    """A fake /sys/class/block: name=dict(dev="major:minor", and optionally
    disk= (a partition, nested in its disk as sysfs does), holders=[...],
    slaves=[...], dm= (a device-mapper name), md=True, loop=True)."""
    for name, d in devices.items():
        folder = root / d["disk"] / name if "disk" in d else root / name
        folder.mkdir(parents=True)
        (folder / "dev").write_text(d["dev"] + "\n")
        if "disk" in d:
            (folder / "partition").write_text("1\n")
            (root / name).symlink_to(folder)
        for kind in ("holders", "slaves"):
            (folder / kind).mkdir()
            for other in d.get(kind, []):
                (folder / kind / other).mkdir()
        if "dm" in d:
            (folder / "dm").mkdir()
            (folder / "dm" / "name").write_text(d["dm"] + "\n")
        if d.get("md"):
            (folder / "md").mkdir()
    return root


def layer(root, loops=None, mountinfo="", swaps="") -> BlockLayer:
    return BlockLayer(root, loops or {}, mountinfo, swaps)


def mounted(number: str, node: str, point: str) -> str:
    return f"60 27 {number} / {point} ro,relatime - ext4 {node} ro\n"


SDB = {"sdb": {"dev": "8:16"}, "sdb1": {"dev": "8:17", "disk": "sdb"}, "sdb2": {"dev": "8:18", "disk": "sdb"}}
DISK = loop0(path="/dev/sdb", real="/dev/sdb", name="sdb", members={"sdb": "8:16", "sdb1": "8:17", "sdb2": "8:18"})


def test_holders_of_the_device_and_its_partitions(tmp_path):
    tree = sysfs(tmp_path, **SDB | {"sdb1": {"dev": "8:17", "disk": "sdb", "holders": ["dm-0"]},
                                    "dm-0": {"dev": "254:0", "dm": "vg0-data", "slaves": ["sdb1"]}})
    assert in_use(DISK, layer(tree)) == [
        "its partition /dev/sdb1 is held by dm-0 (device-mapper vg0-data); remove it from dm-0 first"]
    # The whole stack above a holder, in one line.
    mounts = mounted("254:1", "/dev/mapper/vg1-data", "/srv")
    tree = sysfs(tmp_path / "md", sdc={"dev": "8:32", "holders": ["md0"]},
                 md0={"dev": "9:0", "md": True, "slaves": ["sdc"], "holders": ["dm-1"]},
                 **{"dm-1": {"dev": "254:1", "dm": "vg1-data", "slaves": ["md0"]}})
    sdc = loop0(path="/dev/sdc", real="/dev/sdc", name="sdc", members={"sdc": "8:32"})
    assert in_use(sdc, layer(tree, mountinfo=mounts)) == [
        "it is held by md0 (md), and /dev/md0 is held by dm-1 (device-mapper vg1-data), and /dev/dm-1 is mounted on "
        "/srv; remove it from md0 first"]


def test_in_use_names_each_reason(tmp_path):
    tree = sysfs(tmp_path, loop0={"dev": "7:0", "holders": ["md0"]}, loop1={"dev": "7:1"},
                 md0={"dev": "9:0", "md": True, "slaves": ["loop0"]})
    assert in_use(loop0(), layer(tree, mountinfo=MOUNTINFO, swaps=SWAPS)) == [
        "it is mounted on /tmp/fx/sp ace; unmount it first",
        "it is active swap; swapoff /dev/loop0 first",
        "it is held by md0 (md); remove it from md0 first"]
    loop1 = loop0(name="loop1", real="/dev/loop1", members={"loop1": "7:1"})
    assert in_use(loop1, layer(tree, mountinfo=MOUNTINFO, swaps=SWAPS)) == []
    # An exclusive lock on the device node (/proc/locks: its st_dev in hex, its inode).
    locks = write_locks(LOCKS)
    assert locks == {(os.makedev(0, 6), 94): "process 4242", (os.makedev(0, 6), 95): "a program"}

    def stat_of(path):
        return SimpleNamespace(st_dev=os.makedev(0, 6), st_ino={"/dev/loop1": 94}.get(path, 96))

    assert in_use(loop1, BlockLayer(tree, {}, "", "", locks, stat_of)) == [
        "it is locked by process 4242 (flock, as a Ceph OSD or a partitioning tool does); stop it first"]
    assert in_use(loop0(), BlockLayer(tree, {}, "", "", locks, stat_of)) == [
        "it is held by md0 (md); remove it from md0 first"]


def test_loop_backings_by_device_number_or_file_inode(tmp_path):
    image = tmp_path / "disk.img"
    image.write_bytes(b"")
    for name, backing in {"loop0": "/dev/sdb", "loop1": str(image), "loop2": "/img/old.img (deleted)"}.items():
        (tmp_path / name / "loop").mkdir(parents=True)
        (tmp_path / name / "loop" / "backing_file").write_text(backing + "\n")
    (tmp_path / "loop3").mkdir()  # not attached: sysfs has no loop/ folder

    def stat_of(path):  # /dev/sdb is no device node in tmp_path
        return SimpleNamespace(st_mode=stat.S_IFBLK, st_rdev=os.makedev(8, 16)) if path == "/dev/sdb" else os.stat(path)

    st = os.stat(image)
    assert loop_backings(tmp_path, stat_of) == {
        "loop0": Backing("/dev/sdb", number="8:16"), "loop1": Backing(str(image), inode=(st.st_dev, st.st_ino)),
        "loop2": Backing("/img/old.img (deleted)")}


def test_a_loop_device_over_the_device_or_a_partition_is_a_user(tmp_path):
    # The hostile test's case: loop devices do not show in holders.
    tree = sysfs(tmp_path, **SDB, loop0={"dev": "7:0"}, loop1={"dev": "7:1"}, loop2={"dev": "7:2"})
    loops = {"loop0": Backing("/dev/sdb", number="8:16"), "loop1": Backing("/dev/sdb1", number="8:17"),
             "loop2": Backing("/dev/loop1", number="7:1")}
    assert in_use(DISK, layer(tree, loops, mountinfo=mounted("7:0", "/dev/loop0", "/mnt2"))) == [
        "/dev/loop0 is a loop device backed by it, and /dev/loop0 is mounted on /mnt2; detach it (losetup -d "
        "/dev/loop0) first",
        "/dev/loop1 is a loop device backed by its partition /dev/sdb1, and /dev/loop2 is a loop device backed by "
        "/dev/loop1; detach it (losetup -d /dev/loop1) first"]
    # A loop device over a file on a filesystem of the device: the mount says it.
    assert in_use(DISK, layer(tree, {"loop0": Backing("/data/x.img", inode=(2065, 12))})) == []


def test_writing_a_stacked_device_writes_the_devices_under_it(tmp_path):
    tree = sysfs(tmp_path, **SDB, sdc={"dev": "8:32", "holders": ["md0"]}, sdd={"dev": "8:48", "holders": ["md0"]},
                 md0={"dev": "9:0", "md": True, "slaves": ["sdc", "sdd"]},
                 **{f"loop{n}": {"dev": f"7:{n}"} for n in range(10)})
    loops = {"loop3": Backing("/dev/sdb", number="8:16"), "loop4": Backing("/dev/sdb", number="8:16"),
             "loop5": Backing("/dev/sdb2", number="8:18"), "loop6": Backing("/dev/sdd", number="8:48"),
             "loop7": Backing("/img/a.img", inode=(2065, 12)), "loop8": Backing("/img/a.img", inode=(2065, 12)),
             "loop9": Backing("/img/b.img", inode=(2065, 13))}
    host = layer(tree, loops, mountinfo=mounted("8:17", "/dev/sdb1", "/data"), swaps="Filename\n/dev/sdb partition\n")

    def device(name, number):
        return loop0(path=f"/dev/{name}", real=f"/dev/{name}", name=name, members={name: number})

    assert in_use(device("loop3", "7:3"), host) == [
        "it is a loop device over /dev/sdb, and /dev/sdb is active swap; swapoff /dev/sdb first",
        "it is a loop device over /dev/sdb, and /dev/loop4 is a loop device backed by /dev/sdb; detach it (losetup "
        "-d /dev/loop4) first",
        "it is a loop device over /dev/sdb, and /dev/sdb1 is mounted on /data; unmount it first",
        "it is a loop device over /dev/sdb, and /dev/loop5 is a loop device backed by /dev/sdb2; detach it (losetup "
        "-d /dev/loop5) first"]
    # Under a partition, only its disk itself counts: /dev/sdb1 beside it is not written.
    assert in_use(device("loop5", "7:5"), host) == [
        "it is a loop device over /dev/sdb2, which is a partition of /dev/sdb, and /dev/sdb is active swap; swapoff "
        "/dev/sdb first",
        "it is a loop device over /dev/sdb2, which is a partition of /dev/sdb, and /dev/loop3 is a loop device "
        "backed by /dev/sdb; detach it (losetup -d /dev/loop3) first",
        "it is a loop device over /dev/sdb2, which is a partition of /dev/sdb, and /dev/loop4 is a loop device "
        "backed by /dev/sdb; detach it (losetup -d /dev/loop4) first"]
    # md (and device-mapper): each slave's users other than the device itself.
    assert in_use(device("md0", "9:0"), host) == [
        "it is built on /dev/sdd, and /dev/loop6 is a loop device backed by /dev/sdd; detach it (losetup -d "
        "/dev/loop6) first"]
    # Device-mapper devices over one device have their own extents (two LVM volumes of one group).
    lvm = sysfs(tmp_path / "lvm", sde={"dev": "8:64", "holders": ["dm-2", "dm-3"]}, loop0={"dev": "7:0"},
                **{"dm-2": {"dev": "254:2", "dm": "vg-bench", "slaves": ["sde"]},
                   "dm-3": {"dev": "254:3", "dm": "vg-root", "slaves": ["sde"]}})
    root = mounted("254:3", "/dev/mapper/vg-root", "/")
    assert in_use(device("dm-2", "254:2"), layer(lvm, mountinfo=root)) == []
    assert in_use(device("dm-2", "254:2"), layer(lvm, {"loop0": Backing("/dev/sde", number="8:64")}, root)) == [
        "it is built on /dev/sde, and /dev/loop0 is a loop device backed by /dev/sde; detach it (losetup -d "
        "/dev/loop0) first"]
    # Over a file: the file's filesystem is mounted, as it should be; another loop device over it is a user.
    assert in_use(device("loop7", "7:7"), host) == [
        "it is a loop device over /img/a.img, and /dev/loop8 is a loop device over that file too; detach it "
        "(losetup -d /dev/loop8) first"]
    assert in_use(device("loop9", "7:9"), host) == []
    # Devices under loop devices are not claimed: worth an exclusive open. md's slaves are claimed by md.
    assert host.loop_lowers("loop5") == [("it is a loop device over /dev/sdb2", "sdb2")]
    assert host.loop_lowers("md0") == []


def test_mounts_seen_by_node_exporter():
    text = (FIXTURES / "node_exporter" / "metrics-1.txt").read_text()
    assert exporter_mounts(text, "/dev/vda") == ["/dev/vda is mounted on /"]
    assert exporter_mounts(text, "/dev/vd") == []
    part = 'node_filesystem_size_bytes{device="/dev/nvme0n1p2",fstype="xfs",mountpoint="/data"} 1e+12\n'
    assert exporter_mounts(part, "/dev/nvme0n1") == ["/dev/nvme0n1p2 is mounted on /data"]
    assert exporter_mounts(part, "/dev/nvme0n") == []
    loop10 = 'node_filesystem_size_bytes{device="/dev/loop10",fstype="ext4",mountpoint="/x"} 1e+9\n'
    assert exporter_mounts(loop10, "/dev/loop1") == [] and exporter_mounts(loop10, "/dev/loop10") != []


def specs(**plan):
    return expand(parse_plan({"name": "p", "targets": ["/dev/sdb"], "workloads": [{"name": "w"}]} | plan))


def test_regions_share_the_device_without_a_size_and_keep_a_given_one():
    plan = {"defaults": {"bs": "64k"}, "workloads": [{"name": "w", "matrix": {"jobs": [1, 3]}}]}
    fitted, stride = fit_regions(specs(**plan), "/dev/sdb", 100 * MiB, size_given=False)
    assert stride == 33 * MiB and [s.size for s in fitted] == [33 * MiB, 33 * MiB]  # MiB-aligned
    given = specs(defaults={"size": "10m"}, workloads=[{"name": "w", "jobs": 4}])
    assert fit_regions(given, "/dev/sdb", 100 * MiB, size_given=True) == (given, 10 * MiB)
    odd = [replace(s, size=3 * MiB + 4096) for s in given]  # regions start on MiB boundaries
    assert fit_regions(odd, "/dev/sdb", 100 * MiB, size_given=True)[1] == 4 * MiB
    with pytest.raises(DeviceError, match=r"^target /dev/sdb holds 100.0 MiB but the plan's regions need 160.0 MiB "
                                          r"\(4 jobs × 40.0 MiB: each job"):
        fit_regions(specs(defaults={"size": "40m", "jobs": 4}), "/dev/sdb", 100 * MiB, size_given=True)
    with pytest.raises(DeviceError, match="too small for 2 jobs"):
        fit_regions(specs(defaults={"jobs": 2}), "/dev/sdb", MiB, size_given=False)
    # A fio server's device: its size is unknown, the plan's size (default 1 GiB) is used.
    assert fit_regions(specs(), "/dev/sdb", None, size_given=False)[1] == GiB


def test_job_files_on_a_device_use_its_regions_and_never_create_files():
    spec = specs(defaults={"size": "8m", "jobs": 2, "working_set_pct": 50})[0]
    text = render_test(spec, device_where("/dev/sdb", 8 * MiB), "libaio")
    for line in ("filename=/dev/sdb", "allow_file_create=0", f"offset_increment={8 * MiB}", f"size={4 * MiB}"):
        assert line in text.splitlines()
    assert "directory=" not in text and "filename_format" not in text
    prep = render_prepare([(2, 8 * MiB)], device_where("/dev/sdb", 8 * MiB), "libaio", True, "random", 2, 128 * 1024)
    assert "filename=/dev/sdb" in prep and f"offset_increment={8 * MiB}" in prep
    probe = render_probe(device_where("/dev/sdb"), "libaio", True)  # only reads: nothing written before preparation
    assert "rw=randread" in probe and "unlink" not in probe and "offset_increment" not in probe
    check = render_device_check("/dev/sdb", 2 * GiB).split("[end]")
    assert "verify=pattern" in check[0] and "verify_pattern=0" in check[0] and "rw=read" in check[0]
    assert f"offset={2 * GiB - 4096}" in check[1] and "write" not in "".join(check)
    for bad in ("/dev/a:b", "/dev/sdb\nexec_prerun=id", "/etc/passwd", "/dev/x,y"):
        with pytest.raises(FioError, match="refused"):
            render_test(spec, device_where(bad, MiB), "libaio")


def test_remote_device_problems_say_what_cannot_be_seen():
    seen = RemoteDevice("/dev/sdb", blank=True, fits=True, needed=GiB)
    assert seen.problems(None) == [] and seen.summary == "device, blank"
    assert seen.problems(["/dev/sdb"]) == []
    assert seen.problems([]) == [
        "target /dev/sdb: refused: its first MiB reads as zeros, but holders (LVM, md, device-mapper), swap and "
        "signatures cannot be seen through fio's server; if its data may be destroyed, add "
        "`destroy_data: [/dev/sdb]` to the plan or pass --destroy-data /dev/sdb"]
    data = RemoteDevice("/dev/sdb", blank=False, fits=False, needed=2 * GiB)
    small, unconfirmed = data.problems([])
    assert small.startswith("target /dev/sdb holds less than the 2.0 GiB the plan's regions need")
    assert unconfirmed.startswith("target /dev/sdb: refused: its first MiB holds data (a filesystem, partition")
    assert data.summary == "device, has data"
    mounted = RemoteDevice("/dev/sdb", blank=False, mounts=["/dev/sdb1 is mounted on /data"])
    assert mounted.problems(["/dev/sdb"]) == [
        "target /dev/sdb: refused: /dev/sdb1 is mounted on /data (node_exporter); unmount it first (iofleet never "
        "writes to a device in use, destroy_data or not)"]
    assert RemoteDevice("/dev/sdx", exists=False).problems(["/dev/sdx"]) == [
        "target /dev/sdx does not exist there; give a block device such as /dev/sdb"]
    assert "is not a block device" in RemoteDevice("/dev/nvme0", block=False).problems(None)[0]


def test_plan_and_inventory_take_one_device_alone_and_destroy_data():
    plan = parse_plan({"name": "p", "targets": ["/dev/disk/by-id/nvme-X_1"], "destroy_data": ["/dev/sdb"],
                       "workloads": [{"name": "w", "matrix": {"size": ["1g", "2g"]}}]})
    assert plan.destroy_data == ["/dev/sdb"] and plan.sets("size") and not plan.sets("bs")
    assert target_for(plan.targets).kind == "device" and target_for(["/a", "/b"]).kind == "directory"
    for bad in ({"targets": ["/dev/sdb", "/dev/sdc"]}, {"targets": ["/dev/sdb", "/mnt/x"]},
                {"destroy_data": ["/mnt/x"]}, {"destroy_data": ["/dev/sd*"]}):
        with pytest.raises(PlanError):
            parse_plan({"name": "p", "workloads": [{"name": "w"}]} | bad)
    with pytest.raises(ValueError, match="a device, RBD image or PVC target is tested alone"):
        Inventory.model_validate({"hosts": [{"address": "10.0.0.1", "targets": ["/dev/sdb", "/dev/sdc"]}]})


# ------------------------------------------------------------ what a target is


@pytest.mark.parametrize("disk, flag, spins", [
    ("sda", "1", True), ("sda", "0", False), ("sda", None, None),
    ("nvme0n1", "1", False), ("nvme1n1", None, False),         # NVMe never spins
    ("vda", "1", None), ("xvdb", "1", None), ("vdb", "0", False),  # a virtual disk's 1 says nothing
    ("loop0", "1", None), ("zram0", "0", None), ("ram3", "0", None), ("nbd0", "1", None),  # no disk of their own
    ("dm-0", "0", False), ("md0", "1", True), (None, "1", True), ("sdb", " 1\n", True),
])
def test_spinning_rule(disk, flag, spins):
    assert spinning(disk, flag) is spins


def test_memory_backing():
    assert memory_backing("tmpfs", None) == "tmpfs" and memory_backing("ramfs", None) == "ramfs"
    assert memory_backing(None, "zram0") == "zram0, a compressed RAM disk"
    assert memory_backing("ext4", "ram1") == "ram1, a RAM disk (brd)"
    assert memory_backing("ext4", "vda") is None and memory_backing(None, None) is None
    assert memory_backing("xfs", "ramdisk") is None and memory_backing("ext4", "nvme0n1") is None


def test_mount_of_takes_the_mount_on_top():
    shm = "25 24 0:23 / /dev/shm rw - tmpfs tmpfs rw\n30 25 0:27 / /dev/shm rw - tmpfs shm rw\n"
    assert _mount_of("254:0", MOUNTINFO) == ("ext4", "/dev/vda")
    assert _mount_of("0:27", shm) == ("tmpfs", "shm") and _mount_of("9:9", shm) == (None, None)


def test_target_facts_of_this_host():
    """Real: /dev/shm is tmpfs on this VM; the repository is on a disk."""
    shm = seen_target(Path("/dev/shm")).to_dict()
    assert (shm["kind"], shm["filesystem"], shm["memory"], shm["rotational"]) == ("directory", "tmpfs", "tmpfs", None)
    repo = seen_target(Path(__file__).parent).to_dict()
    assert repo["kind"] == "directory" and repo["memory"] is None and repo["filesystem"] not in (None, "tmpfs")
    assert seen_target(Path("/nonexistent/x")).to_dict() == {"kind": "missing", "memory": None}
    if Path("/sys/block/zram0").exists():
        assert seen_target(Path("/dev/zram0")).to_dict()["memory"] == "zram0, a compressed RAM disk"


def test_a_directory_under_dev_is_no_target(tmp_path):
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    with pytest.raises(DeviceError) as exc:
        local_device("/dev/shm")
    assert str(exc.value) == ("target /dev/shm is a directory under /dev, where a target is a device (and /dev/shm is "
                              "tmpfs: RAM, not storage); give a block device such as /dev/sdb, or a directory on the "
                              "storage under test")
