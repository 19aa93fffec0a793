"""iofleet's own directory under each target directory: locked for the
run, and a record of the files iofleet made there, so that only those are
ever removed (truth rule 5)."""

import contextlib
import json
import os
import stat
from pathlib import Path

from ...errors import IofleetError
from ...fio.jobfile import DATA_DIR_NAME, DATA_FILE_FORMAT, PROBE_FILE
from .lock import LOCK_NAME, TargetLock, holder_facts, lock_at


RECORD_NAME = ".iofleet-files"
# What fio creates in iofleet's directory (jobfile's DATA_FILE_FORMAT and
# PROBE_FILE): a file of these names is iofleet's only when recorded.
_PROBE_NAME = Path(PROBE_FILE).name


def _fio_file(name: str) -> bool:
    return name.startswith("iofleet-data.") or name == _PROBE_NAME


def data_file_name(job: int) -> str:
    """Job n's data file (fio's $jobnum, $filenum 0: one file per job)."""
    return Path(DATA_FILE_FORMAT.replace("$jobnum", str(job)).replace("$filenum", "0")).name


def _read_record(dir_fd: int) -> set[str]:
    try:
        fd = os.open(RECORD_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return set()
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # (a FIFO would never end)
            return set()
        try:
            names = json.loads(f.read(1 << 20)).get("files", [])
        except (ValueError, AttributeError):
            return set()
    return {n for n in names if isinstance(n, str) and _fio_file(n) and "/" not in n}


def owned_data_files(own: Path) -> list[Path]:
    """iofleet's data files in its directory `own`: recorded as made by
    iofleet and still regular files (a killed or kept run's)."""
    try:
        fd = os.open(own, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        names = _read_record(fd)
    except OSError:
        return []
    finally:
        os.close(fd)
    return [own / n for n in sorted(names) if n != _PROBE_NAME and _regular(own / n)]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class _Dir:
    """iofleet's directory under one target, open (no symlink followed)
    and locked for this run."""

    def __init__(self, target: Path, own: Path, fd: int, lock: TargetLock):
        self.target, self.own, self.fd, self.lock = target, own, fd, lock
        self.files = _read_record(fd)

    def write_record(self) -> None:
        """Replace the record whole (rename), or remove it when empty."""
        if not self.files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(RECORD_NAME, dir_fd=self.fd)
            return
        tmp = RECORD_NAME + ".new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=self.fd)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=self.fd)
        with os.fdopen(fd, "w") as f:
            json.dump({"about": "files made by iofleet runs; iofleet removes only these", "files":
                       sorted(self.files)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, RECORD_NAME, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def stray(self) -> str | None:
        """A file of fio's names that iofleet did not make (or a recorded
        name that is no longer a plain file): fio would write through it."""
        for name in sorted(os.listdir(self.fd)):
            if not _fio_file(name):
                continue
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            if name not in self.files:
                return (f"{self.own / name} was not made by iofleet (it is not in {self.own / RECORD_NAME}, "
                        f"iofleet's record of its files there); move it out of {self.own}, then run again")
            if not stat.S_ISREG(st.st_mode):
                return (f"{self.own / name} is not a regular file (a symbolic link?): iofleet's file there was "
                        f"replaced; move it out of {self.own}, then run again")
        return None

    def remove_files(self) -> list[Path]:
        """Unlink the recorded files by name in the open directory: a
        symbolic link is never followed, and only regular files go."""
        removed = []
        for name in sorted(self.files):
            try:
                if stat.S_ISREG(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=self.fd)
                    if name != _PROBE_NAME:
                        removed.append(self.own / name)
                self.files.discard(name)
            except FileNotFoundError:
                self.files.discard(name)
            except OSError:
                pass
        return removed


class TargetDirs:
    """iofleet's own directory under each target: refused when it is a
    symbolic link or not a directory, created when missing, locked for the
    run (fleet/targets/lock.py), and on cleanup only the files iofleet recorded as
    its own are removed (truth rule 5)."""

    def __init__(self, targets: list[Path]):
        self.targets = [Path(t) for t in targets]
        self.created: list[Path] = []
        self._open: list[_Dir] = []

    @property
    def locks(self) -> list[TargetLock]:
        return [d.lock for d in self._open]

    def prepare(self, facts: dict | None = None) -> None:
        """Lock every target, and check it, before anything is written; on
        a refusal nothing is left held, and no directory made."""
        try:
            for target in self.targets:
                self._open.append(self._open_dir(target, facts or holder_facts()))
            for d in self._open:
                d.files.add(_PROBE_NAME)  # the engine probe's file: fio makes and removes it
                try:
                    d.write_record()
                except OSError as exc:
                    raise IofleetError(f"target {d.target}: cannot write {d.own / RECORD_NAME} "
                                       f"({exc.strerror})") from None
        except BaseException:
            self.release()
            for own in self.created:
                with contextlib.suppress(OSError):
                    os.rmdir(own)
            self.created = []
            raise

    def _open_dir(self, target: Path, facts: dict) -> _Dir:
        if not target.is_dir():
            raise IofleetError(f"target {target} is not a directory; create it or give another --target")
        own = target / DATA_DIR_NAME
        for _ in range(10):  # the last run's cleanup may remove the directory as it is opened: again
            d = self._try_open_dir(target, own, facts)
            if d is not None:
                return d
        raise IofleetError(f"target {target}: {own} keeps being removed and made again; run again")

    def _try_open_dir(self, target: Path, own: Path, facts: dict) -> _Dir | None:
        try:
            st = os.lstat(own)
        except FileNotFoundError:
            try:
                own.mkdir()
                self.created.append(own)
            except FileExistsError:
                pass  # another run made it just now: its lock decides
            except OSError as exc:
                raise IofleetError(f"target {target}: cannot create {own} ({exc.strerror})") from None
            try:
                st = os.lstat(own)
            except FileNotFoundError:
                return None
        if stat.S_ISLNK(st.st_mode):
            raise IofleetError(f"target {target}: {own} is a symbolic link (to {os.readlink(own)}), and iofleet "
                               f"writes only in a directory of its own; remove the link (`rm {own}`), then run again")
        if not stat.S_ISDIR(st.st_mode):
            raise IofleetError(f"target {target}: {own} is not a directory, and iofleet writes only in a directory "
                               f"of its own; move it away, then run again")
        if not os.access(own, os.W_OK):
            raise IofleetError(f"target {target}: {own} is not writable; fix its permissions")
        try:
            fd = os.open(own, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IofleetError(f"target {target}: cannot open {own} ({exc.strerror})") from None
        try:
            lock = lock_at(fd, LOCK_NAME, f"target {target}", facts)
        except BaseException:
            replaced = not _still_at(own, fd)
            os.close(fd)
            if replaced:
                return None
            raise
        if not _still_at(own, fd):  # removed (or swapped) since lstat: not the directory checked
            lock.release()
            os.close(fd)
            return None
        try:
            d = _Dir(target, own, fd, lock)
            problem = d.stray()
        except OSError as exc:
            problem = (f"cannot read {own} or iofleet's record of its files there ({exc.strerror}); fix it, then "
                       f"run again")
        if problem:
            lock.release()
            os.close(fd)
            raise IofleetError(f"target {target}: {problem}")
        return d

    def claim(self, jobs: int) -> None:
        """Record jobs 0..jobs-1's data files as iofleet's before fio makes
        them (a run killed after this leaves files the next run knows)."""
        names = {data_file_name(n) for n in range(jobs)}
        for d in self._open:
            if not names <= d.files:
                d.files |= names
                d.write_record()

    def cleanup(self) -> list[Path]:
        """Remove iofleet's recorded files (and the directories this run
        made, when empty); return the data files removed."""
        removed = []
        for d in self._open:
            removed += d.remove_files()
            with contextlib.suppress(OSError):
                d.write_record()
            if d.own in self.created:
                d.lock.release()  # its file goes first: the directory can then go
                try:
                    os.rmdir(d.own)
                except OSError:
                    pass  # something else lives there now: leave it
        return removed

    def release(self) -> None:
        """End of the run (its files removed or kept): the record keeps
        only the files that are there, for a later run; the locks go."""
        for d in self._open:
            d.files = {n for n in d.files if n != _PROBE_NAME and _exists(d.fd, n)}
            with contextlib.suppress(OSError):
                d.write_record()
            d.lock.release()
            os.close(d.fd)
        self._open = []


def _still_at(path: Path, fd: int) -> bool:
    """The directory open as `fd` is still the one at `path` (not a link)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except OSError:
        return False
