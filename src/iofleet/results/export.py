"""The export format of a stored run: its JSON fields (built by
results.model.Run.to_dict) and its CSV columns (results.model.run_to_csv).

Units are in every field name (`_us` microseconds, `_mb_s` 10^6 bytes/s,
`_bytes`, `_pct`, `_s`, `_ms`). A value that is unavailable is null (empty in
CSV), never 0. The fields are defined once in the tables below, which the
tests check against docs/results-format.md.
"""

import math
from dataclasses import dataclass, field

from ..fio.records import PERCENTILES, DirectionStats, pct_key
from ..fleet.metrics.records import HostCpu, HostMetrics
from ..plan.params import PARAMS
from ..units import at_ceiling
from .aggregate import Aggregate

FORMAT = "iofleet-results"
FORMAT_VERSION = 1

# Figures of one IO direction (read, write or all) of a test or a host.
DIRECTION_FIELDS: dict[str, str] = {
    "iops": "IOs per second",
    "bw_mb_s": "throughput, MB/s (10^6 bytes per second)",
    "bw_bytes_s": "throughput, bytes per second",
    "ios": "IOs completed in the measured time",
    "io_bytes": "bytes transferred in the measured time",
    "runtime_ms": "measured time, milliseconds (longest job)",
    "lat_mean_us": "mean latency, microseconds (IO-weighted over jobs)",
    "lat_stddev_us": "standard deviation of latency, microseconds (pooled over jobs)",
    "lat_min_us": "lowest latency, microseconds",
    "lat_max_us": "highest latency, microseconds",
    **{
        f"lat_{pct_key(p).replace('.', '_')}_us":
            f"{p:g}th percentile of latency, microseconds (from merged histograms; null if not known exactly)"
        for p in PERCENTILES
    },
    "percentile_basis": "what the latency percentiles describe: lat (total), clat (completion only) or mixed",
    "lat_bound_percentiles": "the percentiles at fio's histogram ceiling (17.046 s), lower bounds shown as "
                             "\"≥\": their keys, space-separated (e.g. \"p99.9 p99.99\"); null when none",
}
BINS_FIELD = "lat_bins_ns"  # only with include_bins=True

# Per test, beside its direction figures `read`, `write`, `all`.
TEST_FIELDS: dict[str, str] = {
    "seq": "position of the test in the run, 0-based",
    "id": "readable test id, e.g. 4k-r70-rand-j2-qd8",
    "workload": "workload name from the plan",
    "repeat": "which repeat of the test this is, 1-based",
    "params": "the test's parameters (plan names: bs and size in bytes, runtime and ramp in seconds)",
    "status": "ok, failed, interrupted or partial",
    "error": "fio's own error line, or null",
    "started_at": "start time, ISO-8601 UTC",
    "ended_at": "end time, ISO-8601 UTC",
    "fio_jobs": "number of fio jobs (threads, over all hosts) in the figures",
    "read": "figures of read IO",
    "write": "figures of write IO",
    "all": "figures of all IO",
    "host_cpu_samples": "number of host CPU samples taken during the measured time",
    "host_cpu_avg_pct": "mean host CPU utilization, % of all CPUs",
    "host_cpu_max_pct": "highest host CPU utilization sample, % of all CPUs",
    "host_cpu_fio_avg_pct": "the mean host CPU used by fio, % of all CPUs; null where not known (node_exporter hosts)",
    "host_cpu_storage_avg_pct": "the mean host CPU used by storage daemons and clients on the host (ceph-osd, "
                                "ceph-fuse, ...), % of all CPUs; null where not known",
    "host_cpu_other_avg_pct": "the rest of the mean host CPU, % of all CPUs; null where not known",
    "host_cpu_storage_by_name": "{process name: mean % of all CPUs} of the busiest storage processes; null where "
                                "not known",
    "fio_usr_cpu_pct": "fio's user CPU per job, mean over jobs, % of one CPU",
    "fio_sys_cpu_pct": "fio's system CPU per job, mean over jobs, % of one CPU",
    "hosts": "per-host figures: {host: host fields}",
    "disks": "fio's disk utilization: list of disk fields",
    "host_metrics": "{host: host metric fields}, sampled once a second",
    "controller_metrics": "host metric fields of the machine running iofleet in a fleet test, else null",
    "fleet": "null for one host; else hosts, skew and (mixed plans) groups",
    "groups": "mixed plans: {workload: host fields of its host group}",
    "methodology": "steady-state verdicts (iops, lat), measurement window, caches, cache or capacity test "
                   "per host (docs/methodology.md)",
}

# Per host of a test: `read`, `write`, `all` plus these.
HOST_FIELDS: dict[str, str] = {
    "fio_jobs": "number of fio jobs on this host",
    "read": "figures of read IO on this host",
    "write": "figures of write IO on this host",
    "all": "figures of all IO on this host",
    "fio_usr_cpu_pct": "fio's user CPU per job on this host, mean over jobs, % of one CPU",
    "fio_sys_cpu_pct": "fio's system CPU per job on this host, mean over jobs, % of one CPU",
}

DISK_FIELDS: dict[str, str] = {
    "host": "host of the disk",
    "name": "block device name, e.g. nvme0n1",
    "util_pct": "device utilization during the test, %",
    "read_ios": "read IOs the device completed",
    "write_ios": "write IOs the device completed",
}

RUN_FIELDS: dict[str, str] = {
    "format": f"always {FORMAT!r}",
    "format_version": f"version of this export format ({FORMAT_VERSION})",
    "id": "run id (as in `iofleet results show ID`)",
    "label": "label given to the run, or null",
    "plan_name": "name of the plan",
    "plan_text": "the plan YAML as given, or null for imports without one",
    "source": "run (measured by iofleet) or import (fio output imported)",
    "status": "running, complete, failed, interrupted or partial",
    "created_at": "start of the run, ISO-8601 UTC",
    "ended_at": "end of the run, ISO-8601 UTC, or null",
    "fio_version": "fio version that produced the figures",
    "host_facts": "facts of the host(s): hostname, kernel, cpus, memory_bytes, ...; a fleet run's hosts[] each carry "
                  "`facts` read through SSH (kernel, cpus, memory_bytes, targets: filesystem, device, model, "
                  "firmware, scheduler, rotational)",
    "tests_planned": "number of tests in the plan",
    "note": "note on the run (e.g. why it is partial), or null",
    "methodology": "preparation (mode, passes, bytes per host, seconds) and cache policy, or null",
    "tests": "list of test fields, in run order",
}

# CSV parameter columns: (column, key in the test's params), in the parameter table's order.
CSV_PARAMS: tuple[tuple[str, str], ...] = tuple((p.column, name) for name, p in PARAMS.items() if p.column)
CSV_TEST = ("run_id", "fio_version", "seq", "test_id", "workload", "repeat", "status", "error",
             "started_at", "ended_at")
CSV_CPU = ("host_cpu_samples", "host_cpu_avg_pct", "host_cpu_max_pct", "fio_usr_cpu_pct", "fio_sys_cpu_pct")
CSV_COLUMNS: tuple[str, ...] = (
    CSV_TEST
    + tuple(col for col, _ in CSV_PARAMS)
    + ("fio_jobs",)
    + tuple(f"{d}_{f}" for d in ("all", "read", "write") for f in DIRECTION_FIELDS)
    + CSV_CPU
)

# Every documented name, by where it appears (see docs/results-format.md).
EXPORT_FIELDS: dict[str, dict[str, str]] = {
    "run": RUN_FIELDS,
    "test": TEST_FIELDS,
    "direction": DIRECTION_FIELDS,
    "host": HOST_FIELDS,
    "disk": DISK_FIELDS,
}


def _us(ns):
    return None if ns is None else ns / 1000


@dataclass(frozen=True)
class DirectionFigures:
    """One IO direction's figures in export units (DIRECTION_FIELDS), typed:
    what analysis reads of a test, a host or a window. All None when
    nothing was measured. `lat_pct_us` holds the percentiles by their key
    ("p99", "p99.9"): None where not known exactly."""

    iops: float | None = None
    bw_mb_s: float | None = None
    bw_bytes_s: float | None = None
    ios: int | None = None
    io_bytes: int | None = None
    runtime_ms: int | None = None
    lat_mean_us: float | None = None
    lat_stddev_us: float | None = None
    lat_min_us: float | None = None
    lat_max_us: float | None = None
    lat_pct_us: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(map(pct_key, PERCENTILES)))
    percentile_basis: str | None = None

    @classmethod
    def of(cls, d: DirectionStats | None) -> "DirectionFigures":
        if d is None:
            return cls()
        return cls(iops=d.iops, bw_mb_s=d.bw_bytes_s / 1e6, bw_bytes_s=d.bw_bytes_s, ios=d.ios, io_bytes=d.io_bytes,
                   runtime_ms=d.runtime_ms, lat_mean_us=_us(d.lat_mean_ns), lat_stddev_us=_us(d.lat_stddev_ns),
                   lat_min_us=_us(d.lat_min_ns), lat_max_us=_us(d.lat_max_ns),
                   lat_pct_us={pct_key(p): _us(d.percentiles_ns.get(pct_key(p))) for p in PERCENTILES},
                   percentile_basis=d.percentile_basis)

    @classmethod
    def from_dict(cls, f: dict | None) -> "DirectionFigures":
        """Figures stored in export units (a measurement window's), as stored."""
        f = f or {}
        return cls(**{k: f.get(k) for k in DIRECTION_FIELDS if k not in _PCT_FIELDS and k != _BOUNDS},
                   lat_pct_us={key: f.get(k) for k, key in _PCT_FIELDS.items()})

    def to_dict(self) -> dict:
        """The export fields, in DIRECTION_FIELDS' order."""
        return {k: self.lat_pct_us.get(_PCT_FIELDS[k]) if k in _PCT_FIELDS else getattr(self, k)
                for k in DIRECTION_FIELDS}

    @property
    def lat_bound_percentiles(self) -> str | None:
        """The percentiles at fio's histogram ceiling (lower bounds), space-separated; None if none."""
        return " ".join(key for key, v in self.lat_pct_us.items() if at_ceiling(v, "us")) or None

    def lat_us(self, metric: str) -> float | None:
        """Latency by its name: "mean", or a percentile key ("p99")."""
        return self.lat_mean_us if metric == "mean" else self.lat_pct_us.get(metric)


_BOUNDS = "lat_bound_percentiles"  # derived from the percentiles: not stored apart
# The percentiles' export fields → their keys: lat_p99_9_us → p99.9.
_PCT_FIELDS = {f"lat_{pct_key(p).replace('.', '_')}_us": pct_key(p) for p in PERCENTILES}


@dataclass(frozen=True)
class Figures:
    """An aggregate's figures in export units (a test's, a host's, a host
    group's, a measurement window's: aggregate_figures' fields), typed."""

    fio_jobs: int | None = None
    read: DirectionFigures = field(default_factory=DirectionFigures)
    write: DirectionFigures = field(default_factory=DirectionFigures)
    all: DirectionFigures = field(default_factory=DirectionFigures)
    fio_usr_cpu_pct: float | None = None
    fio_sys_cpu_pct: float | None = None
    # False: a measurement window stored before it had figures per direction
    # (its IOPS and MB/s alone, in `all`).
    per_direction: bool = True

    @classmethod
    def of(cls, agg: Aggregate | None) -> "Figures":
        if agg is None:
            return cls()
        return cls(fio_jobs=agg.jobs, read=DirectionFigures.of(agg.read), write=DirectionFigures.of(agg.write),
                   all=DirectionFigures.of(agg.all), fio_usr_cpu_pct=agg.usr_cpu_pct,
                   fio_sys_cpu_pct=agg.sys_cpu_pct)

    @classmethod
    def of_window(cls, window: dict) -> "Figures":
        """A measurement window's stored figures (methodology.window: read,
        write, all); one stored before those: its IOPS and MB/s."""
        if "all" not in window:
            bw = window.get("bw_bytes_s")
            return cls(all=DirectionFigures(iops=window.get("iops"), bw_bytes_s=bw,
                                            bw_mb_s=None if bw is None else bw / 1e6), per_direction=False)
        return cls(read=DirectionFigures.from_dict(window.get("read")),
                   write=DirectionFigures.from_dict(window.get("write")),
                   all=DirectionFigures.from_dict(window.get("all")))

    def direction(self, name: str) -> DirectionFigures:
        return {"read": self.read, "write": self.write, "all": self.all}[name]


def direction_figures(d: DirectionStats | None, include_bins: bool = False) -> dict:
    """The export fields of one direction; all null when nothing was measured."""
    out = DirectionFigures.of(d).to_dict()
    if include_bins:
        bins = None if d is None else d.bins
        # JSON object keys are strings.
        out[BINS_FIELD] = None if bins is None else {str(k): v for k, v in sorted(bins.items())}
    return out


def aggregate_figures(agg: Aggregate | None, include_bins: bool = False) -> dict:
    """The export fields of an aggregate (a test, host or host group); null when nothing was measured."""
    return {
        "fio_jobs": agg.jobs if agg else None,
        "read": direction_figures(agg.read if agg else None, include_bins),
        "write": direction_figures(agg.write if agg else None, include_bins),
        "all": direction_figures(agg.all if agg else None, include_bins),
        "fio_usr_cpu_pct": agg.usr_cpu_pct if agg else None,
        "fio_sys_cpu_pct": agg.sys_cpu_pct if agg else None,
    }


def host_metrics_figures(m: HostMetrics) -> dict:
    """The export fields of one host's metrics (fleet.metrics.records.HostMetrics)."""
    return {"source": m.source, "samples": m.samples, "cpu_avg_pct": m.cpu.avg_pct, "cpu_max_pct": m.cpu.max_pct,
            "cpu_fio_avg_pct": m.cpu.fio_avg_pct, "cpu_storage_avg_pct": m.cpu.storage_avg_pct,
            "cpu_other_avg_pct": m.cpu.other_avg_pct,
            "cpu_storage_by_name": None if m.cpu.storage_by_name is None else dict(m.cpu.storage_by_name),
            "disk_busy_avg_pct": m.disk_busy_avg_pct, "disk_busy_max_pct": m.disk_busy_max_pct,
            "disk_iops_avg": m.disk_iops_avg, "net_rx_avg_bytes_s": m.net_rx_avg_bytes_s,
            "net_tx_avg_bytes_s": m.net_tx_avg_bytes_s, "error": m.error}


# ---- reading an export back (results.model.Run.from_dict) -----------------

def _ns(us):
    """The nanoseconds `_us` turned into these microseconds: us × 1000, or
    the float next to it that divides back exactly (the export stays byte
    for byte what it was)."""
    if us is None:
        return None
    ns = us * 1000
    for _ in range(8):
        if ns / 1000 == us:
            return ns
        ns = math.nextafter(ns, math.inf if ns / 1000 < us else -math.inf)
    return us * 1000


def direction_of_figures(f: dict) -> DirectionStats:
    """The DirectionStats behind a direction's export fields (their IO count
    `lat_n` is not exported: 0); a field missing reads as nothing measured."""
    bins = f.get(BINS_FIELD)
    return DirectionStats(
        ios=f.get("ios") or 0, io_bytes=f.get("io_bytes") or 0, runtime_ms=f.get("runtime_ms") or 0,
        iops=f.get("iops") or 0.0, bw_bytes_s=f.get("bw_bytes_s") or 0.0, lat_mean_ns=_ns(f.get("lat_mean_us")),
        lat_stddev_ns=_ns(f.get("lat_stddev_us")), lat_min_ns=_ns(f.get("lat_min_us")),
        lat_max_ns=_ns(f.get("lat_max_us")),
        percentiles_ns={pct_key(p): _ns(f.get(f"lat_{pct_key(p).replace('.', '_')}_us")) for p in PERCENTILES},
        bins=None if bins is None else {int(k): v for k, v in bins.items()},
        percentile_basis=f.get("percentile_basis") or "lat")


def aggregate_of_figures(f: dict) -> Aggregate | None:
    """The Aggregate behind aggregate_figures (None: nothing was measured)."""
    if f.get("fio_jobs") is None:
        return None
    return Aggregate(jobs=f["fio_jobs"], read=direction_of_figures(f.get("read") or {}),
                     write=direction_of_figures(f.get("write") or {}), all=direction_of_figures(f.get("all") or {}),
                     usr_cpu_pct=f.get("fio_usr_cpu_pct"), sys_cpu_pct=f.get("fio_sys_cpu_pct"))


def host_metrics_of_figures(host: str, f: dict) -> HostMetrics:
    """The HostMetrics behind host_metrics_figures (its series are not exported)."""
    cpu = HostCpu(samples=f.get("samples") or 0, avg_pct=f.get("cpu_avg_pct"), max_pct=f.get("cpu_max_pct"),
                  fio_avg_pct=f.get("cpu_fio_avg_pct"), storage_avg_pct=f.get("cpu_storage_avg_pct"),
                  other_avg_pct=f.get("cpu_other_avg_pct"), storage_by_name=f.get("cpu_storage_by_name"))
    return HostMetrics(host=host, source=f.get("source") or "none", samples=f.get("samples") or 0, cpu=cpu,
                       disk_busy_avg_pct=f.get("disk_busy_avg_pct"), disk_busy_max_pct=f.get("disk_busy_max_pct"),
                       disk_iops_avg=f.get("disk_iops_avg"), net_rx_avg_bytes_s=f.get("net_rx_avg_bytes_s"),
                       net_tx_avg_bytes_s=f.get("net_tx_avg_bytes_s"), series=[], error=f.get("error"))
