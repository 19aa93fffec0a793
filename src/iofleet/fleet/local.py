"""The local host: its facts, its CPU use, and iofleet's directories on its targets."""

import os
import platform
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from ..errors import FioError, IofleetError
from ..fio.command import error_line, fio_binary
from ..fio.jobfile import DATA_DIR_NAME, render_probe
from ..plan.params import AUTO_ENGINES
from .metrics import HostCpu


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


def _read_cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies from the first line of /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user/nice
    return total - idle, total


class CpuSampler:
    """Samples host CPU utilization once a second in a background thread.

    Each sample is (seconds since start at the end of the interval, % busy).
    """

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self):
        try:
            busy0, total0 = _read_cpu_times()
        except OSError:
            return  # no /proc/stat: the host is marked as without CPU data
        while not self._stop.wait(self.interval):
            busy1, total1 = _read_cpu_times()
            if total1 > total0:
                pct = 100.0 * (busy1 - busy0) / (total1 - total0)
                self.samples.append((time.monotonic() - self._start, pct))
            busy0, total0 = busy1, total1

    def summary(self, skip_s: float = 0.0, until_s: float | None = None) -> HostCpu:
        """Average and max over the samples of the measured part only."""
        vals = [
            pct
            for t, pct in self.samples
            if t - self.interval >= skip_s - 0.5 and (until_s is None or t <= until_s + 0.5)
        ]
        if not vals:
            return HostCpu(samples=0, avg_pct=None, max_pct=None)
        return HostCpu(samples=len(vals), avg_pct=sum(vals) / len(vals), max_pct=max(vals))


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


def resolve_engine(target: Path, engine: str, direct: bool) -> str:
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
    raise FioError(f"target {target}: no IO engine works{hint}: " + "; ".join(errors))

