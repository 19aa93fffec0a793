"""What goes wrong with a store's files, as one-line errors: a damaged
database file, and a data directory that cannot be written (disk full,
read-only, I/O error)."""

import errno
import functools
import shutil
import sqlite3
from pathlib import Path

from ...errors import StoreDamagedError, StoreError


class Damage(Exception):
    """A stored value that no longer decodes: the database file is damaged."""


def is_damage(e: BaseException) -> bool:
    """Whether an error says the database file is damaged (or not a database)."""
    if isinstance(e, Damage):
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


def guarded(method):
    """A Store method whose damaged-file errors become one StoreDamagedError."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, Damage) as e:
            if not is_damage(e):
                raise
            raise damaged(self.path, e) from None

    return wrapper


def no_space(e: BaseException, data_dir: Path | None = None) -> bool:
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


def cannot_write(data_dir: Path, e: BaseException) -> StoreError:
    """One line for a failed write of the data directory."""
    if no_space(e, data_dir):
        return StoreError(f"cannot write results to {data_dir}: no space left on device; "
                          f"free space or use --data-dir")
    why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return StoreError(f"cannot write results to {data_dir}: {why}; fix it or use --data-dir")
