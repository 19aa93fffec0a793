"""fio's processes on the local host: ended with iofleet, found by what
they hold.

fio runs each job in a process of its own session, forked by fio's main
process. Killing the main process (kill -9, the OOM killer) leaves those
job processes running until their runtime is over, and nothing in fio
ends fio when iofleet itself is killed. Both would leave IO running on a
target while the next test, or a resumed run, measures it.
"""

import ctypes
import os
import signal
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _prctl = _libc.prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def end_with_parent():
    """A `preexec_fn` for fio: when the thread that started it dies (iofleet
    killed, even by SIGKILL), fio gets SIGTERM and stops its jobs as on
    Ctrl-C. Start fio with `restore_signals=False` too: SIGPIPE then stays
    ignored, as in Python, so fio writing to the closed pipe of a dead
    iofleet cannot kill it before it has stopped its jobs."""
    parent = os.getpid()

    def preexec():
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
            if os.getppid() != parent:  # iofleet died before the line above
                os._exit(1)

    return preexec


def _pids():
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def kill_leftovers(cmd: list[str], gone_s: float = 5.0) -> list[int]:
    """Kill the processes still running `cmd` (fio's job processes after its
    main process was killed) and wait until they are gone; return their
    pids. iofleet's fio command lines name a job file in a temporary
    directory of their own, so they match only that fio's processes."""
    want = ("\0".join(cmd) + "\0").encode()
    killed = []
    for pid in _pids():
        if pid != os.getpid() and _read(f"/proc/{pid}/cmdline") == want:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + gone_s
    while killed and time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in killed):
        time.sleep(0.05)
    return killed


def fio_using(dirs: list[Path]) -> dict[int, Path]:
    """fio processes of this host with a file open under one of `dirs`:
    pid → that directory (processes of other users are not visible)."""
    prefixes = [(str(Path(d).resolve()).rstrip("/") + "/", Path(d)) for d in dirs]
    found: dict[int, Path] = {}
    for pid in _pids():
        if _read(f"/proc/{pid}/comm") != b"fio\n":
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            hit = next((d for prefix, d in prefixes if target.startswith(prefix)), None)
            if hit is not None:
                found[pid] = hit
                break
    return found
