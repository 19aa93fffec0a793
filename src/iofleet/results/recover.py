"""A damaged results database: say what is damaged (`iofleet results check`)
and copy every run that can still be read into a new store (`iofleet
results recover`).

Both read a private copy of the database files (results.db and its -wal),
so the damaged file is never modified, not even by SQLite's own recovery of
a journal. A run is copied whole (its tests, figures, series and artifact
files) or not at all, and only when it reads back from the new store; its
id stays the same, and ids of lost runs are never given to new runs.
"""

import contextlib
import os
import shutil
import sqlite3
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreError
from .store import DB_NAME, MAX_INTEGER, RUN_TABLES, Store

SQLITE_HEADER = b"SQLite format 3\x00"
MAX_PROBED_IDS = 1_000_000  # run ids tried one by one when the runs table cannot be listed
INTEGRITY_LINES = 20  # SQLite's integrity check stops after this many problems


@dataclass
class CheckReport:
    db: Path
    problems: list[str]  # SQLite's integrity check; [] when it found nothing
    readable: list[int] = field(default_factory=list)  # runs whose rows all read
    unreadable: dict[int, str] = field(default_factory=dict)  # run id → why not
    unlisted: str | None = None  # why not even the list of runs could be read

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unreadable and self.unlisted is None


@dataclass
class RecoverReport:
    source: Path
    target: Path
    saved: list[int] = field(default_factory=list)
    lost: dict[int, str] = field(default_factory=dict)  # run id → why
    unlisted: str | None = None
    missing_files: int = 0  # artifact directories that were not on disk (the database did not say so)


def _db(data_dir: Path) -> Path:
    db = Path(data_dir).absolute() / DB_NAME
    if not db.is_file():
        raise StoreError(f"no results database at {db}; give the data directory with --data-dir")
    return db


@contextlib.contextmanager
def _snapshot(db: Path, into: Path):
    """A read-write connection to a copy of the database files in a
    temporary directory under `into`, removed afterwards."""
    with open(db, "rb") as f:
        header = f.read(100)
    if not header.startswith(SQLITE_HEADER):
        raise StoreError(f"{db} is not an SQLite database (its first bytes are not SQLite's header): no run can "
                         f"be read from it; move it away (e.g. to {db.name}.bad) and a new store is made")
    try:
        into.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".iofleet-check-", dir=into))
    except OSError as e:
        raise StoreError(f"cannot write a copy of {db} to {into}: {e.strerror}; free space or choose another "
                         f"directory") from None
    try:
        copy = tmp / DB_NAME
        try:
            for suffix in ("", "-wal", "-journal"):  # what SQLite needs to see every committed change
                if Path(f"{db}{suffix}").exists():
                    shutil.copyfile(f"{db}{suffix}", f"{copy}{suffix}")
        except OSError as e:
            raise StoreError(f"cannot copy {db} to {tmp}: {e.strerror}; free space or choose another "
                             f"directory") from None
        _fit_to_file(copy)
        conn = sqlite3.connect(copy, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            yield conn
        finally:
            conn.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fit_to_file(copy: Path) -> None:
    """A truncated database claims more pages than its file holds, and SQLite
    then reads nothing of it: make the copy's header claim what is there,
    so the pages that survived can be read."""
    size = copy.stat().st_size
    with open(copy, "r+b") as f:
        header = f.read(100)
        if len(header) < 100:
            return
        page_size = struct.unpack(">H", header[16:18])[0]
        page_size = 65536 if page_size == 1 else page_size
        if page_size < 512 or page_size & (page_size - 1):
            return
        pages = size // page_size
        if struct.unpack(">I", header[28:32])[0] > pages > 0:
            f.truncate(pages * page_size)
            f.seek(28)
            f.write(struct.pack(">I", pages))


def _why(e: BaseException) -> str:
    return str(e) or type(e).__name__


def _run_ids(conn: sqlite3.Connection) -> list[int]:
    """Every run id the database may hold: the listed ones, and each id up
    to the highest it gave out (a damaged runs table may not list them all)."""
    ids: set[int] = set()
    top = 0
    with contextlib.suppress(sqlite3.DatabaseError):
        ids |= {r[0] for r in conn.execute("SELECT id FROM runs")}
    for query in ("SELECT seq FROM sqlite_sequence WHERE name = 'runs'", "SELECT max(id) FROM runs"):
        with contextlib.suppress(sqlite3.DatabaseError, TypeError):
            top = max(top, int(conn.execute(query).fetchone()[0] or 0))
    ids |= set(range(1, min(top, MAX_PROBED_IDS) + 1))
    return sorted(i for i in ids if isinstance(i, int) and 0 < i <= MAX_INTEGER)


def _tables(conn: sqlite3.Connection) -> set[str]:
    """The database's tables; _Unlisted when even its schema is unreadable."""
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise _Unlisted(f"its schema cannot be read ({_why(e)})") from None


class _Unlisted(Exception):
    """Not even the database's list of runs can be read."""


def _read_run(conn: sqlite3.Connection, tables: set[str], run_id: int) -> dict[str, list[dict]] | None:
    """Every row of one run ({table: rows}); None when there is no such run.
    sqlite3.DatabaseError when a page it needs is damaged."""
    row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    rows = {"runs": [dict(row)]}
    ids = {"runs": [run_id]}
    for table, column, parent in RUN_TABLES:
        found = []
        if table in tables:
            for parent_id in ids.get(parent, []):
                found += [dict(r) for r in conn.execute(f"SELECT * FROM {table} WHERE {column} = ?", (parent_id,))]
        rows[table] = found
        ids[table] = [r["id"] for r in found if "id" in r]
    return rows


def check_store(data_dir: Path) -> CheckReport:
    """SQLite's integrity check of the store, and which runs read whole."""
    db = _db(data_dir)
    with _snapshot(db, db.parent) as conn:
        report = CheckReport(db, [])
        try:
            tables = _tables(conn)
        except _Unlisted as e:
            report.problems, report.unlisted = [str(e)], str(e)
            return report
        report.problems = _integrity(conn, tables)
        for run_id in _run_ids(conn):
            try:
                if _read_run(conn, tables, run_id) is not None:
                    report.readable.append(run_id)
            except sqlite3.DatabaseError as e:
                report.unreadable[run_id] = _why(e)
        if not report.readable and not report.unreadable and report.problems:
            report.unlisted = "the list of runs cannot be read"
    return report


def _integrity(conn: sqlite3.Connection, tables: set[str]) -> list[str]:
    """SQLite's integrity check: [] when it finds nothing. When it cannot
    even finish, it is run table by table, to say which ones are damaged."""
    def check(arg: str = "") -> list[str]:
        lines = [r[0] for r in conn.execute(f"PRAGMA integrity_check{arg}")]
        return [] if lines == ["ok"] else [line for text in lines for line in text.splitlines()]

    try:
        return check(f"({INTEGRITY_LINES})")
    except sqlite3.DatabaseError:
        problems = []
        for table in sorted(tables):
            try:
                quoted = table.replace('"', '""')  # a name read from the damaged file
                problems += [f"table {table}: {line}" for line in check(f'("{quoted}")')]
            except sqlite3.DatabaseError as e:
                problems.append(f"table {table}: {_why(e)}")
        return problems or ["the integrity check cannot finish"]


def default_target(data_dir: Path) -> Path:
    data_dir = Path(data_dir).absolute()
    return data_dir.with_name(f"{data_dir.name}-recovered")


def recover_store(data_dir: Path, target: Path | None = None) -> RecoverReport:
    """Copy every run of the store in data_dir that can still be read, with
    its artifact files, into a new store in `target`."""
    data_dir = Path(data_dir).absolute()
    db = _db(data_dir)
    target = Path(target).absolute() if target is not None else default_target(data_dir)
    if target == data_dir:
        raise StoreError(f"recover into another directory than {data_dir}: the damaged store is never changed")
    if (target / DB_NAME).exists():
        raise StoreError(f"{target} already holds a results store; give a new or empty directory with -o")
    report = RecoverReport(db, target / DB_NAME)
    with _snapshot(db, target) as conn, Store.open(target) as new:
        try:
            tables = _tables(conn)
        except _Unlisted as e:
            report.unlisted = str(e)
            return report
        ids = _run_ids(conn)
        for run_id in ids:
            try:
                rows = _read_run(conn, tables, run_id)
            except sqlite3.DatabaseError as e:
                report.lost[run_id] = _why(e)
                continue
            if rows is None:
                continue
            try:
                new.restore_run(rows)
            except sqlite3.IntegrityError as e:  # a damaged value breaks a rule of the schema
                report.lost[run_id] = _why(e)
                continue
            try:
                report.missing_files += _copy_artifacts(data_dir, target, rows["tests"])
            except OSError as e:
                raise StoreError(f"cannot copy the artifact files of run {run_id} to {target}: {e.strerror}; "
                                 f"free space or choose another directory with -o") from None
            why = _reads_back(new, run_id)
            if why is None:
                report.saved.append(run_id)
            else:
                new.forget_run(run_id)
                shutil.rmtree(target / "artifacts" / f"run-{run_id}", ignore_errors=True)
                report.lost[run_id] = why
        if not ids:
            report.unlisted = "the list of runs cannot be read"
        new.reserve_run_ids(max(ids, default=0))
    return report


def _reads_back(store: Store, run_id: int) -> str | None:
    """Why a restored run does not read back whole from the new store (a
    damaged value inside a row that SQLite could read), or None."""
    try:
        run = store.get_run(run_id)
        for t in run.tests:
            store.get_series(t.pk)
            store.get_host_series(t.pk)
    except Exception as e:  # whatever a damaged value breaks: the run is not kept
        return _why(e)
    return None


def _copy_artifacts(data_dir: Path, target: Path, tests: list[dict]) -> int:
    """Copy (hard-link where possible: the store never rewrites an artifact
    file) each test's artifact directory; the number of missing ones."""
    missing = 0
    for t in tests:
        rel = t.get("artifact_dir")
        if not rel:
            continue
        src, dst = data_dir / rel, target / rel
        if not src.is_dir() or data_dir.resolve() not in src.resolve().parents:
            missing += 1
            continue
        shutil.copytree(src, dst, copy_function=_link_or_copy, dirs_exist_ok=True)
    return missing


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
