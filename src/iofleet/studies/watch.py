"""A scenario's `watch:`: the storage's own account of its state, sampled
beside the load iofleet measures.

A thread runs the user's command every `every` seconds, from the start of
the load's measured part (the scenario Timeline's clock) until the test
ends: on a fleet host as root through the SSH control channel (as a
`run:` event's command), or on this host. One run at a time: each has a
timeout shorter than `every` (a local one is killed with its children), and
the ticks a slow run covered are skipped, so runs never pile up.

Each sample: `t_s` (when its answer came, s into the measured part; on
fio's clock in the stored record, shifted as the events are), `took_s`,
`exit` (None: no answer), `output` (its stdout, stripped, first MAX_OUTPUT
characters) and `state` (analysis/watch_recovery.py). The stored record
(ScenarioRecord.watch): command, host, every_s, timeout_s, samples and
`events`, the storage's account of each event (storage_recovery)."""

from __future__ import annotations

import math
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import replace
from typing import Callable

from ..analysis.watch_recovery import state_of, storage_recovery
from ..errors import IofleetError
from ..fleet.control.faults import control_host
from ..fleet.control.ssh import run_on_all
from ..fleet.inventory import Host
from ..plan.scenario import Watch
from ..results.watch import WatchRecord, WatchSample

MAX_OUTPUT = 4096  # characters of a sample's output kept
MAX_READ = 2**20  # bytes of each of its outputs read for its state (a health report in full)
# A run's timeout: most of `every`, and no longer than a stuck command deserves.
TIMEOUT_SHARE, MAX_TIMEOUT_S = 0.9, 30.0


def watch_host(watch: Watch | None, source: str, hosts: list[Host] | None) -> Host | None:
    """The host the watch runs on (None: this host), checked: a host of the
    inventory with `ssh:`. IofleetError naming the file and the fix."""
    if watch is None or watch.host is None:
        return None
    where = f"{source}: watch.host"
    if hosts is None:
        raise IofleetError(f"{where}: {watch.host} is a fleet host, and the scenario runs on --target; leave "
                           f"`host` out (the command runs on this host) or run with --hosts INVENTORY")
    return control_host(watch.host, hosts, f"{source}: watch", "the watch")


def shown(watch: Watch | None) -> list[str]:
    """The watch's command as the --yes line lists user commands."""
    return [] if watch is None else [f"{watch.host or 'this host'}, every {watch.every}s: {watch.command}"]


def _read_bounded(proc: subprocess.Popen, deadline: float) -> tuple[bytes, bytes]:
    """A process's stdout and stderr until both close, the first MAX_READ
    bytes of each (the rest read and dropped: a chatty command neither
    blocks on a full pipe nor fills memory). TimeoutExpired at `deadline`."""
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    with selectors.DefaultSelector() as pipes:
        for f in kept:
            pipes.register(f, selectors.EVENT_READ)
        while pipes.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in pipes.select(left):
                data = os.read(key.fd, 65536)
                if not data:
                    pipes.unregister(key.fileobj)
                    continue
                kept[key.fileobj] += data[:max(0, MAX_READ - len(kept[key.fileobj]))]
    return bytes(kept[proc.stdout]), bytes(kept[proc.stderr])


class Watcher:
    """Runs the watch's command on its schedule; `clock()` gives seconds into
    the measured part (None or below 0 before it began). `stop()` at the
    test's end; `record()` the stored record."""

    def __init__(self, watch: Watch, host: Host | None, clock: Callable[[], float | None]):
        self.watch, self.host, self._clock = watch, host, clock
        self.timeout_s = round(min(MAX_TIMEOUT_S, TIMEOUT_SHARE * watch.every), 2)
        self.samples: list[WatchSample] = []
        self._stop = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._run, name="iofleet-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        every, tick = self.watch.every, 0
        while not self._stop.is_set():
            now = self._clock()
            if now is None or now < tick * every:
                self._stop.wait(0.1 if now is None else min(0.1, tick * every - now))
                continue
            started = time.monotonic()
            exit_code, stdout, stderr, why = self._ask()
            if self._stop.is_set() and (exit_code is None or exit_code < 0):
                return  # ended by stop(): not an answer of the storage's
            self.samples.append(WatchSample(round(self._clock(), 2), round(time.monotonic() - started, 2), exit_code,
                                            stdout.strip()[:MAX_OUTPUT], state_of(exit_code, stdout, stderr, why)))
            tick = max(tick + 1, math.floor(self._clock() / every) + 1)  # ticks a slow run covered: skipped

    def _ask(self) -> tuple[int | None, str, str, str]:
        """(exit status or None, stdout, stderr, why there was no answer)."""
        if self.host is not None:
            reply = run_on_all([self.host], self.watch.command, timeout_s=self.timeout_s,
                               as_root=True)[self.host.name]
            if reply.exit_status is None:
                timed_out = "did not finish" in (reply.error or "")
                return None, reply.stdout, reply.stderr, (f"not done in {self.timeout_s:g} s" if timed_out
                                                          else reply.error or "no exit status")
            return reply.exit_status, reply.stdout, reply.stderr, ""
        # Its own session: a timeout kills the shell and everything it started.
        try:
            proc = subprocess.Popen(self.watch.command, shell=True, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:  # out of processes or files: this sample has no answer, the next may
            return None, "", "", f"cannot start it: {exc.strerror or exc}"
        self._proc, deadline = proc, time.monotonic() + self.timeout_s
        try:
            out, err = _read_bounded(proc, deadline)
            proc.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._kill(proc)
            return None, "", "", f"not done in {self.timeout_s:g} s"
        finally:
            self._proc = None
            proc.stdout.close()
            proc.stderr.close()
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), ""

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:  # not ours to wait for longer: the next run goes on
            pass

    def stop(self) -> None:
        """Stop sampling (a local run under way is ended). Idempotent."""
        self._stop.set()
        proc = self._proc
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its thread reaps it
            except ProcessLookupError:
                pass
        self._thread.join(timeout=self.timeout_s + 15)

    def record(self, shift_s: float, events: list[dict]) -> WatchRecord:
        """The stored record, samples on fio's clock (`shift_s` earlier), with
        the storage's account of each event (`events` on fio's clock)."""
        samples = [replace(s, t_s=round(s.t_s - shift_s, 2)) for s in self.samples]
        return WatchRecord(self.watch.command, self.watch.host, self.watch.every, self.timeout_s, samples,
                           storage_recovery(samples, events))
