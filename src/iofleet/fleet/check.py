"""`hosts check`: is every host ready for a fleet run? Run on its own
(`iofleet hosts check`) and before every fleet run, so a bad host stops the
run before a single test starts.

Per host, in parallel:
1. a TCP connect with a short timeout. fio's own client connects to hosts
   one after the other without a timeout, so one powered-off host would
   block it for about two minutes;
2. one `fio --client` run of a tiny write job per target (through the same
   server the tests use), in fio's normal+json output: the normal part
   carries the server's fio version, the JSON part each target's result;
   a device target gets read-only jobs instead (devices.RemoteDevice);
3. free space of each target: statvfs through SSH where the inventory
   gives `ssh:` (what FUSE and network filesystems answer too), else from
   the host's node_exporter, when it has one (for a device: its mounts there);
4. in the same fio run, a read-only look for iofleet's data files that a
   run left behind (a host lost during a run keeps them): `iofleet hosts
   clean` removes them, as does the next run's clean-up there;
5. in the same fio run too, when a run asks, the engine probe of its IO
   engine (remote.resolve_fleet_engines need not ask again where it works);
6. meanwhile, over SSH where the inventory gives `ssh:`, the faults a
   scenario recorded there and did not undo (control/fault_records.py): a
   host with one is not ready (`iofleet hosts clean` undoes them).

Step 2 runs first as ONE fio client for every host with directory targets
(each fio process spends ~0.1 s of CPU calibrating its clock: a client per
host cost 64 hosts ~9 s on 2 cores). fio's client names each job's server
in its JSON, but not the server of a version line, nor of an error line:
a host that this shared run does not show as wholly ready (or any version
but the controller's, or no answer in SHARED_TIMEOUT_S) is checked again
by a fio client of its own, whose output names its problem.
"""

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable

from ..errors import ImportFormatError, IofleetError
from ..fio.command import NOT_A_DIR_RE, QUICK_CLOCK, SERVER_VERSION_RE, error_line, fio_binary, fio_version
from ..fio.jobfile import render_probe
from ..fio.parse import parse_output
from .targets.device_checks import RemoteDevice, exporter_mounts
from .inventory import Host
from .control.fault_records import FaultRecord, read_records
from .control.host import free_space
from .facts_records import SeenHost
from .control.left_faults import fix_line
from .control.host import host_facts as ssh_host_facts
from .targets.kept import KeptData, host_key
from .metrics.node_exporter import fetch_metrics, free_bytes
from .fio_link.remote import first_engine, remove_data_files
from .targets import Access, Target, target_for
from .targets.directory import leftovers_seen
from .fio_link.runner import run_fio
from .targets.lock import holder_facts, lock_fleet_target
from .fio_link.workdir import work_dir

CONNECT_TIMEOUT_S = 3.0
PROBE_TIMEOUT_S = 60.0
# The shared check of every host (a second or two at 64 hosts): past this,
# each host is checked on its own, with PROBE_TIMEOUT_S.
SHARED_TIMEOUT_S = 20.0
# A host's own check is run again (up to this many times in all) when the
# server's lines naming its problem were lost (_lost_lines).
LOST_LINES_TRIES = 3


@dataclass
class TargetCheck:
    path: str
    problem: str | None = None
    checked: bool = True  # False: fio refused the check (another target of the host is missing)
    free_bytes: int | None = None  # None: the host has no metrics endpoint, or it says nothing
    device: RemoteDevice | None = None  # a device target, once fio could look at it


@dataclass
class HostCheck:
    host: Host
    reachable: bool = False
    fio_version: str | None = None
    targets: list[TargetCheck] = field(default_factory=list)
    metrics: str = "none"  # none | ok | the scrape's error
    problems: list[str] = field(default_factory=list)
    leftovers: bool | None = None  # iofleet's data files of an earlier run are there (None: not known)
    engines: dict[tuple[str, bool], str] = field(default_factory=dict)  # (engine, direct) asked → engine that works
    target: Target | None = None  # the host's target (fleet/targets)
    faults: list[FaultRecord] = field(default_factory=list)  # faults a scenario recorded there, still in place
    faults_unread: str | None = None  # why its fault records could not be read (its SSH channel)

    @property
    def ok(self) -> bool:
        return not self.problems


def host_targets(hosts: list[Host], access: Access = Access()) -> dict[str, Target]:
    """Each host's target, as a run without a plan's settings sees it."""
    return {h.name: target_for(h.targets, replace(access, host=h.name)) for h in hosts}


def check_hosts(hosts: list[Host], controller_version: str, destroy_data: list[str] | None = None,
                targets: dict[str, Target] | None = None,
                probes: dict[str, list[tuple[str, bool]]] | None = None,
                ssh_facts: Callable[[], dict] | None = None, inventory: str | None = None) -> list[HostCheck]:
    """Check every host at once; the result is in the inventory's order.
    A run passes its plan's `destroy_data` and each host's target as the
    run fitted it (a device's regions: how far they reach); without them
    (`hosts check`) a device is only looked at. `probes`: host → the
    (engine, direct) pairs its tests use, probed in the same fio run where
    the host has directory targets (HostCheck.engines). `ssh_facts()`: the
    hosts' SSH facts when the caller reads them anyway (else read here).
    `inventory`: its file, named in the fix of a fault left on a host."""
    with ThreadPoolExecutor(max_workers=1) as aside:  # over SSH, while fio checks the hosts
        recorded = aside.submit(read_records, hosts)
        checks = _check_hosts(hosts, controller_version, destroy_data, targets, probes, ssh_facts)
        records, unread = recorded.result()
    for c in checks:
        c.faults = [r for r in records if r.host.name == c.host.name]
        c.faults_unread = unread.get(c.host.name)
        c.problems += [fix_line(r, inventory) for r in c.faults]
    return checks


def _check_hosts(hosts: list[Host], controller_version: str, destroy_data: list[str] | None,
                 targets: dict[str, Target] | None, probes: dict[str, list[tuple[str, bool]]] | None,
                 ssh_facts: Callable[[], dict] | None) -> list[HostCheck]:
    targets, probes = targets or host_targets(hosts), probes or {}
    # Each target as its host's fio server names it (a claim: its path in the pod).
    checks = [HostCheck(h, targets=[TargetCheck(t) for t in targets[h.name].names], target=targets[h.name])
              for h in hosts]
    with ThreadPoolExecutor(max_workers=min(64, len(hosts)) or 1) as pool:
        reasons = list(pool.map(lambda h: _connect(*h.endpoint), hosts))
    for check, reason in zip(checks, reasons):
        port = check.host.endpoint[1]
        if reason:
            check.problems.append(f"fio server not reachable on port {port}: {reason}; "
                                  f"start it there with `iofleet server --bind {check.host.address}`")
        check.reachable = not reason
    shared = [c for c in checks if c.reachable and c.target.holds_files]
    ready = _probe_together(shared, controller_version, probes) if len(shared) > 1 else set()
    with_ssh = [h for h in hosts if h.ssh]
    free = free_space(ssh_facts() if ssh_facts else ssh_host_facts(with_ssh) if with_ssh else {})
    with ThreadPoolExecutor(max_workers=min(32, len(hosts)) or 1) as pool:
        list(pool.map(lambda c: _finish(c, controller_version, destroy_data, c.host.name not in ready,
                                        free.get(c.host.name, {})), checks))
    return checks


class HostCheckError(IofleetError):
    """A host is not ready for a fleet run."""


def require_ready(hosts: list[Host], what: str = "test", destroy_data: list[str] | None = None,
                  targets: dict[str, Target] | None = None,
                  probes: dict[str, list[tuple[str, bool]]] | None = None,
                  ssh_facts: Callable[[], dict] | None = None) -> list[HostCheck]:
    """Raise one line per problem (and nothing was started) unless every
    host passes; the checks (with the engines `probes` found working)."""
    checks = check_hosts(hosts, fio_version(), destroy_data, targets, probes, ssh_facts)
    problems = problem_lines(checks)
    if problems:
        raise HostCheckError("\n".join(
            problems + [f"no {what} was started; fix the hosts above or leave them out of the inventory"]))
    return checks


def problem_lines(checks: list[HostCheck]) -> list[str]:
    """One line per problem, naming the host and its address."""
    return [problem_line(c.host, p) for c in checks for p in c.problems]


def _finish(check: HostCheck, controller_version: str, destroy_data: list[str] | None, probe: bool,
            free: dict[str, int | None]) -> None:
    """The rest of a host's check: its own fio check (`probe`: the shared
    one did not show it ready), its free space (`free`: read through SSH,
    which wins over node_exporter's), its device's problems."""
    host = check.host
    if check.reachable and probe:
        _probe(check, controller_version)
    if host.metrics:
        try:
            text = fetch_metrics(host.metrics)
        except OSError as exc:
            check.metrics = str(exc)
        else:
            check.metrics = "ok"
            for t in check.targets:
                if t.device:
                    t.device.mounts = exporter_mounts(text, t.path)
                elif check.target.holds_files:
                    t.free_bytes = free_bytes(text, t.path)
    room = _cluster_room(check.target) if check.reachable else None
    for t in check.targets:
        if not t.device and free.get(t.path) is not None:
            t.free_bytes = free[t.path]
        elif room is not None:
            t.free_bytes = room
        if t.device:
            check.problems += t.device.problems(destroy_data)


def _cluster_room(target: Target) -> int | None:
    """A fleet target's room as its cluster tells it here (an RBD image:
    its pool's max_avail); None when it has no such answer, or the cluster
    cannot be asked from here (the run's own checks then say why)."""
    try:
        return target.cluster_free_bytes()
    except (IofleetError, OSError, KeyError):
        return None


def _probe_jobs(target: Target, probes: list[tuple[str, bool]]) -> str:
    """The engine probes of a host's check (sections probe0, probe1, ...,
    each with a file of its own: the target check removes the probe file
    it wrote)."""
    return "".join(render_probe(target.probe_where(f"probe{k}"), first_engine(target, engine), direct,
                                section=f"probe{k}") for k, (engine, direct) in enumerate(probes))


def _probe_together(checks: list[HostCheck], controller_version: str,
                    probes: dict[str, list[tuple[str, bool]]]) -> set[str]:
    """One fio client checks every host (see the module's docstring); the
    names of the hosts it showed wholly ready, their checks filled in."""
    with work_dir("iofleet-check-") as tmp:
        cmd = [fio_binary(), QUICK_CLOCK, "--output-format=normal,json", "--eta=never"]
        for c in checks:
            job = tmp / f"check.{c.host.name}.fio"
            job.write_text(c.target.check_job() + _probe_jobs(c.target, probes.get(c.host.name, [])))
            cmd += [f"--client={c.host.fio_client_arg}", str(job)]
        fio = run_fio(cmd, tmp, threading.Event(), timeout_s=SHARED_TIMEOUT_S)
    versions = set(SERVER_VERSION_RE.findall(fio.stdout + fio.stderr))
    if fio.stopped or versions != {controller_version} or not fio.final_output:
        return set()  # each host is checked on its own
    try:
        jobs = parse_output(fio.final_output).jobs
    except ImportFormatError:
        return set()
    by_host: dict[str, dict] = {}
    for j in jobs:
        by_host.setdefault(j.host, {})[j.job] = j
    ready = set()
    for c in checks:
        address, port = c.host.endpoint
        mine = by_host.get(address) or by_host.get(f"{address}:{port}") or {}
        if any(f"t{i}" not in mine or mine[f"t{i}"].error for i in range(len(c.targets))):
            continue
        c.fio_version = controller_version  # every server that answered runs it
        c.leftovers = leftovers_seen(mine.get("leftover"))
        for k, key in enumerate(probes.get(c.host.name, [])):
            probe = mine.get(f"probe{k}")
            if probe is not None and not probe.error:
                c.engines[key] = first_engine(c.target, key[0])
        ready.add(c.host.name)
    return ready


def _connect(address: str, port: int) -> str | None:
    """None when a TCP connection opens in time, else why not."""
    start = time.monotonic()
    try:
        with socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except socket.timeout:
        return f"no answer in {CONNECT_TIMEOUT_S:g} s (host down or port filtered)"
    except socket.gaierror as exc:
        return f"cannot resolve {address} ({exc.strerror})"
    except OSError as exc:
        if time.monotonic() - start >= CONNECT_TIMEOUT_S:
            return f"no answer in {CONNECT_TIMEOUT_S:g} s"
        return exc.strerror or str(exc)


def _probe(check: HostCheck, controller_version: str) -> None:
    host = check.host
    with work_dir("iofleet-check-") as tmp:
        job = tmp / "check.fio"
        job.write_text(check.target.check_job())
        # fio's own clock choices here: a faster client more often loses the
        # lines of a server that refuses the job file (it resets the
        # connection), and these lines name the problem.
        cmd = [fio_binary(), "--output-format=normal,json", "--eta=never",
               f"--client={host.fio_client_arg}", str(job)]
        for _ in range(LOST_LINES_TRIES):
            fio = run_fio(cmd, tmp, threading.Event(), timeout_s=PROBE_TIMEOUT_S)
            if not _lost_lines(fio):
                break
    said = fio.stdout + fio.stderr
    version = SERVER_VERSION_RE.search(said)
    if not version:
        if fio.stopped:
            check.problems.append(f"the fio server gave no answer in {PROBE_TIMEOUT_S:g} s")
        else:
            check.problems.append(f"does not answer as a fio server ({error_line(fio.stderr, fio.stdout)})")
        return
    check.fio_version = version.group(1)
    if check.fio_version != controller_version:
        check.problems.append(
            f"runs {check.fio_version} but this controller runs {controller_version}; "
            f"install the same fio version on every host")
        return  # results of another version's server are not to be trusted
    check.target.read_check(check, fio)


def _lost_lines(fio) -> bool:
    """The server answered, then ended the connection with neither a job's
    result nor the line naming why: a server that refuses a job file resets
    the connection, which can drop its last lines before they leave it."""
    said = fio.stdout + fio.stderr
    return bool(SERVER_VERSION_RE.search(said) and not NOT_A_DIR_RE.search(said)
                and '"jobname"' not in (fio.final_output or ""))


def clean_hosts(hosts: list[Host], kept: KeptData | None = None) -> tuple[dict[str, int], list[str]]:
    """`hosts clean`: remove iofleet's data files that runs left on the
    hosts' targets, with the targets locked as a run locks them: (host →
    files removed, one line per host that could not be cleaned). `kept`:
    the results directory's record of kept data, whose cleaned hosts go."""
    targets = host_targets(hosts)
    with_files = [h for h in hosts if targets[h.name].holds_files]
    with ThreadPoolExecutor(max_workers=min(32, len(with_files)) or 1) as pool:
        reasons = dict(zip([h.name for h in with_files], pool.map(lambda h: _connect(*h.endpoint), with_files)))
    problems = [f"host {h.name} ({h.address}): fio server not reachable ({reasons[h.name]}); nothing removed"
                for h in with_files if reasons[h.name]]
    reachable = [h for h in with_files if not reasons[h.name]]
    locks = []
    try:
        for h in reachable:
            for t in h.targets:
                locks.append(lock_fleet_target(*h.endpoint, t, holder_facts(command="hosts clean")))
        with work_dir("iofleet-clean-") as tmp:
            removed, failed = remove_data_files(reachable, 8, tmp)
    finally:
        for lock in locks:
            lock.release()
    problems += [f"host {name}: removing iofleet's data files failed through its fio server" for name in failed]
    if kept is not None:
        kept.update(forget=[host_key(h) for h in reachable if h.name not in failed])
    return removed, problems


def filesystem_problems(hosts: list[Host], facts: dict[str, dict], groups: dict[str, list[str]] | None = None) \
        -> list[tuple[Host | None, str]]:
    """What each host's fio server sees under its directory targets (SSH
    facts read in the server's mount namespace, control.FACTS_SCRIPT)
    against the inventory's `fstype:`, and the same filesystem across the
    hosts of one group (every host when there are no groups): (the host, or
    None for a group, and the problem). A mount made where the server
    cannot see it (another mount namespace: `ip netns exec`, a container)
    would have fio write into the empty directory underneath, and every
    figure would be of the wrong storage."""
    problems: list[tuple[Host | None, str]] = []
    seen = {}
    for h in hosts:
        mine = SeenHost.from_dict(facts.get(h.name)) or SeenHost()
        fs = {t: look.filesystem for t in h.targets if (look := mine.targets.get(t)) and look.kind == "directory"}
        known = mine.read and mine.server_view in ("same", "nsenter")
        if known:
            seen[h.name] = fs
        if not h.fstype:
            continue
        if not h.ssh:
            problems.append((h, f"`fstype: {h.fstype}` cannot be checked without `ssh:`; add `ssh:` to the "
                                f"inventory (as root, to read the fio server's own view), or remove fstype"))
        elif not known:
            why = mine.error or ("no fio server listens on its port" if not mine.server_view else
                                        "the SSH user may not look into the fio server's mount namespace")
            problems.append((h, f"`fstype: {h.fstype}` cannot be checked: {why}; log in as root, or remove fstype"))
        else:
            problems += [(h, f"target {t} is on {got or 'an unknown filesystem'} as its fio server sees it, not "
                             f"{h.fstype} as the inventory says; the mount is not where the server runs (its own "
                             f"mount namespace: `ip netns exec`, a container, or a server started before the "
                             f"mount): mount it there, or restart the fio server after mounting")
                         for t, got in fs.items() if got != h.fstype]
    for group, names in (groups or {"": [h.name for h in hosts]}).items():
        kinds = {name: tuple(sorted(set(seen[name].values()), key=str)) for name in names if name in seen}
        if len(set(kinds.values())) > 1:
            listed = ", ".join(f"{n}: {'/'.join(map(str, k)) or '-'}" for n, k in sorted(kinds.items()))
            where = f"host group {group}" if group else "the hosts"
            problems.append((None, f"{where} test different filesystems ({listed}); a group's figures add up "
                                   f"only on one kind of storage: fix the mounts, or set each host's `fstype:`"))
    return problems


def problem_line(host: Host | None, problem: str) -> str:
    """A problem as `hosts check` and a run print it, naming the host."""
    return f"host {host.name} ({host.address}): {problem}" if host else problem
