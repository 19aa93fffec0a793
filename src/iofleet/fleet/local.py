"""The local host: its facts and iofleet's directories on its targets."""

import os
import platform
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

from ..errors import FioError, IofleetError
from ..fio.command import error_line, fio_binary
from ..fio.jobfile import DATA_DIR_NAME, Device, render_probe
from ..plan.params import AUTO_ENGINES


def host_facts() -> dict:
    """What a result needs to say about where it came from."""
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "memory_bytes": mem,
    }


def target_rotational(target: Path) -> bool | None:
    """Whether the block device under a directory (or a device target
    itself) is a spinning disk; None where it cannot be seen (tmpfs,
    overlay, network filesystems)."""
    try:
        st = os.stat(target)
        dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
        sys_dev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
        for d in (sys_dev, sys_dev.parent):  # a partition's queue is its disk's
            flag = d / "queue" / "rotational"
            if flag.exists():
                return flag.read_text().strip() == "1"
    except OSError:
        pass
    return None


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_kernel_caches() -> str | None:
    """Write dirty data back, then drop this host's clean page cache,
    dentries and inodes (root only). None when done, else why not."""
    if os.geteuid() != 0:
        return "not root"
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError as exc:
        return f"cannot write {DROP_CACHES} ({exc.strerror})"
    return None


class TargetDirs:
    """iofleet's own directory under each target: created when missing,
    and on cleanup only iofleet's files are removed (truth rule 5)."""

    def __init__(self, targets: list[Path]):
        self.targets = [Path(t) for t in targets]
        self.created: list[Path] = []

    def prepare(self) -> None:
        for target in self.targets:
            if not target.is_dir():
                raise IofleetError(
                    f"target {target} is not a directory; create it or give another --target"
                )
            own = target / DATA_DIR_NAME
            if not own.exists():
                try:
                    own.mkdir()
                except OSError as exc:
                    raise IofleetError(f"target {target}: cannot create {own} ({exc.strerror})") from None
                self.created.append(own)
            if not os.access(own, os.W_OK):
                raise IofleetError(f"target {target}: {own} is not writable; fix its permissions")

    def cleanup(self) -> list[Path]:
        """Remove iofleet's data files; return what was removed."""
        removed = []
        for target in self.targets:
            own = target / DATA_DIR_NAME
            for f in own.glob("iofleet-data.*"):
                try:
                    f.unlink()
                    removed.append(f)
                except OSError:
                    pass
            if own in self.created:
                try:
                    own.rmdir()
                except OSError:
                    pass  # something else lives there now: leave it
        return removed


def resolve_engine(target: Path | Device, engine: str, direct: bool) -> str:
    """The engine to use on a target: the one asked for, checked, or for
    `auto` the first of io_uring, libaio, psync that works there."""
    candidates = AUTO_ENGINES if engine == "auto" else (engine,)
    errors = []
    with tempfile.TemporaryDirectory(prefix="iofleet-probe-") as tmp:
        job = Path(tmp) / "probe.fio"
        for candidate in candidates:
            job.write_text(render_probe(target, candidate, direct))
            try:
                proc = subprocess.run(
                    [fio_binary(), "--output-format=terse", "--eta=never", str(job)],
                    capture_output=True, text=True, timeout=60, cwd=tmp,
                )
            except subprocess.TimeoutExpired:
                errors.append(f"{candidate}: probe timed out")
                continue
            if proc.returncode == 0:
                return candidate
            errors.append(f"{candidate}: {error_line(proc.stderr, proc.stdout)}")
    hint = " (the filesystem may not support O_DIRECT: try `direct: false`)" if direct else ""
    raise FioError(f"target {getattr(target, 'path', target)}: no IO engine works{hint}: " + "; ".join(errors))

