"""The results store: one SQLite database plus compressed artifact files.

Layout of a data directory:

    results.db                               runs, tests, metrics, series
    artifacts/run-<id>/<seq>-<test id>/files.zip
                                             raw files of each test (fio JSON, job
                                             files, messages, logs), one archive;
                                             before issue 19 one <name>.gz per file
    locks/run-<id>.lock                      held by the process running a run

One job per module: schema.py (tables, migrations, opening), locks.py (who
runs a run), artifacts.py (the files), rows.py (records to rows and back),
failures.py (damaged file, failed write), listing.py (which runs a listing
keeps) and queries.py (the Store that the rest of iofleet uses).
"""

from .artifacts import ARCHIVE, ARTIFACTS_DIR
from .failures import damaged
from .listing import RunFilter, is_day
from .queries import Store, default_data_dir, utc_now
from .schema import (DB_NAME, FINISHED_TEST_STATUSES, LOCKS_DIR, MAX_INTEGER, MIGRATIONS, RUN_SOURCES, RUN_STATUSES,
                     RUN_TABLES, SCHEMA_LOCK, SCHEMA_LOCK_WAIT_S, SCHEMA_VERSION, TEST_STATUSES)

__all__ = [
    "ARCHIVE", "ARTIFACTS_DIR", "DB_NAME", "FINISHED_TEST_STATUSES", "LOCKS_DIR", "MAX_INTEGER", "MIGRATIONS",
    "RUN_SOURCES", "RUN_STATUSES", "RUN_TABLES", "SCHEMA_LOCK", "SCHEMA_LOCK_WAIT_S", "SCHEMA_VERSION",
    "TEST_STATUSES", "RunFilter", "Store", "damaged", "default_data_dir", "is_day", "utc_now",
]
