"""Processes on this machine, as the test harnesses (test fleets, the Ceph
test cluster) look at and end them: through /proc and signals, so a
process in another namespace is seen as well as one of ours."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path


def comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ..." -- comm may hold spaces or parentheses
    return int(stat.rsplit(")", 1)[1].split()[1])


def is_running(pid: int) -> bool:
    """True for a live process; False for a gone or zombie one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_group(pid: int) -> None:
    """kill -9 the process group `pid` leads (a process started in its own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def running_processes() -> dict[int, tuple[str, str]]:
    """{pid: (cmdline, net namespace id)} of every running process."""
    procs = {}
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or not is_running(int(pid_dir.name)):
            continue
        try:
            cmdline = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            netns = os.readlink(pid_dir / "ns" / "net")
        except OSError:
            continue
        procs[int(pid_dir.name)] = (cmdline.strip(), netns)
    return procs


def die_with_parent() -> None:
    """In the child before exec: get SIGKILL when the test process dies, so
    a killed pytest does not leave fio servers behind (fio's own forked
    children do not inherit this; cleanup_stale catches those)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While fleets are up, turn SIGTERM (e.g. a CI job timeout) into
    KeyboardInterrupt, so pytest still runs the fixtures' teardown. (A
    SIGKILLed pytest cannot clean up: the fio servers die with it through
    PR_SET_PDEATHSIG and the next run's cleanup_stale removes the rest.)"""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
