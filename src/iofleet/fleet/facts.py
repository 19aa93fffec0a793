"""What a host is, for the studies that size themselves to it (Easy Run,
saturate): CPUs, memory, free space under its targets, spinning or not."""

import shutil
from pathlib import Path

from ..errors import IofleetError
from ..plan.easy import HostFacts
from ..plan.model import is_device_path
from .devices import local_device
from .control import host_facts as ssh_host_facts
from .inventory import Host
from .local import host_facts, target_rotational
from .metrics import exporter_facts, fetch_metrics, free_bytes


def local_facts(targets: list[Path]) -> HostFacts:
    facts = host_facts()
    free, rotational = [], []
    for t in targets:
        if is_device_path(str(t)):
            free.append(local_device(str(t)).bytes)  # a device's space is all its own (read-only look)
        elif not t.is_dir():
            raise IofleetError(f"target {t} is not a directory; create it or give another --target")
        else:
            free.append(shutil.disk_usage(t).free)
        rotational.append(target_rotational(t))
    return HostFacts("local", facts["cpus"], facts["memory_bytes"], min(free), _spinning(rotational))


def _spinning(rotational: list[bool | None]) -> bool | None:
    """Any target on a spinning disk: True; all on flash: False; else not known."""
    return True if any(rotational) else False if rotational and all(r is False for r in rotational) else None


def fleet_facts(hosts: list[Host]) -> list[HostFacts]:
    """Each host's facts: through SSH where the inventory gives `ssh:` (all
    hosts at once; the device type included), else from its node_exporter."""
    by_ssh = ssh_host_facts(hosts)
    out = []
    for h in hosts:
        facts = by_ssh.get(h.name)
        out.append(ssh_facts(h, facts) if facts and "error" not in facts else remote_facts(h))
    return out


def ssh_facts(host: Host, facts: dict) -> HostFacts:
    """A host's HostFacts from its SSH facts (control.parse_facts): the
    smallest target's free space (a device's size), spinning or not."""
    targets = [facts["targets"].get(t) or {} for t in host.targets]
    free = [t.get("free_bytes") if t.get("kind") == "directory" else t.get("bytes") for t in targets]
    known = [f for f in free if f is not None]
    return HostFacts(host.name, facts.get("cpus"), facts.get("memory_bytes"), min(known) if known else None,
                     _spinning([t.get("rotational") for t in targets]))


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
    free = [free_bytes(text, t) for t in host.targets if not is_device_path(t)]  # a device's size is not there
    known = [f for f in free if f is not None]
    return HostFacts(host.name, facts["cpus"], facts["memory_bytes"], min(known) if known else None)
