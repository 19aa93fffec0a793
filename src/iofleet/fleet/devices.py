"""Raw block devices as targets: their regions and their safety checks.

Truth rule 5: nothing is destroyed that iofleet did not create, and a raw
device needs an explicit, exact opt-in. On this host a device target is
refused, before anything is written, when it or one of its partitions is
mounted (/proc/self/mountinfo), held by LVM, md or device-mapper (sysfs
`holders`), active swap (/proc/swaps) or otherwise busy (the kernel refuses
an exclusive open) — nothing overrides these — and when `blkid -p` finds a
filesystem, partition table or other signature on it, unless the plan's
`destroy_data` (or --destroy-data) names it.

On a fio server only what fio and node_exporter show can be checked (see
RemoteDevice): holders, swap and signatures cannot be seen there, so a
remote device is written only when destroy_data names it.
"""

import errno
import os
import re
import stat
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import DeviceError
from ..fio.jobfile import Device
from ..plan.expand import TestSpec
from ..plan.model import is_device_path
from ..plan.units import format_bytes
from .metrics import _samples

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


def holders_of(sys_block: Path, names) -> list[tuple[str, str]]:
    """(member, holder) for each device-mapper, md or other holder sysfs
    lists for the device or its partitions."""
    out = []
    for name in names:
        folder = sys_block / name / "holders"
        if folder.is_dir():
            out += [(name, h.name) for h in sorted(folder.iterdir())]
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


def in_use(dev: LocalDevice, mountinfo: str, swaps: str, holders: list[tuple[str, str]]) -> list[str]:
    """Why the device is in use, one phrase each; empty when it is not."""
    nodes = {f"/dev/{n}": n for n in dev.members} | {dev.real: dev.name}
    numbers = {number: name for name, number in dev.members.items()}

    def who(name: str) -> str:
        return "it is" if name == dev.name else f"its partition /dev/{name} is"

    found = [f"{who(name)} mounted on {point}; unmount it first"
             for name, point in mounts_of(mountinfo, numbers, nodes)]
    found += [f"{who(name)} held by {holder} (LVM, md or device-mapper); remove it from {holder} first"
              for name, holder in holders]
    found += [f"{who(name)} active swap; swapoff /dev/{name} first" for name in swaps_of(swaps, nodes)]
    return found


def check_local_device(path: str, destroy_data: list[str]) -> LocalDevice:
    """The device, if it may be written; else DeviceError, one line per problem."""
    dev = local_device(path)
    busy = in_use(dev, _read("/proc/self/mountinfo"), _read("/proc/swaps"), holders_of(SYS_BLOCK, dev.members))
    if not busy and _busy(dev.real):
        busy = ["the kernel refuses exclusive access (mounted in another mount namespace, or opened "
                "exclusively by a program); free it first"]
    if busy:
        raise DeviceError("\n".join(f"target {dev.shown}: refused: {why} ({_IN_USE})" for why in busy))
    found = signature_of(*_blkid(dev.real))
    named = any(os.path.realpath(d) == dev.real for d in destroy_data)
    if found and not named:
        raise DeviceError(f"target {dev.shown}: refused: {found}, and the benchmark would overwrite it; "
                          f"{_confirm(path)}")
    return dev


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


def where(targets: list[str], stride: int = 0) -> list[Path] | Device:
    """Where fio does a host's IO: its target directories, or its one
    device's regions (the plan model allows a device only alone)."""
    if len(targets) == 1 and is_device_path(str(targets[0])):
        return Device(str(targets[0]), stride)
    return [Path(t) for t in targets]
