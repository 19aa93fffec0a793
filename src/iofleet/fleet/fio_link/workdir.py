"""Scratch directories for job files and fio's outputs, reclaimable after a crash.

Every scratch directory of a process lives under one parent,
$TMPDIR/iofleet-<pid>-<random>/, whose `lock` file the process holds an
flock on while it lives. A process killed with -9 cannot remove its parent;
the next process that makes one (a run, a resume, a probe) removes every
parent whose lock is free, since its owner is dead (the kernel drops a dead
process's flocks).
"""

import atexit
import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

PARENT_RE = re.compile(r"^iofleet-\d+-[A-Za-z0-9_]+\Z")  # what reclaim() may remove: never another name
LOCK_NAME = "lock"

_guard = threading.Lock()
_parent: tuple[int, Path, int] | None = None  # (pid, parent directory, its lock's fd)


@contextlib.contextmanager
def work_dir(prefix: str):
    """A fresh scratch directory (`prefix` names its use: iofleet-test-,
    iofleet-prepare-…), removed on leaving; inside this process's parent."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir=parent()) as tmp:
        yield Path(tmp)


def parent() -> Path:
    """This process's parent directory, made (and dead ones reclaimed) on first use."""
    global _parent
    with _guard:
        if _parent is None or _parent[0] != os.getpid() or not _parent[1].is_dir():
            reclaim()
            _parent = _make_parent()
        return _parent[1]


def _make_parent() -> tuple[int, Path, int]:
    # Made and locked under a name reclaim() ignores, then renamed: a
    # parent that reclaim() can see is always locked by a live owner.
    base = Path(tempfile.gettempdir())
    making = Path(tempfile.mkdtemp(prefix="iofleet-new-", dir=base))
    fd = os.open(making / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    final = base / f"iofleet-{os.getpid()}-{making.name.removeprefix('iofleet-new-')}"
    making.rename(final)
    atexit.register(_remove, os.getpid(), final, fd)
    return os.getpid(), final, fd


def _remove(pid: int, path: Path, fd: int) -> None:
    if os.getpid() == pid:  # not in a forked child, whose parent still uses it
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def reclaim(base: Path | None = None) -> list[Path]:
    """Remove the scratch parents of dead iofleet processes under `base`
    ($TMPDIR); the removed directories."""
    base = Path(base or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not PARENT_RE.match(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(os.path.join(entry.path, LOCK_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # no lock file: not one of ours (or not yet), leave it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its owner lives
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
        finally:
            os.close(fd)
    return removed
