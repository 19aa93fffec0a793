"""A test's artifact files (raw fio output, job file, logs), gzip-compressed
under artifacts/run-<id>/<seq>-<test id>/: written on a thread pool while
the test's rows go in, synced before its row commits, removed again when
the save fails, and read back by the names the store lists."""

import gzip
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...errors import StoreError

ARTIFACTS_DIR = "artifacts"
# Threads compressing and syncing a test's artifact files: compression
# uses every CPU, and the fsyncs overlap (a test on 64 hosts has ~300 files;
# one at a time they take seconds).
ARTIFACT_WRITERS = max(16, os.cpu_count() or 1)


def check_names(artifacts: dict[str, bytes]) -> None:
    for name in artifacts:
        if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
            raise ValueError(f"artifact name {name!r} must be a plain file name")


def safe_name(text: str) -> str:
    """A file-name-safe version of a test id (workload names are user text)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)


def write_gz(directory: Path, name: str, data: bytes) -> Path:
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


def fsync_dir(directory: Path) -> None:
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


class TestFiles:
    """The artifact files of one test being saved: write_gz for each on
    several threads (zlib and fsync let go of the GIL; a fleet test has
    hundreds of logs), started as soon as the test's row exists so the
    files are written while its other rows go in."""

    __test__ = False  # not a pytest test class, despite its name

    def __init__(self, data_dir: Path, run_id: int, seq: int, test_id: str):
        self.root = data_dir / ARTIFACTS_DIR
        rel = Path(ARTIFACTS_DIR, f"run-{run_id}", f"{seq:04d}-{safe_name(test_id)}")
        # Never into an existing directory: a replaced result's, or the
        # files of a save that a crash cut short (harmless, but not ours).
        base, n = rel, 1
        while (data_dir / rel).exists():
            n += 1
            rel = base.with_name(f"{base.name}.{n}")
        self.rel_dir = rel.as_posix()  # as stored in the tests row
        self.directory = data_dir / rel
        self.written: list[Path] = []
        self._made_dir = False
        self._pool: ThreadPoolExecutor | None = None
        self._futures = []
        self._collected = False

    def start(self, artifacts: dict[str, bytes]) -> None:
        self._made_dir = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=ARTIFACT_WRITERS, thread_name_prefix="artifacts")
        self._futures = [self._pool.submit(write_gz, self.directory, name, data) for name, data in artifacts.items()]

    def finish(self) -> None:
        """Wait for every writer, raise the first failure, then sync the
        directory: the renames reach the disk before the row commits."""
        self._wait(failure=True)
        fsync_dir(self.directory)

    def undo(self) -> None:
        """After a failed save: every writer done (on an interrupt too), then its files and directory gone."""
        self._wait(failure=False)
        for path in self.written:
            path.unlink(missing_ok=True)
        if self._made_dir:
            _remove_empty_dirs(self.directory, stop=self.root)

    def _wait(self, failure: bool) -> None:
        """Wait for every writer, add the files written to `written`, then
        raise the first failure (unless `failure` is False)."""
        if self._pool is None:
            return
        try:
            self._pool.shutdown(wait=True)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            if not self._collected:
                self._collected = True
                self.written.extend(f.result() for f in self._futures
                                    if f.done() and not f.cancelled() and f.exception() is None)
        for f in self._futures:
            if failure and not f.cancelled():
                f.result()


def read_artifact(data_dir: Path, artifact_dir: str, name: str) -> bytes:
    """One artifact file, decompressed."""
    path = data_dir / artifact_dir / f"{name}.gz"
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise StoreError(f"cannot read artifact {path}: {e}") from None


def discard_orphans(data_dir: Path, run_id: int, used: set[str]) -> list[Path]:
    """Remove a run's artifact directories not in `used` (stored relative
    paths); return them."""
    run_dir = data_dir / ARTIFACTS_DIR / f"run-{run_id}"
    if not run_dir.is_dir():
        return []
    removed = []
    for d in run_dir.iterdir():
        if d.is_dir() and Path(ARTIFACTS_DIR, run_dir.name, d.name).as_posix() not in used:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed
