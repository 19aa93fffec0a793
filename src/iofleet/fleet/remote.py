"""Runs a test on many `fio --server` hosts at once: one fio client
invocation with one job file per host (targets differ per host)."""

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FioError, ImportFormatError
from ..fio.command import client_command, error_line
from ..fio.jobfile import Device, render_cleanup, render_probe
from ..fio.parse import parse_output
from ..plan.params import AUTO_ENGINES
from ..fio.records import DiskUtil, JobResult
from .devices import where
from .inventory import Host
from .runner import FioRun, run_fio

# fio's client prints this when it loses a server.
_DISCONNECTED = re.compile(r"client: host=(\S+) disconnected")


@dataclass
class FleetRun:
    fio: FioRun
    jobs: list[JobResult] = field(default_factory=list)
    disks: list[DiskUtil] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # hosts that gave no result
    parse_error: str | None = None
    warmup_errors: list[str] = field(default_factory=list)  # hosts whose warm-up failed


def _host_names(hosts: list[Host]) -> dict[str, str]:
    """Inventory names of hosts as fio's client names them (their address,
    or address:port when two servers share an address): reported name →
    the first host that answers to it. One table per run rather than a
    search per job (64 hosts × 128 jobs)."""
    names: dict[str, str] = {}
    for h in hosts:
        addr, port = h.endpoint
        for reported in (addr, f"{addr}:{port}", h.fio_client_arg):
            names.setdefault(reported, h.name)
    return names


def run_on_hosts(
    jobfiles: dict[str, str], hosts: list[Host], work: Path, stop: threading.Event,
    timeout_s: float | None = None, tag: str = "job",
) -> FleetRun:
    """Run one job file per host (by host name) in a single fio client."""
    pairs = []
    for h in hosts:
        path = work / f"{tag}.{h.name}.fio"
        path.write_text(jobfiles[h.name])
        pairs.append((h.fio_client_arg, str(path)))
    fio = run_fio(client_command(pairs), work, stop, timeout_s=timeout_s)
    run = FleetRun(fio=fio)
    if fio.final_output:
        try:
            parsed = parse_output(fio.final_output)
        except ImportFormatError as exc:
            run.parse_error = str(exc)
        else:
            names = _host_names(hosts)
            run.jobs = [JobResult(**{**j.__dict__, "host": names.get(j.host, j.host)}) for j in parsed.jobs]
            run.disks = [DiskUtil(**{**d.__dict__, "host": names.get(d.host, d.host)}) for d in parsed.disks]
            run.warmup_errors = sorted({names.get(j.host, j.host) for j in parsed.warmup_jobs if j.error})
    seen = {j.host for j in run.jobs}
    run.lost = [h.name for h in hosts if h.name not in seen]
    return run


def lost_reason(run: FleetRun) -> str:
    said = set(_DISCONNECTED.findall(run.fio.stdout + run.fio.stderr))
    detail = f" (fio: {', '.join(sorted(said))} disconnected)" if said else ""
    return f"lost host{'s' if len(run.lost) > 1 else ''} {', '.join(run.lost)}: no result{detail}"


def resolve_fleet_engines(hosts: list[Host], engine: str, direct: bool, work: Path,
                          stop: threading.Event) -> dict[str, str]:
    """Engine per host, probed through each host's fio server: the one
    asked for, or for auto the first of io_uring, libaio, psync that works."""
    chosen: dict[str, str] = {}
    errors: dict[str, list[str]] = {h.name: [] for h in hosts}
    for candidate in (AUTO_ENGINES if engine == "auto" else (engine,)):
        todo = [h for h in hosts if h.name not in chosen]
        if not todo:
            break
        jobs = {h.name: render_probe(_probe_target(h), candidate, direct) for h in todo}
        run = run_on_hosts(jobs, todo, work, stop, timeout_s=60, tag=f"probe-{candidate}")
        ok = {j.host for j in run.jobs if not j.error}
        for h in todo:
            if h.name in ok:
                chosen[h.name] = candidate
            else:
                errors[h.name].append(f"{candidate}: {error_line(run.fio.stderr, run.fio.stdout)}")
    missing = [h for h in hosts if h.name not in chosen]
    if missing:
        raise FioError("; ".join(f"host {h.name}: no IO engine works ({' / '.join(errors[h.name])})"
                                 for h in missing))
    return chosen


def _probe_target(host: Host) -> Path | Device:
    target = where(host.targets)
    return target if isinstance(target, Device) else target[0]


def cleanup_fleet(hosts: list[Host], jobs: int, work: Path) -> list[str]:
    """Remove iofleet's data files on every host through its fio server;
    return the hosts where that failed."""
    files = {h.name: render_cleanup([Path(t) for t in h.targets], jobs) for h in hosts}
    run = run_on_hosts(files, hosts, work, threading.Event(), timeout_s=120, tag="cleanup")
    return [h.name for h in hosts if h.name in run.lost] + [j.host for j in run.jobs if j.error]
