"""Checking a fleet's hosts (`iofleet hosts check`; the web's Fleet page
shows the same checks): the per-host checks, one line per problem, and the
notes on what is not a problem but worth knowing."""

from dataclasses import dataclass
from pathlib import Path

from ..fio.command import fio_version
from ..fleet.check import HostCheck, check_hosts, problem_lines
from ..fleet.devices import REMOTE_UNSEEN
from ..fleet.inventory import Host


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
    checks = check_hosts(hosts, version)
    return FleetCheck(version, checks, problem_lines(checks), check_notes(checks, inventory))


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
        if c.leftovers:
            notes.append(f"host {c.host.name}: iofleet's data files from an earlier run are left on target "
                         f"{c.host.targets[0]} (a run that lost this host could not remove them); "
                         f"`iofleet hosts clean {inventory}` removes them, as does the next run's clean-up")
    return notes
