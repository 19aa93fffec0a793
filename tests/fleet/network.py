"""A test fleet's network: namespaces, the bridge, addresses and names.

Layout of one fleet (token T, 5 hex digits; slot S, see below):

    root namespace: bridge iofTbr 10.231.S.1/20
    per host i:     namespace iofT-hi, veth pair iofTvi (root side, on the
                    bridge) <-> eth0 (inside, 10.231.S.(10+i)/20), lo up, no
                    default route (nothing inside can reach beyond the bridge)

The prefix is "ioft" (iofleet test) + the token, so names never collide
with other runs and interface names stay within Linux's 15 characters.

Several fleets can exist at once (a test with two fleets, two pytest
sessions on one machine). Each one takes a free *slot*, an exclusive /20 of
10.231.0.0/16 (slot 0: 10.231.0.0/20, slot 1: 10.231.16.0/20, ...), held
by an flock for the fleet's lifetime, so two bridges never carry the same
addresses and the root namespace's routes stay unambiguous.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import time
from pathlib import Path

from .processes import is_running, kill

PREFIX = "ioft"
TOKEN_RE = r"[0-9a-f]{5}"
# Everything a fleet creates is named PREFIX + token + one of these suffixes.
NAME_RE = re.compile(rf"^{PREFIX}({TOKEN_RE})(?:br|v\d+|-h\d+)$")
# Each fleet's state file (TOKEN.lock) and the slots' locks (slotS).
STATE_DIR = Path("/run/iofleet-testfleet")

SUBNET_BASE = "10.231"
SLOTS = 16          # /20s in 10.231.0.0/16
MAX_HOSTS = 240     # 10.231.S.11 .. 10.231.S.250


class FleetError(RuntimeError):
    """A test fleet could not be set up or torn down."""


def ip(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise FleetError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip() or proc.returncode}")
    return proc


def netns_names() -> list[str]:
    out = ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def link_names() -> list[str]:
    out = ip("-o", "link", "show", check=False).stdout
    names = []
    for line in out.splitlines():
        # "12: ioftabcdev1@if11: <BROADCAST,..." -> "ioftabcdev1"
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def token_of(name: str) -> str | None:
    """The fleet token in a namespace's or link's name, None for other names."""
    m = NAME_RE.match(name)
    return m.group(1) if m else None


def netns_pids(namespace: str) -> list[int]:
    """Every process in a namespace (`ip netns pids`)."""
    out = ip("netns", "pids", namespace, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def kill_namespace(namespace: str, timeout: float = 10) -> list[int]:
    """kill -9 every process in a namespace until none is left running.
    Returns the pids still running after `timeout` (e.g. stuck in D state)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in netns_pids(namespace) if is_running(p)]
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            kill(pid)
        time.sleep(0.02)


class FleetNetwork:
    """The network of fleet `token`: its address slot, its bridge and a
    namespace per host on it. It records each name before creating it, so
    that `remove()` deletes exactly what it made, also after a failed start."""

    def __init__(self, token: str):
        self.token = token
        self.slot: int | None = None
        self.bridge = ""
        self.namespaces: list[str] = []
        self.links: list[str] = []      # the bridge, then the root ends of the veth pairs
        self.netns_ids: list[str] = []  # "net:[inode]", as /proc/PID/ns/net names them
        self._slot_fd: int | None = None

    @property
    def subnet(self) -> str:
        return f"{SUBNET_BASE}.{16 * self.slot}.0/20"

    @property
    def gateway(self) -> str:
        """The bridge's address: where connections from the root namespace come from."""
        return f"{SUBNET_BASE}.{16 * self.slot}.1"

    def address(self, i: int) -> str:
        return f"{SUBNET_BASE}.{16 * self.slot}.{10 + i}"

    def take_slot(self) -> None:
        for slot in range(SLOTS):
            path = STATE_DIR / f"slot{slot}"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.slot, self._slot_fd = slot, fd
            return
        raise FleetError(f"all {SLOTS} test-fleet address slots are in use on this machine")

    def check_subnet_free(self) -> None:
        out = ip("-o", "-4", "addr", "show", "to", self.subnet, check=False).stdout.strip()
        if out:
            raise FleetError(f"{self.subnet} is already used on this machine, not by a test fleet: {out}")

    def add_bridge(self) -> None:
        self.bridge = f"{PREFIX}{self.token}br"
        self.links.append(self.bridge)
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/20", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def add_host(self, i: int, name: str) -> tuple[str, str, str]:
        """Host i's namespace on the bridge: (namespace, veth, address)."""
        ns = f"{PREFIX}{self.token}-{name}"
        veth = f"{PREFIX}{self.token}v{i}"
        address = self.address(i)
        self.namespaces.append(ns)
        ip("netns", "add", ns)
        self.netns_ids.append(f"net:[{os.stat(f'/run/netns/{ns}').st_ino}]")
        self.links.append(veth)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", veth, "master", self.bridge)
        ip("link", "set", veth, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "addr", "add", f"{address}/20", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        return ns, veth, address

    def kill_processes(self) -> list[str]:
        """kill -9 everything in the namespaces; what could not be killed."""
        problems = []
        for ns in self.namespaces:
            try:
                if stuck := kill_namespace(ns):
                    problems.append(f"{ns}: processes {stuck} survive kill -9")
            except Exception as exc:  # keep tearing down
                problems.append(f"{ns}: {exc}")
        return problems

    def remove(self) -> list[str]:
        """Delete the links and namespaces; what could not be deleted."""
        problems = []
        # newest first: the veths (deleting one end removes the pair), then
        # the bridge; then the namespaces
        for link in reversed(self.links):
            proc = ip("link", "del", link, check=False)
            if proc.returncode != 0 and "Cannot find device" not in proc.stderr:
                problems.append(f"ip link del {link}: {proc.stderr.strip()}")
        for ns in self.namespaces:
            proc = ip("netns", "del", ns, check=False)
            if proc.returncode != 0 and "No such file" not in proc.stderr:
                problems.append(f"ip netns del {ns}: {proc.stderr.strip()}")
        return problems

    def release_slot(self) -> None:
        if self._slot_fd is not None:
            os.close(self._slot_fd)
            self._slot_fd = None
