"""The Store: the API the rest of iofleet uses to record runs and tests and
read them back, over the schema (schema.py), the run locks (locks.py) and
the artifact files (artifacts.py).

Rules the store keeps:
- A test is saved in one transaction: after a crash or error nothing of it
  remains, and its artifact files are on disk before its row commits.
- Running out of space (or any other write failure of the data directory)
  is a StoreError naming the directory, never a half-written test.
- A damaged database file (SQLite's "malformed" or "not a database", or a
  stored value that no longer decodes) is one StoreDamagedError naming the
  file and the commands that help (results/recover.py: check, recover).
- A run id is an SQLite integer: a larger one is "no run N", as any unknown id.

A Store is one sqlite3 connection: use one Store per thread.
"""

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path

from ...errors import StoreError
from ...fio.records import DIRECTIONS, DiskUtil, JobResult, Series
from ...fleet.metrics.records import HostCpu, HostMetrics, HostSample
from ..methodology import FleetRecord, RunMethodology, TestMethodology
from ..model import Aggregate, ListedRun, Run, TestInfo, TestRecord
from . import artifacts as files
from .failures import cannot_write, guarded
from .listing import RunFilter
from .locks import RunLocks
from .rows import (CPU_FIELDS, DIR_COLS, HOST_METRIC_COLS, SAMPLE_FIELDS, TestParts, cpu_values, dir_row, dumps,
                   host_metric_value, iso, loads, pack, run_fields, unpack)
from .schema import (DB_NAME, FINISHED_TEST_STATUSES, MAX_INTEGER, RUN_SOURCES, RUN_STATUSES, RUN_TABLES,
                     TEST_STATUSES, connect)

_RUN_UPDATABLE = ("label", "fio_version", "host_facts", "tests_planned", "note", "plan_text")


def default_data_dir(cli_value: str | None) -> Path:
    """Where results live: the CLI value, else $IOFLEET_DATA, else ./iofleet-data."""
    value = cli_value or os.environ.get("IOFLEET_DATA") or "./iofleet-data"
    return Path(value).expanduser()


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string (the store's timestamp format)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _valid_run_id(run_id) -> bool:
    """Whether run_id can be a stored run's id (SQLite cannot even look up a larger one)."""
    return isinstance(run_id, int) and 0 < run_id <= MAX_INTEGER


class Store:
    """The results database of one data directory."""

    def __init__(self, data_dir: Path, conn: sqlite3.Connection):
        self.data_dir = data_dir
        self.path = data_dir / DB_NAME
        self._conn = conn
        self._locks = RunLocks(data_dir)

    # ---- opening -------------------------------------------------------

    @classmethod
    def open(cls, data_dir: Path) -> "Store":
        """Open (creating if needed) the store in data_dir, migrating its schema."""
        data_dir = Path(data_dir).absolute()
        return cls(data_dir, connect(data_dir))

    def close(self) -> None:
        self._locks.release_all()  # the runs stay as they are: running ones become stale
        self._conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _writing(self):
        """Failures to write the data directory (disk full, read-only, I/O
        error) become one StoreError naming it."""
        try:
            yield
        except (sqlite3.OperationalError, OSError) as e:
            raise cannot_write(self.data_dir, e) from None

    def _no_run(self, run_id: int) -> StoreError:
        return StoreError(f"no run {run_id} in {self.path}; see `iofleet results list`")

    # ---- who is running a run -----------------------------------------

    def claim_run(self, run_id: int) -> None:
        """Hold the run for this process until finish_run, release_run or
        close; StoreError when another process holds it."""
        with self._writing():
            self._locks.claim(run_id)

    def release_run(self, run_id: int) -> None:
        """Let go of a run held by claim_run (its status is not changed)."""
        self._locks.release(run_id)

    def run_holder(self, run_id: int) -> int | None:
        """The pid of the process running `run_id` (0 when it cannot be
        read), or None when no process holds it."""
        return self._locks.holder(run_id)

    # ---- runs ----------------------------------------------------------

    @guarded
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
                     dumps(host_facts), tests_planned, dumps(resume) if resume is not None else None),
                ).lastrowid
                if source == "run":  # held before any other process can see it
                    self.claim_run(run_id)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return run_id

    @guarded
    def reopen_run(self, run_id: int) -> None:
        """A run held with claim_run is running again (a resume)."""
        if not self._locks.holds(run_id):
            raise StoreError(f"internal: run {run_id} must be claimed before it is reopened")
        with self._writing():
            self._conn.execute("UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?", (run_id,))

    @guarded
    def set_run_methodology(self, run_id: int, methodology: RunMethodology) -> None:
        """What was done before the tests: preparation and cache policy (and the study's record)."""
        with self._writing(), self._conn:
            self._conn.execute("UPDATE runs SET methodology = ? WHERE id = ?",
                               (dumps(methodology.to_dict()), run_id))

    @guarded
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

    @guarded
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
            fields["host_facts"] = dumps(fields["host_facts"])
        with self._writing():
            cur = self._conn.execute(
                f"UPDATE runs SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                (*fields.values(), run_id),
            )
        if cur.rowcount == 0:
            raise self._no_run(run_id)

    @guarded
    def list_runs(self, where: RunFilter | None = None) -> list[ListedRun]:
        """The runs `where` keeps (default: all), newest first, with their
        number of tests by status and who runs them (a stale run: none)."""
        where = where or RunFilter()
        runs = [ListedRun(**run_fields(r)) for r in self._conn.execute("SELECT * FROM runs ORDER BY id DESC")]
        runs = [r for r in runs if where.keep(r)][:where.limit]
        counts = {}
        for row in self._conn.execute("SELECT run_id, status, count(*) FROM tests GROUP BY run_id, status"):
            counts.setdefault(row[0], {})[row[1]] = row[2]
        for run in runs:
            run.tests_by_status = {s: counts.get(run.id, {}).get(s, 0) for s in TEST_STATUSES}
            run.tests_saved = sum(run.tests_by_status.values())
            run.held_by = self.run_holder(run.id) if run.status == "running" else None
        return runs

    @guarded
    def latest_run_id(self) -> int | None:
        return self._conn.execute("SELECT max(id) FROM runs").fetchone()[0]

    @guarded
    def get_run(self, run_id: int, from_seq: int = 0) -> Run:
        """A run with its tests (seq order; those from `from_seq` on, for a
        study that reads each test as it ends), each with aggregate, jobs and disks."""
        if not _valid_run_id(run_id):
            raise self._no_run(run_id)
        row = self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._no_run(run_id)
        parts = TestParts(self._conn, run_id, from_seq)
        tests = [parts.record(t, str(self.data_dir / t["artifact_dir"]) if t["artifact_dir"] else None)
                 for t in self._conn.execute("SELECT * FROM tests WHERE run_id = ? AND seq >= ? ORDER BY seq",
                                             (run_id, from_seq))]
        return Run(**run_fields(row), tests=tests)

    # ---- tests ---------------------------------------------------------

    @guarded
    def save_test(
        self,
        run_id: int,
        *,
        seq: int,
        test: TestInfo,
        status: str,
        error: str | None = None,
        started_at: str | None,
        ended_at: str | None,
        jobs: list[JobResult],
        aggregate: Aggregate | None,
        host_cpu: HostCpu | None = None,
        disks: list[DiskUtil] = (),
        series: list[Series] = (),
        artifacts: "dict[str, bytes] | files.TestFiles | None" = None,
        host_metrics: list[HostMetrics] = (),
        controller: HostMetrics | None = None,
        fleet: FleetRecord | None = None,
        methodology: TestMethodology | None = None,
        replace: bool = False,
    ) -> int:
        """Save one test and everything measured in it; returns the test's row id.

        All or nothing: on any error the transaction is rolled back and the
        artifact files written by this call are removed. `replace`: a test
        run again by a resume takes the place (seq) of its stored failed or
        interrupted result, in the same transaction; a finished one (ok,
        partial) is never replaced. `artifacts`: the files, or their archive
        already being written (start_artifacts).
        """
        if status not in TEST_STATUSES:
            raise ValueError(f"status must be one of {TEST_STATUSES}, not {status!r}")
        if not _valid_run_id(run_id):
            raise self._no_run(run_id)
        if isinstance(artifacts, files.TestFiles):
            test_files, artifacts = artifacts, artifacts.artifacts
        else:
            artifacts = artifacts or {}
            files.check_names(artifacts)
            test_files = files.TestFiles(self.data_dir, run_id, seq, test.id)
        row = (test.id, test.workload, test.repeat, dumps(test.params), status, error, iso(started_at),
               iso(ended_at), aggregate.jobs if aggregate else None, aggregate.usr_cpu_pct if aggregate else None,
               aggregate.sys_cpu_pct if aggregate else None, host_cpu.samples if host_cpu else None,
               *cpu_values(host_cpu), test_files.rel_dir if artifacts else None,
               dumps(fleet.to_dict()) if fleet is not None else None,
               dumps(methodology.to_dict()) if methodology is not None else None)
        conn = self._conn
        # IMMEDIATE: take the write lock now rather than fail half-way on a busy DB.
        with self._writing():
            conn.execute("BEGIN IMMEDIATE")
        try:
            old = self._take_place(run_id, seq, replace)
            # The test row first: a duplicate (run, seq) fails here, before any
            # file of an already saved test could be touched.
            pk = conn.execute(
                "INSERT INTO tests (run_id, seq, test_id, workload, repeat, params, status, error,"
                " started_at, ended_at, agg_jobs, usr_cpu_pct, sys_cpu_pct, host_cpu_samples,"
                f" {', '.join(f'host_cpu_{f}' for f in CPU_FIELDS)}, artifact_dir, fleet, methodology)"
                f" VALUES (?, ?{', ?' * len(row)})", (run_id, seq, *row)).lastrowid
            if artifacts and not test_files.started:  # compressed and synced on a thread while the rows go in
                test_files.start(artifacts)
            self._insert_figures(pk, aggregate, jobs, disks, series, host_metrics, controller)
            if artifacts:
                test_files.finish()
                conn.executemany("INSERT INTO artifacts (test_pk, name, size_bytes) VALUES (?, ?, ?)",
                                 [(pk, name, len(data)) for name, data in artifacts.items()])
            conn.execute("COMMIT")
        except BaseException as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            test_files.undo()  # every writer done before its files go
            if isinstance(e, (sqlite3.OperationalError, OSError)):  # disk full, ...
                raise cannot_write(self.data_dir, e) from None
            raise
        if old is not None and old["artifact_dir"]:
            shutil.rmtree(self.data_dir / old["artifact_dir"], ignore_errors=True)
        return pk

    def start_artifacts(self, run_id: int, seq: int, test_id: str, artifacts: dict[str, bytes]) -> files.TestFiles:
        """Begin writing a test's archive (on a thread) before its save_test,
        which it is then given as `artifacts`: the archive is compressed
        while the caller sums up the test. If that save is never called,
        the caller undoes it (TestFiles.undo)."""
        files.check_names(artifacts)
        test_files = files.TestFiles(self.data_dir, run_id, seq, test_id)
        if artifacts:
            test_files.start(artifacts)
        return test_files

    def _take_place(self, run_id: int, seq: int, replace: bool) -> sqlite3.Row | None:
        """Inside save_test's transaction: check the run exists and, for a
        replace, delete the unfinished result at `seq` (returned)."""
        conn = self._conn
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise self._no_run(run_id)
        if not replace:
            return None
        old = conn.execute("SELECT id, status, artifact_dir FROM tests WHERE run_id = ? AND seq = ?",
                           (run_id, seq)).fetchone()
        if old is not None and old["status"] in FINISHED_TEST_STATUSES:
            raise StoreError(f"test {seq + 1} of run {run_id} is stored {old['status']}; "
                             f"a finished test is never replaced")
        if old is not None:
            conn.execute("DELETE FROM tests WHERE id = ?", (old["id"],))
        return old

    def _insert_figures(self, pk: int, aggregate: Aggregate | None, jobs: list[JobResult], disks: list[DiskUtil],
                        series: list[Series], host_metrics: list[HostMetrics], controller: HostMetrics | None):
        """Every row below a test's own (inside save_test's transaction)."""
        self._insert_host_metrics(pk, host_metrics, controller)
        self._insert_aggregate(pk, aggregate)
        self._insert_jobs(pk, jobs)
        self._conn.executemany(
            "INSERT INTO disks (test_pk, host, name, util_pct, read_ios, write_ios) VALUES (?, ?, ?, ?, ?, ?)",
            [(pk, d.host, d.name, d.util_pct, d.read_ios, d.write_ios) for d in disks],
        )
        self._conn.executemany(
            "INSERT INTO series (test_pk, host, job_index, metric, direction, samples,"
            " t_ms_i64le, values_f64le, phase) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(pk, s.host, s.job_index, s.metric, s.direction, len(s.values),
              pack(s.t_ms, "q"), pack(s.values, "d"), s.phase) for s in series],
        )

    def _insert_aggregate(self, test_pk: int, aggregate: Aggregate | None) -> None:
        if aggregate is None:
            return
        self._conn.executemany(
            f"INSERT INTO test_directions (test_pk, direction, {', '.join(DIR_COLS)})"
            f" VALUES (?, ?{', ?' * len(DIR_COLS)})",
            [(test_pk, d, *dir_row(getattr(aggregate, d))) for d in DIRECTIONS],
        )

    def _insert_jobs(self, test_pk: int, jobs: list[JobResult]) -> None:
        # The ids SQLite would give (max + 1 on), given here: one executemany
        # instead of an execute per job (a 64-host test has hundreds); the
        # transaction holds the write lock, so no one else takes them.
        first = self._conn.execute("SELECT coalesce(max(id), 0) + 1 FROM jobs").fetchone()[0]
        self._conn.executemany(
            "INSERT INTO jobs (id, test_pk, host, job, job_index, error, runtime_ms,"
            " usr_cpu_pct, sys_cpu_pct) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(first + i, test_pk, j.host, j.job, j.index, j.error, j.runtime_ms, j.usr_cpu_pct, j.sys_cpu_pct)
             for i, j in enumerate(jobs)],
        )
        rows = [(first + i, d, *dir_row(getattr(j, d))) for i, j in enumerate(jobs) for d in DIRECTIONS]
        self._conn.executemany(
            f"INSERT INTO job_directions (job_pk, direction, {', '.join(DIR_COLS)})"
            f" VALUES (?, ?{', ?' * len(DIR_COLS)})",
            rows,
        )

    def _insert_host_metrics(self, test_pk: int, hosts: list[HostMetrics], controller: HostMetrics | None) -> None:
        rows = [("host", m) for m in hosts] + ([("controller", controller)] if controller else [])
        self._conn.executemany(
            f"INSERT INTO host_metrics (test_pk, role, {', '.join(HOST_METRIC_COLS)}, series)"
            f" VALUES (?, ?{', ?' * len(HOST_METRIC_COLS)}, ?)",
            [(test_pk, role, *(host_metric_value(m, c) for c in HOST_METRIC_COLS),
              dumps({f: [getattr(s, f) for s in m.series] for f in SAMPLE_FIELDS}))
             for role, m in rows],
        )

    # ---- what a test recorded --------------------------------------------

    @guarded
    def get_host_series(self, test_pk: int) -> dict[tuple[str, str], list[HostSample]]:
        """Per-second host metrics of one test, warm-up included: {(role, host): samples}."""
        out = {}
        for r in self._conn.execute(
                "SELECT role, host, series FROM host_metrics WHERE test_pk = ? ORDER BY role, host", (test_pk,)):
            cols = loads(r["series"])
            out[(r["role"], r["host"])] = [HostSample(*values) for values in zip(*(cols[f] for f in SAMPLE_FIELDS))]
        return out

    @guarded
    def get_series(self, test_pk: int) -> list[Series]:
        """The per-second series of one test (its TestRecord.pk), in saved order."""
        return [
            Series(
                host=r["host"], job_index=r["job_index"], metric=r["metric"],
                direction=r["direction"], t_ms=unpack(r["t_ms_i64le"], "q"),
                values=unpack(r["values_f64le"], "d"), phase=r["phase"],
            )
            for r in self._conn.execute("SELECT * FROM series WHERE test_pk = ? ORDER BY id", (test_pk,))
        ]

    def run_series(self, run: Run) -> "RunSeries":
        """Every test's per-second series of a run from get_run, by test seq,
        read when asked for (while the store is open)."""
        return RunSeries(self, run)

    @guarded
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
        return files.read_artifact(self.data_dir, t["artifact_dir"], name)

    def read_artifacts(self, test: TestRecord) -> Iterator[tuple[str, bytes]]:
        """(name, contents) of every artifact of a test from get_run, its archive opened once."""
        if not test.artifact_dir or not test.artifacts:
            return iter(())
        return files.read_artifacts(self.data_dir, test.artifact_dir, test.artifacts)

    @guarded
    def discard_orphan_artifacts(self, run_id: int) -> list[Path]:
        """Remove a run's artifact directories that no test refers to (a
        save cut short by a crash); return them."""
        if not _valid_run_id(run_id):
            return []
        used = {r[0] for r in self._conn.execute(
            "SELECT artifact_dir FROM tests WHERE run_id = ? AND artifact_dir IS NOT NULL", (run_id,))}
        return files.discard_orphans(self.data_dir, run_id, used)

    # ---- recovery (results/recover.py) ---------------------------------

    @guarded
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

    @guarded
    def forget_run(self, run_id: int) -> None:
        """Remove a run restored by restore_run that does not read back (its rows only)."""
        with self._writing(), self._conn:
            self._conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    @guarded
    def reserve_run_ids(self, up_to: int) -> None:
        """New runs get ids above `up_to`: a lost run's id is never given to another."""
        with self._writing(), self._conn:
            if self._conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'runs'",
                                  (up_to,)).rowcount == 0:
                self._conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('runs', ?)", (up_to,))


class RunSeries(Mapping):
    """A run's per-second series by test seq, each test's read from the
    store when asked for: a 64-host run's series are ~500 MB as Python
    lists, so a report holds one test's at a time."""

    def __init__(self, store: Store, run: Run):
        self._store = store
        self._pks = {t.seq: t.pk for t in run.tests}

    def __getitem__(self, seq: int) -> list[Series]:
        pk = self._pks[seq]
        try:
            return self._store.get_series(pk)
        except sqlite3.ProgrammingError:  # a bug of the caller: say which
            raise RuntimeError("a run's series are read from its store while it is open: "
                               "use run_series(run) inside `with Store.open(...)`") from None

    def __iter__(self):
        return iter(self._pks)

    def __len__(self) -> int:
        return len(self._pks)
