"""What a host is, for the studies that size themselves to it (Easy Run,
saturate): CPUs, memory, free space under its targets, spinning or not."""

from pathlib import Path

from ..plan.easy import HostFacts
from .control.host import host_facts as ssh_host_facts
from .inventory import Host
from .facts_records import SeenHost, TargetFacts
from .local import this_machine
from .metrics.node_exporter import exporter_facts, fetch_metrics, free_bytes
from .targets import Access, target_for
from .targets.base import any_spinning


def local_facts(targets: list[Path], access: Access = Access()) -> HostFacts:
    here = this_machine()
    target = target_for([str(t) for t in targets], access)
    return HostFacts("local", here.cpus, here.memory_bytes, target.free_bytes(), target.spinning())


def fleet_facts(hosts: list[Host]) -> list[HostFacts]:
    """Each host's facts: through SSH where the inventory gives `ssh:` (all
    hosts at once; the device type included), else from its node_exporter."""
    by_ssh = {name: SeenHost.from_dict(f) for name, f in ssh_host_facts(hosts).items()}
    out = []
    for h in hosts:
        seen = by_ssh.get(h.name)
        out.append(ssh_facts(h, seen) if seen and seen.read else remote_facts(h))
    return out


def ssh_facts(host: Host, seen: SeenHost) -> HostFacts:
    """A host's HostFacts from its SSH facts (control.parse_facts): the
    smallest target's free space (a device's size), spinning or not."""
    targets = [seen.targets.get(t) or TargetFacts() for t in host.targets]
    free = [t.free_bytes if t.kind == "directory" else t.bytes for t in targets]
    known = [f for f in free if f is not None]
    return HostFacts(host.name, seen.cpus, seen.memory_bytes, min(known) if known else None,
                     any_spinning([t.rotational for t in targets]))


def remote_facts(host: Host) -> HostFacts:
    """From the host's node_exporter, where it has one (CPU count, memory,
    free space under its targets); the device type is not visible there
    (fleet_facts reads it through SSH)."""
    if not host.metrics:
        return HostFacts(host.name)
    try:
        text = fetch_metrics(host.metrics)
    except OSError:
        return HostFacts(host.name)
    facts = exporter_facts(text)
    # (a device's size, an image's pool, are not there)
    free = [free_bytes(text, t) for t in host.targets if target_for(host.targets).holds_files]
    known = [f for f in free if f is not None]
    return HostFacts(host.name, facts["cpus"], facts["memory_bytes"], min(known) if known else None)
