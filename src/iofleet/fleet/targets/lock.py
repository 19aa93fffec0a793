"""A target belongs to one run at a time.

Every iofleet process (CLI, web, a study) takes a target's lock before it
writes anything there and keeps it until its clean-up has ended. The lock
is the kernel's (flock): it goes with the process that holds it, so a run
killed with kill -9 leaves no stale lock, and `run --resume` or a new run
can start at once. A local directory target's lock file lives in
iofleet's own directory there (`<target>/iofleet/.iofleet-lock`), so every
iofleet on this machine sees it (and on NFS, every client that locks
through the server). A device target, and a fleet host's target (the host
runs only fio, which takes no lock), are locked in a directory of the
machine running iofleet (MACHINE_LOCKS): two iofleet processes there
cannot share one; iofleet on another machine does not see that lock.
"""

import errno
import fcntl
import hashlib
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ...errors import IofleetError

LOCK_NAME = ".iofleet-lock"
# Machine-wide locks: /run/lock is the system's (tmpfs, cleared at boot);
# IOFLEET_LOCK_DIR moves them (for a host without /run/lock).
MACHINE_LOCKS = Path(os.environ.get("IOFLEET_LOCK_DIR") or (
    "/run/lock/iofleet" if os.path.isdir("/run/lock") else Path(tempfile.gettempdir()) / "iofleet-locks"))


class TargetBusy(IofleetError):
    """Another iofleet run holds the target."""


class TargetLock:
    """One held lock; `note` adds what the holder is (its run id) for the
    message another run gets."""

    def __init__(self, fd: int, dir_fd: int | None, name: str, facts: dict):
        self.fd, self.dir_fd, self.name, self.facts = fd, dir_fd, name, facts
        self._write()

    def note(self, **facts) -> None:
        self.facts |= facts
        self._write()

    def _write(self) -> None:
        try:  # for the other run's message; the lock works without it
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps(self.facts).encode(), 0)
        except OSError:
            pass

    def release(self) -> None:
        """Let go (its file is removed first, while still held: a process
        that opened it meanwhile sees it unlinked and tries again)."""
        if self.fd < 0:
            return
        try:
            if _same_file(self.fd, self.name, self.dir_fd):
                os.unlink(self.name, dir_fd=self.dir_fd)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1


def holder_facts(**facts) -> dict:
    """What a lock file says of its holder: this process, and the caller's
    facts (the results directory, the run id when known)."""
    return {"pid": os.getpid(), "since": datetime.now(timezone.utc).isoformat(timespec="seconds")} | {
        k: v for k, v in facts.items() if v is not None}


def _same_file(fd: int, name: str, dir_fd: int | None) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _busy_message(what: str, fd: int) -> str:
    try:
        facts = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        facts = {}
    facts = facts if isinstance(facts, dict) else {}
    who = [f"pid {facts['pid']}"] if facts.get("pid") else []
    who += [f"run {facts['run']}"] if facts.get("run") else []
    who += [f"results in {facts['data_dir']}"] if facts.get("data_dir") else []
    return (f"{what} is being tested by another iofleet run" + (f" ({', '.join(who)})" if who else "")
            + "; wait for it to end, or stop it (Ctrl-C there), then run again")


def lock_at(dir_fd: int | None, name: str, what: str, facts: dict) -> TargetLock:
    """Take the lock file `name` (in the directory open as `dir_fd`, or an
    absolute path); TargetBusy naming the holder when another process has
    it. Symbolic links are never followed."""
    for _ in range(20):
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.EACCES:  # another user's lock file: reading is enough to lock it
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            elif exc.errno == errno.ELOOP:
                raise IofleetError(f"{what}: its lock file {name} is a symbolic link; remove it, then run "
                                   f"again") from None
            else:
                raise IofleetError(f"{what}: cannot create its lock file {name} ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            message = _busy_message(what, fd)
            os.close(fd)
            raise TargetBusy(message) from None
        if _same_file(fd, name, dir_fd):
            return TargetLock(fd, dir_fd, name, facts)
        os.close(fd)  # removed by its last holder as we opened it: take the new one
    raise IofleetError(f"{what}: its lock file {name} keeps changing; run again")


def lock_on_this_machine(kind: str, key: str, what: str, facts: dict) -> TargetLock:
    """A lock in MACHINE_LOCKS for a target iofleet cannot put a file in
    (a device; a fleet host's target): `kind` and `key` name it."""
    try:
        MACHINE_LOCKS.mkdir(mode=0o1777, parents=True, exist_ok=True)
        st = os.lstat(MACHINE_LOCKS)
    except OSError as exc:
        raise IofleetError(f"cannot create iofleet's lock directory {MACHINE_LOCKS} ({exc.strerror}); set "
                           f"IOFLEET_LOCK_DIR to a writable directory") from None
    if not os.path.isdir(MACHINE_LOCKS) or os.path.islink(MACHINE_LOCKS):
        raise IofleetError(f"iofleet's lock directory {MACHINE_LOCKS} is not a directory; remove it, or set "
                           f"IOFLEET_LOCK_DIR to another one")
    if st.st_uid == os.geteuid() and st.st_mode & 0o7777 != 0o1777:
        os.chmod(MACHINE_LOCKS, 0o1777)  # every user's iofleet locks there (sticky, as /tmp)
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return lock_at(None, str(MACHINE_LOCKS / f"{kind}-{digest}.lock"), what, facts | {"key": key})


def lock_fleet_target(address: str, port: int, target: str, facts: dict) -> TargetLock:
    """A fleet host's target, by the fio server's endpoint and the path."""
    return lock_on_this_machine("fleet", f"{address}:{port}\0{target}", f"target {target} of {address}:{port}",
                                facts)
