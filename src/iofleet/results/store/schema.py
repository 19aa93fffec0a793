"""The database's schema: its tables, the forward migrations that build
and upgrade it, and opening a database (created or migrated under a lock,
so that processes opening one new store at once take turns).

The schema is versioned with `PRAGMA user_version` and migrated forward on
open; a database from a newer iofleet is refused, never rewritten.
"""

import contextlib
import fcntl
import os
import sqlite3
import time
from pathlib import Path

from ...errors import StoreError
from .failures import cannot_write, damaged, is_damage, no_space

DB_NAME = "results.db"
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
    # v5 (issue 19), no table changes: what is written changes, and an older
    # iofleet must refuse the store rather than call it damaged. A test's raw
    # files are one zip, <artifact_dir>/files.zip (before: <name>.gz each;
    # both read); `bins` columns hold int64 little-endian (ns, count) pairs
    # as a BLOB (before: JSON text [[ns, count], ...]; both read).
    """
    SELECT 1;
    """,
    # v6: the local host's busy CPU split by who used it (fleet.metrics
    # CPU_GROUPS): fio, the storage's daemons and clients on the host, the
    # rest; NULL where not known (node_exporter hosts, runs stored before).
    """
    ALTER TABLE tests ADD COLUMN host_cpu_fio_avg_pct REAL;
    ALTER TABLE tests ADD COLUMN host_cpu_storage_avg_pct REAL;
    ALTER TABLE tests ADD COLUMN host_cpu_other_avg_pct REAL;
    ALTER TABLE tests ADD COLUMN host_cpu_storage_by_name TEXT;    -- JSON {process name: pct}
    ALTER TABLE host_metrics ADD COLUMN cpu_fio_avg_pct REAL;
    ALTER TABLE host_metrics ADD COLUMN cpu_storage_avg_pct REAL;
    ALTER TABLE host_metrics ADD COLUMN cpu_other_avg_pct REAL;
    ALTER TABLE host_metrics ADD COLUMN cpu_storage_by_name TEXT;  -- JSON {process name: pct}
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


def connect(data_dir: Path) -> sqlite3.Connection:
    """A connection to the database in data_dir (an absolute path), created
    or migrated to SCHEMA_VERSION if needed."""
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
            with schema_lock(data_dir):
                conn.execute("PRAGMA journal_mode = WAL")
                # Read again under the lock: another process may have done it meanwhile.
                migrate(conn, conn.execute("PRAGMA user_version").fetchone()[0])
        else:
            conn.execute("PRAGMA journal_mode = WAL")  # already WAL: changes nothing
    except sqlite3.DatabaseError as e:
        conn.close()
        if no_space(e, data_dir):
            raise cannot_write(data_dir, e) from None
        if is_damage(e):
            raise damaged(db, e) from None
        raise StoreError(f"cannot open results database {db}: {e}") from None
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def schema_lock(data_dir: Path):
    """Hold locks/schema.lock (flock) while creating or migrating the
    database: two processes opening one new store would otherwise both
    create its tables. Released by the kernel if the process dies."""
    path = data_dir / LOCKS_DIR / SCHEMA_LOCK
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise cannot_write(data_dir, e) from None
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


def migrate(conn: sqlite3.Connection, version: int) -> None:
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
