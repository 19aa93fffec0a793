"""A test's artifact files (raw fio output, job files, messages, logs): one
zip archive per test, artifacts/run-<id>/<seq>-<test id>/files.zip, one
member per file, each deflated. It is written on a thread while the test's
rows go in, synced before its row commits, removed again when the save
fails, and its members read back by the names the store lists.

Until issue 19 each file was gzip'ed on its own (<name>.gz in the same
directory); such stores still read. One archive instead of ~300 files a
fleet test: one write, one fsync and one rename, instead of hundreds
contending for the GIL and the disk; zip rather than tar so that one
file (a web download) is read without decompressing the others.

A large test's archive (a fleet test's ~300 logs) is written by a process
of its own, on the other core: on a thread, its zlib work kept taking the
GIL back from the thread summing up the test (measured on 64 hosts × 24
tests: the ingest took ~15 % longer)."""

import errno
import gzip
import io
import multiprocessing
import os
import shutil
import signal
import threading
import zipfile
import zlib
from collections.abc import Iterator
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from pathlib import Path

from ...errors import StoreError

ARTIFACTS_DIR = "artifacts"
ARCHIVE = "files.zip"
# level 1: on fio's logs and JSON ~15 % larger than 4, in two thirds of the
# CPU time (a 64-host run's raw files are ~300 MB; the machine running
# iofleet is busy parsing them meanwhile)
LEVEL = 1
_MEMBER_TIME = (1980, 1, 1, 0, 0, 0)  # zip's earliest: an archive's bytes depend on its files only
# From this many bytes of files a test's archive is written by the archiver
# process (its start costs ~0.1 s once; a local test's files stay on a thread).
PROCESS_BYTES = 4 * 1024**2
_archiver: ProcessPoolExecutor | None = None
_archiver_lock = threading.Lock()


def check_names(artifacts: dict[str, bytes]) -> None:
    for name in artifacts:
        if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
            raise ValueError(f"artifact name {name!r} must be a plain file name")


def safe_name(text: str) -> str:
    """A file-name-safe version of a test id (workload names are user text)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)


def write_archive(directory: Path, artifacts: dict[str, bytes]) -> Path:
    """Write the test's files.zip via a temp file and rename, so it is never seen half-written."""
    final = directory / ARCHIVE
    tmp = directory / f".{ARCHIVE}.tmp{os.getpid()}"
    # Built in memory, written at once: a file's every 8 KiB write lets go
    # of the GIL and takes it back, each time from the thread summing up the
    # test (hundreds of members a test; the deflated archive is a few MB).
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in artifacts.items():
            member = zipfile.ZipInfo(name, date_time=_MEMBER_TIME)
            member.external_attr = 0o644 << 16  # rw-r--r-- when unzipped
            z.writestr(member, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=LEVEL)
    try:
        with open(tmp, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def _ignore_ctrl_c() -> None:
    """The archiver goes on through a Ctrl-C: the run then saves the
    interrupted test's partial results, and their archive."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def archiver() -> ProcessPoolExecutor:
    """The process writing large archives, one per iofleet process, started
    at first use (spawn: this process has threads, which a fork would copy
    mid-step)."""
    global _archiver
    with _archiver_lock:
        if _archiver is None:
            _archiver = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_ignore_ctrl_c)
        return _archiver


def _archiver_died() -> OSError:
    global _archiver
    with _archiver_lock:
        _archiver = None  # the next test starts a new one
    return OSError(errno.EIO, "the process writing the test's archive died")


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
    """The artifact archive of one test being saved: written on a thread
    (or, when large, by the archiver process), started as soon as fio
    returns so that it is written while the test is summed up and stored."""

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
        self._thread: ThreadPoolExecutor | None = None
        self._future: Future | None = None
        self.artifacts: dict[str, bytes] = {}

    @property
    def started(self) -> bool:
        return self._future is not None

    def start(self, artifacts: dict[str, bytes]) -> None:
        self.artifacts = artifacts
        self._made_dir = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        if sum(len(data) for data in artifacts.values()) >= PROCESS_BYTES:
            try:
                self._future = archiver().submit(write_archive, self.directory, artifacts)
                return
            except BrokenExecutor:
                _archiver_died()  # and this test's archive goes on a thread
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="artifacts")
        self._future = self._thread.submit(write_archive, self.directory, artifacts)

    def finish(self) -> None:
        """Wait for the writer, raise its failure, then sync the directory:
        the rename reaches the disk before the row commits."""
        self._wait()
        try:
            self._future.result()
        except BrokenExecutor:
            raise _archiver_died() from None
        fsync_dir(self.directory)

    def undo(self) -> None:
        """After a failed save: the writer done (on an interrupt too), then its file and directory gone."""
        self._wait()
        for path in self.written:
            path.unlink(missing_ok=True)
        if self._made_dir:
            _remove_empty_dirs(self.directory, stop=self.root)

    def _wait(self) -> None:
        """Wait for the writer; what it wrote goes to `written`."""
        if self._future is None:
            return
        wait([self._future])
        if self._thread is not None:
            self._thread.shutdown()
        f = self._future
        if f.done() and not f.cancelled() and f.exception() is None and f.result() not in self.written:
            self.written.append(f.result())


def _unreadable(path: Path, e: Exception) -> StoreError:
    return StoreError(f"cannot read artifact {path}: {e}")


def read_artifact(data_dir: Path, artifact_dir: str, name: str) -> bytes:
    """One artifact file, decompressed: a member of the test's archive, or
    in a store written before issue 19 its own <name>.gz."""
    return next(read_artifacts(data_dir, artifact_dir, [name]))[1]


def read_artifacts(data_dir: Path, artifact_dir: str, names: list[str]) -> Iterator[tuple[str, bytes]]:
    """(name, contents) of a test's artifacts, in the order of `names`,
    the archive opened once."""
    directory = data_dir / artifact_dir
    archive = directory / ARCHIVE
    if not archive.exists():  # the layout before issue 19: one gzip file per artifact
        for name in names:
            path = directory / f"{name}.gz"
            try:
                yield name, gzip.decompress(path.read_bytes())
            except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
                raise _unreadable(path, e) from None
        return
    try:
        with zipfile.ZipFile(archive) as z:
            for name in names:
                yield name, z.read(name)
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        raise _unreadable(archive, e) from None


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
