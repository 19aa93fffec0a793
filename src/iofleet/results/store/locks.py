"""Who is running a run. A run being measured is held by its process: an
exclusive lock on locks/run-<id>.lock (flock, released by the kernel when
the process dies, even by kill -9). A run left 'running' that no process
holds is stale: its process crashed, and `iofleet run --resume` can finish it."""

import contextlib
import fcntl
import os
from pathlib import Path

from ...errors import StoreError
from .schema import LOCKS_DIR


def _lock_note(fd: int) -> str:
    """' (pid N)' from a held lock file, or nothing."""
    try:
        return f" (pid {int(os.pread(fd, 32, 0).split()[0])})"
    except (OSError, ValueError, IndexError):
        return ""


class RunLocks:
    """The run locks of one data directory held by this process."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self._held: dict[int, int] = {}  # run id → fd of its held lock file

    def path(self, run_id: int) -> Path:
        return self.data_dir / LOCKS_DIR / f"run-{run_id}.lock"

    def holds(self, run_id: int) -> bool:
        return run_id in self._held

    def claim(self, run_id: int) -> None:
        """Hold the run; StoreError when another process holds it. OSError
        when the lock file cannot be made (the caller names the directory)."""
        if run_id in self._held:
            return
        path = self.path(run_id)
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
        self._held[run_id] = fd

    def release(self, run_id: int) -> None:
        """Let go of a held run."""
        fd = self._held.pop(run_id, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                self.path(run_id).unlink()
            os.close(fd)

    def release_all(self) -> None:
        """Let go of every held run without removing its lock file (they stay as they are: running ones
        become stale)."""
        for fd in self._held.values():
            os.close(fd)
        self._held.clear()

    def holder(self, run_id: int) -> int | None:
        """The pid of the process running `run_id` (0 when it cannot be
        read), or None when no process holds it."""
        try:
            fd = os.open(self.path(run_id), os.O_RDONLY | os.O_CLOEXEC)
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
