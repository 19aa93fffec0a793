"""What this machine needs before test fleets can be built on it: root with
the capabilities for network namespaces, iproute2's `ip netns`, fio, and
node_exporter or sshd when a fleet asks for them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .sshd import SSHD
from .testhost import NODE_EXPORTER

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


def _capabilities() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def unavailable_reason(metrics: bool = False, ssh: bool = False) -> str | None:
    """Why test fleets cannot be built here (for pytest.skip), or None."""
    if os.geteuid() != 0:
        return "fleet tests need root (network namespaces, veth, bridge)"
    caps = _capabilities()
    if not (caps >> CAP_SYS_ADMIN) & 1 or not (caps >> CAP_NET_ADMIN) & 1:
        return "fleet tests need CAP_SYS_ADMIN and CAP_NET_ADMIN (network namespaces)"
    if not shutil.which("ip"):
        return "fleet tests need `ip` from iproute2 (`make system` installs it)"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` does not work here"
    if not shutil.which("fio"):
        return "fio is not installed (`make system` installs it)"
    if metrics and not shutil.which(NODE_EXPORTER):
        return f"{NODE_EXPORTER} is not installed (`make system` installs it)"
    if ssh and not (os.access(SSHD, os.X_OK) and shutil.which("ssh-keygen")):
        return "sshd or ssh-keygen is not installed (`make system` installs openssh-server)"
    return None
