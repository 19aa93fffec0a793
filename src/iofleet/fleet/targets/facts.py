"""What a directory or device on this machine is: its filesystem, the
device under it, spinning or flash, in RAM, or reached through a network
client — as a fleet host's facts read through SSH say it (control/host.py)."""

import os
import stat
from pathlib import Path

from ..facts_records import TargetFacts
from .device_checks import memory_backing, spinning


def _mount_of(number: str, mountinfo: str) -> tuple[str | None, str | None]:
    """(filesystem type, source) of the mount with device number
    "major:minor" in /proc/self/mountinfo text; the last one listed is the
    one on top. (None, None) when none has it (btrfs shows other numbers)."""
    found: tuple[str | None, str | None] = (None, None)
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " in line and len(fields) > 2 and fields[2] == number:
            after = line.split(" - ", 1)[1].split()
            found = (after[0] if after else None, after[1] if len(after) > 1 else None)
    return found


def _disk_dir(sys_dev: Path) -> Path:
    """The sysfs folder of the disk under a block device: a partition's
    disk, the first device under a device-mapper or md device (as the
    fleet's facts script does)."""
    disk = sys_dev if (sys_dev / "queue").exists() else sys_dev.parent
    slaves = sorted((disk / "slaves").glob("*")) if (disk / "slaves").is_dir() else []
    if slaves:
        lower = slaves[0].resolve()
        return lower if (lower / "queue").exists() else lower.parent
    return disk


# Filesystems whose data is on other hosts, reached through a client on this
# one (any FUSE filesystem "fuse.NAME" too, but not fuseblk: it has a disk).
NETWORK_FILESYSTEMS = frozenset({"ceph", "nfs", "nfs4", "cifs", "smb3", "glusterfs", "9p", "lustre", "gpfs",
                                 "beegfs", "afs", "virtiofs", "orangefs"})
# FUSE filesystems over this host's own disks (no network behind them).
LOCAL_FUSE = frozenset({"mergerfs", "bindfs", "gocryptfs", "encfs", "unionfs", "fuse-overlayfs", "securefs"})


def network_client(filesystem: str | None) -> str | None:
    """The client that carries a target's IO to other hosts, by its
    filesystem type: "ceph-fuse" for fuse.ceph-fuse, "kernel nfs4" for
    nfs4; None for a local filesystem (or an unknown one)."""
    if not filesystem:
        return None
    if filesystem == "fuse" or filesystem.startswith("fuse."):  # "fuse": one without a subtype
        name = filesystem.removeprefix("fuse").removeprefix(".")
        return None if name in LOCAL_FUSE else name or "fuse"
    return f"kernel {filesystem}" if filesystem in NETWORK_FILESYSTEMS else None


def seen_target(target: Path | str, mountinfo: str | None = None, _depth: int = 0) -> TargetFacts:
    """A local target as control.parse_facts shows a fleet host's:
    filesystem, source, device (the kernel's name), rotational (spinning,
    devices.spinning's rule), and `memory`: what makes it RAM (tmpfs,
    ramfs, zram, a RAM disk, a loop device over a file in RAM), or None.
    `network_fs` and `client`: a directory on a network or FUSE filesystem
    (ceph-fuse, nfs4, ...) has no device on this host (device None, and
    no device rule judges it)."""
    if mountinfo is None:
        mountinfo = _read_text("/proc/self/mountinfo")
    try:
        st = os.stat(target)
    except OSError:
        return TargetFacts.of(kind="missing", memory=None)
    block = stat.S_ISBLK(st.st_mode)
    dev = st.st_rdev if block else st.st_dev
    number = f"{os.major(dev)}:{os.minor(dev)}"
    filesystem = source = None
    if not block:
        filesystem, source = _mount_of(number, mountinfo)
        client = network_client(filesystem)
        if client:  # its data is on other hosts: no device of this host is the target's
            return TargetFacts.of(kind="directory", filesystem=filesystem, source=source, device=None,
                                  rotational=None, memory=None, network_fs=True, client=client)
    sys_dev = Path(f"/sys/dev/block/{number}")
    name = rotational = None
    if sys_dev.exists():
        sys_dev = sys_dev.resolve()
        disk = _disk_dir(sys_dev)
        name = (sys_dev if (sys_dev / "queue").exists() else sys_dev.parent).name
        rotational = spinning(disk.name, _read_text(str(disk / "queue" / "rotational")))
    memory = memory_backing(filesystem, name)
    backing = _read_text(f"/sys/block/{name}/loop/backing_file").strip() if name else ""
    if memory is None and backing and _depth < 4:  # a loop device is as fast as what holds its file
        under = seen_target(Path(backing), mountinfo, _depth + 1).memory
        memory = under and f"{name}, a loop device over a file on {under}"
    mount = {} if block else {"filesystem": filesystem, "source": source}
    return TargetFacts.of(kind="device" if block else "directory", **mount, device=name, rotational=rotational,
                          memory=memory)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def target_rotational(target: Path) -> bool | None:
    """Whether the disk under a directory (or a device target itself)
    spins; None where it cannot be seen (tmpfs, overlay, network
    filesystems) or told (devices.spinning)."""
    return seen_target(target).rotational
