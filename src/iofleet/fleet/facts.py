"""What a host is, for the studies that size themselves to it (Easy Run,
saturate): CPUs, memory, free space under its targets, spinning or not."""

import shutil
from pathlib import Path

from ..errors import IofleetError
from ..plan.easy import HostFacts
from ..plan.model import is_device_path
from .devices import local_device
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
    spinning = True if any(rotational) else False if rotational and all(r is False for r in rotational) else None
    return HostFacts("local", facts["cpus"], facts["memory_bytes"], min(free), spinning)


def remote_facts(host: Host) -> HostFacts:
    """From the host's node_exporter, where it has one (CPU count, memory,
    free space under its targets); the device type is not visible there."""
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
