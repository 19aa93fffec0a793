"""Runs a test on many `fio --server` hosts at once: one job file and one
fio client per host, all started together.

One client per host, not one for all: fio's client prints its results only
when its last server has ended, so one frozen host (its fio stopped, its
connection still up) would hold every host's results, and stopping that
client would lose them all. Here a host that dies, freezes, vanishes or
falls far behind costs its own result only, within a stated time."""

import json
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import FioError, ImportFormatError
from ..fio.command import client_command, error_line
from ..fio.jobfile import Device, render_cleanup, render_probe
from ..fio.parse import parse_output
from ..fio.status import Round, client_rounds
from ..plan.params import AUTO_ENGINES
from ..fio.records import DiskUtil, JobResult
from .devices import where
from .inventory import Host
from .runner import FioRun, killed_reason, run_fio

# fio's client prints this when it loses a server.
_DISCONNECTED = re.compile(r"client: host=(\S+) disconnected")
# Once a host has returned its results, another host still running this
# long after its own planned end (plus the delay the finished hosts took
# beyond theirs) is declared lost and its fio client stopped: healthy
# hosts end within a second or two of each other (docs/fleet.md).
LATE_HOST_S = 15.0
# A step whose length cannot be planned (preparing the data): once a host
# has finished, another still running PREPARE_SLOWDOWN times as long as its
# data would take at the slowest finished host's rate, plus LATE_HOST_S, is lost.
PREPARE_SLOWDOWN = 2.0
# The most jobs a plan may give a host (plan/params.py: jobs), so the most
# data files a run leaves in a host's iofleet directory.
MOST_JOBS = 1024
# A clean-up reads 4 KiB of each file and removes it: seconds, even for 1024 files.
CLEANUP_TIMEOUT_S = 30.0


@dataclass
class FleetRun:
    fio: FioRun  # every host's fio client as one: first failing return code, all messages, longest time
    runs: dict[str, FioRun] = field(default_factory=dict)  # host → its own fio client
    jobs: list[JobResult] = field(default_factory=list)
    disks: list[DiskUtil] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # hosts that gave no result
    why_lost: dict[str, str] = field(default_factory=dict)  # lost host → "no result ..."
    parse_error: str | None = None
    job_errors: list[JobResult] = field(default_factory=list)  # jobs (warm-up or measured) that reported an error
    rounds: dict[str, list[Round]] = field(default_factory=dict)  # host → its status rounds (fio/status.py)


def run_on_hosts(
    jobfiles: dict[str, str], hosts: list[Host], work: Path, stop: threading.Event,
    timeout_s: float | None = None, tag: str = "job", planned_s: dict[str, float] | None = None,
    work_bytes: dict[str, int] | None = None, status_s: int | None = None, per_tick: dict[str, int] | None = None,
    start_together: bool = False,
) -> FleetRun:
    """Run one job file per host (by host name), each through a fio client
    of its own, all at once. A host whose client has not ended `timeout_s`
    after the start, or, with `planned_s` (host → its test's planned
    seconds, warm-up + runtime), LATE_HOST_S after its planned end once
    another host has finished (plus that host's delay beyond its own
    planned end), is lost: its client is killed (its server then stops its
    jobs, as when iofleet dies) and its output dropped. `work_bytes` (host →
    bytes to write, for a step of no planned length): once a host has
    finished, one still running PREPARE_SLOWDOWN times as long as its bytes
    take at the slowest finished host's rate, plus LATE_HOST_S, is lost.
    `status_s`: each server sends its status every so many seconds, one
    round each (fio/status.py); `per_tick` (host → its job file's jobs)
    splits them. `start_together` (a measured test): each client keeps
    fio's own clock choice, so that every host starts alike (fio.command.QUICK_CLOCK)."""
    commands = {}
    for h in hosts:
        path = work / f"{tag}.{h.name}.fio"
        path.write_text(jobfiles[h.name])
        commands[h.name] = client_command([(h.fio_client_arg, str(path))], status_s, quick_clock=not start_together)
    halt = {h.name: threading.Event() for h in hosts}  # the user stopped the run: results wanted
    drop = {h.name: threading.Event() for h in hosts}  # the host is lost: its client is killed at once
    runs: dict[str, FioRun] = {}
    ended: dict[str, float] = {}  # host → seconds from the start to its client's end
    late: dict[str, str] = {}  # host → why it was stopped as lost
    crashed: list[BaseException] = []
    all_ended = threading.Event()
    if not hosts:
        all_ended.set()
    # Every client starts at once, once every host has its thread: the
    # hosts start closer together, and no client takes the GIL from the
    # next one's thread start.
    go = threading.Event()
    start = time.monotonic()

    def drive(name: str) -> None:
        go.wait()
        try:
            runs[name] = run_fio(commands[name], work, halt[name], abandon=drop[name])
        except BaseException as exc:  # raised below, once every client has ended
            crashed.append(exc)
        finally:
            ended[name] = time.monotonic() - start
            if len(ended) == len(hosts):
                all_ended.set()

    try:
        for h in hosts:
            _CREW.run(drive, h.name)
    finally:
        start = time.monotonic()
        go.set()
    while not all_ended.wait(0.1):  # wakes at once when the last client ends
        if stop.is_set():
            for event in halt.values():
                event.set()
        else:
            now = time.monotonic() - start
            for h in hosts:
                if h.name not in ended and h.name not in late:
                    why = _overdue(h.name, now, timeout_s, planned_s, ended, runs, work_bytes)
                    if why:
                        late[h.name] = why
                        drop[h.name].set()
    if crashed:
        raise crashed[0]
    return _collect(hosts, runs, late, per_tick if status_s else None, (status_s or 1) * 1000)


class _Crew:
    """Threads kept for the next test's fio clients, one client each at a
    time: a new thread takes about a millisecond to start on a small VM
    (64 hosts × every test of a run). Daemon threads, as the ones they
    replace: a client left running does not keep iofleet from exiting."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle = 0
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()

    def run(self, task, *args) -> None:
        """Run task(*args) on an idle thread, or a new one. `task` handles its own exceptions."""
        with self._lock:
            reuse = self._idle > 0
            if reuse:
                self._idle -= 1
        if not reuse:
            threading.Thread(target=self._work, daemon=True, name="fio-client").start()
        self._tasks.put((task, args))

    def _work(self) -> None:
        while True:
            task, args = self._tasks.get()
            task(*args)  # were it to raise, this thread would end, not counted idle
            with self._lock:
                self._idle += 1


_CREW = _Crew()
os.register_at_fork(after_in_child=_CREW.__init__)  # a forked child has none of these threads


def _overdue(name: str, now: float, timeout_s: float | None, planned_s: dict[str, float] | None,
             ended: dict[str, float], runs: dict[str, FioRun],
             work_bytes: dict[str, int] | None = None) -> str | None:
    """Why a host still running `now` s after the start is lost, or None."""
    done = [n for n in list(ended) if n in runs and runs[n].returncode == 0]
    if work_bytes is not None and done:
        rate = min(work_bytes[n] / max(ended[n], 0.1) for n in done)  # bytes/s of the slowest finished host
        expected = work_bytes[name] / rate if rate > 0 else 0.0
        if now > PREPARE_SLOWDOWN * expected + LATE_HOST_S:
            return (f"no result {now:.0f} s into the step, while the other hosts had ended at a rate that "
                    f"would have taken it {expected:.0f} s (its fio frozen, or far behind); its fio client was ended")
    if planned_s is not None and done:
        # Hosts that ended early (steady state) count as on time.
        delay = max(0.0, *(ended[n] - planned_s[n] for n in done))
        if now > planned_s[name] + delay + LATE_HOST_S:
            return (f"no result {now - planned_s[name]:.0f} s after its planned end, while the other hosts "
                    f"had ended (its fio frozen, or far behind); its fio client was ended")
    if timeout_s is not None and now > timeout_s:
        return f"no result in {timeout_s:.0f} s; its fio client was ended"
    return None


def _collect(hosts: list[Host], runs: dict[str, FioRun], late: dict[str, str],
             per_tick: dict[str, int] | None = None, interval_ms: int = 1000) -> FleetRun:
    """The hosts' results, each job named by its host's inventory name,
    and with `per_tick`, each host's status rounds."""
    ordered = [(h.name, runs[h.name]) for h in hosts]
    counted = [r for name, r in ordered if name not in late]
    run = FleetRun(fio=FioRun(
        returncode=next((r.returncode for _, r in ordered if r.returncode != 0), 0),
        final_output=None,  # one document per host: FleetRun.runs
        stdout="".join(r.stdout for _, r in ordered), stderr="".join(r.stderr for _, r in ordered),
        stopped=any(r.stopped for r in counted), killed=any(r.killed for r in counted),
        wall_s=max((r.wall_s for _, r in ordered), default=0.0)), runs=dict(ordered))
    for name, r in ordered:
        if name in late or not r.final_output:
            continue
        if per_tick and _DISCONNECTED.search(r.stdout + r.stderr):
            # Its status snapshots so far are no result (the host is lost), but its rounds up
            # to the loss are kept, named lost (a scenario's series shows it up to its fault).
            try:
                run.rounds[name] = client_rounds(json.loads(r.final_output), per_tick[name], interval_ms)[0].rounds
            except (ImportFormatError, ValueError):
                pass
            continue
        try:
            doc = r.final_output
            if per_tick:
                rounds, doc = client_rounds(json.loads(doc), per_tick[name], interval_ms)
                run.rounds[name] = rounds.rounds
            parsed = parse_output(doc)
        except (ImportFormatError, ValueError) as exc:  # ValueError: not JSON
            run.parse_error = run.parse_error or f"host {name}: {exc}"
            continue
        run.jobs += [replace(j, host=name) for j in parsed.jobs]
        run.disks += [replace(d, host=name) for d in parsed.disks]
        run.job_errors += [replace(j, host=name) for j in parsed.jobs + parsed.warmup_jobs if j.error]
    seen = {j.host for j in run.jobs}
    run.lost = [name for name, _ in ordered if name not in seen]
    run.why_lost = {name: late.get(name) or _no_result(runs[name]) for name in run.lost}
    return run


def _no_result(fio: FioRun) -> str:
    said = _DISCONNECTED.findall(fio.stdout + fio.stderr)
    if said:
        return f"no result (fio: {', '.join(sorted(set(said)))} disconnected)"
    return f"no result ({killed_reason(fio) or error_line(fio.stderr, fio.stdout)})"


def lost_reason(run: FleetRun) -> str:
    if len(run.lost) == 1:
        return f"lost host {run.lost[0]}: {run.why_lost[run.lost[0]]}"
    return f"lost hosts {', '.join(run.lost)}: " + "; ".join(f"{n}: {run.why_lost[n]}" for n in run.lost)


def resolve_fleet_engines(hosts: list[Host], engine: str, direct: bool, work: Path,
                          stop: threading.Event) -> dict[str, str]:
    """Engine per host, probed through each host's fio server: the one
    asked for, or for auto the first of io_uring, libaio, psync that works."""
    chosen: dict[str, str] = {}
    errors: dict[str, list[str]] = {h.name: [] for h in hosts}
    for candidate in _candidates(engine):
        todo = [h for h in hosts if h.name not in chosen]
        if not todo:
            break
        jobs = {h.name: render_probe(probe_target(h), candidate, direct) for h in todo}
        run = run_on_hosts(jobs, todo, work, stop, timeout_s=60, tag=f"probe-{candidate}")
        ok = {j.host for j in run.jobs if not j.error}
        for h in todo:
            if h.name in ok:
                chosen[h.name] = candidate
            else:
                fio = run.runs.get(h.name, run.fio)
                errors[h.name].append(f"{candidate}: {error_line(fio.stderr, fio.stdout)}")
    missing = [h for h in hosts if h.name not in chosen]
    if missing:
        raise FioError("; ".join(f"host {h.name}: no IO engine works ({' / '.join(errors[h.name])})"
                                 for h in missing))
    return chosen


def _candidates(engine: str) -> tuple[str, ...]:
    """The engines to try, in order, for a plan's `engine`."""
    return AUTO_ENGINES if engine == "auto" else (engine,)


def first_engine(engine: str) -> str:
    """The engine probed first for a plan's `engine` (the one `hosts check` probes)."""
    return _candidates(engine)[0]


def probe_target(host: Host) -> Path | Device:
    """Where a host's engine probe runs: its device, or its first target."""
    target = where(host.targets)
    return target if isinstance(target, Device) else target[0]


def cleanup_fleet(hosts: list[Host], jobs: int, work: Path) -> list[str]:
    """Remove iofleet's data files on every host after a run of up to
    `jobs` jobs per host (and any an earlier run left); return the hosts
    where that failed."""
    return remove_data_files(hosts, jobs + 1, work)[1]


def remove_data_files(hosts: list[Host], first: int, work: Path) -> tuple[dict[str, int], list[str]]:
    """Remove iofleet's data files on every host through its fio server:
    (host → files removed, hosts where that failed). fio names the files by
    job number: first those of jobs 0 .. `first`-1; while every new number
    had a file (an earlier run with more jobs left them, e.g. on a host it
    lost), twice as many."""
    removed = {h.name: 0 for h in hosts}
    failed: list[str] = []
    todo, done_n, n = list(hosts), 0, first
    while todo:
        files = {h.name: render_cleanup([Path(t) for t in h.targets], n) for h in todo}
        run = run_on_hosts(files, todo, work, threading.Event(), timeout_s=CLEANUP_TIMEOUT_S, tag="cleanup")
        failed += [h.name for h in todo if h.name in run.lost or any(j.error for j in run.jobs if j.host == h.name)]
        found = {h.name: sum(j.read.io_bytes >= 4096 for j in run.jobs if j.host == h.name) for h in todo}
        for name, count in found.items():
            removed[name] += count
        if n > MOST_JOBS:
            break
        todo = [h for h in todo if h.name not in failed and found[h.name] >= n - done_n]
        done_n, n = n, min(2 * n, MOST_JOBS + 1)
    return removed, failed
