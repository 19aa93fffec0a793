"""Raw block devices as targets: their regions and their safety checks.

Truth rule 5: nothing is destroyed that iofleet did not create, and a raw
device needs an explicit, exact opt-in. A device is written only when
nothing stacks on it and nothing holds it, checked through the whole stack
of this host's block devices, both ways, before anything is written:

- upward, what uses the device or one of its partitions: mounts
  (/proc/self/mountinfo), active swap (/proc/swaps), holders (sysfs
  `holders`: md, device-mapper, so LVM, multipath, dm-crypt), loop devices
  backed by it (sysfs `loop/backing_file`: a loop device does not claim
  its backing device, so neither holders nor an exclusive open show it),
  and in turn whatever uses those; then an exclusive open, which the
  kernel refuses to a device mounted in any mount namespace or claimed;
- downward, what writing the device writes in turn (a loop device's
  backing device, a partition's disk, the slaves of md and device-mapper
  devices): refused when something else uses it, as above (other loop
  devices over the same backing file too, and an exclusive open of a
  device under a loop device). The filesystem holding a loop device's
  backing file is mounted, naturally: that is no use of the target.

Nothing overrides these. Then, unless the plan's `destroy_data` (or
--destroy-data) names the device, it is refused when `blkid -p` finds a
filesystem, partition table or other signature on it (an LVM, md, ZFS or
Ceph member's label too: on a host where that stack is assembled, its
holder already refused it).

On a fio server only what fio and node_exporter show can be checked (see
RemoteDevice): holders, loop devices, swap and signatures cannot be seen
there, so a remote device is written only when destroy_data names it.
"""

import errno
import os
import re
import stat
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import DeviceError
from ...plan.expand import TestSpec
from ...plan.units import format_bytes
from ..metrics.node_exporter import exporter_samples as _samples

SYS_BLOCK = Path("/sys/class/block")
# Job regions start on MiB boundaries: aligned for direct IO on any device.
REGION_ALIGN = 1024 * 1024
_IN_USE = "iofleet never writes to a device in use, destroy_data or not"
REMOTE_UNSEEN = "holders (LVM, md, device-mapper), swap and signatures cannot be seen through fio's server"


def _confirm(path: str) -> str:
    return f"if its data may be destroyed, add `destroy_data: [{path}]` to the plan or pass --destroy-data {path}"


# ------------------------------------------------------------ regions


def fit_regions(specs: list[TestSpec], device: str, device_bytes: int | None,
                size_given: bool) -> tuple[list[TestSpec], int]:
    """Each job has its own region of the device, `stride` bytes after the
    previous job's (fio's offset_increment), as each job has its own file in
    a directory. The stride is the run's largest `size`, so preparation and
    every test meet the same regions. Without a `size` in the plan and with
    the device's size known, the device is shared by the run's most jobs.
    Returns the specs (with their real size) and the stride."""
    jobs = max(s.jobs for s in specs)
    if device_bytes is not None and not size_given:
        stride = device_bytes // jobs // REGION_ALIGN * REGION_ALIGN
        if stride < max(s.bs for s in specs):
            raise DeviceError(f"target {device} ({format_bytes(device_bytes)}) is too small for {jobs} jobs "
                              f"with a region of at least 1 MiB each; use fewer jobs or a larger device")
        return [replace(s, size=stride) for s in specs], stride
    stride = -(-max(s.size for s in specs) // REGION_ALIGN) * REGION_ALIGN
    need = needed_bytes(specs, stride)
    if device_bytes is not None and need > device_bytes:
        raise DeviceError(
            f"target {device} holds {format_bytes(device_bytes)} but the plan's regions need {format_bytes(need)} "
            f"({jobs} jobs × {format_bytes(stride)}: each job has its own region of `size` bytes); lower size or "
            f"jobs, or leave size out to share the device among the jobs")
    return specs, stride


def needed_bytes(specs: list[TestSpec], stride: int) -> int:
    """How far into the device the regions reach."""
    return max((s.jobs - 1) * stride + s.size for s in specs)


# ------------------------------------------------------------ what a target is

# Filesystems whose files live in RAM: a target there measures memory.
_MEMORY_FILESYSTEMS = ("tmpfs", "ramfs")
# Block devices that are RAM, and block devices that are no disk of their own.
_RAM_DISKS = ((re.compile(r"zram\d+"), "a compressed RAM disk"), (re.compile(r"ram\d+"), "a RAM disk (brd)"))
_NOT_DISKS = re.compile(r"(loop|zram|ram|nbd)\d+")


def memory_backing(filesystem: str | None, device: str | None) -> str | None:
    """What makes a target RAM, in words ("tmpfs", "zram0, a compressed
    RAM disk"), from its filesystem type and the kernel name of the block
    device under it; None when neither is memory."""
    if filesystem in _MEMORY_FILESYSTEMS:
        return filesystem
    for pattern, what in _RAM_DISKS:
        if device and pattern.fullmatch(device):
            return f"{device}, {what}"
    return None


def spinning(disk: str | None, rotational: str | None) -> bool | None:
    """Whether a disk spins: True, False, or None when it cannot be told,
    from its kernel name and sysfs `queue/rotational` ("1" or "0"). The
    flag alone misleads: the kernel says 1 for a device that does not say
    otherwise, so most virtio (vd*) and Xen (xvd*) disks read as spinning
    whatever they sit on. So: NVMe is never spinning; a virtual disk's 1 is
    unknown (its 0 is believed); loop, zram, ram and nbd devices are no
    disk of their own (unknown); any other disk has its flag. control.py's
    facts parser applies the same rule to a fleet host's targets."""
    flag = {"1": True, "0": False}.get((rotational or "").strip())
    if not disk:
        return flag
    if disk.startswith("nvme"):
        return False
    if _NOT_DISKS.fullmatch(disk):
        return None
    if re.fullmatch(r"x?vd[a-z]+", disk):
        return False if flag is False else None
    return flag


# ------------------------------------------------------------ this host


@dataclass
class LocalDevice:
    path: str  # as given
    real: str  # the device node, symlinks resolved
    name: str  # the kernel's name (sysfs)
    bytes: int
    members: dict[str, str]  # kernel name → "major:minor", of the device and its partitions

    @property
    def shown(self) -> str:
        return self.path if self.real == self.path else f"{self.path} ({self.real})"


def local_device(path: str) -> LocalDevice:
    """The block device at `path`; DeviceError when it is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DeviceError(f"target {path} does not exist; give a block device such as /dev/sdb, "
                          f"or a directory") from None
    except OSError as exc:
        raise DeviceError(f"target {path}: cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        ram = " (and /dev/shm is tmpfs: RAM, not storage)" if Path(path).resolve().is_relative_to("/dev/shm") else ""
        raise DeviceError(f"target {path} is a directory under /dev, where a target is a device{ram}; give a block "
                          f"device such as /dev/sdb, or a directory on the storage under test")
    if not stat.S_ISBLK(st.st_mode):
        raise DeviceError(f"target {path} is not a block device; give one such as /dev/sdb, or a directory "
                          f"(a target under /dev is a device)")
    number = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    name = Path(f"/sys/dev/block/{number}").resolve().name
    members = {name: number}
    for child in sorted((SYS_BLOCK / name).iterdir()):
        if (child / "partition").exists():
            members[child.name] = (child / "dev").read_text().strip()
    size = int((SYS_BLOCK / name / "size").read_text()) * 512  # sysfs counts 512-byte sectors
    return LocalDevice(path, os.path.realpath(path), name, size, members)


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), text)


def mounts_of(mountinfo: str, numbers: dict[str, str], nodes: dict[str, str]) -> list[tuple[str, str]]:
    """(device name, mount point) of every mount of the devices given as
    {"major:minor": name} and {device node: name}: the node catches btrfs,
    whose mounts show an anonymous device number."""
    out = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        source = _unescape(after[1]) if len(after) > 1 else ""
        name = numbers.get(fields[2]) or nodes.get(source)
        if name:
            out.append((name, _unescape(fields[4])))
    return out


def swaps_of(swaps: str, nodes: dict[str, str]) -> list[str]:
    """Names of the devices (given as {device node: name}) that /proc/swaps
    lists as active swap."""
    return [nodes[f[0]] for f in (line.split() for line in swaps.splitlines()[1:]) if f and f[0] in nodes]


def write_locks(locks: str) -> dict[tuple[int, int], str]:
    """(st_dev, st_ino) of each file /proc/locks shows an exclusive lock on
    → who holds it. A raw Ceph OSD flocks its device, as tools that
    rewrite a disk do (systemd's block device locking); udev's probes take
    shared locks, which are left out."""
    out = {}
    for line in locks.splitlines():  # "1: FLOCK  ADVISORY  WRITE 4242 00:06:94 0 EOF"; a waiter has "->"
        m = re.match(r"\d+: +\w+ +\w+ +WRITE +(-?\d+) +([0-9a-f]+):([0-9a-f]+):(\d+) ", line)
        if m:  # an open file description lock has no process (-1)
            holder = "a program" if m[1] == "-1" else f"process {m[1]}"
            out[(os.makedev(int(m[2], 16), int(m[3], 16)), int(m[4]))] = holder
    return out


def signature_of(output: str, returncode: int) -> str | None:
    """What `blkid -p -o export DEV` found, as "it holds ..."; None for
    nothing (exit code 2). Anything blkid cannot settle counts as found."""
    if returncode == 2:
        return None
    if returncode == -1:
        return "its content cannot be checked: blkid (util-linux) is not installed"
    if returncode == -2:  # blkid would say "nothing found" (2) for a device it cannot open
        return "its content cannot be checked: this user may not read the device"
    if returncode != 0:
        return f"blkid cannot settle what it holds (exit code {returncode})"
    values = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    found = []
    if values.get("PTTYPE"):
        found.append(f"a {values['PTTYPE']} partition table")
    kind = values.get("TYPE")
    if kind:
        usage = {"filesystem": "filesystem", "raid": "RAID or LVM member signature",
                 "crypto": "encrypted volume header"}.get(values.get("USAGE", ""), "signature")
        found.append(f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind} {usage}")
    return "it holds " + (" and ".join(found) or "a signature blkid reports without a type")


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _busy(node: str) -> bool:
    """The kernel refuses an exclusive open of a device that is mounted
    (in any mount namespace), held, swap, or opened exclusively."""
    try:
        fd = os.open(node, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        return exc.errno == errno.EBUSY
    os.close(fd)
    return False


def _blkid(node: str) -> tuple[str, int]:
    if not os.access(node, os.R_OK):
        return "", -2
    try:
        proc = subprocess.run(["blkid", "-p", "-o", "export", node], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return "", -1
    return proc.stdout, proc.returncode


def in_use(dev: LocalDevice, layer: "BlockLayer") -> list[str]:
    """Why the device is in use, one phrase each; empty when it is not.
    Upward: what uses it or one of its partitions (mounts, swap, holders,
    loop devices backed by it, and what stacks on those). Downward: what
    writing it writes in turn (a loop device's backing, a partition's disk,
    md and device-mapper slaves), when that is used by something else."""
    found = []
    for name in dev.members:
        who = "it" if name == dev.name else f"its partition /dev/{name}"
        found += [f"{what}; {fix}" for what, fix in layer.uses(name, who)]
    return found + [f"{what}; {fix}" for what, fix in layer.below(dev.name)]


def check_local_device(path: str, destroy_data: list[str]) -> LocalDevice:
    """The device, if it may be written; else DeviceError, one line per problem."""
    dev = local_device(path)
    layer = BlockLayer(SYS_BLOCK, loop_backings(SYS_BLOCK), _read("/proc/self/mountinfo"), _read("/proc/swaps"),
                       write_locks(_read("/proc/locks")))
    busy = in_use(dev, layer)
    if not busy and _busy(dev.real):
        busy = [f"the kernel refuses exclusive access{_EXCL_WHY}; free it first"]
    if not busy:  # a loop device does not claim its backing device: ask about that one too
        busy = [f"{chain}, and the kernel refuses exclusive access to /dev/{lower}{_EXCL_WHY}; free it first"
                for chain, lower in layer.loop_lowers(dev.name) if _busy(f"/dev/{lower}")]
    if busy:
        raise DeviceError("\n".join(f"target {dev.shown}: refused: {why} ({_IN_USE})" for why in busy))
    found = signature_of(*_blkid(dev.real))
    named = any(os.path.realpath(d) == dev.real for d in destroy_data)
    if found and not named:
        raise DeviceError(f"target {dev.shown}: refused: {found}, and the benchmark would overwrite it; "
                          f"{_confirm(path)}")
    return dev


_EXCL_WHY = " (mounted in another mount namespace, or opened exclusively by a program)"


# ------------------------------------------------------------ the stack of block devices


@dataclass(frozen=True)
class Backing:
    """What a loop device reads and writes: a block device (by its number)
    or a file (by its inode); neither when its path cannot be looked up."""

    path: str  # as sysfs shows it
    number: str | None = None  # "major:minor" of a block device
    inode: tuple[int, int] | None = None  # (st_dev, st_ino) of a file


def loop_backings(sys_block: Path, stat_of=os.stat) -> dict[str, Backing]:
    """Each attached loop device's backing, from sysfs `loop/backing_file`.
    A loop device opens its backing device without claiming it, so neither
    `holders` nor an exclusive open shows it: this is the only trace."""
    out = {}
    for file in sorted(sys_block.glob("loop*/loop/backing_file")):
        try:
            path = file.read_text().rstrip("\n")
        except OSError:  # detached meanwhile
            continue
        name = file.parent.parent.name
        try:
            st = stat_of(path)
        except OSError:  # a deleted file ("... (deleted)"), or a path in another mount namespace
            out[name] = Backing(path)
            continue
        if stat.S_ISBLK(st.st_mode):
            out[name] = Backing(path, number=f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
        else:
            out[name] = Backing(path, inode=(st.st_dev, st.st_ino))
    return out


def _link(chain: str, how: str) -> str:
    """'it is a loop device over /dev/loop0', then ', which is ...' for each step down."""
    return f"{chain} is {how}" if chain == "it" else f"{chain}, which is {how}"


class BlockLayer:
    """This host's block devices as the kernel shows them: what stacks on
    what (partitions, sysfs holders and slaves, loop backings) and what uses
    each device (mounts, swap, exclusive locks). Built from text and a sysfs
    tree, so a fake tree can stand in for /sys/class/block."""

    def __init__(self, sys_block: Path, loops: dict[str, Backing], mountinfo: str, swaps: str,
                 locks: dict[tuple[int, int], str] | None = None, stat_of=os.stat):
        self.sys_block, self.loops, self.mountinfo, self.swaps = sys_block, loops, mountinfo, swaps
        self.locks, self.stat_of = locks or {}, stat_of
        numbers = {d.name: _read(str(d / "dev")).strip() for d in sys_block.iterdir()}
        self.numbers = {name: number for name, number in numbers.items() if number}  # kernel name → "major:minor"

    def _list(self, name: str, folder: str) -> list[str]:
        path = self.sys_block / name / folder
        return sorted(p.name for p in path.iterdir()) if path.is_dir() else []

    def partitions(self, name: str) -> list[str]:
        folder = self.sys_block / name
        return sorted(c.name for c in folder.iterdir() if (c / "partition").is_file()) if folder.is_dir() else []

    def disk_of(self, name: str) -> str | None:
        """The disk a partition is part of (sysfs nests a partition in its disk)."""
        folder = self.sys_block / name
        return folder.resolve().parent.name if (folder / "partition").is_file() else None

    def loops_on(self, name: str) -> list[str]:
        number = self.numbers.get(name)
        return [loop for loop, backing in self.loops.items() if number and backing.number == number]

    def _locker(self, name: str) -> str | None:
        """The process holding an exclusive lock on the device's node."""
        if not self.locks:
            return None
        try:
            st = self.stat_of(f"/dev/{name}")
        except OSError:
            return None
        return self.locks.get((st.st_dev, st.st_ino))

    def _is_dm(self, name: str) -> bool:
        return (self.sys_block / name / "dm").is_dir()

    def _holder(self, name: str) -> str:
        dm = _read(str(self.sys_block / name / "dm" / "name")).strip()  # LVM, multipath, dm-crypt...
        if dm:
            return f"{name} (device-mapper {dm})"
        return f"{name} (md)" if (self.sys_block / name / "md").is_dir() else name

    def uses(self, name: str, who: str, seen: frozenset = frozenset()) -> list[tuple[str, str]]:
        """(what, fix) for each direct use of device `name` (called `who`):
        mounts, swap, holders and loop devices backed by it, each holder and
        loop device with what uses it in turn. Devices in `seen` (the way
        here) are no other users."""
        node = f"/dev/{name}"
        out = [(f"{who} is mounted on {point}", "unmount it first")
               for _, point in mounts_of(self.mountinfo, {self.numbers.get(name, "?"): name}, {node: name})]
        out += [(f"{who} is active swap", f"swapoff {node} first") for _ in swaps_of(self.swaps, {node: name})]
        if (locker := self._locker(name)):
            out.append((f"{who} is locked by {locker} (flock, as a Ceph OSD or a partitioning tool does)",
                        "stop it first"))
        out += [(f"{who} is held by {self._holder(holder)}{self.above(holder, seen)}", f"remove it from {holder} first")
                for holder in self._list(name, "holders") if holder not in seen]
        out += [(f"/dev/{loop} is a loop device backed by {who}{self.above(loop, seen)}",
                 f"detach it (losetup -d /dev/{loop}) first")
                for loop in self.loops_on(name) if loop not in seen]
        return out

    def above(self, name: str, seen: frozenset = frozenset()) -> str:
        """", and ..." for each use of `name` and its partitions, and of what
        stacks on them in turn: the whole stack above a device, in one line."""
        seen = seen | {name}
        return "".join(f", and {what}" for member in [name, *self.partitions(name)]
                       for what, _ in self.uses(member, f"/dev/{member}", seen))

    def under(self, name: str) -> list[tuple[str, str, str]]:
        """(lower device, how `name` stacks on it, kind) for what writing
        `name` writes in turn: a partition's disk, a loop device's backing
        device, the slaves of an md or device-mapper device. A loop device
        over a file is not listed: the file's own filesystem is naturally
        mounted."""
        if (disk := self.disk_of(name)):
            return [(disk, f"a partition of /dev/{disk}", "partition")]
        backing = self.loops.get(name)
        if backing and backing.number:
            lower = next((n for n, number in self.numbers.items() if number == backing.number), None)
            return [(lower, f"a loop device over /dev/{lower}", "loop")] if lower else []
        return [(slave, f"built on /dev/{slave}", "slave") for slave in self._list(name, "slaves")]

    def below(self, name: str, chain: str = "it", seen: frozenset = frozenset()) -> list[tuple[str, str]]:
        """(what, fix) for each other user of what writing `name` writes:
        the devices under it and their partitions, down to the bottom of the
        stack. Under a partition only its disk itself counts (the other
        partitions are not written); under a device-mapper device its
        siblings do not (LVM gives each volume of a group its own extents)."""
        seen = seen | {name}
        out = self._same_file(name, chain)
        for lower, how, kind in self.under(name):
            if lower in seen:
                continue
            link = _link(chain, how)
            members = [lower] if kind == "partition" else [lower, *self.partitions(lower)]
            for member in members:
                siblings = {h for h in self._list(member, "holders") if self._is_dm(h)} if self._is_dm(name) else set()
                out += [(f"{link}, and {what}", fix)
                        for what, fix in self.uses(member, f"/dev/{member}", seen | siblings)]
            out += self.below(lower, link, seen)
        return out

    def _same_file(self, name: str, chain: str) -> list[tuple[str, str]]:
        """Another loop device over the same backing file writes the same
        blocks: a user like any other."""
        backing = self.loops.get(name)
        if not backing or not backing.inode:
            return []
        link = _link(chain, f"a loop device over {backing.path}")
        return [(f"{link}, and /dev/{other} is a loop device over that file too{self.above(other)}",
                 f"detach it (losetup -d /dev/{other}) first")
                for other, b in self.loops.items() if other != name and b.inode == backing.inode]

    def loop_lowers(self, name: str, chain: str = "it") -> list[tuple[str, str]]:
        """(chain, lower device) for each device under a loop device in the
        stack under `name`: unclaimed, so worth an exclusive open."""
        out = []
        for lower, how, kind in self.under(name):
            link = _link(chain, how)
            if kind == "loop":
                out.append((link, lower))
            out += self.loop_lowers(lower, link)
        return out


# ------------------------------------------------------------ fio servers


@dataclass
class RemoteDevice:
    """What a read-only fio job (jobfile.render_device_check) and the host's
    node_exporter show of a device target on a fio server."""

    path: str
    exists: bool = True
    block: bool = True  # fio saw a disk under it (its disk_util)
    blank: bool | None = None  # the first MiB reads as zeros; None: could not be read
    read_error: str | None = None
    fits: bool | None = None  # the plan's regions fit; None: not checked (no plan)
    needed: int | None = None
    mounts: list[str] = field(default_factory=list)  # "DEVICE is mounted on POINT", from node_exporter

    def problems(self, destroy_data: list[str] | None) -> list[str]:
        """One line per problem. `destroy_data` None: no run is asked for
        (`hosts check`), so the lack of a confirmation is no problem yet."""
        p = self.path
        if not self.exists:
            return [f"target {p} does not exist there; give a block device such as /dev/sdb"]
        if not self.block:
            return [f"target {p} is not a block device (fio sees no disk under it); give one such as /dev/sdb"]
        if self.read_error:
            return [f"target {p} cannot be read ({self.read_error})"]
        out = [f"target {p}: refused: {m} (node_exporter); unmount it first ({_IN_USE})" for m in self.mounts]
        if self.fits is False:
            out.append(f"target {p} holds less than the {format_bytes(self.needed)} the plan's regions need "
                       f"(each job has its own region of `size` bytes, 1 GiB unless the plan says otherwise); "
                       f"lower size or jobs")
        if destroy_data is not None and p not in destroy_data and not self.mounts:
            seen = ("its first MiB reads as zeros, but" if self.blank else
                    "its first MiB holds data (a filesystem, partition table, LVM or md label, or old data), and")
            out.append(f"target {p}: refused: {seen} {REMOTE_UNSEEN}; {_confirm(p)}")
        return out

    @property
    def summary(self) -> str:
        """For the `hosts check` table."""
        if not self.exists or not self.block or self.read_error:
            return "no"
        return "device, blank" if self.blank else "device, has data"


def exporter_mounts(metrics_text: str, device: str) -> list[str]:
    """Mounts of the device or its partitions that node_exporter lists
    (by device node: a symlink such as /dev/disk/by-id/... is not matched).
    A name ending in a digit numbers its partitions after a 'p' (nvme0n1p1),
    so /dev/loop10 is not taken for a partition of /dev/loop1."""
    part = re.compile(re.escape(device) + (r"p\d+" if device[-1].isdigit() else r"\d+"))
    out = []
    for _, labels, _ in _samples(metrics_text, ("node_filesystem_size_bytes",)):
        src = labels.get("device", "")
        if src == device or part.fullmatch(src):
            out.append(f"{src} is mounted on {labels.get('mountpoint', '?')}")
    return out
