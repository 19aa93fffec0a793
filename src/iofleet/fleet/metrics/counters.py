"""A host's cumulative counters at one moment (`Counters`, from /proc or
node_exporter), and the sample of the interval between two readings: the
difference divided by the time between them.

On the local host the busy CPU is also split by who used it (CPU_GROUPS):
fio, the storage's own daemons and clients on the same host (a
hyperconverged host: Ceph OSDs beside fio), and the rest. node_exporter
does not give per-process CPU: a remote host's split is None (n/a).
"""

from dataclasses import dataclass, field

from .records import HostSample


# Who uses a host's CPU, by process name (the kernel's `comm`, at most 15
# characters): fio, and the storage's own daemons and clients when they run
# on the host that runs fio. Everything else (and interrupts) is "other".
FIO_NAMES = frozenset({"fio"})
STORAGE_NAMES = frozenset({
    # Ceph: daemons, the FUSE and NBD clients, gateways
    "ceph-osd", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-fuse", "radosgw", "rbd-nbd", "rbd-mirror",
    "ceph-nvmeof", "tcmu-runner",
    # GlusterFS: brick daemons, the FUSE client, the management daemon
    "glusterfsd", "glusterfs", "glusterd",
    # NFS and SMB servers, iSCSI targets (LIO's kernel threads, tgt), NVMe-oF (SPDK)
    "nfsd", "ganesha.nfsd", "smbd", "iscsi_trx", "iscsi_ttx", "tgtd", "nvmf_tgt", "reactor_0",
    # other software-defined storage
    "minio", "beegfs-storage", "beegfs-meta", "mfschunkserver", "mfsmaster", "lizardfs-chunks",
    "seaweedfs", "weed", "longhorn", "longhorn-engine", "sheep",
})
# Kernel threads named after their device or connection (drbd_w_r0, ...).
STORAGE_PREFIXES = ("drbd_", "ll_ost", "mdt0", "ldlm_")


def cpu_group(name: str) -> str:
    """"fio", "storage" or "other": what a process is, by its comm."""
    if name in FIO_NAMES:
        return "fio"
    if name in STORAGE_NAMES or name.startswith(STORAGE_PREFIXES):
        return "storage"
    return "other"


@dataclass
class Counters:
    """Cumulative counters of one host at one moment. A missing metric is
    None (CPU) or an empty dict (per device), never 0."""

    cpu_idle: float | None = None  # idle + iowait, summed over CPUs (any time unit)
    cpu_total: float | None = None  # all modes, same unit
    disk_io_time_s: dict[str, float] = field(default_factory=dict)  # whole disks
    disk_ios: dict[str, float] = field(default_factory=dict)  # reads + writes completed
    net_rx_bytes: dict[str, float] = field(default_factory=dict)  # interfaces but lo
    net_tx_bytes: dict[str, float] = field(default_factory=dict)
    # Every process: (pid, start time) → (comm, user + system CPU), in the
    # unit of cpu_total (/proc: clock ticks); None where not read (node_exporter).
    procs: dict[tuple[int, int], tuple[str, int]] | None = None


# ------------------------------------------------------------ which devices

_NOT_DISKS = ("loop", "ram", "zram", "sr")
# Device-mapper and md devices sit on top of disks that are counted too:
# their IO is left out of the IOPS sum (it would count twice), but they can
# still be the busiest device.
_STACKED = ("dm-", "md")


def whole_disks(names) -> set[str]:
    """The names that are real disks: no loop/ram/optical devices, and no
    partition of a device that is itself listed (sda1 of sda, nvme0n1p1 of
    nvme0n1), so IO is not counted twice."""
    names = {n for n in names if not n.startswith(_NOT_DISKS)}

    def partition(name: str) -> bool:
        base = name.rstrip("0123456789")
        return base != name and (base in names or (base.endswith("p") and base[:-1] in names))

    return {n for n in names if not partition(n)}


def disk_counters(c: Counters, io_time: dict, reads: dict, writes: dict) -> None:
    disks = whole_disks(io_time.keys() | reads.keys() | writes.keys())
    c.disk_io_time_s = {d: v for d, v in io_time.items() if d in disks}
    c.disk_ios = {d: reads[d] + writes[d] for d in disks
                  if d in reads and d in writes and not d.startswith(_STACKED)}



# ------------------------------------------------------------ rates


class _Reset(Exception):
    """A counter went backwards (host rebooted, device re-created)."""


def _increase(a: dict, b: dict) -> dict:
    d = {k: b[k] - a[k] for k in a.keys() & b.keys()}
    if any(v < 0 for v in d.values()):
        raise _Reset
    return d


def _rate(a: dict, b: dict, dt: float) -> float | None:
    d = _increase(a, b)
    return sum(d.values()) / dt if d else None


def cpu_split(a: dict, b: dict, total: float, busy_pct: float) -> tuple[float, float, float, dict[str, float]]:
    """The busy CPU of an interval (busy_pct of `total` ticks, all CPUs)
    by CPU_GROUPS, from the processes' CPU at its two ends: (fio, storage,
    other, {storage name: %}). A process that started in the interval
    counts whole; one that ended in it is not seen (its last second lost).
    Processes and /proc/stat are not read at the same instant: when the
    processes' share comes out above busy_pct, it is scaled down to it;
    what they do not explain (interrupts, the rest) is "other"."""
    ticks = {"fio": 0, "storage": 0}
    names: dict[str, int] = {}
    for key, (name, used) in b.items():
        before = a.get(key)
        spent = used - before[1] if before else used
        group = cpu_group(name)
        if spent <= 0 or group == "other":
            continue
        ticks[group] += spent
        if group == "storage":
            names[name] = names.get(name, 0) + spent
    fio, storage = 100.0 * ticks["fio"] / total, 100.0 * ticks["storage"] / total
    scale = min(1.0, busy_pct / (fio + storage)) if fio + storage > 0 else 1.0
    by_name = {n: 100.0 * t / total * scale for n, t in names.items()}
    fio, storage = fio * scale, storage * scale
    return fio, storage, max(0.0, busy_pct - fio - storage), by_name


def sample(a: Counters, b: Counters, dt: float, t_s: float) -> HostSample | None:
    """The sample of the interval between readings a and b, dt seconds apart;
    None when a counter went backwards."""
    try:
        cpu = split = None
        if a.cpu_total is not None and b.cpu_total is not None:
            total, idle = b.cpu_total - a.cpu_total, b.cpu_idle - a.cpu_idle
            if total < 0:
                raise _Reset
            if total > 0:
                cpu = min(100.0, max(0.0, 100.0 * (1 - idle / total)))
                if a.procs is not None and b.procs is not None:
                    split = cpu_split(a.procs, b.procs, total, cpu)
        io_time = _increase(a.disk_io_time_s, b.disk_io_time_s)
        # readings are not taken exactly dt apart, so cap at 100 %
        busy = min(100.0, 100.0 * max(io_time.values()) / dt) if io_time else None
        return HostSample(t_s, cpu, busy, _rate(a.disk_ios, b.disk_ios, dt),
                          _rate(a.net_rx_bytes, b.net_rx_bytes, dt),
                          _rate(a.net_tx_bytes, b.net_tx_bytes, dt), *(split or ()))
    except _Reset:
        return None
