"""Host metrics measured during a test: CPU, disk and network use of each
host, sampled once a second. Remote hosts are read from their node_exporter,
the controller's own host straight from /proc.

Both give cumulative counters (`Counters`); a sample is the difference of
two consecutive readings divided by the time between them.

On the local host the busy CPU is also split by who used it (CPU_GROUPS):
fio, the storage's own daemons and clients on the same host (a
hyperconverged host: Ceph OSDs beside fio), and the rest. node_exporter
does not give per-process CPU: a remote host's split is None (n/a).
"""

import os
import posixpath
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


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
CPU_GROUPS = ("fio", "storage", "other")
TOP_NAMES = 5  # the storage names kept per host (the busiest)


def cpu_group(name: str) -> str:
    """"fio", "storage" or "other": what a process is, by its comm."""
    if name in FIO_NAMES:
        return "fio"
    if name in STORAGE_NAMES or name.startswith(STORAGE_PREFIXES):
        return "storage"
    return "other"


@dataclass
class HostCpu:
    """Host CPU utilization during the measured part (/proc/stat or
    node_exporter). On the local host, the busy CPU split by who used it
    (CPU_GROUPS, over the same samples: fio + storage + other = avg); None
    where not known (a remote host), never 0."""

    samples: int
    avg_pct: float | None
    max_pct: float | None
    fio_avg_pct: float | None = None  # fio's processes, % of all CPUs
    storage_avg_pct: float | None = None  # the storage's daemons and clients on this host
    other_avg_pct: float | None = None  # everything else, interrupts included
    storage_by_name: dict[str, float] | None = None  # the busiest storage processes by name → mean %, busiest first

    @property
    def split(self) -> bool:
        return self.fio_avg_pct is not None


def top_names(by_name: dict[str, float], n: int = TOP_NAMES) -> dict[str, float]:
    """The n largest shares, largest first (ties by name)."""
    return dict(sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


def mean_cpu(cpus: list[HostCpu | None]) -> HostCpu | None:
    """CPU of several hosts (a fleet, a host group): the mean of their
    averages and the highest maximum, over hosts with samples; None when
    none has any (unknown, never 0 %). The split is the mean of the hosts'
    splits when every one of them has it, else None."""
    known = [c for c in cpus if c and c.samples]
    if not known:
        return None
    out = HostCpu(sum(c.samples for c in known), sum(c.avg_pct for c in known) / len(known),
                  max(c.max_pct for c in known))
    if all(c.split for c in known):
        n = len(known)
        names: dict[str, float] = {}
        for c in known:
            for name, pct in (c.storage_by_name or {}).items():
                names[name] = names.get(name, 0.0) + pct / n
        out.fio_avg_pct = sum(c.fio_avg_pct for c in known) / n
        out.storage_avg_pct = sum(c.storage_avg_pct for c in known) / n
        out.other_avg_pct = sum(c.other_avg_pct for c in known) / n
        out.storage_by_name = top_names(names)
    return out


@dataclass
class HostSample:
    """One interval of one host."""

    t_s: float  # seconds since the sampler started, end of the interval
    cpu_pct: float | None
    disk_busy_pct: float | None  # the busiest disk
    disk_iops: float | None  # reads + writes completed, all disks
    net_rx_bytes_s: float | None  # all interfaces but lo
    net_tx_bytes_s: float | None
    # The local host's busy CPU (cpu_pct) by CPU_GROUPS; None where not known.
    cpu_fio_pct: float | None = None
    cpu_storage_pct: float | None = None
    cpu_other_pct: float | None = None
    cpu_storage_by_name: dict[str, float] | None = None  # every storage process name with CPU in the interval


@dataclass
class HostMetrics:
    """One host over one test: figures over the measured part, the series whole."""

    host: str
    source: str  # "node_exporter" | "local" | "none" (no endpoint: shown as n/a, never 0 %)
    samples: int
    cpu: HostCpu
    disk_busy_avg_pct: float | None
    disk_busy_max_pct: float | None
    disk_iops_avg: float | None
    net_rx_avg_bytes_s: float | None
    net_tx_avg_bytes_s: float | None
    series: list[HostSample]  # the whole run, ramp included, for plots
    error: str | None = None  # why scrapes failed, if any did


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


def _whole_disks(names) -> set[str]:
    """The names that are real disks: no loop/ram/optical devices, and no
    partition of a device that is itself listed (sda1 of sda, nvme0n1p1 of
    nvme0n1), so IO is not counted twice."""
    names = {n for n in names if not n.startswith(_NOT_DISKS)}

    def partition(name: str) -> bool:
        base = name.rstrip("0123456789")
        return base != name and (base in names or (base.endswith("p") and base[:-1] in names))

    return {n for n in names if not partition(n)}


def _disk_counters(c: Counters, io_time: dict, reads: dict, writes: dict) -> None:
    disks = _whole_disks(io_time.keys() | reads.keys() | writes.keys())
    c.disk_io_time_s = {d: v for d, v in io_time.items() if d in disks}
    c.disk_ios = {d: reads[d] + writes[d] for d in disks
                  if d in reads and d in writes and not d.startswith(_STACKED)}


# ------------------------------------------------------------ node_exporter

_CPU = "node_cpu_seconds_total"
_IO_TIME = "node_disk_io_time_seconds_total"
_READS = "node_disk_reads_completed_total"
_WRITES = "node_disk_writes_completed_total"
_RX = "node_network_receive_bytes_total"
_TX = "node_network_transmit_bytes_total"
_AVAIL = "node_filesystem_avail_bytes"


def _samples(text: str, names: tuple[str, ...]):
    """(name, labels, value) of the named metrics in exporter text. Only their
    lines go to the parser: a whole node_exporter page (~1000 lines) takes
    ~8 ms to parse, too much once a second for many hosts."""
    from prometheus_client.parser import text_string_to_metric_families  # here: a run without node_exporter never needs it (~10 ms)

    wanted = re.compile(r"^(?:%s)[{ ].*$" % "|".join(map(re.escape, names)), re.M)
    for family in text_string_to_metric_families("\n".join(wanted.findall(text)) + "\n"):
        for s in family.samples:
            yield s.name, s.labels, s.value


def parse_exporter(text: str) -> Counters:
    """The counters in a node_exporter /metrics page."""
    c = Counters()
    per_device = {_IO_TIME: {}, _READS: {}, _WRITES: {}, _RX: {}, _TX: {}}
    for name, labels, value in _samples(text, (_CPU, *per_device)):
        if name == _CPU:
            # node_exporter has no guest modes (they are inside user/nice),
            # so the sum of its modes is the total, as with /proc/stat.
            c.cpu_total = (c.cpu_total or 0.0) + value
            if labels.get("mode") in ("idle", "iowait"):
                c.cpu_idle = (c.cpu_idle or 0.0) + value
        elif "device" in labels:
            per_device[name][labels["device"]] = value
    if c.cpu_total is not None and c.cpu_idle is None:
        c.cpu_total = None  # no idle mode: busy % cannot be told
    _disk_counters(c, per_device[_IO_TIME], per_device[_READS], per_device[_WRITES])
    c.net_rx_bytes = {d: v for d, v in per_device[_RX].items() if d != "lo"}
    c.net_tx_bytes = {d: v for d, v in per_device[_TX].items() if d != "lo"}
    return c


def exporter_facts(text: str) -> dict:
    """A host's CPU count and memory from its node_exporter page (None
    where the page does not say)."""
    cpus = {labels.get("cpu") for _, labels, _ in _samples(text, (_CPU,))} - {None}
    memory = [value for _, _, value in _samples(text, ("node_memory_MemTotal_bytes",))]
    return {"cpus": len(cpus) or None, "memory_bytes": int(memory[0]) if memory else None}


_SIZE = "node_filesystem_size_bytes"
_FS_ERROR = "node_filesystem_device_error"


def free_bytes(metrics_text: str, path: str) -> int | None:
    """Bytes available to users on the filesystem holding `path`: that of the
    longest mountpoint containing it, component-wise (/mnt/a holds /mnt/a/x,
    not /mnt/ab). None when the exporter does not list one, or cannot read
    it: a statfs error, or a size of 0 (a FUSE mount without allow_other
    answers node_exporter's user with zeros, not an error). A mount the
    exporter leaves out (Debian's excludes /mnt, /media and /run) is not
    seen at all: the one around it answers; the SSH facts (statvfs through
    df, fleet/control/host.py) say the target's own."""
    if not path.startswith("/"):
        return None  # a host's own path is absolute; a relative one names nothing
    path = posixpath.normpath(path)
    best, found = -1, {}  # the longest mountpoint holding path: its figures by metric name
    for name, labels, value in _samples(metrics_text, (_AVAIL, _SIZE, _FS_ERROR)):
        mount = labels.get("mountpoint", "")
        inside = mount == "/" or path == mount or path.startswith(mount.rstrip("/") + "/")
        # >= : of two mounts on one mountpoint, the later one is the visible one
        if mount.startswith("/") and inside and len(mount) >= best:
            if len(mount) > best:
                best, found = len(mount), {}
            found[name] = value
    if found.get(_FS_ERROR) or found.get(_SIZE) == 0 or _AVAIL not in found:
        return None
    return int(found[_AVAIL])


# ------------------------------------------------------------ local /proc


def proc_stat_entry(line: bytes) -> tuple[tuple[int, int], str, int] | None:
    """One /proc/PID/stat line → ((pid, start time), comm, utime + stime),
    or None when it cannot be read. The comm is in parentheses and may hold
    spaces and parentheses itself: the fields are after its last ')'.
    utime, stime and starttime are fields 14, 15 and 22 (proc(5)); a
    process's own figures include all of its threads (fio's job threads)."""
    head, sep, tail = line.rpartition(b")")
    pid, _, comm = head.partition(b" (")
    fields = tail.split()
    if not sep or len(fields) < 20:
        return None
    try:
        return (int(pid), int(fields[19])), comm.decode("utf-8", "replace"), int(fields[11]) + int(fields[12])
    except ValueError:
        return None


def read_procs(proc: str = "/proc") -> dict[tuple[int, int], tuple[str, int]]:
    """Every process's CPU so far: (pid, start time) → (comm, utime +
    stime in clock ticks, /proc/stat's unit). One pass over /proc; a
    process that ends meanwhile is skipped."""
    out = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"{proc}/{name}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            line = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        entry = proc_stat_entry(line)
        if entry:
            out[entry[0]] = entry[1:]
    return out


def read_local(proc: str = "/proc") -> Counters:
    """The counters of this host, from /proc (a missing file: those fields
    stay missing)."""
    c = Counters()
    try:
        c.procs = read_procs(proc)
    except OSError:
        pass
    try:
        with open(f"{proc}/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        c.cpu_idle = fields[3] + fields[4]  # idle + iowait
        c.cpu_total = sum(fields[:8])  # guest time is already inside user/nice
    except (OSError, ValueError, IndexError):
        pass
    io_time, reads, writes = {}, {}, {}
    try:
        with open(f"{proc}/diskstats") as f:
            for line in f:
                p = line.split()
                if len(p) >= 14:  # fields 4 reads, 8 writes completed, 13 io_ticks (ms)
                    reads[p[2]], writes[p[2]], io_time[p[2]] = int(p[3]), int(p[7]), int(p[12]) / 1000
    except OSError:
        pass
    _disk_counters(c, io_time, reads, writes)
    try:
        with open(f"{proc}/net/dev") as f:
            for line in f.readlines()[2:]:  # two header lines
                name, _, data = line.partition(":")
                p, name = data.split(), name.strip()
                if name != "lo" and len(p) >= 9:
                    c.net_rx_bytes[name], c.net_tx_bytes[name] = int(p[0]), int(p[8])
    except OSError:
        pass
    return c


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


# ------------------------------------------------------------ the sampler


def _why(exc: Exception) -> str:
    """'connection refused', 'timed out', 'HTTP 404 Not Found', ..."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    reason = getattr(exc, "reason", exc)  # URLError wraps the socket's error
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


# Exporters are on the hosts' own network: never go through an http_proxy
# from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch_metrics(url: str, timeout: float = 3.0) -> str:
    """The text of an exporter's /metrics page. Raises OSError saying why
    not, in a few words ('connection refused', 'timed out', 'HTTP 404 Not Found')."""
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            return resp.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:  # ValueError: not an http URL
        raise OSError(_why(exc)) from None


def _avg(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class MetricsSampler:
    """Samples hosts once every `interval` seconds in a background thread
    while a test runs.

    sources: host name -> node_exporter /metrics URL, or None (no metrics).
    local: the name under which this host is sampled from /proc, or None.
    All exporters are scraped at once (each with its own `timeout`), so one
    slow host never delays the others.
    """

    def __init__(self, sources: dict[str, str | None], local: str | None = None,
                 interval: float = 1.0, timeout: float = 0.8):
        self.sources, self.local = dict(sources), local
        self.interval, self.timeout = interval, timeout
        self._urls = {h: u for h, u in self.sources.items() if u and h != local}
        hosts = [*self.sources, *([local] if local and local not in self.sources else [])]
        self._series: dict[str, list[HostSample]] = {h: [] for h in hosts}
        self._last: dict[str, tuple[float, Counters]] = {}  # previous reading
        self._scrapes: dict[str, int] = {}  # per host: scrapes done,
        self._failures: dict[str, int] = {}  # of which failed,
        self._problem: dict[str, str] = {}  # and why the last failure did
        self._busy: set[str] = set()  # hosts with a scrape in flight
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=min(32, len(self._urls)) or 1,
                                        thread_name_prefix="metrics")
        self._thread = threading.Thread(target=self._loop, name="metrics-sampler", daemon=True)

    def __enter__(self) -> "MetricsSampler":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            self._closed = True  # a scrape still in flight is dropped
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        tick = self._start
        while True:
            with self._lock:
                due = [h for h in self._urls if h not in self._busy]
                self._busy.update(due)
            for host in due:  # a host still busy with the last scrape skips this one
                self._pool.submit(self._scrape, host)
            if self.local:
                t0 = time.monotonic()
                counters = read_local()
                self._record(self.local, (t0 + time.monotonic()) / 2, counters)
            # ticks on a fixed grid, so a slow interval does not shift the next ones
            tick += self.interval * max(1, int((time.monotonic() - tick) // self.interval) + 1)
            if self._stop.wait(max(0.0, tick - time.monotonic())):
                return

    def _scrape(self, host: str) -> None:
        url, problem = self._urls[host], None
        t0 = time.monotonic()
        try:
            counters = parse_exporter(fetch_metrics(url, self.timeout))
            if counters == Counters():
                problem = "no node_exporter counters in its answer"
            else:  # the exporter read its counters somewhere during the request
                self._record(host, (t0 + time.monotonic()) / 2, counters)
        except (OSError, ValueError) as exc:  # ValueError: a page the parser refuses
            problem = str(exc)
        with self._lock:
            self._scrapes[host] = self._scrapes.get(host, 0) + 1
            self._busy.discard(host)
            if problem:
                self._failures[host] = self._failures.get(host, 0) + 1
                self._problem[host] = f"metrics endpoint {url}: {problem}"

    def _record(self, host: str, stamp: float, counters: Counters) -> None:
        with self._lock:
            if self._closed:
                return
            prev = self._last.get(host)
            self._last[host] = (stamp, counters)
            if prev and stamp > prev[0]:
                s = sample(prev[1], counters, stamp - prev[0], stamp - self._start)
                if s:
                    self._series[host].append(s)

    def latest(self) -> dict[str, HostSample]:
        """The most recent sample of each host that has one (live progress)."""
        with self._lock:
            return {h: s[-1] for h, s in self._series.items() if s}

    def summary(self, skip_s: float = 0.0, until_s: float | None = None) -> dict[str, HostMetrics]:
        """Each host's figures over the intervals inside (skip_s, until_s]
        (the ramp left out); `series` keeps every sample."""
        with self._lock:
            series = {h: list(s) for h, s in self._series.items()}
            scrapes, failures, problem = dict(self._scrapes), dict(self._failures), dict(self._problem)
        out = {}
        for host, all_samples in series.items():
            # A sample covers (t_s - interval, t_s]: count it only when that
            # interval lies inside the measured part (10 % slack for scrape timing).
            slack = 0.1 * self.interval
            window = [s for s in all_samples if s.t_s - self.interval >= skip_s - slack
                      and (until_s is None or s.t_s <= until_s + slack)]

            def values(attr: str) -> list[float]:
                return [v for s in window if (v := getattr(s, attr)) is not None]

            cpu, busy = values("cpu_pct"), values("disk_busy_pct")
            host_cpu = HostCpu(len(cpu), _avg(cpu), max(cpu, default=None))
            split = [s for s in window if s.cpu_fio_pct is not None]
            if split:  # the local host: the same samples, by who used the CPU
                names: dict[str, float] = {}
                for s in split:
                    for name, pct in (s.cpu_storage_by_name or {}).items():
                        names[name] = names.get(name, 0.0) + pct / len(split)
                host_cpu.fio_avg_pct = _avg([s.cpu_fio_pct for s in split])
                host_cpu.storage_avg_pct = _avg([s.cpu_storage_pct for s in split])
                host_cpu.other_avg_pct = _avg([s.cpu_other_pct for s in split])
                host_cpu.storage_by_name = top_names(names)
            error = problem.get(host)
            if error and failures[host] < scrapes[host]:
                error += f" ({failures[host]} of {scrapes[host]} scrapes failed)"
            source = "local" if host == self.local else "node_exporter" if self._urls.get(host) else "none"
            out[host] = HostMetrics(
                host=host, source=source, samples=len(window),
                cpu=host_cpu,
                disk_busy_avg_pct=_avg(busy), disk_busy_max_pct=max(busy, default=None),
                disk_iops_avg=_avg(values("disk_iops")),
                net_rx_avg_bytes_s=_avg(values("net_rx_bytes_s")),
                net_tx_avg_bytes_s=_avg(values("net_tx_bytes_s")),
                series=all_samples, error=error)
        return out
