"""Checking a fleet's hosts (`iofleet hosts check`; the web's Fleet page
shows the same checks): the per-host checks, one line per problem, and the
notes on what is not a problem but worth knowing. Cleaning what runs left
on them (`iofleet hosts clean`): faults a killed scenario left in place,
then data files. Deploying and stopping their fio servers over SSH
(`iofleet hosts deploy|undeploy`)."""

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..fio.command import fio_version
from ..fleet.control import deploy
from ..fleet.check import HostCheck, check_hosts, clean_hosts, filesystem_problems, problem_lines
from ..fleet.control.fault_records import read_records
from ..fleet.control.left_faults import undo_left_faults
from ..fleet.control.host import host_facts as ssh_host_facts
from ..fleet.targets.device_checks import REMOTE_UNSEEN
from ..fleet.targets.lock import TargetBusy, holder_facts, lock_fleet_target
from ..fleet.inventory import Host, InventoryError
from ..fleet.places import place_class


@dataclass
class FleetCheck:
    controller_fio: str  # this machine's fio version, which every host must match
    checks: list[HostCheck]  # in the inventory's order
    problems: list[str]  # one line each, naming the host: these hosts are not ready
    notes: list[str]  # metrics endpoints, device targets, data files left over

    @property
    def ready(self) -> int:
        return sum(c.ok for c in self.checks)


def check_fleet(hosts: list[Host], inventory: Path | str) -> FleetCheck:
    """Check every host of the inventory file `inventory` at once."""
    version = fio_version()
    place = place_class(hosts)
    left = place.left_behind(hosts)
    with place.hosts_up(hosts):  # a Kubernetes inventory's pods: up for the check only
        # What each fio server sees under its targets, read over SSH in its mount namespace.
        facts = ssh_host_facts(hosts) if any(h.ssh for h in hosts) else {}
        checks = check_hosts(hosts, version, ssh_facts=lambda: facts, inventory=str(inventory))
    by_host = {c.host.name: c for c in checks}
    group_wide = []
    for host, problem in filesystem_problems(hosts, facts):
        if host:
            by_host[host.name].problems.append(problem)  # the host is not ready
        else:
            group_wide.append(problem)
    return FleetCheck(version, checks, problem_lines(checks) + group_wide + left, check_notes(checks, inventory))


def check_notes(checks: list[HostCheck], inventory: Path | str) -> list[str]:
    """What a check found that stops no run but the user should know."""
    notes = []
    for c in checks:
        if c.metrics not in ("none", "ok"):
            notes.append(f"host {c.host.name}: metrics endpoint {c.host.metrics}: {c.metrics}")
        for t in c.targets:
            if t.device and t.device.summary != "no":
                notes.append(f"host {c.host.name}: target {t.path} is a block device; a run writes to it only "
                             f"when the plan's destroy_data (or --destroy-data) names it: {REMOTE_UNSEEN}")
        if c.faults_unread:
            notes.append(f"host {c.host.name}: could not look for faults a scenario left there: {c.faults_unread}")
        if c.leftovers:
            notes.append(f"host {c.host.name}: iofleet's data files from an earlier run are left on target "
                         f"{c.host.targets[0]} (a run that lost this host could not remove them); "
                         f"`iofleet hosts clean {inventory}` removes them, as does the next run's clean-up")
    return notes


@dataclass
class FleetClean:
    undone: list[str]  # a line per fault undone
    removed: dict[str, int]  # host → data files removed
    problems: list[str]  # a line per fault or host that could not be cleaned, and why


def clean_fleet(hosts: list[Host], inventory: Path | str, yes: bool = False) -> FleetClean:
    """`iofleet hosts clean`: undo the faults a scenario left on the hosts
    (host-down's first restarts the fio server the data files are removed
    through; `yes`: the user's own undo commands too), then remove iofleet's
    data files. A place's own leftovers (a killed run's namespace) are its to remove."""
    removed_left = place_class(hosts).clean_left(hosts)
    if removed_left is not None:
        return FleetClean(removed_left, {}, [])
    records, unread = read_records(hosts)
    faults = undo_left_faults(records, yes, str(inventory))
    problems = [f"host {name}: could not look for faults a scenario left there: {why}"
                for name, why in unread.items()] + faults.problems
    removed, files = clean_hosts(hosts)
    return FleetClean(faults.lines, removed, problems + files)


def _ssh_hosts(hosts: list[Host], inventory: Path | str) -> None:
    if hosts and hosts[0].no_login:
        raise InventoryError(f"{inventory}: nothing to deploy or undeploy: each host {hosts[0].no_login}; every run "
                             f"creates its own and deletes them")
    if not any(h.ssh for h in hosts):
        raise InventoryError(f"{inventory}: no host has `ssh:` settings; add `defaults: {{ssh: {{user: root}}}}` "
                             f"(see docs/fleet.md, Deploying with SSH) or start `iofleet server` on each host")


def deploy_fleet(hosts: list[Host], inventory: Path | str, install: bool = False, metrics: bool = False,
                 progress: Callable[[deploy.HostOutcome], None] | None = None) -> list[deploy.HostOutcome]:
    """`iofleet hosts deploy`: a fio server (the controller's fio version) on every host with `ssh:`."""
    _ssh_hosts(hosts, inventory)
    return deploy.deploy(hosts, fio_version(), install, metrics, progress)


def undeploy_fleet(hosts: list[Host], inventory: Path | str,
                   progress: Callable[[deploy.HostOutcome], None] | None = None,
                   force: bool = False) -> list[deploy.HostOutcome]:
    """`iofleet hosts undeploy`: stop what deploy started, remove its directory
    on each host. A host whose targets a run of this machine is testing is
    left alone, saying which run (`force`: stopped all the same)."""
    _ssh_hosts(hosts, inventory)
    busy = {} if force else {h.name: why for h in hosts if (why := _in_use(h))}
    refused = [deploy.HostOutcome(name, False, f"{name}: {why}; its fio server is left running (undeploy with "
                                               f"--force to stop it during the run)") for name, why in busy.items()]
    for outcome in refused:
        if progress:
            progress(outcome)
    return refused + deploy.undeploy([h for h in hosts if h.name not in busy], progress)


def _in_use(host: Host) -> str | None:
    """Why a run of this machine uses the host now (its target locks, fleet/targets/lock.py), or None."""
    address, port = host.endpoint
    for target in host.targets:
        try:
            lock_fleet_target(address, port, target, holder_facts()).release()
        except TargetBusy as exc:
            return str(exc).split(";")[0]
    return None
