"""Drives one fio process on the local host: streams its periodic JSON
status for live figures, stops it cleanly on request, and hands back the
final output."""

import fnmatch
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...fio.jobfile import LOG_INTERVAL_MS, LOG_METRICS, LOG_PREFIX, WARMUP_LOG_PREFIX
from ...fio.parse import DocumentSplitter, parse_log
from ...fio.records import Series
from ..metrics.records import HostSample
from ..metrics.sampler import MetricsSampler
from .procs import end_with_parent, kill_leftovers

# fio's line when it refuses to write to a device its host has mounted.
MOUNTED_REFUSAL = "appears mounted, and 'allow_mounted_write' isn't set"

# After asking fio to stop (SIGINT, it then writes its results), how long
# to wait before killing it.
STOP_GRACE_S = 5.0


@dataclass
class RoundFigures:
    """One fleet host's latest status round, exact, from its fio server's
    own status as the relay decodes it (fio_link/status_frames.py)."""

    end_s: float  # the round's end, on the host's measured clock
    seconds: float  # the round's length
    iops: float
    bw_bytes_s: float
    lat_mean_ns: float | None
    p99_ns: float | None


@dataclass
class LiveFigures:
    """Rates over the last status interval (a fleet: its last round every
    host has), summed over jobs and hosts (None before any), each fleet
    host's latest metrics (node_exporter) and, where its fio server's
    status is decoded, its latest round (`rounds`)."""

    elapsed_s: float
    iops: float | None
    bw_bytes_s: float | None
    lat_mean_ns: float | None
    hosts: dict[str, HostSample | None] | None = None
    rounds: dict[str, RoundFigures | None] | None = None


@dataclass
class FioRun:
    returncode: int
    final_output: str | None  # the last complete JSON document
    stdout: str  # anything on stdout that was not a JSON document
    stderr: str
    stopped: bool  # stop was requested while it ran
    killed: bool  # it did not stop in time and was killed
    wall_s: float
    ended_early: bool = False  # `finish` ended it (steady): its results are whole


def _totals(doc: dict) -> tuple[int, int, float, int]:
    """(ios, bytes, latency sum ns, latency samples) over all jobs and directions."""
    ios = nbytes = lat_n = 0
    lat_sum = 0.0
    for job in doc.get("jobs", []):
        for d in ("read", "write"):
            s = job.get(d) or {}
            ios += s.get("total_ios", 0)
            nbytes += s.get("io_bytes", 0)
            lat = s.get("lat_ns") or {}
            n = lat.get("N", 0)
            lat_n += n
            lat_sum += lat.get("mean", 0.0) * n
    return ios, nbytes, lat_sum, lat_n


class LiveRates:
    """Turns fio's cumulative status documents into per-interval rates.
    fio resets its counters when the warm-up ends; that interval is skipped."""

    def __init__(self):
        self._last = None

    def update(self, doc: dict, now: float, elapsed: float) -> LiveFigures | None:
        cur = (now, *_totals(doc))
        last, self._last = self._last, cur
        if last is None:
            return None
        dt = cur[0] - last[0]
        d_ios, d_bytes, d_lat, d_n = (c - l for c, l in zip(cur[1:], last[1:]))
        if dt <= 0 or d_ios < 0 or d_n < 0:
            return None
        return LiveFigures(
            elapsed_s=elapsed,
            iops=d_ios / dt,
            bw_bytes_s=d_bytes / dt,
            lat_mean_ns=d_lat / d_n if d_n else None,
        )


def run_fio(
    cmd: list[str],
    workdir: Path,
    stop: threading.Event,
    on_live=None,
    timeout_s: float | None = None,
    abandon: threading.Event | None = None,
    on_status=None,
    finish: threading.Event | None = None,
    env: dict[str, str] | None = None,
) -> FioRun:
    """Run a fio command line in `workdir` (where its logs land).

    `on_live(LiveFigures)` is called about once a second, and
    `on_status(document)` with each of fio's status documents. Setting
    `stop` sends fio SIGINT (it stops its jobs and still writes its
    results); if it has not exited STOP_GRACE_S later it is killed.
    `timeout_s` bounds the whole run the same way. Setting `finish` ends
    fio the same way, as planned (the test is steady): `ended_early`.
    Setting `abandon` kills fio at once: its results are not wanted (a
    fleet host declared lost). `env`: added to fio's environment (a
    target's, e.g. CEPH_CONF).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=os.environ | env if env else None,
        text=True,
        # Own process group: a terminal Ctrl-C reaches iofleet only, and
        # iofleet decides how fio is stopped.
        start_new_session=True,
        # fio stops its jobs when iofleet dies, even by kill -9 (procs.py).
        preexec_fn=end_with_parent(),
        restore_signals=False,
    )
    output = _Output(proc, start, on_live, on_status)
    stopped, killed, ended_early = _watch(proc, start, stop, timeout_s, abandon, finish)
    if proc.returncode < 0:
        # Killed by a signal: its job processes (each in a session of its
        # own) would run on until their runtime is over.
        kill_leftovers(cmd)
    docs, stdout, stderr = output.join()
    return FioRun(
        # fio refuses to write to a mounted device (allow_mounted_write, on
        # fio servers too) but then exits 0, having done nothing.
        returncode=1 if proc.returncode == 0 and MOUNTED_REFUSAL in stdout + stderr else proc.returncode,
        final_output=docs[-1] if docs else None,
        stdout=stdout,
        stderr=stderr,
        stopped=stopped,
        killed=killed,
        wall_s=time.monotonic() - start,
        ended_early=ended_early and not killed,
    )


class _Output:
    """fio's stdout and stderr, read as it runs: its JSON documents (each
    passed on as it comes), its other lines, and its messages."""

    def __init__(self, proc: subprocess.Popen, start: float, on_live, on_status):
        self.proc, self.start, self.on_live, self.on_status = proc, start, on_live, on_status
        self.splitter = DocumentSplitter()
        self.docs: list[str] = []
        self.other: list[str] = []
        self.stderr_parts: list[str] = []
        self.rates = LiveRates()
        self.readers = [threading.Thread(target=self._read_stdout, daemon=True),
                        threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self.readers:
            t.start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            for doc in self.splitter.feed(line):
                self.docs.append(doc)
                if self.on_live is not None or self.on_status is not None:
                    self._pass_on(doc)
            if not line.startswith((" ", "{", "}")):
                self.other.append(line)

    def _pass_on(self, doc: str) -> None:
        try:
            parsed = json.loads(doc)
        except ValueError:
            return
        if self.on_status is not None:
            self.on_status(parsed)
        now = time.monotonic()
        live = self.rates.update(parsed, now, now - self.start) if self.on_live is not None else None
        if live is not None:
            self.on_live(live)

    def _read_stderr(self) -> None:
        self.stderr_parts.append(self.proc.stderr.read())

    def join(self) -> tuple[list[str], str, str]:
        """(JSON documents, other stdout, stderr), once fio has ended."""
        for t in self.readers:
            t.join(timeout=10)
        return self.docs, "".join(self.other), "".join(self.stderr_parts)


def _watch(proc: subprocess.Popen, start: float, stop: threading.Event, timeout_s: float | None,
           abandon: threading.Event | None, finish: threading.Event | None) -> tuple[bool, bool, bool]:
    """Wait for fio to end, stopping it as asked (run_fio); return
    (stopped, killed, ended_early)."""
    stopped = killed = ended_early = False
    stop_sent_at = None
    while proc.poll() is None:
        now = time.monotonic()
        over_time = timeout_s is not None and now - start > timeout_s
        if abandon is not None and abandon.is_set():
            stopped = killed = True
            _signal(proc, signal.SIGKILL)
            proc.wait()
            break
        if finish is not None and finish.is_set() and stop_sent_at is None:
            ended_early = True
            stop_sent_at = now
            _signal(proc, signal.SIGINT)
        if (stop.is_set() or over_time) and stop_sent_at is None:
            stopped = True
            stop_sent_at = now
            _signal(proc, signal.SIGINT)
        if stop_sent_at is not None and now - stop_sent_at > STOP_GRACE_S:
            _signal(proc, signal.SIGKILL)
            killed = True
            proc.wait()
            break
        time.sleep(0.1)
    return stopped, killed, ended_early


def killed_reason(fio: FioRun) -> str | None:
    """Why fio ended, when something other than iofleet killed it."""
    if fio.returncode >= 0 or fio.stopped or fio.ended_early:
        return None
    sig = -fio.returncode
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = "unknown signal"
    return (f"fio was killed by signal {sig} ({name}) {fio.wall_s:.1f} s into the test, by another process "
            f"or the kernel (out of memory? see `dmesg`); its figures so far are not kept")



class LiveHosts:
    """Live progress of a fleet test, once a second: each host's latest
    status round from its fio server (`live`, where its status is decoded),
    the fleet's last whole round, and each host's CPU, disk and network
    from its node_exporter (hosts without one show as unknown)."""

    def __init__(self, sampler: MetricsSampler, on_live, live=None, names: list[str] | None = None):
        self.sampler, self.on_live, self.live, self.names = sampler, on_live, live, names or []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._start = time.monotonic()
        if self.on_live is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self):
        while not self._stop.wait(1.0):
            latest = self.sampler.latest()
            hosts = {h: latest.get(h) for h in self.sampler.sources}
            fleet = self.live.fleet_round(self.names) if self.live is not None else None
            iops, bw, lat = fleet or (None, None, None)
            self.on_live(LiveFigures(elapsed_s=time.monotonic() - self._start, iops=iops, bw_bytes_s=bw,
                                     lat_mean_ns=lat, hosts=hosts,
                                     rounds=self.live.latest() if self.live is not None else None))


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def read_series(work: Path, host: str, suffix: str = "", listing: list[str] | None = None,
                files: Mapping[str, bytes] | None = None) -> list[Series]:
    """Per-second series from the logs fio wrote in `work`:
    <prefix>_<kind>.<job>.log, plus `.<address>` when fio's client wrote
    them for a server (pass that as `suffix`). The warm-up group's logs
    give the series' warm-up part (phase "warmup"). `listing`: the names
    in `work`, when the caller has them (one listing for every host);
    `files`: file name → contents, for the logs the caller has read
    already (the test's artifacts), so that each is read once."""
    out = []
    # One listing, not a glob per kind: a fleet test's work directory holds
    # every host's logs.
    ours = [name for name in (os.listdir(work) if listing is None else listing) if name.endswith(f".log{suffix}")]
    for phase, prefix in (("warmup", WARMUP_LOG_PREFIX), ("measured", LOG_PREFIX)):
        for kind, (metric, factor) in LOG_METRICS.items():
            logs = sorted(work / name for name in fnmatch.filter(ours, f"{prefix}_{kind}.*.log{suffix}"))
            # fio numbers jobs across the whole job file (from 1): the
            # measured jobs follow the warm-up's, so count from the first.
            numbers = {f: int(f.name.split(".")[1]) for f in logs}
            first = min(numbers.values(), default=1)
            for f in logs:
                text = files[f.name] if files is not None and f.name in files else f.read_bytes()
                for direction, (t_ms, values) in parse_log(text, scale=factor).items():
                    out.append(Series(host=host, job_index=numbers[f] - first, metric=metric,
                                      direction=direction, t_ms=t_ms, values=values, phase=phase))
    return out


def rebase_series(series: list[Series]) -> int | None:
    """Make the series' times (fio's wall-clock ms, log_unix_epoch) relative
    to the start of the earliest host's first interval; return that origin."""
    if not series:
        return None
    origin = min(s.t_ms[0] for s in series if s.t_ms) - LOG_INTERVAL_MS
    for s in series:
        s.t_ms = [t - origin for t in s.t_ms]
    return origin
