"""The results store: one SQLite database plus compressed artifact files.

Layout of a data directory:

    results.db                               runs, tests, metrics, series
    artifacts/run-<id>/<seq>-<test id>/*.gz  raw files of each test (fio JSON,
                                             job file, logs), gzip-compressed

Rules the store keeps:
- A test is saved in one transaction: after a crash or error nothing of it
  remains, and its artifact files are on disk before its row commits.
- Every number round-trips exactly (REAL is IEEE double, INTEGER is int64).
- The schema is versioned with `PRAGMA user_version` and migrated forward on
  open; a database from a newer iofleet is refused, never rewritten.
- A run being measured is held by its process: an exclusive lock on
  locks/run-<id>.lock (flock, released by the kernel when the process dies,
  even by kill -9). A run left 'running' that no process holds is stale:
  its process crashed, and `iofleet run --resume` can finish it.
- Running out of space (or any other write failure of the data directory)
  is a StoreError naming the directory, never a half-written test.
- A damaged database file (SQLite's "malformed" or "not a database", or a
  stored value that no longer decodes) is one StoreDamagedError naming the
  file and the commands that help (results/recover.py: check, recover).
- Processes creating or migrating one store at once take turns (an
  exclusive lock on locks/schema.lock): every one of them succeeds.
- A run id is an SQLite integer: a larger one is "no run N", as any unknown id.

A Store is one sqlite3 connection: use one Store per thread.
"""

import contextlib
import errno
import fcntl
import functools
import gzip
import json
import os
import shutil
import sqlite3
import sys
import time
from array import array
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from ..errors import StoreDamagedError, StoreError
from ..fio.records import DIRECTIONS, PERCENTILES, DirectionStats, DiskUtil, JobResult, Series, pct_key
from ..fleet.metrics import HostCpu, HostMetrics, HostSample
from .model import Aggregate

DB_NAME = "results.db"
ARTIFACTS_DIR = "artifacts"
# Threads compressing and syncing a test's artifact files: compression
# uses every CPU, and the fsyncs overlap (a test on 64 hosts has ~300 files;
# one at a time they take seconds).
ARTIFACT_WRITERS = max(16, os.cpu_count() or 1)
LOCKS_DIR = "locks"
SCHEMA_LOCK = "schema.lock"  # in LOCKS_DIR: held while a process creates or migrates the database
SCHEMA_LOCK_WAIT_S = 60  # longest wait for another process's migration (they take milliseconds)
MAX_INTEGER = 2**63 - 1  # SQLite's largest integer (run ids, counts)

RUN_SOURCES = ("run", "import")
RUN_STATUSES = ("running", "complete", "failed", "interrupted", "partial")
TEST_STATUSES = ("ok", "failed", "interrupted", "partial")
FINISHED_TEST_STATUSES = ("ok", "partial")  # not run again by a resume

# Forward migrations: MIGRATIONS[i] takes a database from version i to i + 1.
# The figures of one direction (read, write, all), in the aggregate table
# and the per-job table alike.
_DIRECTION_COLUMNS = """\
        ios              INTEGER NOT NULL,
        io_bytes         INTEGER NOT NULL,
        runtime_ms       INTEGER NOT NULL,
        iops             REAL NOT NULL,
        bw_bytes_s       REAL NOT NULL,
        lat_n            INTEGER NOT NULL,
        lat_mean_ns      REAL,
        lat_stddev_ns    REAL,
        lat_min_ns       INTEGER,
        lat_max_ns       INTEGER,
        p50_ns           REAL,                            -- NULL: not known exactly
        p90_ns           REAL,
        p95_ns           REAL,
        p99_ns           REAL,
        p99_9_ns         REAL,
        percentile_basis TEXT NOT NULL,                   -- 'lat' or 'clat'
        bins             TEXT,                            -- JSON [[ns, count], ...]; NULL: no histogram
"""

# Never edit a released script; append a new one instead.
MIGRATIONS: list[str] = [
    # v1: the initial schema.
    """
    CREATE TABLE runs (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: users type it
        label         TEXT,
        plan_name     TEXT NOT NULL,
        plan_text     TEXT,                               -- the plan YAML as given; NULL for imports without one
        source        TEXT NOT NULL CHECK (source IN ('run', 'import')),
        status        TEXT NOT NULL
                      CHECK (status IN ('running', 'complete', 'failed', 'interrupted', 'partial')),
        created_at    TEXT NOT NULL,                      -- ISO-8601 UTC
        ended_at      TEXT,
        fio_version   TEXT,
        host_facts    TEXT NOT NULL DEFAULT '{}',         -- JSON object
        tests_planned INTEGER NOT NULL,
        note          TEXT
    );

    CREATE TABLE tests (
        id               INTEGER PRIMARY KEY,
        run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq              INTEGER NOT NULL,                -- 0-based order in the run
        test_id          TEXT NOT NULL,                   -- readable id, e.g. 4k-r70-rand-j2-qd8
        workload         TEXT NOT NULL,
        repeat           INTEGER NOT NULL,
        params           TEXT NOT NULL,                   -- JSON object
        status           TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'interrupted', 'partial')),
        error            TEXT,
        started_at       TEXT,
        ended_at         TEXT,
        agg_jobs         INTEGER,                         -- NULL: no aggregate (nothing measured)
        usr_cpu_pct      REAL,
        sys_cpu_pct      REAL,
        host_cpu_samples INTEGER,                         -- NULL: host CPU not sampled
        host_cpu_avg_pct REAL,
        host_cpu_max_pct REAL,
        artifact_dir     TEXT,                            -- relative to the data directory
        UNIQUE (run_id, seq)
    );

    -- Aggregate of a test, one row per direction (read, write, all).
    CREATE TABLE test_directions (
        test_pk          INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
        direction        TEXT NOT NULL CHECK (direction IN ('read', 'write', 'all')),
{direction_columns}        PRIMARY KEY (test_pk, direction)
    );

    CREATE TABLE jobs (
        id          INTEGER PRIMARY KEY,
        test_pk     INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
        host        TEXT NOT NULL,
        job         TEXT NOT NULL,                        -- fio jobname
        job_index   INTEGER NOT NULL,                     -- position in fio's output for this host
        error       INTEGER NOT NULL,                     -- fio's error code
        runtime_ms  INTEGER NOT NULL,
        usr_cpu_pct REAL NOT NULL,
        sys_cpu_pct REAL NOT NULL,
        UNIQUE (test_pk, host, job_index)
    );

    -- Per job and direction; the bins are kept so hosts can be merged exactly later.
    CREATE TABLE job_directions (
        job_pk           INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        direction        TEXT NOT NULL CHECK (direction IN ('read', 'write', 'all')),
{direction_columns}        PRIMARY KEY (job_pk, direction)
    );

    CREATE TABLE disks (
        id        INTEGER PRIMARY KEY,
        test_pk   INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
        host      TEXT NOT NULL,
        name      TEXT NOT NULL,
        util_pct  REAL NOT NULL,
        read_ios  INTEGER NOT NULL,
        write_ios INTEGER NOT NULL
    );
    CREATE INDEX disks_by_test ON disks(test_pk);

    -- One row per series (not per sample): bulk ingest of many hosts stays fast.
    CREATE TABLE series (
        id           INTEGER PRIMARY KEY,
        test_pk      INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        job_index    INTEGER NOT NULL,
        metric       TEXT NOT NULL,                       -- iops | bw_bytes_s | lat_ns
        direction    TEXT NOT NULL,                       -- read | write
        samples      INTEGER NOT NULL,
        t_ms_i64le   BLOB NOT NULL,                       -- int64 little-endian
        values_f64le BLOB NOT NULL                        -- float64 little-endian
    );
    CREATE INDEX series_by_test ON series(test_pk);

    CREATE TABLE artifacts (
        test_pk    INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
        name       TEXT NOT NULL,                         -- file is <artifact_dir>/<name>.gz
        size_bytes INTEGER NOT NULL,                      -- uncompressed
        PRIMARY KEY (test_pk, name)
    );
    """.replace("{direction_columns}", _DIRECTION_COLUMNS),
    # v2: fleet tests (hosts' start skew and window overlap, host groups) and
    # host metrics (CPU, disk busy, network) per host and test.
    """
    ALTER TABLE tests ADD COLUMN fleet TEXT;               -- JSON object; NULL for a one-host test

    CREATE TABLE host_metrics (
        test_pk            INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
        role               TEXT NOT NULL CHECK (role IN ('host', 'controller')),
        host               TEXT NOT NULL,
        source             TEXT NOT NULL,                 -- node_exporter | local | none
        samples            INTEGER NOT NULL,              -- in the measured part (warm-up excluded)
        cpu_avg_pct        REAL,                          -- NULL: unknown, never 0
        cpu_max_pct        REAL,
        disk_busy_avg_pct  REAL,                          -- busiest block device
        disk_busy_max_pct  REAL,
        disk_iops_avg      REAL,
        net_rx_avg_bytes_s REAL,
        net_tx_avg_bytes_s REAL,
        error              TEXT,
        series             TEXT NOT NULL,                 -- JSON {t_s: [...], cpu_pct: [...], ...}, warm-up included
        PRIMARY KEY (test_pk, role, host)
    );
    """,
    # v3: methodology — what preparation wrote (per run); per test the
    # steady-state verdicts, measurement window, caches and working set;
    # the warm-up part of every series.
    """
    ALTER TABLE runs ADD COLUMN methodology TEXT;          -- JSON object
    ALTER TABLE tests ADD COLUMN methodology TEXT;         -- JSON object
    ALTER TABLE series ADD COLUMN phase TEXT NOT NULL DEFAULT 'measured';  -- measured | warmup
    """,
    # v4: what `iofleet run --resume` needs to go on with a run where it
    # stopped (targets, inventory, hosts); NULL: the run cannot be resumed.
    """
    ALTER TABLE runs ADD COLUMN resume TEXT;               -- JSON object
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

# Every table below `runs`, parents first: (table, its column holding the
# parent's id, the parent table). `results recover` copies a run by walking it.
RUN_TABLES = (
    ("tests", "run_id", "runs"),
    ("test_directions", "test_pk", "tests"),
    ("jobs", "test_pk", "tests"),
    ("job_directions", "job_pk", "jobs"),
    ("disks", "test_pk", "tests"),
    ("series", "test_pk", "tests"),
    ("artifacts", "test_pk", "tests"),
    ("host_metrics", "test_pk", "tests"),
)

# Columns of a DirectionStats row, in table order (after the key columns).
_PCT_COLS = {pct_key(p): pct_key(p).replace(".", "_") + "_ns" for p in PERCENTILES}
_STAT_COLS = (
    "ios", "io_bytes", "runtime_ms", "iops", "bw_bytes_s", "lat_n",
    "lat_mean_ns", "lat_stddev_ns", "lat_min_ns", "lat_max_ns",
)
_DIR_COLS = _STAT_COLS + tuple(_PCT_COLS.values()) + ("percentile_basis", "bins")
_DIR_SELECT = ", ".join(f"d.{c}" for c in _DIR_COLS)

_RUN_UPDATABLE = ("label", "fio_version", "host_facts", "tests_planned", "note", "plan_text")


def default_data_dir(cli_value: str | None) -> Path:
    """Where results live: the CLI value, else $IOFLEET_DATA, else ./iofleet-data."""
    value = cli_value or os.environ.get("IOFLEET_DATA") or "./iofleet-data"
    return Path(value).expanduser()


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string (the store's timestamp format)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _iso(value) -> str | None:
    """Timestamps are stored as ISO-8601 UTC strings; datetimes are converted."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime: give timestamps in UTC")
        return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return value


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def _pack(values: Iterable, typecode: str) -> bytes:
    a = array(typecode, values)
    if sys.byteorder == "big":  # stored little-endian whatever the machine
        a.byteswap()
    return a.tobytes()


def _unpack(blob: bytes, typecode: str) -> list:
    a = array(typecode)
    try:
        a.frombytes(blob)
    except (TypeError, ValueError) as e:
        raise _Damage(f"a stored series is unreadable ({e})") from None
    if sys.byteorder == "big":
        a.byteswap()
    return a.tolist()


class _Damage(Exception):
    """A stored value that no longer decodes: the database file is damaged."""


def _loads(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        raise _Damage(f"a stored JSON value is unreadable ({e})") from None


def _is_damage(e: BaseException) -> bool:
    """Whether an error says the database file is damaged (or not a database)."""
    if isinstance(e, _Damage):
        return True
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
        return True
    return isinstance(e, sqlite3.DatabaseError) and ("malformed" in str(e) or "not a database" in str(e))


def damaged(db: Path, e: BaseException) -> StoreDamagedError:
    """One line for a damaged database file: what SQLite said and what helps."""
    d = db.parent
    return StoreDamagedError(
        f"{db} is damaged ({e}); see what with `iofleet results check --data-dir {d}`, and copy the runs "
        f"that can still be read to a new store with `iofleet results recover --data-dir {d}`")


def _guarded(method):
    """A Store method whose damaged-file errors become one StoreDamagedError."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, _Damage) as e:
            if not _is_damage(e):
                raise
            raise damaged(self.path, e) from None

    return guarded


def _valid_run_id(run_id) -> bool:
    """Whether run_id can be a stored run's id (SQLite cannot even look up a larger one)."""
    return isinstance(run_id, int) and 0 < run_id <= MAX_INTEGER


def _dir_row(d: DirectionStats) -> tuple:
    unknown = set(d.percentiles_ns) - set(_PCT_COLS)
    if unknown:
        # Only the standard percentiles have columns; refuse rather than drop data.
        raise ValueError(f"percentiles {sorted(unknown)} are not stored; use {list(_PCT_COLS)}")
    # Bins as JSON [[ns, count], ...]: keys stay ints and decode fast with dict().
    bins = None if d.bins is None else _json(list(d.bins.items()))
    return (
        tuple(getattr(d, c) for c in _STAT_COLS)
        + tuple(d.percentiles_ns.get(k) for k in _PCT_COLS)
        + (d.percentile_basis, bins)
    )


def _dir_from_values(values) -> DirectionStats:
    """Rebuild a DirectionStats from its _DIR_COLS values (by position: much
    faster than sqlite3.Row name lookups over thousands of rows)."""
    n_stat, n_pct = len(_STAT_COLS), len(_PCT_COLS)
    basis, bins = values[n_stat + n_pct], values[n_stat + n_pct + 1]
    return DirectionStats(
        **dict(zip(_STAT_COLS, values[:n_stat])),
        # All standard percentiles come back; None where unavailable.
        percentiles_ns=dict(zip(_PCT_COLS, values[n_stat:n_stat + n_pct])),
        bins=None if bins is None else dict(_loads(bins)),
        percentile_basis=basis,
    )


def _safe_name(text: str) -> str:
    """A file-name-safe version of a test id (workload names are user text)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)


class Store:
    """The results database of one data directory."""

    def __init__(self, data_dir: Path, conn: sqlite3.Connection):
        self.data_dir = data_dir
        self.path = data_dir / DB_NAME
        self._conn = conn
        self._locks: dict[int, int] = {}  # run id → fd of its held lock file

    # ---- opening -------------------------------------------------------

    @classmethod
    def open(cls, data_dir: Path) -> "Store":
        """Open (creating if needed) the store in data_dir, migrating its schema."""
        data_dir = Path(data_dir).absolute()
        db = data_dir / DB_NAME
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create data directory {data_dir}: {e.strerror}") from None
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            conn = sqlite3.connect(db, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open results database {db}: {e}") from None
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{db} was written by a newer iofleet (schema version {version}, "
                    f"this iofleet knows {SCHEMA_VERSION}); upgrade iofleet to use it"
                )
            if version < SCHEMA_VERSION:  # a new or older store: one process at a time sets it up
                with _schema_lock(data_dir):
                    conn.execute("PRAGMA journal_mode = WAL")
                    # Read again under the lock: another process may have done it meanwhile.
                    _migrate(conn, conn.execute("PRAGMA user_version").fetchone()[0])
            else:
                conn.execute("PRAGMA journal_mode = WAL")  # already WAL: changes nothing
        except sqlite3.DatabaseError as e:
            conn.close()
            if _no_space(e, data_dir):
                raise _cannot_write(data_dir, e) from None
            if _is_damage(e):
                raise damaged(db, e) from None
            raise StoreError(f"cannot open results database {db}: {e}") from None
        except BaseException:
            conn.close()
            raise
        return cls(data_dir, conn)

    def close(self) -> None:
        for fd in self._locks.values():
            os.close(fd)  # the runs stay as they are: running ones become stale
        self._locks.clear()
        self._conn.close()

    @contextlib.contextmanager
    def _writing(self):
        """Failures to write the data directory (disk full, read-only, I/O
        error) become one StoreError naming it."""
        try:
            yield
        except (sqlite3.OperationalError, OSError) as e:
            raise _cannot_write(self.data_dir, e) from None

    # ---- who is running a run -----------------------------------------

    def _lock_path(self, run_id: int) -> Path:
        return self.data_dir / LOCKS_DIR / f"run-{run_id}.lock"

    def claim_run(self, run_id: int) -> None:
        """Hold the run for this process until finish_run, release_run or
        close; StoreError when another process holds it."""
        if run_id in self._locks:
            return
        path = self._lock_path(run_id)
        with self._writing():
            path.parent.mkdir(exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _lock_note(fd)
            os.close(fd)
            raise StoreError(f"run {run_id} is being run by another iofleet process{holder}; wait for it to end, "
                             f"or stop it (Ctrl-C there), before resuming it") from None
        try:  # who holds it, for that message; the lock works without it
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        self._locks[run_id] = fd

    def release_run(self, run_id: int) -> None:
        """Let go of a run held by claim_run (its status is not changed)."""
        fd = self._locks.pop(run_id, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                self._lock_path(run_id).unlink()
            os.close(fd)

    def run_holder(self, run_id: int) -> int | None:
        """The pid of the process running `run_id` (0 when it cannot be
        read), or None when no process holds it."""
        try:
            fd = os.open(self._lock_path(run_id), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            try:
                return int(os.pread(fd, 32, 0).split()[0])
            except (OSError, ValueError, IndexError):
                return 0
        finally:
            os.close(fd)
        return None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- runs ----------------------------------------------------------

    @_guarded
    def create_run(
        self,
        *,
        plan_name: str,
        plan_text: str | None,
        label: str | None = None,
        source: str = "run",
        fio_version: str | None,
        host_facts: dict,
        tests_planned: int,
        resume: dict | None = None,
    ) -> int:
        """Record a new run with status 'running', held by this process
        (see claim_run) until finish_run; returns its id. `resume`: what a
        later `run --resume` needs (None: it cannot be resumed)."""
        if source not in RUN_SOURCES:
            raise ValueError(f"source must be one of {RUN_SOURCES}, not {source!r}")
        conn = self._conn
        with self._writing():
            conn.execute("BEGIN IMMEDIATE")
            try:
                run_id = conn.execute(
                    "INSERT INTO runs (label, plan_name, plan_text, source, status, created_at,"
                    " fio_version, host_facts, tests_planned, resume) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                    (label, plan_name, plan_text, source, utc_now(), fio_version,
                     _json(host_facts), tests_planned, _json(resume) if resume is not None else None),
                ).lastrowid
                if source == "run":  # held before any other process can see it
                    self.claim_run(run_id)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return run_id

    @_guarded
    def reopen_run(self, run_id: int) -> None:
        """A run held with claim_run is running again (a resume)."""
        if run_id not in self._locks:
            raise StoreError(f"internal: run {run_id} must be claimed before it is reopened")
        with self._writing():
            self._conn.execute("UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?", (run_id,))

    @_guarded
    def set_run_methodology(self, run_id: int, methodology: dict) -> None:
        """What was done before the tests: preparation and cache policy."""
        with self._writing(), self._conn:
            self._conn.execute("UPDATE runs SET methodology = ? WHERE id = ?", (_json(methodology), run_id))

    @_guarded
    def finish_run(self, run_id: int, status: str, note: str | None = None) -> None:
        """Set the final status and end time (and a note, when given), and
        let go of the run."""
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, not {status!r}")
        if not _valid_run_id(run_id):
            raise self._no_run(run_id)
        try:
            with self._writing():
                cur = self._conn.execute(
                    "UPDATE runs SET status = ?, ended_at = ?, note = coalesce(?, note) WHERE id = ?",
                    (status, utc_now(), note, run_id),
                )
        finally:
            self.release_run(run_id)  # not written: the run stays 'running', stale and resumable
        if cur.rowcount == 0:
            raise self._no_run(run_id)

    @_guarded
    def update_run(self, run_id: int, **fields) -> None:
        """Fill in what was learnt after create_run (fio_version, host_facts, ...)."""
        bad = set(fields) - set(_RUN_UPDATABLE)
        if bad:
            raise TypeError(f"update_run cannot set {sorted(bad)}; allowed: {_RUN_UPDATABLE}")
        if not _valid_run_id(run_id):
            raise self._no_run(run_id)
        if not fields:
            return
        if "host_facts" in fields:
            fields["host_facts"] = _json(fields["host_facts"])
        with self._writing():
            cur = self._conn.execute(
                f"UPDATE runs SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                (*fields.values(), run_id),
            )
        if cur.rowcount == 0:
            raise self._no_run(run_id)

    @_guarded
    def list_runs(self) -> list[dict]:
        """All runs, newest first, with their number of tests by status."""
        runs = [self._run_dict(r) for r in self._conn.execute("SELECT * FROM runs ORDER BY id DESC")]
        counts = {}
        for row in self._conn.execute("SELECT run_id, status, count(*) FROM tests GROUP BY run_id, status"):
            counts.setdefault(row[0], {})[row[1]] = row[2]
        for run in runs:
            by_status = {s: counts.get(run["id"], {}).get(s, 0) for s in TEST_STATUSES}
            run["tests_by_status"] = by_status
            run["tests_saved"] = sum(by_status.values())
            # 'running' but held by no process: that process crashed (stale)
            run["held_by"] = self.run_holder(run["id"]) if run["status"] == "running" else None
        return runs

    @_guarded
    def latest_run_id(self) -> int | None:
        return self._conn.execute("SELECT max(id) FROM runs").fetchone()[0]

    @_guarded
    def get_run(self, run_id: int, from_seq: int = 0) -> dict:
        """A run with its tests (seq order; those from `from_seq` on, for a
        study that reads each test as it ends), each with aggregate, jobs and disks."""
        if not _valid_run_id(run_id):
            raise self._no_run(run_id)
        row = self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._no_run(run_id)
        run = self._run_dict(row)

        # A few bulk queries for the whole run rather than several per test.
        directions: dict[int, dict[str, DirectionStats]] = {}
        for r in self._conn.execute(
            f"SELECT d.test_pk, d.direction, {_DIR_SELECT} FROM test_directions d"
            " JOIN tests t ON t.id = d.test_pk WHERE t.run_id = ? AND t.seq >= ?",
            (run_id, from_seq),
        ):
            directions.setdefault(r[0], {})[r[1]] = _dir_from_values(r[2:])

        job_dirs: dict[int, dict[str, DirectionStats]] = {}
        for r in self._conn.execute(
            f"SELECT d.job_pk, d.direction, {_DIR_SELECT} FROM job_directions d"
            " JOIN jobs j ON j.id = d.job_pk JOIN tests t ON t.id = j.test_pk WHERE t.run_id = ? AND t.seq >= ?",
            (run_id, from_seq),
        ):
            job_dirs.setdefault(r[0], {})[r[1]] = _dir_from_values(r[2:])

        jobs: dict[int, list[JobResult]] = {}
        for r in self._conn.execute(
            "SELECT j.* FROM jobs j JOIN tests t ON t.id = j.test_pk WHERE t.run_id = ? AND t.seq >= ? ORDER BY j.id",
            (run_id, from_seq),
        ):
            jobs.setdefault(r["test_pk"], []).append(JobResult(
                host=r["host"], job=r["job"], index=r["job_index"], error=r["error"],
                runtime_ms=r["runtime_ms"], usr_cpu_pct=r["usr_cpu_pct"],
                sys_cpu_pct=r["sys_cpu_pct"], **job_dirs[r["id"]],
            ))

        disks: dict[int, list[DiskUtil]] = {}
        for r in self._conn.execute(
            "SELECT d.* FROM disks d JOIN tests t ON t.id = d.test_pk WHERE t.run_id = ? AND t.seq >= ? ORDER BY d.id",
            (run_id, from_seq),
        ):
            disks.setdefault(r["test_pk"], []).append(DiskUtil(
                host=r["host"], name=r["name"], util_pct=r["util_pct"],
                read_ios=r["read_ios"], write_ios=r["write_ios"],
            ))

        artifacts: dict[int, list[str]] = {}
        for r in self._conn.execute(
            "SELECT a.test_pk, a.name FROM artifacts a JOIN tests t ON t.id = a.test_pk"
            " WHERE t.run_id = ? AND t.seq >= ? ORDER BY a.name",
            (run_id, from_seq),
        ):
            artifacts.setdefault(r[0], []).append(r[1])

        metrics: dict[int, dict[str, list[HostMetrics]]] = {}
        for r in self._conn.execute(
            f"SELECT m.test_pk, m.role, {', '.join('m.' + c for c in _HOST_METRIC_COLS)} FROM host_metrics m"
            " JOIN tests t ON t.id = m.test_pk WHERE t.run_id = ? AND t.seq >= ? ORDER BY m.rowid",
            (run_id, from_seq),
        ):
            metrics.setdefault(r["test_pk"], {}).setdefault(r["role"], []).append(_host_metrics_from_row(r))

        tests = []
        for t in self._conn.execute("SELECT * FROM tests WHERE run_id = ? AND seq >= ? ORDER BY seq",
                                    (run_id, from_seq)):
            pk = t["id"]
            aggregate = None
            if t["agg_jobs"] is not None:
                aggregate = Aggregate(
                    jobs=t["agg_jobs"], usr_cpu_pct=t["usr_cpu_pct"],
                    sys_cpu_pct=t["sys_cpu_pct"], **directions[pk],
                )
            host_cpu = None
            if t["host_cpu_samples"] is not None:
                host_cpu = HostCpu(t["host_cpu_samples"], t["host_cpu_avg_pct"], t["host_cpu_max_pct"])
            tests.append({
                "pk": pk,  # the row id: for get_series and read_artifact
                "seq": t["seq"],
                "id": t["test_id"],
                "workload": t["workload"],
                "repeat": t["repeat"],
                "params": _loads(t["params"]),
                "status": t["status"],
                "error": t["error"],
                "started_at": t["started_at"],
                "ended_at": t["ended_at"],
                "host_cpu": host_cpu,
                # per host (the fleet's, or this machine's) and the controller's own
                "host_metrics": metrics.get(pk, {}).get("host", []),
                "controller": (metrics.get(pk, {}).get("controller") or [None])[0],
                "fleet": _loads(t["fleet"]) if t["fleet"] else None,
                "methodology": _loads(t["methodology"]) if t["methodology"] else None,
                "aggregate": aggregate,
                "jobs": jobs.get(pk, []),
                "disks": disks.get(pk, []),
                "artifact_dir": str(self.data_dir / t["artifact_dir"]) if t["artifact_dir"] else None,
                "artifacts": artifacts.get(pk, []),
            })
        run["tests"] = tests
        return run

    # ---- tests ---------------------------------------------------------

    @_guarded
    def save_test(
        self,
        run_id: int,
        *,
        seq: int,
        spec: dict,
        status: str,
        error: str | None = None,
        started_at: str | None,
        ended_at: str | None,
        jobs: list[JobResult],
        aggregate: Aggregate | None,
        host_cpu: HostCpu | None = None,
        disks: list[DiskUtil] = (),
        series: list[Series] = (),
        artifacts: dict[str, bytes] | None = None,
        host_metrics: list[HostMetrics] = (),
        controller: HostMetrics | None = None,
        fleet: dict | None = None,
        methodology: dict | None = None,
        replace: bool = False,
    ) -> int:
        """Save one test and everything measured in it; returns the test's row id.

        All or nothing: on any error the transaction is rolled back and the
        artifact files written by this call are removed. `replace`: a test
        run again by a resume takes the place (seq) of its stored failed or
        interrupted result, in the same transaction; a finished one (ok,
        partial) is never replaced.
        """
        if status not in TEST_STATUSES:
            raise ValueError(f"status must be one of {TEST_STATUSES}, not {status!r}")
        if not _valid_run_id(run_id):
            raise self._no_run(run_id)
        artifacts = artifacts or {}
        for name in artifacts:
            if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
                raise ValueError(f"artifact name {name!r} must be a plain file name")

        rel_dir = Path(ARTIFACTS_DIR, f"run-{run_id}", f"{seq:04d}-{_safe_name(spec['id'])}")
        # Never into an existing directory: a replaced result's, or the
        # files of a save that a crash cut short (harmless, but not ours).
        base, n = rel_dir, 1
        while (self.data_dir / rel_dir).exists():
            n += 1
            rel_dir = base.with_name(f"{base.name}.{n}")
        abs_dir = self.data_dir / rel_dir
        written: list[Path] = []
        made_dir = False
        writer = None
        old = None
        conn = self._conn
        # IMMEDIATE: take the write lock now rather than fail half-way on a busy DB.
        with self._writing():
            conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise self._no_run(run_id)
            if replace:
                old = conn.execute("SELECT id, status, artifact_dir FROM tests WHERE run_id = ? AND seq = ?",
                                   (run_id, seq)).fetchone()
                if old is not None and old["status"] in FINISHED_TEST_STATUSES:
                    raise StoreError(f"test {seq + 1} of run {run_id} is stored {old['status']}; "
                                     f"a finished test is never replaced")
                if old is not None:
                    conn.execute("DELETE FROM tests WHERE id = ?", (old["id"],))
            # The test row first: a duplicate (run, seq) fails here, before any
            # file of an already saved test could be touched.
            pk = conn.execute(
                "INSERT INTO tests (run_id, seq, test_id, workload, repeat, params, status, error,"
                " started_at, ended_at, agg_jobs, usr_cpu_pct, sys_cpu_pct, host_cpu_samples,"
                " host_cpu_avg_pct, host_cpu_max_pct, artifact_dir, fleet, methodology)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, seq, spec["id"], spec["workload"], spec["repeat"],
                    _json(spec["params"]), status, error, _iso(started_at), _iso(ended_at),
                    aggregate.jobs if aggregate else None,
                    aggregate.usr_cpu_pct if aggregate else None,
                    aggregate.sys_cpu_pct if aggregate else None,
                    host_cpu.samples if host_cpu else None,
                    host_cpu.avg_pct if host_cpu else None,
                    host_cpu.max_pct if host_cpu else None,
                    rel_dir.as_posix() if artifacts else None,
                    _json(fleet) if fleet is not None else None,
                    _json(methodology) if methodology is not None else None,
                ),
            ).lastrowid
            if artifacts:  # compressed and synced on other threads while the rows go in
                made_dir = not abs_dir.exists()
                abs_dir.mkdir(parents=True, exist_ok=True)
                writer = _ArtifactWriter(abs_dir, artifacts)
            self._insert_host_metrics(pk, host_metrics, controller)
            self._insert_aggregate(pk, aggregate)
            self._insert_jobs(pk, jobs)
            conn.executemany(
                "INSERT INTO disks (test_pk, host, name, util_pct, read_ios, write_ios)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [(pk, d.host, d.name, d.util_pct, d.read_ios, d.write_ios) for d in disks],
            )
            conn.executemany(
                "INSERT INTO series (test_pk, host, job_index, metric, direction, samples,"
                " t_ms_i64le, values_f64le, phase) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (pk, s.host, s.job_index, s.metric, s.direction, len(s.values),
                     _pack(s.t_ms, "q"), _pack(s.values, "d"), s.phase)
                    for s in series
                ],
            )
            if artifacts:
                writer.finish(written)
                _fsync_dir(abs_dir)  # the renames reach the disk before the row commits
                conn.executemany(
                    "INSERT INTO artifacts (test_pk, name, size_bytes) VALUES (?, ?, ?)",
                    [(pk, name, len(data)) for name, data in artifacts.items()],
                )
            conn.execute("COMMIT")
        except BaseException as e:
            if writer is not None:
                writer.finish(written, failure=False)  # every writer done before its files go
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for path in written:
                path.unlink(missing_ok=True)
            if made_dir:
                _remove_empty_dirs(abs_dir, stop=self.data_dir / ARTIFACTS_DIR)
            if isinstance(e, (sqlite3.OperationalError, OSError)):  # disk full, ...
                raise _cannot_write(self.data_dir, e) from None
            raise
        if old is not None and old["artifact_dir"]:
            shutil.rmtree(self.data_dir / old["artifact_dir"], ignore_errors=True)
        return pk

    @_guarded
    def discard_orphan_artifacts(self, run_id: int) -> list[Path]:
        """Remove a run's artifact directories that no test refers to (a
        save cut short by a crash); return them."""
        run_dir = self.data_dir / ARTIFACTS_DIR / f"run-{run_id}"
        if not _valid_run_id(run_id) or not run_dir.is_dir():
            return []
        used = {r[0] for r in self._conn.execute(
            "SELECT artifact_dir FROM tests WHERE run_id = ? AND artifact_dir IS NOT NULL", (run_id,))}
        removed = []
        for d in run_dir.iterdir():
            if d.is_dir() and Path(ARTIFACTS_DIR, run_dir.name, d.name).as_posix() not in used:
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
        return removed

    def _insert_aggregate(self, test_pk: int, aggregate: Aggregate | None) -> None:
        if aggregate is None:
            return
        self._conn.executemany(
            f"INSERT INTO test_directions (test_pk, direction, {', '.join(_DIR_COLS)})"
            f" VALUES (?, ?{', ?' * len(_DIR_COLS)})",
            [(test_pk, d, *_dir_row(getattr(aggregate, d))) for d in DIRECTIONS],
        )

    def _insert_jobs(self, test_pk: int, jobs: list[JobResult]) -> None:
        rows = []
        for j in jobs:
            job_pk = self._conn.execute(
                "INSERT INTO jobs (test_pk, host, job, job_index, error, runtime_ms,"
                " usr_cpu_pct, sys_cpu_pct) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (test_pk, j.host, j.job, j.index, j.error, j.runtime_ms, j.usr_cpu_pct, j.sys_cpu_pct),
            ).lastrowid
            rows.extend((job_pk, d, *_dir_row(getattr(j, d))) for d in DIRECTIONS)
        self._conn.executemany(
            f"INSERT INTO job_directions (job_pk, direction, {', '.join(_DIR_COLS)})"
            f" VALUES (?, ?{', ?' * len(_DIR_COLS)})",
            rows,
        )

    def _insert_host_metrics(self, test_pk: int, hosts: list[HostMetrics], controller: HostMetrics | None) -> None:
        rows = [("host", m) for m in hosts] + ([("controller", controller)] if controller else [])
        self._conn.executemany(
            f"INSERT INTO host_metrics (test_pk, role, {', '.join(_HOST_METRIC_COLS)}, series)"
            f" VALUES (?, ?{', ?' * len(_HOST_METRIC_COLS)}, ?)",
            [(test_pk, role, *(_host_metric_value(m, c) for c in _HOST_METRIC_COLS),
              _json({f: [getattr(s, f) for s in m.series] for f in _SAMPLE_FIELDS}))
             for role, m in rows],
        )

    @_guarded
    def get_host_series(self, test_pk: int) -> dict[tuple[str, str], list[HostSample]]:
        """Per-second host metrics of one test, warm-up included: {(role, host): samples}."""
        out = {}
        for r in self._conn.execute(
                "SELECT role, host, series FROM host_metrics WHERE test_pk = ? ORDER BY role, host", (test_pk,)):
            cols = _loads(r["series"])
            out[(r["role"], r["host"])] = [HostSample(*values) for values in zip(*(cols[f] for f in _SAMPLE_FIELDS))]
        return out

    @_guarded
    def get_series(self, test_pk: int) -> list[Series]:
        """The per-second series of one test (row id `pk` from get_run), in saved order."""
        return [
            Series(
                host=r["host"], job_index=r["job_index"], metric=r["metric"],
                direction=r["direction"], t_ms=_unpack(r["t_ms_i64le"], "q"),
                values=_unpack(r["values_f64le"], "d"), phase=r["phase"],
            )
            for r in self._conn.execute("SELECT * FROM series WHERE test_pk = ? ORDER BY id", (test_pk,))
        ]

    def run_series(self, run: dict) -> dict[int, list[Series]]:
        """Every test's per-second series of a run from get_run, by test seq."""
        return {t["seq"]: self.get_series(t["pk"]) for t in run["tests"]}

    @_guarded
    def read_artifact(self, test_pk: int, name: str) -> bytes:
        """One artifact of a test, decompressed."""
        t = self._conn.execute("SELECT artifact_dir FROM tests WHERE id = ?", (test_pk,)).fetchone()
        if t is None:
            raise StoreError(f"no test with row id {test_pk} in {self.path}")
        names = [r[0] for r in self._conn.execute(
            "SELECT name FROM artifacts WHERE test_pk = ? ORDER BY name", (test_pk,))]
        if name not in names:
            raise StoreError(
                f"test {test_pk} has no artifact {name!r}; it has: {', '.join(names) or 'none'}"
            )
        path = self.data_dir / t["artifact_dir"] / f"{name}.gz"
        try:
            return gzip.decompress(path.read_bytes())
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise StoreError(f"cannot read artifact {path}: {e}") from None

    # ---- recovery (results/recover.py) ---------------------------------

    @_guarded
    def restore_run(self, rows: dict[str, list[dict]]) -> None:
        """Insert one run's rows as read from another store ({table: rows},
        ids kept), in one transaction; columns this schema lacks (none, or
        a store's from a later iofleet) are left out."""
        conn = self._conn
        with self._writing():
            conn.execute("BEGIN IMMEDIATE")
            try:
                for table in ("runs", *(t for t, _, _ in RUN_TABLES)):
                    known = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
                    for row in rows.get(table, []):
                        cols = [c for c in row if c in known]
                        conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                     [row[c] for c in cols])
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @_guarded
    def forget_run(self, run_id: int) -> None:
        """Remove a run restored by restore_run that does not read back (its rows only)."""
        with self._writing(), self._conn:
            self._conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    @_guarded
    def reserve_run_ids(self, up_to: int) -> None:
        """New runs get ids above `up_to`: a lost run's id is never given to another."""
        with self._writing(), self._conn:
            if self._conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'runs'",
                                  (up_to,)).rowcount == 0:
                self._conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('runs', ?)", (up_to,))

    # ---- helpers -------------------------------------------------------

    def _no_run(self, run_id: int) -> StoreError:
        return StoreError(f"no run {run_id} in {self.path}; see `iofleet results list`")

    @staticmethod
    def _run_dict(row: sqlite3.Row) -> dict:
        run = dict(row)
        run["host_facts"] = _loads(run["host_facts"])
        run["methodology"] = _loads(run["methodology"]) if run.get("methodology") else None
        run["resume"] = _loads(run["resume"]) if run.get("resume") else None
        return run


def _no_space(e: BaseException, data_dir: Path | None = None) -> bool:
    """Whether a failed write ran out of space. SQLite says so (SQLITE_FULL)
    for the database, but only "disk I/O error" when it cannot create its
    WAL index: then the free space decides."""
    if isinstance(e, OSError):
        return e.errno in (errno.ENOSPC, errno.EDQUOT)
    code = getattr(e, "sqlite_errorcode", None)
    if (code is not None and code & 0xFF == 13) or "database or disk is full" in str(e):  # SQLITE_FULL
        return True
    if data_dir is not None and ((code is not None and code & 0xFF == 10) or "disk I/O error" in str(e)):
        try:
            return shutil.disk_usage(data_dir).free < 1024 * 1024
        except OSError:
            return False
    return False


def _cannot_write(data_dir: Path, e: BaseException) -> StoreError:
    """One line for a failed write of the data directory."""
    if _no_space(e, data_dir):
        return StoreError(f"cannot write results to {data_dir}: no space left on device; "
                          f"free space or use --data-dir")
    why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return StoreError(f"cannot write results to {data_dir}: {why}; fix it or use --data-dir")


def _lock_note(fd: int) -> str:
    """' (pid N)' from a held lock file, or nothing."""
    try:
        return f" (pid {int(os.pread(fd, 32, 0).split()[0])})"
    except (OSError, ValueError, IndexError):
        return ""


_HOST_METRIC_COLS = ("host", "source", "samples", "cpu_avg_pct", "cpu_max_pct", "disk_busy_avg_pct",
                     "disk_busy_max_pct", "disk_iops_avg", "net_rx_avg_bytes_s", "net_tx_avg_bytes_s", "error")
_SAMPLE_FIELDS = ("t_s", "cpu_pct", "disk_busy_pct", "disk_iops", "net_rx_bytes_s", "net_tx_bytes_s")


def _host_metric_value(m: HostMetrics, column: str):
    if column in ("cpu_avg_pct", "cpu_max_pct"):
        return getattr(m.cpu, column.removeprefix("cpu_"))
    return getattr(m, column)


def _host_metrics_from_row(r: sqlite3.Row) -> HostMetrics:
    """A stored host's figures; its series are read with get_host_series."""
    values = {c: r[c] for c in _HOST_METRIC_COLS if c not in ("cpu_avg_pct", "cpu_max_pct")}
    return HostMetrics(**values, cpu=HostCpu(r["samples"], r["cpu_avg_pct"], r["cpu_max_pct"]), series=[])


@contextlib.contextmanager
def _schema_lock(data_dir: Path):
    """Hold locks/schema.lock (flock) while creating or migrating the
    database: two processes opening one new store would otherwise both
    create its tables. Released by the kernel if the process dies."""
    path = data_dir / LOCKS_DIR / SCHEMA_LOCK
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise _cannot_write(data_dir, e) from None
    try:
        deadline = time.monotonic() + SCHEMA_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(f"another iofleet process has been setting up {data_dir / DB_NAME} for "
                                     f"{SCHEMA_LOCK_WAIT_S} s (it holds {path}); stop it and try again") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # releases the lock


def _migrate(conn: sqlite3.Connection, version: int) -> None:
    """Apply the migrations after `version`, each in its own transaction."""
    for target in range(version + 1, SCHEMA_VERSION + 1):
        script = MIGRATIONS[target - 1]
        try:
            # user_version is part of the transaction: a failed script leaves
            # the database exactly at the previous version.
            conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {target};\nCOMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _write_gz(directory: Path, name: str, data: bytes) -> Path:
    """Write name.gz via a temp file and rename, so it is never seen half-written."""
    final = directory / f"{name}.gz"
    tmp = directory / f".{name}.gz.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            # level 4: on fio's logs and JSON about 3 % larger than 6, in half the time
            f.write(gzip.compress(data, compresslevel=4, mtime=0))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


class _ArtifactWriter:
    """_write_gz for every artifact of a test, on several threads (zlib and
    fsync let go of the GIL; a fleet test has hundreds of logs), started
    as soon as the test's row exists so the files are written while its
    other rows go in."""

    def __init__(self, directory: Path, artifacts: dict[str, bytes]):
        self._pool = ThreadPoolExecutor(max_workers=ARTIFACT_WRITERS, thread_name_prefix="artifacts")
        self._futures = [self._pool.submit(_write_gz, directory, name, data) for name, data in artifacts.items()]
        self._collected = False

    def finish(self, written: list[Path], failure: bool = True) -> None:
        """Wait for every writer (on an interrupt too), add the files written
        to `written`, then raise the first failure (unless `failure` is False)."""
        try:
            self._pool.shutdown(wait=True)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            if not self._collected:
                self._collected = True
                written.extend(f.result() for f in self._futures
                               if f.done() and not f.cancelled() and f.exception() is None)
        for f in self._futures:
            if failure and not f.cancelled():
                f.result()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_empty_dirs(path: Path, stop: Path) -> None:
    """Remove path and its empty parents, up to (not including) stop."""
    while path != stop and stop in path.parents:
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
