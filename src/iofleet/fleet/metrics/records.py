"""What is kept of a host over a test: its CPU (split by who used it on
the local host), disk and network figures over the measured part, and the
per-second series whole.

The fleet measures them (metrics.sampler) and the run model carries them,
so they live in the stage that makes them, as fio's records do in fio;
results stores, reads and exports them unchanged.
"""

from dataclasses import dataclass

# Who used a host's CPU (metrics.counters.cpu_group says by process name).
CPU_GROUPS = ("fio", "storage", "other")
TOP_NAMES = 5  # the storage names kept per host (the busiest)


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
