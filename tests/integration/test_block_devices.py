"""Raw block devices as targets, on loop devices (root only): refused with a
clear line and untouched when they hold a filesystem, are mounted, locked,
or in a stack of devices with a user above or below them (loop devices over
loop devices and partitions), run when blank or named in destroy_data, on
this host and through a fio server.
A neighbour file beside the loop devices' backing files must never change."""

import fcntl
import hashlib
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from iofleet.errors import DeviceError, FioError
from iofleet.fio.command import fio_version
from iofleet.fleet.check import HostCheckError, check_hosts
from iofleet.fleet.inventory import load_inventory
from iofleet.fleet.targets.facts import seen_target
from iofleet.plan import parse_plan
from iofleet.plan.easy import Durations
from iofleet.results.store import Store
from iofleet.studies.easy_run import easy_run
from iofleet.studies.run import run_plan
from iofleet.studies.saturate import Sweep, run_saturate
from iofleet.studies.study import Where

from ..cli import iofleet, write_plan

MiB = 1024**2
SHORT = {"runtime": "1s", "ramp": "0s", "iodepth": 4, "engine": "psync"}


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Loops:
    """Loop devices over files in one directory, beside a neighbour file."""

    def __init__(self, folder):
        self.folder = folder
        self.neighbour = folder / "neighbour.bin"
        self.neighbour.write_bytes(os.urandom(MiB))
        self.neighbour_sum = sha256(self.neighbour)
        self.devices: dict[str, object] = {}  # device → backing file
        self.mounts: list = []

    def make(self, mib: int, ext4: bool = False, partition: bool = False) -> str:
        """A loop device over a fresh file; with `partition`, a dos table whose
        one partition ({dev}p1) starts at 1 MiB."""
        backing = self.folder / f"disk{len(self.devices)}.img"
        with open(backing, "wb") as f:
            f.truncate(mib * MiB)  # a fresh file reads as zeros
            if partition:  # one dos entry; partx adds it where the kernel has no dos parser
                f.seek(446)
                f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + struct.pack("<II", 2048, (mib - 1) * 2048))
                f.seek(510)
                f.write(b"\x55\xaa")
        dev = self._attach(backing, ["-P"] if partition else [])
        self.devices[dev] = backing
        if partition:
            subprocess.run(["partx", "-u", dev], check=True, capture_output=True)
        if ext4:
            self.mkfs(dev)
        return dev

    def stack(self, lower: str, ext4: bool = False) -> str:
        """A loop device over another device: what it writes lands in `lower`'s backing file."""
        dev = self._attach(lower, [])
        self.devices[dev] = self.devices[re.sub(r"(\d)p\d+$", r"\1", lower)]  # a partition: its disk's file
        if ext4:
            self.mkfs(dev)
        return dev

    def _attach(self, backing, options: list[str]) -> str:
        proc = subprocess.run(["losetup", "-f", "--show", *options, str(backing)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"losetup cannot attach a loop device here: {proc.stderr.strip()}")
        return proc.stdout.strip()

    @staticmethod
    def mkfs(dev: str):  # no lazy init: the kernel writes nothing later on its own
        subprocess.run(["mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev], check=True)

    def mount_ro(self, dev: str):
        point = self.folder / f"mnt{len(list(self.folder.glob('mnt*')))}"
        point.mkdir()
        subprocess.run(["mount", "-o", "ro,noload", dev, str(point)], check=True)  # read-only: writes nothing
        self.mounts.append(point)
        return point

    def umount(self, point):
        subprocess.run(["umount", str(point)], check=True)
        self.mounts.remove(point)

    def sum(self, dev: str) -> str:
        return sha256(self.devices[dev])

    def close(self):
        for point in self.mounts:
            subprocess.run(["umount", str(point)], capture_output=True)
        for dev in reversed(self.devices):  # a loop device over another one first
            subprocess.run(["losetup", "-d", dev], capture_output=True)


@pytest.fixture
def loops(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    if not all(shutil.which(tool) for tool in ("losetup", "partx", "mkfs.ext4")):
        pytest.skip("losetup, partx and mkfs.ext4 (util-linux, e2fsprogs) are needed")
    folder = tmp_path / "disks"
    folder.mkdir()
    lo = Loops(folder)
    try:
        yield lo
    finally:
        lo.close()
    assert sha256(lo.neighbour) == lo.neighbour_sum, "the neighbour file beside the backing files changed"


def _refusal(dev: str) -> str:
    return (f"error: target {dev}: refused: it holds an ext4 filesystem, and the benchmark would overwrite it; "
            f"if its data may be destroyed, add `destroy_data: [{dev}]` to the plan or pass --destroy-data {dev}")


def _no_run(data_dir) -> bool:
    if not data_dir.exists():
        return True
    with Store.open(data_dir) as store:
        return store.list_runs() == []


def test_a_device_with_a_filesystem_is_refused_before_anything_is_written(tmp_path, loops, data_dir):
    dev = loops.make(64, ext4=True)
    before = loops.sum(dev)
    plan = write_plan(tmp_path / "p.yaml", name="dev", defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
    proc = iofleet("run", plan, "--target", dev, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [_refusal(dev)]
    # The same refusal from the other studies that write (called as the CLI does).
    with Store.open(data_dir) as store:
        with pytest.raises(DeviceError) as info:
            easy_run(Where([dev], store=store), Durations(runtime=1, ramp=0), working_set=8 * MiB)
        assert f"error: {info.value}" == _refusal(dev)
        with pytest.raises(DeviceError, match=f"^target {dev}: refused: it holds an ext4 filesystem"):
            run_saturate(Where([dev], store=store), Sweep(size=8 * MiB, runtime=1, ramp=0))
    assert loops.sum(dev) == before
    assert _no_run(data_dir)


def test_destroy_data_naming_the_device_overrides_its_signature(tmp_path, loops, data_dir):
    dev = loops.make(64, ext4=True)
    before = loops.sum(dev)
    plan = write_plan(tmp_path / "p.yaml", name="dev", destroy_data=[dev], prepare="zero",
                      defaults=SHORT | {"size": "16m"}, workloads=[{"name": "w", "read_pct": 0}])
    out = iofleet("run", plan, "--target", dev, data_dir=data_dir).stdout
    assert "1 of 1 tests ok" in out and "Removed iofleet's data files" not in out
    assert loops.sum(dev) != before  # the filesystem's start was overwritten, as asked
    blkid = subprocess.run(["blkid", "-p", dev], capture_output=True)
    assert blkid.returncode == 2, blkid.stdout  # prepared with zeros: no signature left


def test_a_mounted_device_is_refused_even_with_destroy_data(tmp_path, loops, data_dir):
    dev = loops.make(64, ext4=True)
    point = loops.mount_ro(dev)
    before = loops.sum(dev)
    plan = write_plan(tmp_path / "p.yaml", name="dev", defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
    proc = iofleet("run", plan, "--target", dev, "--destroy-data", dev, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [
        f"error: target {dev}: refused: it is mounted on {point}; unmount it first (iofleet never writes to a "
        f"device in use, destroy_data or not)"]
    assert loops.sum(dev) == before and _no_run(data_dir)


def _in_use(dev: str, why: str) -> str:
    return f"error: target {dev}: refused: {why} (iofleet never writes to a device in use, destroy_data or not)"


def _e2fsck_clean(dev: str) -> bool:
    return subprocess.run(["e2fsck", "-fn", dev], capture_output=True).returncode == 0


def test_a_device_under_a_loop_device_is_refused_even_with_destroy_data(tmp_path, loops, data_dir):
    # The hostile test's case: a loop device does not claim the device under
    # it, so neither sysfs holders nor an exclusive open showed its user.
    lower = loops.make(64)
    upper = loops.stack(lower, ext4=True)
    point = loops.mount_ro(upper)
    before = loops.sum(lower)
    plan = write_plan(tmp_path / "p.yaml", name="dev", defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
    proc = iofleet("run", plan, "--target", lower, "--destroy-data", lower, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [_in_use(lower, f"{upper} is a loop device backed by it, and {upper} is "
                                                       f"mounted on {point}; detach it (losetup -d {upper}) first")]
    loops.umount(point)  # not mounted, the loop device over it is still a user
    proc = iofleet("run", plan, "--target", lower, "--destroy-data", lower, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [
        _in_use(lower, f"{upper} is a loop device backed by it; detach it (losetup -d {upper}) first")]
    # A loop device over one of its partitions is a user of it too.
    disk = loops.make(64, partition=True)
    over_part = loops.stack(f"{disk}p1")
    proc = iofleet("run", plan, "--target", disk, "--destroy-data", disk, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [_in_use(disk, f"{over_part} is a loop device backed by its partition "
                                                      f"{disk}p1; detach it (losetup -d {over_part}) first")]
    assert loops.sum(lower) == before and _e2fsck_clean(upper) and _no_run(data_dir)


def test_a_loop_device_over_a_device_in_use_is_refused(tmp_path, loops, data_dir):
    # Writing a loop device writes the device under it: its users count.
    disk = loops.make(64, partition=True)
    loops.mkfs(f"{disk}p1")
    part_point = loops.mount_ro(f"{disk}p1")
    over_disk = loops.stack(disk)
    whole = loops.make(64, ext4=True)
    whole_point = loops.mount_ro(whole)
    over_whole = loops.stack(whole)
    sums = {dev: loops.sum(dev) for dev in (disk, whole)}
    plan = write_plan(tmp_path / "p.yaml", name="dev", defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
    proc = iofleet("run", plan, "--target", over_disk, "--destroy-data", over_disk, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [_in_use(over_disk, f"it is a loop device over {disk}, and {disk}p1 is "
                                                           f"mounted on {part_point}; unmount it first")]
    proc = iofleet("run", plan, "--target", over_whole, "--destroy-data", over_whole, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [_in_use(over_whole, f"it is a loop device over {whole}, and {whole} is "
                                                            f"mounted on {whole_point}; unmount it first")]
    assert {dev: loops.sum(dev) for dev in sums} == sums and _no_run(data_dir)


def test_a_loop_device_over_a_device_mounted_in_another_namespace_is_refused(tmp_path, loops, data_dir):
    # This mount namespace shows no mount: the exclusive open of the device under the loop device does.
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is needed")
    lower = loops.make(64, ext4=True)
    upper = loops.stack(lower)
    before = loops.sum(lower)
    point = tmp_path / "elsewhere"
    point.mkdir()
    holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               f"mount -o ro,noload {lower} {point} && echo mounted && exec sleep 60"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "mounted\n"
        plan = write_plan(tmp_path / "p.yaml", name="dev", defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
        proc = iofleet("run", plan, "--target", upper, "--destroy-data", upper, data_dir=data_dir, check_rc=2)
    finally:
        holder.kill()
        holder.wait()
    assert proc.stderr.splitlines() == [_in_use(
        upper, f"it is a loop device over {lower}, and the kernel refuses exclusive access to {lower} (mounted in "
               f"another mount namespace, or opened exclusively by a program); free it first")]
    assert loops.sum(lower) == before and _no_run(data_dir)


def test_a_device_locked_by_a_program_is_refused(tmp_path, loops, data_dir):
    # A raw Ceph OSD flocks its device, as partitioning tools do: no holder, no mount, no exclusive open.
    dev = loops.make(64)
    plan = write_plan(tmp_path / "p.yaml", name="dev", defaults=SHORT, workloads=[{"name": "w", "read_pct": 0}])
    with open(dev, "rb") as locked:
        fcntl.flock(locked, fcntl.LOCK_EX)  # this process holds the lock
        proc = iofleet("run", plan, "--target", dev, "--destroy-data", dev, data_dir=data_dir, check_rc=2)
    assert proc.stderr.splitlines() == [_in_use(dev, f"it is locked by process {os.getpid()} (flock, as a Ceph OSD "
                                                     f"or a partitioning tool does); stop it first")]
    assert _no_run(data_dir)


def test_a_blank_device_is_benchmarked_in_one_region_per_job(tmp_path, loops, data_dir):
    dev = loops.make(128)
    plan = write_plan(tmp_path / "p.yaml", name="blank", defaults=SHORT,
                      workloads=[{"name": "w", "read_pct": 50, "matrix": {"jobs": [1, 2]}}])
    out = iofleet("run", plan, "--target", dev, data_dir=data_dir).stdout
    assert "2 of 2 tests ok" in out
    assert "Caches before each test on local: page cache of the device invalidated" in out
    with Store.open(data_dir) as store:
        stored = store.get_run(1)
        run = stored.to_dict()
        job = store.read_artifact(stored.tests[1].pk, "job.fio").decode().splitlines()
    assert run["status"] == "complete"
    # No size in the plan: the device is shared by the most jobs (2 × 64 MiB).
    assert [t["params"]["size"] for t in run["tests"]] == [64 * MiB, 64 * MiB]
    assert all(t["status"] == "ok" and t["all"]["iops"] > 0 for t in run["tests"])
    assert run["host_facts"]["device"] == {"path": dev, "bytes": 128 * MiB, "region_bytes": 64 * MiB}
    assert f"filename={dev}" in job and f"offset_increment={64 * MiB}" in job and "allow_file_create=0" in job
    # Preparation wrote random data over both regions, to the device's end.
    with open(loops.devices[dev], "rb") as f:
        f.seek(128 * MiB - 4096)
        assert f.read(4096) != bytes(4096)


def test_a_loop_device_over_a_file_in_ram_is_a_target_in_ram(tmp_path, loops):
    """No fio: what the run records of the target (fleet.local.target_facts)."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    with tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iofleet-test-") as f:
        f.truncate(4 * MiB)
        dev = loops._attach(f.name, [])
        loops.devices[dev] = Path(f.name)
        name = Path(dev).name
        facts = seen_target(Path(dev)).to_dict()
        assert facts["memory"] == f"{name}, a loop device over a file on tmpfs"
        assert (facts["kind"], facts["device"], facts["rotational"]) == ("device", name, None)
        assert seen_target(Path(loops.make(4))).to_dict()["memory"] is None  # over a file on disk
        loops.close()
        loops.devices.clear()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def fio_servers():
    """Two real `fio --server`s on 127.0.0.1: fleet hosts as iofleet sees them."""
    ports = [_free_port(), _free_port()]
    procs = [subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for port in ports]
    try:
        deadline = time.monotonic() + 10
        for port, proc in zip(ports, procs):
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline, "fio --server did not start"
                    time.sleep(0.05)
        yield [f"127.0.0.1:{port}" for port in ports]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_device_on_a_fio_server_is_written_only_when_named(tmp_path, loops, data_dir, fio_servers):
    blank, ext4 = loops.make(64), loops.make(64, ext4=True)
    sums = {dev: loops.sum(dev) for dev in (blank, ext4)}
    first, second = fio_servers
    inv = write_plan(tmp_path / "inv.yaml", hosts=[{"name": "r1", "address": first, "targets": [blank]},
                                                   {"name": "r2", "address": second, "targets": [ext4]}])
    hosts = load_inventory(inv).hosts
    # `hosts check` (no plan): devices are looked at, not refused.
    checks = check_hosts(hosts, fio_version())
    assert [(c.problems, c.targets[0].device.summary) for c in checks] == [([], "device, blank"),
                                                                          ([], "device, has data")]
    plan_data = {"name": "remote", "defaults": SHORT | {"size": "16m"}, "workloads": [{"name": "w", "read_pct": 0}]}
    too_big = plan_data | {"defaults": SHORT | {"size": "1g"}}
    with Store.open(data_dir) as store:
        with pytest.raises(HostCheckError) as info:
            run_plan(parse_plan(too_big), "", store, hosts=hosts)
        small = "holds less than the 1.0 GiB the plan's regions need (each job has its own region of `size` bytes"
        unseen = "holders (LVM, md, device-mapper), swap and signatures cannot be seen through fio's server"
        lines = str(info.value).splitlines()
        assert [line.split(" (")[0] for line in lines[:4:2]] == ["host r1", "host r2"]
        assert all(small in line for line in lines[:4:2]), lines
        assert lines[1:4:2] == [
            f"host r1 ({first}): target {blank}: refused: its first MiB reads as zeros, but {unseen}; if its "
            f"data may be destroyed, add `destroy_data: [{blank}]` to the plan or pass --destroy-data {blank}",
            f"host r2 ({second}): target {ext4}: refused: its first MiB holds data (a filesystem, partition "
            f"table, LVM or md label, or old data), and {unseen}; if its data may be destroyed, add "
            f"`destroy_data: [{ext4}]` to the plan or pass --destroy-data {ext4}"]
        assert lines[4:] == ["no test was started; fix the hosts above or leave them out of the inventory"]
        assert {dev: loops.sum(dev) for dev in sums} == sums and store.list_runs() == []

        outcome = run_plan(parse_plan(plan_data | {"destroy_data": [blank]}), "", store, hosts=hosts[:1])
        assert outcome.status == "complete" and outcome.cleaned == 0

        # Mounted, without a metrics endpoint to show it: fio itself refuses to write.
        loops.mount_ro(ext4)
        sums[ext4] = loops.sum(ext4)
        with pytest.raises(FioError, match=f"^preparing the data failed: <.*> fio: {ext4} appears mounted"):
            run_plan(parse_plan(plan_data | {"destroy_data": [ext4]}), "", store, hosts=hosts[1:])
    assert loops.sum(blank) != sums[blank] and loops.sum(ext4) == sums[ext4]
