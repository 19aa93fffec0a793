"""Records to rows and back: JSON and binary columns, a direction's
figures, host metrics, and a run's tests read in a few bulk queries.
Every number round-trips exactly (REAL is IEEE double, INTEGER is int64)."""

import json
import sqlite3
import sys
from array import array
from collections.abc import Iterable
from itertools import chain
from datetime import datetime, timezone

from ...fio.records import PERCENTILES, DirectionStats, DiskUtil, JobResult, pct_key
from ...fleet.metrics.records import HostCpu, HostMetrics
from ..methodology import FleetRecord, RunMethodology, TestMethodology
from ..model import Aggregate, TestRecord
from .failures import Damage

# Columns of a DirectionStats row, in table order (after the key columns).
PCT_COLS = {pct_key(p): pct_key(p).replace(".", "_") + "_ns" for p in PERCENTILES}
STAT_COLS = (
    "ios", "io_bytes", "runtime_ms", "iops", "bw_bytes_s", "lat_n",
    "lat_mean_ns", "lat_stddev_ns", "lat_min_ns", "lat_max_ns",
)
DIR_COLS = STAT_COLS + tuple(PCT_COLS.values()) + ("percentile_basis", "bins")
_DIR_SELECT = ", ".join(f"d.{c}" for c in DIR_COLS)

HOST_METRIC_COLS = ("host", "source", "samples", "cpu_avg_pct", "cpu_max_pct", "disk_busy_avg_pct",
                    "disk_busy_max_pct", "disk_iops_avg", "net_rx_avg_bytes_s", "net_tx_avg_bytes_s", "error",
                    "cpu_fio_avg_pct", "cpu_storage_avg_pct", "cpu_other_avg_pct", "cpu_storage_by_name")
# The HostCpu fields beside its samples: host_metrics has them as cpu_<field>,
# tests as host_cpu_<field>; storage_by_name is JSON ({name: pct}), NULL when not known.
CPU_FIELDS = ("avg_pct", "max_pct", "fio_avg_pct", "storage_avg_pct", "other_avg_pct", "storage_by_name")
SAMPLE_FIELDS = ("t_s", "cpu_pct", "disk_busy_pct", "disk_iops", "net_rx_bytes_s", "net_tx_bytes_s")

RUN_COLS = ("id", "label", "plan_name", "plan_text", "source", "status", "created_at", "ended_at", "fio_version",
            "host_facts", "tests_planned", "note", "methodology", "resume")


def iso(value) -> str | None:
    """Timestamps are stored as ISO-8601 UTC strings; datetimes are converted."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime: give timestamps in UTC")
        return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return value


def dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def loads(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        raise Damage(f"a stored JSON value is unreadable ({e})") from None


def pack(values: Iterable, typecode: str) -> bytes:
    a = array(typecode, values)
    if sys.byteorder == "big":  # stored little-endian whatever the machine
        a.byteswap()
    return a.tobytes()


def unpack(blob: bytes, typecode: str) -> list:
    a = array(typecode)
    try:
        a.frombytes(blob)
    except (TypeError, ValueError) as e:
        raise Damage(f"a stored series is unreadable ({e})") from None
    if sys.byteorder == "big":
        a.byteswap()
    return a.tolist()


def pack_bins(bins: dict[int, int]) -> bytes | str:
    """A latency histogram as int64 little-endian pairs (ns, count): a
    64-host test has thousands, and JSON took seconds to write and read.
    Counts that are not int64 (never from fio) stay JSON, as all bins were
    stored before issue 19: [[ns, count], ...]."""
    try:
        return pack(chain.from_iterable(bins.items()), "q")
    except (TypeError, OverflowError):
        return dumps(list(bins.items()))


def unpack_bins(value: bytes | str) -> dict[int, int]:
    if isinstance(value, str):  # JSON, as stored before issue 19
        return dict(loads(value))
    if not isinstance(value, bytes) or len(value) % 16:
        raise Damage("a stored latency histogram is unreadable (not int64 pairs)")
    pairs = unpack(value, "q")
    return dict(zip(pairs[::2], pairs[1::2]))


def run_fields(row: sqlite3.Row) -> dict:
    """The RunInfo fields of a runs row, JSON columns decoded."""
    out = {c: row[c] for c in RUN_COLS}
    out["host_facts"] = loads(out["host_facts"])
    out["methodology"] = RunMethodology.from_dict(loads(out["methodology"])) if out["methodology"] else None
    out["resume"] = loads(out["resume"]) if out["resume"] else None
    return out


def dir_row(d: DirectionStats) -> tuple:
    unknown = set(d.percentiles_ns) - set(PCT_COLS)
    if unknown:
        # Only the standard percentiles have columns; refuse rather than drop data.
        raise ValueError(f"percentiles {sorted(unknown)} are not stored; use {list(PCT_COLS)}")
    bins = None if d.bins is None else pack_bins(d.bins)
    return (
        tuple(getattr(d, c) for c in STAT_COLS)
        + tuple(d.percentiles_ns.get(k) for k in PCT_COLS)
        + (d.percentile_basis, bins)
    )


def dir_from_values(values) -> DirectionStats:
    """Rebuild a DirectionStats from its DIR_COLS values (by position: much
    faster than sqlite3.Row name lookups over thousands of rows)."""
    n_stat, n_pct = len(STAT_COLS), len(PCT_COLS)
    basis, bins = values[n_stat + n_pct], values[n_stat + n_pct + 1]
    return DirectionStats(
        **dict(zip(STAT_COLS, values[:n_stat])),
        # All standard percentiles come back; None where unavailable.
        percentiles_ns=dict(zip(PCT_COLS, values[n_stat:n_stat + n_pct])),
        bins=None if bins is None else unpack_bins(bins),
        percentile_basis=basis,
    )


def cpu_values(cpu: HostCpu | None) -> tuple:
    """The CPU_FIELDS of a HostCpu as stored (all NULL for None)."""
    if cpu is None:
        return (None,) * len(CPU_FIELDS)
    return tuple(dumps(v) if f == "storage_by_name" and v is not None else v
                 for f, v in ((f, getattr(cpu, f)) for f in CPU_FIELDS))


def cpu_from_values(samples: int, values) -> HostCpu:
    """A HostCpu from its samples and CPU_FIELDS as stored; a row from
    before the split (NULL, or no such column) has none."""
    fields = dict(zip(CPU_FIELDS, values))
    if fields["storage_by_name"] is not None:
        fields["storage_by_name"] = loads(fields["storage_by_name"])
    return HostCpu(samples, **fields)


def host_metric_value(m: HostMetrics, column: str):
    if column.startswith("cpu_"):
        return cpu_values(m.cpu)[CPU_FIELDS.index(column.removeprefix("cpu_"))]
    return getattr(m, column)


def host_metrics_from_row(r: sqlite3.Row) -> HostMetrics:
    """A stored host's figures; its series are read with get_host_series."""
    values = {c: r[c] for c in HOST_METRIC_COLS if not c.startswith("cpu_")}
    cpu = cpu_from_values(r["samples"], (r[f"cpu_{f}"] for f in CPU_FIELDS))
    return HostMetrics(**values, cpu=cpu, series=[])


class TestParts:
    """Everything below the tests rows of one run (its tests from a seq on),
    each read in one bulk query rather than several per test."""

    __test__ = False  # not a pytest test class, despite its name

    def __init__(self, conn: sqlite3.Connection, run_id: int, from_seq: int):
        self._conn, self._key = conn, (run_id, from_seq)
        self.directions = self._directions("test_directions d JOIN tests t ON t.id = d.test_pk", "d.test_pk")
        job_dirs = self._directions("job_directions d JOIN jobs j ON j.id = d.job_pk"
                                    " JOIN tests t ON t.id = j.test_pk", "d.job_pk")
        self.jobs: dict[int, list[JobResult]] = {}
        for r in self._rows("SELECT j.* FROM jobs j JOIN tests t ON t.id = j.test_pk WHERE {} ORDER BY j.id"):
            self.jobs.setdefault(r["test_pk"], []).append(JobResult(
                host=r["host"], job=r["job"], index=r["job_index"], error=r["error"],
                runtime_ms=r["runtime_ms"], usr_cpu_pct=r["usr_cpu_pct"],
                sys_cpu_pct=r["sys_cpu_pct"], **job_dirs[r["id"]],
            ))
        self.disks: dict[int, list[DiskUtil]] = {}
        for r in self._rows("SELECT d.* FROM disks d JOIN tests t ON t.id = d.test_pk WHERE {} ORDER BY d.id"):
            self.disks.setdefault(r["test_pk"], []).append(DiskUtil(
                host=r["host"], name=r["name"], util_pct=r["util_pct"],
                read_ios=r["read_ios"], write_ios=r["write_ios"],
            ))
        self.artifacts: dict[int, list[str]] = {}
        for r in self._rows("SELECT a.test_pk, a.name FROM artifacts a JOIN tests t ON t.id = a.test_pk"
                            " WHERE {} ORDER BY a.name"):
            self.artifacts.setdefault(r[0], []).append(r[1])
        self.metrics: dict[int, dict[str, list[HostMetrics]]] = {}
        for r in self._rows(f"SELECT m.test_pk, m.role, {', '.join('m.' + c for c in HOST_METRIC_COLS)}"
                            " FROM host_metrics m JOIN tests t ON t.id = m.test_pk WHERE {} ORDER BY m.rowid"):
            self.metrics.setdefault(r["test_pk"], {}).setdefault(r["role"], []).append(host_metrics_from_row(r))

    def _rows(self, sql: str):
        return self._conn.execute(sql.format("t.run_id = ? AND t.seq >= ?"), self._key)

    def _directions(self, tables: str, key: str) -> dict[int, dict[str, DirectionStats]]:
        out: dict[int, dict[str, DirectionStats]] = {}
        for r in self._rows(f"SELECT {key}, d.direction, {_DIR_SELECT} FROM {tables} WHERE {{}}"):
            out.setdefault(r[0], {})[r[1]] = dir_from_values(r[2:])
        return out

    def record(self, t: sqlite3.Row, artifact_dir: str | None) -> TestRecord:
        """The TestRecord of one tests row (artifact_dir: made absolute by the caller)."""
        pk = t["id"]
        aggregate = None
        if t["agg_jobs"] is not None:
            aggregate = Aggregate(jobs=t["agg_jobs"], usr_cpu_pct=t["usr_cpu_pct"],
                                  sys_cpu_pct=t["sys_cpu_pct"], **self.directions[pk])
        host_cpu = None
        if t["host_cpu_samples"] is not None:
            host_cpu = cpu_from_values(t["host_cpu_samples"], (t[f"host_cpu_{f}"] for f in CPU_FIELDS))
        metrics = self.metrics.get(pk, {})
        return TestRecord(
            pk=pk, seq=t["seq"], id=t["test_id"], workload=t["workload"], repeat=t["repeat"],
            params=loads(t["params"]), status=t["status"], error=t["error"],
            started_at=t["started_at"], ended_at=t["ended_at"], host_cpu=host_cpu,
            host_metrics=metrics.get("host", []), controller=(metrics.get("controller") or [None])[0],
            fleet=FleetRecord.from_dict(loads(t["fleet"])) if t["fleet"] else None,
            methodology=TestMethodology.from_dict(loads(t["methodology"])) if t["methodology"] else None,
            aggregate=aggregate, jobs=self.jobs.get(pk, []), disks=self.disks.get(pk, []),
            artifact_dir=artifact_dir, artifacts=self.artifacts.get(pk, []),
        )
