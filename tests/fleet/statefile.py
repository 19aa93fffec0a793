"""What a test harness (a test fleet, the Ceph test cluster) holds on this
machine: a state file named by a free token and kept locked while its owner
lives, so a later run tells a crashed run's leftovers (state file missing or
unlocked) from a live one's (locked); and its data directories, on a real
disk."""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def take_token(state_dir: Path, in_use) -> tuple[str, int] | None:
    """A free token (5 hex digits) and its state file state_dir/TOKEN.lock,
    held locked by this process for its lifetime (created locked, then
    published: nobody ever sees it unlocked while we are alive); None
    after 100 tries. `in_use(token)`: other signs that a token is taken."""
    state_dir.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        token = secrets.token_hex(3)[:5]
        if (state_dir / f"{token}.lock").exists() or in_use(token):
            continue
        tmp = state_dir / f".{token}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.link(tmp, state_dir / f"{token}.lock")
        except FileExistsError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            continue
        tmp.unlink()
        return token, fd
    return None


def try_lock(path: Path) -> int | None:
    """Open and exclusively flock `path` without waiting; the fd, or None."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def default_base_dir() -> Path:
    """Where fleets put their data directories: $IOFLEET_FLEET_DIR or
    ./scratch of the project (a real disk, not tmpfs)."""
    return Path(os.environ.get("IOFLEET_FLEET_DIR", ROOT / "scratch"))


def filesystem_type(path: Path) -> str | None:
    """Filesystem type of the mount holding `path` (from /proc/self/mountinfo)."""
    path = path.resolve()
    best, fstype = -1, None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        mount_point = fields[4].replace("\\040", " ")
        sep = fields.index("-")
        if (path == Path(mount_point) or Path(mount_point) in path.parents) and len(mount_point) > best:
            best, fstype = len(mount_point), fields[sep + 1]
    return fstype
