"""Runs a test on many `fio --server` hosts at once: one job file per host,
all through ONE fio client, each host's connection through iofleet's relay
(relay.py).

One client starts every host within about a second (a client per host
costs a fio process each and spreads the starts over seconds). Through the
relay, a host that dies, freezes, vanishes or falls far behind is ended
alone: fio's client goes on without it and prints the other hosts'
results, so the host costs its own result only, within a stated time."""

import json
import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import FioError, ImportFormatError
from ...fio.command import client_command, error_line
from ...fio.jobfile import render_cleanup, render_probe
from ...fio.parse import ALL_CLIENTS, parse_output
from ...fio.status import Round, client_rounds
from ...fio.records import DiskUtil, JobResult
from ..inventory import Host
from ..targets.engines import engine_candidates
from .live_rounds import LiveRounds
from .relay import RELAY_ADDRESS, Relay
from .runner import MOUNTED_REFUSAL, STOP_GRACE_S, FioRun, killed_reason, run_fio

# fio's client prints this when it loses a server.
_DISCONNECTED = re.compile(r"client: host=(\S+) disconnected")
# Once a host has returned its results, another host still running this
# long after its own planned end (plus the delay the finished hosts took
# beyond theirs) is declared lost and its connection ended: healthy
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
# After a stop, a host that has not sent its results this long after fio's
# client was asked to stop is ended, so that the client, which prints
# nothing until its last host has ended, is not killed with every result.
STOP_DROP_S = STOP_GRACE_S - 1.5


@dataclass
class FleetRun:
    fio: FioRun  # the fio client of every host: its return code, document (hosts by address), messages, time
    runs: dict[str, FioRun] = field(default_factory=dict)  # host → its part: its messages, exit value, end
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
    start_together: bool = False, live: LiveRounds | None = None, finish: threading.Event | None = None,
) -> FleetRun:
    """Run one job file per host (by host name), all through one fio
    client. A host that has not ended `timeout_s` after the start, or, with
    `planned_s` (host → its test's planned seconds, warm-up + runtime),
    LATE_HOST_S after its planned end once another host has finished (plus
    that host's delay beyond its own planned end), is lost: its connection
    is ended (its server then stops its jobs, as when iofleet dies) and it
    gives no result. `work_bytes` (host → bytes to write, for a step of no
    planned length): once a host has finished, one still running
    PREPARE_SLOWDOWN times as long as its bytes take at the slowest finished
    host's rate, plus LATE_HOST_S, is lost. `status_s`: each server sends
    its status every so many seconds, one round each (fio/status.py);
    `per_tick` (host → its job file's jobs) splits them. `start_together`
    (a measured test): the client keeps fio's own clock choice
    (fio.command.QUICK_CLOCK). `live`: takes each host's status as it
    passes the relay. Setting `finish` ends every host's jobs at once, as
    planned (the fleet is steady): each host's results are kept whole."""
    late: dict[str, str] = {}  # host → why it was ended as lost
    with Relay({h.name: h.endpoint for h in hosts}, status=live) as relay:
        for name, why in relay.open().items():
            late[name] = f"no result (fio server not reachable: {why})"
        pairs = []
        for h in hosts:
            if h.name not in late:
                path = work / f"{tag}.{h.name}.fio"
                path.write_text(jobfiles[h.name])
                pairs.append((relay.client_arg(h.name), str(path)))
        fio = _client(client_command(pairs, status_s, quick_clock=not start_together), work, stop, relay,
                      [h.name for h in hosts if h.name not in late], late,
                      lambda name, now, done: _overdue(name, now, timeout_s, planned_s, done, work_bytes), finish)
    views, docs, fio = _split(fio, hosts, relay, work)
    faults = {h.name: f"no result: {why}" for h in hosts if (why := relay.fault(h.name))}
    return _collect(hosts, views, docs, fio, late, faults, per_tick if status_s else None, (status_s or 1) * 1000)


def _client(cmd: list[str], work: Path, stop: threading.Event, relay: Relay, names: list[str],
            late: dict[str, str], overdue, finish: threading.Event | None = None) -> FioRun:
    """Run the one fio client, ending hosts as the rules say: `overdue(name,
    seconds from the start, {finished host: seconds})` says why a host is
    lost; after a stop or `finish` (fio's client then asks every server to
    end its jobs), hosts still silent STOP_DROP_S later are ended."""
    if not names:
        return FioRun(returncode=1, final_output=None, stdout="", stderr="", stopped=stop.is_set(),
                      killed=False, wall_s=0.0)
    start = time.monotonic()
    halt, give_up = threading.Event(), threading.Event()
    result: list = []

    def drive() -> None:
        try:
            result.append(run_fio(cmd, work, halt, abandon=give_up, finish=finish))
        except BaseException as exc:  # raised below
            result.append(exc)

    client = threading.Thread(target=drive, name="fio-client", daemon=True)
    client.start()
    stopped_at = all_ended_at = None
    while client.is_alive():
        client.join(0.1)
        now = time.monotonic()
        open_ = [n for n in names if relay.ended(n) is None]
        if not open_:
            all_ended_at = all_ended_at or now
            if now - all_ended_at > STOP_GRACE_S:  # every host is over: the client has nothing left to wait for
                give_up.set()
        elif stop.is_set() or finish is not None and finish.is_set():
            if stop.is_set():
                halt.set()
            stopped_at = stopped_at or now
            if now - stopped_at > STOP_DROP_S:
                for name in open_:
                    relay.drop(name)
        else:
            done = {n: relay.finished(n) - start for n in names if relay.finished(n) is not None}
            for name in open_:
                why = name not in late and overdue(name, now - start, done)
                if why:
                    late[name] = why
                    relay.drop(name)
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def _split(fio: FioRun, hosts: list[Host], relay: Relay,
           work: Path) -> tuple[dict[str, FioRun], dict[str, dict], FioRun]:
    """Each host's part of the client's run, as a client of its own would
    have given it: its messages (each line "<its address> "), fio's
    client's lines about it (or about no host in particular), its end, and
    its entries of the client's document; its logs are renamed after its
    address (fio's client named them after its relay's). Also the client's
    run with each host's address put back in its lines and its document."""
    address = {h.name: h.endpoint for h in hosts}
    names = {link.address: name for name, link in relay.links.items()}
    try:
        doc = json.loads(fio.final_output) if fio.final_output else None
    except ValueError:
        doc = None
    # "<hostname> ...": a server's message, which the relay had from that host itself.
    said = [l for l in (fio.stdout + fio.stderr).splitlines(keepends=True) if not l.startswith("<")]
    about = [{names[a] for a in RELAY_ADDRESS.findall(l) if a in names} for l in said]  # the hosts each names
    # each line with the hosts' own addresses in place of their relays'
    readdressed = [RELAY_ADDRESS.sub(lambda m: address[names[m[0]]][0] if m[0] in names else m[0], l)
                   for l in said]

    views = {}
    for h in hosts:
        link = relay.links[h.name]
        own = [l for l, hosts_named in zip(readdressed, about) if not hosts_named or h.name in hosts_named]
        text = "".join(f"<{address[h.name][0]}> {line}\n" for m in link.messages for line in m.splitlines())
        end = link.quit_at or link.ended_at
        views[h.name] = FioRun(
            returncode=_host_returncode(link.exit, fio.returncode, text), final_output=None,
            stdout=text, stderr="".join(own), stopped=fio.stopped, killed=fio.killed and link.exit is None,
            wall_s=end - relay.opened_at if end and link.connected else 0.0, ended_early=fio.ended_early)
    docs = _host_docs(doc, names)
    for f in work.iterdir():  # PREFIX_KIND.N.log.ADDRESS
        stem, _, at = f.name.rpartition(".log.")
        if stem and at in names:
            f.rename(f.with_name(f"{stem}.log.{address[names[at]][0]}"))

    def host_of(m: re.Match) -> str:  # fio writes `"hostname" : "ADDRESS",` then `"port" : N`
        host, port = address.get(names.get(m.group(1)), (m.group(1), m.group(3)))
        return f'"hostname" : "{host}",{m.group(2)}"port" : {port}'

    document = _HOSTNAME.sub(host_of, fio.final_output) if fio.final_output else None
    return views, docs, replace(fio, final_output=document, stdout="", stderr="".join(readdressed))


# A host's name and port in fio's JSON output, as its client prints them.
_HOSTNAME = re.compile(r'"hostname" : "([^"]*)",(\s*)"port" : (\d+)')


def _host_returncode(exit: tuple[int, int] | None, client_rc: int, text: str) -> int:
    """A host's part: its server's exit value; 1 when it gave none (it
    was lost) or fio refused to write to a mounted device (and exited 0)."""
    if exit is None:
        return client_rc or 1
    value, signal = exit
    return value or (128 + signal if signal else 0) or (1 if MOUNTED_REFUSAL in text else 0)


def _host_docs(doc: dict | None, names: dict[str, str]) -> dict[str, dict]:
    """host → the client's document with only its entries (fio's "All
    clients" sum left out), for the hosts that have any; `names`: relay
    address → host."""
    if doc is None:
        return {}
    out: dict[str, dict] = {}
    for key in ("client_stats", "disk_util"):
        for e in doc.get(key, []):
            name = names.get(e.get("hostname")) if isinstance(e, dict) and e.get("jobname") != ALL_CLIENTS else None
            if name is not None:
                out.setdefault(name, {**doc, "client_stats": [], "disk_util": []})[key].append(e)
    return out


def _overdue(name: str, now: float, timeout_s: float | None, planned_s: dict[str, float] | None,
             done: dict[str, float], work_bytes: dict[str, int] | None = None) -> str | None:
    """Why a host still running `now` s after the start is lost, or None.
    `done`: hosts that ended without error → seconds from the start."""
    if work_bytes is not None and done:
        rate = min(work_bytes[n] / max(t, 0.1) for n, t in done.items())  # bytes/s of the slowest finished host
        expected = work_bytes[name] / rate if rate > 0 else 0.0
        if now > PREPARE_SLOWDOWN * expected + LATE_HOST_S:
            return (f"no result {now:.0f} s into the step, while the other hosts had ended at a rate that "
                    f"would have taken it {expected:.0f} s (its fio frozen, or far behind); its connection was ended")
    if planned_s is not None and done:
        # Hosts that ended early (steady state) count as on time.
        delay = max(0.0, *(t - planned_s[n] for n, t in done.items()))
        if now > planned_s[name] + delay + LATE_HOST_S:
            return (f"no result {now - planned_s[name]:.0f} s after its planned end, while the other hosts "
                    f"had ended (its fio frozen, or far behind); its connection was ended")
    if timeout_s is not None and now > timeout_s:
        return f"no result in {timeout_s:.0f} s; its connection was ended"
    return None


def _collect(hosts: list[Host], views: dict[str, FioRun], docs: dict[str, dict], fio: FioRun,
             late: dict[str, str], faults: dict[str, str], per_tick: dict[str, int] | None = None,
             interval_ms: int = 1000) -> FleetRun:
    """The hosts' results (from `docs`: host → its part of the client's
    document), each job named by its host's inventory name, and with
    `per_tick`, each host's status rounds. `faults`: host → what its
    server did wrong, as the relay saw it (for a lost host, said before
    what fio's client said: that it disconnected)."""
    ordered = [(h.name, views[h.name]) for h in hosts]
    counted = [r for name, r in ordered if name not in late]
    run = FleetRun(fio=replace(fio, stdout="".join(r.stdout for _, r in ordered),
                               stopped=any(r.stopped for r in counted), killed=any(r.killed for r in counted)),
                   runs=dict(ordered))
    for name, r in ordered:
        doc = docs.get(name)
        if name in late or doc is None:
            continue
        try:
            if per_tick and _DISCONNECTED.search(r.stderr):
                # Its status snapshots so far are no result (the host is lost), but its rounds up
                # to the loss are kept, named lost (a scenario's series shows it up to its fault).
                run.rounds[name] = client_rounds(doc, per_tick[name], interval_ms)[0].rounds
                continue
            if per_tick:
                rounds, doc = client_rounds(doc, per_tick[name], interval_ms)
                run.rounds[name] = rounds.rounds
            parsed = parse_output(doc)
        except ImportFormatError as exc:
            if not _DISCONNECTED.search(r.stderr):
                run.parse_error = run.parse_error or f"host {name}: {exc}"
            continue
        run.jobs += [replace(j, host=name) for j in parsed.jobs]
        run.disks += [replace(d, host=name) for d in parsed.disks]
        run.job_errors += [replace(j, host=name) for j in parsed.jobs + parsed.warmup_jobs if j.error]
    seen = {j.host for j in run.jobs}
    run.lost = [name for name, _ in ordered if name not in seen]
    run.why_lost = {name: late.get(name) or faults.get(name) or _no_result(views[name]) for name in run.lost}
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
                          stop: threading.Event, targets: dict) -> dict[str, str]:
    """Engine per host, probed through each host's fio server on its target
    (`targets`: host → Target): the one asked for, or for auto the first of
    io_uring, libaio, psync that works (a target's own engine: that one)."""
    chosen: dict[str, str] = {}
    errors: dict[str, list[str]] = {h.name: [] for h in hosts}
    for candidate in dict.fromkeys(c for h in hosts for c in engine_candidates(targets[h.name], engine)):
        todo = [h for h in hosts if h.name not in chosen and candidate in engine_candidates(targets[h.name], engine)]
        if not todo:
            continue
        jobs = {h.name: render_probe(targets[h.name].probe_where("probe"), candidate, direct) for h in todo}
        run = run_on_hosts(jobs, todo, work, stop, timeout_s=60, tag=f"probe-{candidate}")
        ok = {j.host for j in run.jobs if not j.error}
        for h in todo:
            if h.name in ok:
                chosen[h.name] = candidate
            else:
                fio = run.runs.get(h.name, run.fio)
                errors[h.name].append((candidate, run.why_lost.get(h.name) or error_line(fio.stderr, fio.stdout)))
    missing = [h for h in hosts if h.name not in chosen]
    if missing:
        raise FioError("; ".join(f"host {h.name}: no IO engine works ({_engine_errors(errors[h.name])})"
                                 for h in missing))
    return chosen


def _engine_errors(errors: list[tuple[str, str]]) -> str:
    """Each engine's error; once for all when they are the same (a server that failed them all alike)."""
    if len({why for _, why in errors}) == 1:
        return f"{'/'.join(e for e, _ in errors)}: {errors[0][1]}"
    return " / ".join(f"{e}: {why}" for e, why in errors)


def first_engine(target, engine: str) -> str:
    """The engine probed first for a plan's `engine` (the one `hosts check` probes)."""
    return engine_candidates(target, engine)[0]


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
