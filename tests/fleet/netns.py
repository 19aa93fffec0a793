"""Test hosts for the fleet tests: Linux network namespaces running real
`fio --server` (and optionally the distribution's prometheus-node-exporter).

    with TestFleet(4, metrics=True) as fleet:
        for host in fleet.hosts:          # h1 .. h4
            host.address, host.port       # 10.231.0.11, 8765
            host.target                   # its data directory (real disk)
            host.metrics                  # http://10.231.0.11:9100/metrics
        fleet.write_inventory(path)       # an iofleet inventory of the hosts
        fleet.kill_server("h2")           # kill -9 all of h2: a dead host
        fleet.fio_processes("h1")         # pids of fio jobs still running on h1

    with TestFleet(3, ssh=True, fio_server=False) as fleet:
        # each host runs Debian's sshd on ADDR:22 (root login by key only),
        # no fio server: `iofleet hosts deploy` starts those
        fleet.ssh_key, fleet.known_hosts  # client key, known_hosts of every host key
        fleet.write_inventory(path)       # with `defaults: {ssh: ...}`

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

Cleanup. Every fleet first creates and locks a state file
/run/iofleet-testfleet/T.lock (atomically: created locked, then renamed into
place), and only then creates namespaces, links, processes and directories.
The lock lives as long as the owning process, so `cleanup_stale()` can tell
the leftovers of a crashed run (state file missing or not locked) from a
fleet that is alive in another process (locked), and removes only the
former. /run is a tmpfs, like the namespaces' mount points in /run/netns.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from iofleet.fio.command import server_clock

ROOT = Path(__file__).resolve().parents[2]

PREFIX = "ioft"
TOKEN_RE = r"[0-9a-f]{5}"
# Everything a fleet creates is named PREFIX + token + one of these suffixes.
NAME_RE = re.compile(rf"^{PREFIX}({TOKEN_RE})(?:br|v\d+|-h\d+)$")
DATA_DIR_RE = re.compile(rf"^fleet-({TOKEN_RE})$")
STATE_DIR = Path("/run/iofleet-testfleet")

FIO_PORT = 8765
METRICS_PORT = 9100
SUBNET_BASE = "10.231"
SLOTS = 16          # /20s in 10.231.0.0/16
MAX_HOSTS = 240     # 10.231.S.11 .. 10.231.S.250
NODE_EXPORTER = "prometheus-node-exporter"
SSHD = "/usr/sbin/sshd"
# `ip netns exec` mounts a fresh /sys for the namespace, without the cgroup
# mounts: sshd (and so a scenario's device-slow fault) sees the machine's
# blkio (v1) hierarchy again at /sys/fs/cgroup/blkio, as on a real host.
_WITH_BLKIO = ["sh", "-c", "[ -d /sys/fs/cgroup/blkio ] || { mount -t tmpfs cgroup /sys/fs/cgroup && "
               "mkdir /sys/fs/cgroup/blkio && mount -t cgroup -o blkio blkio /sys/fs/cgroup/blkio; } "
               "2>/dev/null; exec \"$0\" \"$@\""]
SSH_PORT = 22
DEPLOY_ROOT = Path("/var/tmp/iofleet")  # where `iofleet hosts deploy` keeps a host's pid files (fleet/deploy.py)

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


class FleetError(RuntimeError):
    """A test fleet could not be set up or torn down."""


@dataclass
class TestHost:
    """One test host: a namespace running `fio --server` on address:port."""

    __test__ = False  # not a pytest test class

    name: str           # h1, h2, ...
    namespace: str      # ioftT-h1
    address: str        # 10.231.S.11
    port: int           # 8765
    target: Path        # its data directory, on a real disk filesystem
    metrics: str | None  # http://ADDR:9100/metrics when metrics=True
    veth: str           # root-namespace end of its veth pair
    server_pid: int | None = None    # the fio --server listener
    exporter_pid: int | None = None  # prometheus-node-exporter
    sshd_pid: int | None = None      # sshd -D (ssh=True)
    alive: bool = True

    @property
    def endpoint(self) -> str:
        """'10.231.0.11:8765', as an inventory writes it."""
        return f"{self.address}:{self.port}"

    @property
    def fio_client_arg(self) -> str:
        """fio's --client value, 'ip:10.231.0.11,8765'."""
        return f"ip:{self.address},{self.port}"


# --------------------------------------------------------------- helpers



@functools.cache
def _server_clock() -> tuple[str, ...]:
    return tuple(server_clock())

def _ip(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise FleetError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip() or proc.returncode}")
    return proc


def _netns_names() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _link_names() -> list[str]:
    out = _ip("-o", "link", "show", check=False).stdout
    names = []
    for line in out.splitlines():
        # "12: ioftabcdev1@if11: <BROADCAST,..." -> "ioftabcdev1"
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def netns_pids(namespace: str) -> list[int]:
    """Every process in a namespace (`ip netns pids`)."""
    out = _ip("netns", "pids", namespace, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ..." -- comm may hold spaces or parentheses
    return int(stat.rsplit(")", 1)[1].split()[1])


def is_running(pid: int) -> bool:
    """True for a live process; False for a gone or zombie one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _kill_namespace(namespace: str, timeout: float = 10) -> list[int]:
    """kill -9 every process in a namespace until none is left running.
    Returns the pids still running after `timeout` (e.g. stuck in D state)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in netns_pids(namespace) if is_running(p)]
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            _kill(pid)
        time.sleep(0.02)


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


def default_base_dir() -> Path:
    """Where fleets put their data directories: $IOFLEET_FLEET_DIR or
    ./scratch of the project (a real disk, not tmpfs)."""
    return Path(os.environ.get("IOFLEET_FLEET_DIR", ROOT / "scratch"))


def _fs_type(path: Path) -> str | None:
    """Filesystem type of the mount holding `path` (from /proc/self/mountinfo)."""
    path = path.resolve()
    best, fstype = -1, None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        mount_point = fields[4].replace("\\040", " ")
        sep = fields.index("-")
        if (path == Path(mount_point) or Path(mount_point) in path.parents) and len(mount_point) > best:
            best, fstype = len(mount_point), fields[sep + 1]
    return fstype


def _try_lock(path: Path) -> int | None:
    """Open and exclusively flock `path` without waiting; the fd, or None."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


# --------------------------------------------------------------- stale runs


def cleanup_stale(base_dir: Path | None = None) -> list[str]:
    """Remove what crashed earlier runs left behind: processes, namespaces,
    links and data directories named with PREFIX + a token whose owner is
    gone (its state file missing or unlocked). Fleets alive in other
    processes are left alone. Returns what was removed."""
    base = Path(base_dir) if base_dir else default_base_dir()
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    namespaces, links = _netns_names(), _link_names()
    tokens: set[str] = set()
    for name in namespaces + links:
        if m := NAME_RE.match(name):
            tokens.add(m.group(1))
    for p in STATE_DIR.glob("*.lock"):
        if re.fullmatch(TOKEN_RE, p.stem):
            tokens.add(p.stem)
    if base.is_dir():
        for p in base.iterdir():
            if m := DATA_DIR_RE.match(p.name):
                tokens.add(m.group(1))

    removed: list[str] = []
    for tmp in STATE_DIR.glob(".*.tmp"):  # ".TOKEN.PID.tmp" of a crash mid-_take_token
        pid = tmp.name.split(".")[2]
        if pid.isdigit() and not is_running(int(pid)):
            tmp.unlink(missing_ok=True)
    for token in sorted(tokens):
        state = STATE_DIR / f"{token}.lock"
        fd = _try_lock(state)
        if fd is None and state.exists():
            continue  # locked: a live fleet in some process
        try:
            data_dirs = {base / f"fleet-{token}"}
            if fd is not None:
                try:
                    info = json.loads(state.read_text() or "{}")
                    if info.get("data_dir"):
                        data_dirs.add(Path(info["data_dir"]))
                except (OSError, ValueError):
                    pass
            own = [n for n in namespaces if (m := NAME_RE.match(n)) and m.group(1) == token]
            for ns in own:
                _kill_namespace(ns)
            for link in links:
                if (m := NAME_RE.match(link)) and m.group(1) == token:
                    if _ip("link", "del", link, check=False).returncode == 0:
                        removed.append(f"link {link}")
            for ns in own:
                if _ip("netns", "del", ns, check=False).returncode == 0:
                    removed.append(f"netns {ns}")
            for d in data_dirs:
                if d.exists():
                    shutil.rmtree(d, ignore_errors=True)
                    removed.append(f"dir {d}")
            if fd is not None:
                state.unlink(missing_ok=True)
                removed.append(f"state {state}")
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def _processes() -> dict[int, tuple[str, str]]:
    """{pid: (cmdline, net namespace id)} of every running process."""
    procs = {}
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or not is_running(int(pid_dir.name)):
            continue
        try:
            cmdline = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            netns = os.readlink(pid_dir / "ns" / "net")
        except OSError:
            continue
        procs[int(pid_dir.name)] = (cmdline.strip(), netns)
    return procs


def leftovers(token: str, netns_ids: set[str] = frozenset(), needles: tuple[str, ...] = ()) -> list[str]:
    """What of fleet `token` still exists: its namespaces and links, and
    processes that are in one of `netns_ids` ("net:[inode]") or whose command
    line holds the token or one of `needles`."""
    found = [f"netns {n}" for n in _netns_names() if (m := NAME_RE.match(n)) and m.group(1) == token]
    found += [f"link {n}" for n in _link_names() if (m := NAME_RE.match(n)) and m.group(1) == token]
    needles = (f"{PREFIX}{token}", *needles)
    for pid, (cmdline, netns) in _processes().items():
        if netns in netns_ids or any(n in cmdline for n in needles):
            found.append(f"process {pid}: {cmdline}")
    return found


# --------------------------------------------------------------- the fleet


def take_token(state_dir: Path, in_use) -> tuple[str, int] | None:
    """A free token (5 hex digits) and its state file state_dir/TOKEN.lock,
    held locked by this process for its lifetime (created locked, then
    published: nobody ever sees it unlocked while we are alive); None
    after 100 tries. `in_use(token)`: other signs that a token is taken."""
    state_dir.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        token = secrets.token_hex(3)[:5]
        if (state_dir / f"{token}.lock").exists() or in_use(token):
            continue
        tmp = state_dir / f".{token}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.link(tmp, state_dir / f"{token}.lock")
        except FileExistsError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            continue
        tmp.unlink()
        return token, fd
    return None


class TestFleet:
    """N test hosts, each a network namespace running a real `fio --server`
    (and, with metrics=True, prometheus-node-exporter) on its own address.

    A context manager: `with TestFleet(4) as fleet: ...`; `close()` removes
    everything (processes, namespaces, links, bridge, data directories) and
    is safe to call twice or after a failed start."""

    __test__ = False  # not a pytest test class

    def __init__(self, n: int, metrics: bool = False, base_dir: Path | str | None = None,
                 port: int = FIO_PORT, startup_timeout: float = 20.0,
                 ssh: bool = False, fio_server: bool = True, env: dict[str, str] | None = None):
        if not 1 <= n <= MAX_HOSTS:
            raise ValueError(f"a test fleet has 1 to {MAX_HOSTS} hosts, not {n}")
        self.n = n
        self.metrics = metrics
        self.ssh = ssh                # each host runs sshd on ADDR:22
        self.fio_server = fio_server  # False: no fio --server started (deploy's job)
        # extra environment of every process the fleet starts from now on (e.g.
        # CEPH_CONF for fio's rbd engine); read at each start, so it may be set
        # after start() and the servers restarted (restart_server)
        self.env: dict[str, str] = dict(env or {})
        self.ssh_key: Path | None = None      # the client's private key (root login on every host)
        self.known_hosts: Path | None = None  # every host's key, as ssh-keyscan would list it
        self.port = port
        self.startup_timeout = startup_timeout
        self.base_dir = Path(base_dir) if base_dir else default_base_dir()
        self.token = ""
        self.slot: int | None = None
        self.bridge = ""
        self.data_dir: Path | None = None
        self.hosts: list[TestHost] = []
        self.startup_seconds: float | None = None
        self._procs: list[subprocess.Popen] = []
        self._logs: list = []
        self._state_fd: int | None = None
        self._slot_fd: int | None = None
        self._created_ns: list[str] = []
        self._created_links: list[str] = []
        self._netns_ids: list[str] = []
        self._closed = False

    # ---- public API

    def __enter__(self) -> "TestFleet":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def host(self, name: str) -> TestHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"no test host {name!r}; hosts are {[h.name for h in self.hosts]}")

    @property
    def subnet(self) -> str:
        return f"{SUBNET_BASE}.{16 * self.slot}.0/20"

    @property
    def gateway(self) -> str:
        """The bridge's address: where connections from the root namespace come from."""
        return f"{SUBNET_BASE}.{16 * self.slot}.1"

    def client_args(self, jobfiles: dict[str, Path | str]) -> list[str]:
        """fio client arguments for {host name: job file}: --client=ip:A,P JOB ..."""
        args: list[str] = []
        for name, job in jobfiles.items():
            args += [f"--client={self.host(name).fio_client_arg}", str(job)]
        return args

    def kill_server(self, name: str, unreachable: bool = False) -> None:
        """Simulate a dead host: kill -9 everything in its namespace (fio
        server, its jobs, node_exporter). Connections are then refused at
        once. With unreachable=True the host's link also goes down, so
        packets to it vanish (a powered-off host): then `fio --client` hangs
        in connect() for the kernel's SYN timeout (about 2 min with
        tcp_syn_retries=6) before it runs the other hosts, so keep that
        for tests that probe reachability with their own timeout."""
        host = self.host(name)
        mine = [p for p in self._procs if p.args[3] == host.namespace]
        for proc in mine:
            self._killpg(proc.pid)
        stuck = _kill_namespace(host.namespace)
        for proc in mine:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                stuck.append(proc.pid)
        if stuck:
            raise FleetError(f"{name}: processes {stuck} survive kill -9")
        if unreachable:
            _ip("link", "set", host.veth, "down")
        host.alive = False

    def restart_server(self, name: str, timeout: float = 10.0) -> None:
        """Start the fio server of a host `kill_server` killed again (the
        host is back), and wait until it accepts connections."""
        host = self.host(name)
        self._start_server(host)
        deadline = time.monotonic() + timeout
        while not accepts(host.address, host.port):
            if time.monotonic() > deadline:
                raise FleetError(f"{name}: fio server not accepting {timeout:.0f} s after its restart")
            time.sleep(0.05)
        host.alive = True

    def cut_link(self, name: str) -> None:
        """Take the host's link down with its fio server still running: its
        packets vanish, with no reset (a pulled cable or a powered-off host)."""
        _ip("link", "set", self.host(name).veth, "down")

    def freeze(self, name: str, io_only: bool = False) -> list[int]:
        """kill -STOP the host's fio: every fio process in its namespace (a
        frozen host: its connections stay up, as the kernel still answers
        for them, but fio answers nothing), or with io_only=True only the
        processes below the server's per-connection process (the backend
        and its jobs: IO hung, the server still answers fio's client).
        Returns the pids stopped; `thaw` them before teardown."""
        host = self.host(name)
        fios = [p for p in self.namespace_pids(name) if comm(p) == "fio"]
        if io_only:
            fios = [p for p in fios if p != host.server_pid and _ppid(p) != host.server_pid]
        for pid in fios:
            _kill(pid, signal.SIGSTOP)
        return fios

    def thaw(self, pids: list[int]) -> None:
        """kill -CONT what `freeze` stopped."""
        for pid in pids:
            _kill(pid, signal.SIGCONT)

    def server_pid(self, name: str) -> int:
        """pid of the host's fio --server listener."""
        return self.host(name).server_pid

    def namespace_pids(self, name: str) -> list[int]:
        """Every running process in the host's namespace."""
        return [p for p in netns_pids(self.host(name).namespace) if is_running(p)]

    def fio_processes(self, name: str) -> list[int]:
        """pids of fio processes in the host's namespace other than the
        `fio --server` listener: the listener forks a process per client
        connection, which forks the backend, which forks one process per job;
        all of them are descendants of the listener, which itself is the
        process we started (`ip netns exec` execs fio in place). So: every
        fio in the namespace whose pid is not the listener's pid. An empty
        list means no job (and no client session) is left on that host."""
        host = self.host(name)
        return sorted(p for p in self.namespace_pids(name)
                      if p != host.server_pid and comm(p) == "fio")

    def wait_fio_gone(self, name: str | None = None, timeout: float = 5.0) -> dict[str, list[int]]:
        """Wait until no fio besides the listener runs on the host (or on
        every live host); return what is still running after `timeout`.
        The server's per-connection process lingers about a second after
        the client has gone, so check with this, not with one look."""
        names = [name] if name else [h.name for h in self.hosts if h.alive]
        deadline = time.monotonic() + timeout
        while True:
            left = {n: pids for n in names if (pids := self.fio_processes(n))}
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.05)

    def write_inventory(self, path: Path | str, hosts: list[str] | None = None,
                        ssh: dict[str, dict] | None = None) -> Path:
        """An iofleet inventory (YAML) of the hosts (all, or those named).
        With ssh=True fleets, `defaults: {ssh: ...}` logs in as root with
        ssh_key and checks known_hosts; `ssh` gives per-host overrides,
        e.g. {"h2": {"key": str(other_key)}}."""
        entries = []
        for h in self.hosts:
            if hosts is not None and h.name not in hosts:
                continue
            entry = {"name": h.name, "address": h.endpoint, "targets": [str(h.target)]}
            if h.metrics:
                entry["metrics"] = h.metrics
            if ssh and h.name in ssh:
                entry["ssh"] = ssh[h.name]
            entries.append(entry)
        data: dict = {"hosts": entries}
        if self.ssh:
            data["defaults"] = {"ssh": {"user": "root", "key": str(self.ssh_key),
                                        "known_hosts": str(self.known_hosts)}}
        path = Path(path)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def deploy_dirs(self) -> list[Path]:
        """The `hosts deploy` directories of this fleet's hosts that exist."""
        return [d for h in self.hosts if (d := DEPLOY_ROOT / f"{h.address}-{h.port}").exists()]

    def server_log(self, name: str, label: str = "fio") -> str:
        """What the host's fio server (or a spawned command) printed."""
        log = self.data_dir / "logs" / f"{name}-{label}.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def leftovers(self) -> list[str]:
        """Namespaces, links, processes and files of this fleet that still
        exist (empty after close()). Processes are found by network
        namespace and by the listen addresses in their command lines (fio's
        forked job processes keep the listener's `--server=ip:ADDR,PORT`)."""
        if not self.token:
            return []
        needles = tuple(f"--server=ip:{h.address}," for h in self.hosts)
        needles += tuple(f"--web.listen-address={h.address}:" for h in self.hosts)
        found = leftovers(self.token, set(self._netns_ids), needles)
        if self.data_dir is not None and self.data_dir.exists():
            found.append(f"dir {self.data_dir}")
        if self.ssh:
            found += [f"dir {d}" for d in self.deploy_dirs()]
        return found

    # ---- set-up

    def start(self) -> None:
        reason = unavailable_reason(self.metrics, self.ssh)
        if reason:
            raise FleetError(reason)
        t0 = time.monotonic()
        cleanup_stale(self.base_dir)
        self._take_token()
        self._take_slot()
        self._check_subnet_free()
        self.data_dir = self.base_dir / f"fleet-{self.token}"
        fstype = _fs_type(self.base_dir if self.base_dir.exists() else self.base_dir.parent)
        if fstype in ("tmpfs", "ramfs"):
            raise FleetError(f"{self.base_dir} is on {fstype}; the fleet's targets need a real disk "
                             "(set IOFLEET_FLEET_DIR or base_dir)")
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        self._write_state()

        self.bridge = f"{PREFIX}{self.token}br"
        self._created_links.append(self.bridge)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/20", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i in range(1, self.n + 1):
            self.hosts.append(self._add_host(i))
        if self.ssh:
            self._make_ssh_keys()
        for h in self.hosts:
            if self.fio_server:
                self._start_server(h)
            if self.metrics:
                self._start_exporter(h)
            if self.ssh:
                self._start_sshd(h)
        self._wait_ready()
        self.startup_seconds = time.monotonic() - t0

    def _take_token(self) -> None:
        existing = set(_netns_names()) | set(_link_names())
        taken = take_token(STATE_DIR, lambda t: any((m := NAME_RE.match(n)) and m.group(1) == t for n in existing))
        if taken is None:
            raise FleetError("could not pick a free fleet token")
        self.token, self._state_fd = taken

    def _take_slot(self) -> None:
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

    def _check_subnet_free(self) -> None:
        out = _ip("-o", "-4", "addr", "show", "to", self.subnet, check=False).stdout.strip()
        if out:
            raise FleetError(f"{self.subnet} is already used on this machine, not by a test fleet: {out}")

    def _write_state(self) -> None:
        info = {"pid": os.getpid(), "slot": self.slot, "data_dir": str(self.data_dir),
                "created": time.time()}
        os.ftruncate(self._state_fd, 0)
        os.pwrite(self._state_fd, json.dumps(info).encode(), 0)

    def _address(self, i: int) -> str:
        return f"{SUBNET_BASE}.{16 * self.slot}.{10 + i}"

    def _add_host(self, i: int) -> TestHost:
        name = f"h{i}"
        ns = f"{PREFIX}{self.token}-{name}"
        veth = f"{PREFIX}{self.token}v{i}"
        address = self._address(i)
        self._created_ns.append(ns)
        _ip("netns", "add", ns)
        self._netns_ids.append(f"net:[{os.stat(f'/run/netns/{ns}').st_ino}]")
        self._created_links.append(veth)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", f"{address}/20", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        target = self.data_dir / name
        target.mkdir(parents=True, exist_ok=True)
        metrics = f"http://{address}:{METRICS_PORT}/metrics" if self.metrics else None
        return TestHost(name=name, namespace=ns, address=address, port=self.port,
                        target=target, metrics=metrics, veth=veth)

    def spawn(self, name: str, argv: list[str], label: str = "cmd") -> subprocess.Popen:
        """Run `argv` inside host `name` (e.g. `iofleet server --bind ...`),
        tracked like the fio server: killed with its process group at
        teardown. Its output goes to the log `server_log(name, label)` reads."""
        return self._spawn(self.host(name), label, argv)

    def _spawn(self, host: TestHost, what: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.data_dir / "logs" / f"{host.name}-{what}.log", "wb")
        self._logs.append(log)
        proc = subprocess.Popen(
            ["ip", "netns", "exec", host.namespace, *argv],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
            start_new_session=True,  # own process group: killpg takes its children too
            preexec_fn=_die_with_parent,
        )
        self._procs.append(proc)
        return proc

    def _start_server(self, host: TestHost) -> None:
        # as `iofleet server` and deploy start it: with fio's own clock named
        proc = self._spawn(host, "fio", ["fio", f"--server=ip:{host.address},{host.port}", *_server_clock()])
        host.server_pid = proc.pid

    def _start_exporter(self, host: TestHost) -> None:
        proc = self._spawn(host, "node-exporter", [
            NODE_EXPORTER, f"--web.listen-address={host.address}:{METRICS_PORT}"])
        host.exporter_pid = proc.pid

    @property
    def ssh_dir(self) -> Path:
        """Keys, known_hosts, sshd configs and pid files of the fleet (ssh=True)."""
        return self.data_dir / "ssh"

    def make_key(self, name: str) -> Path:
        """A new ed25519 key pair in ssh_dir (no passphrase); the private key's path."""
        path = self.ssh_dir / name
        proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{PREFIX}{self.token}",
                               "-f", str(path)], capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise FleetError(f"ssh-keygen failed: {proc.stderr.strip()}")
        return path

    def _make_ssh_keys(self) -> None:
        """The client key (authorized on every host), a host key per host and
        the known_hosts file listing them, as `ssh-keyscan` and a check would."""
        self.ssh_dir.mkdir(mode=0o700)
        self.ssh_key = self.make_key("id_ed25519")
        (self.ssh_dir / "authorized_keys").write_text(Path(f"{self.ssh_key}.pub").read_text())
        lines = []
        for h in self.hosts:
            key = self.make_key(f"{h.name}_host_ed25519_key")
            kind, blob = Path(f"{key}.pub").read_text().split()[:2]
            lines.append(f"{h.address} {kind} {blob}\n")
        self.known_hosts = self.ssh_dir / "known_hosts"
        self.known_hosts.write_text("".join(lines))
        # sshd refuses to start without its privilege separation directory
        # (Debian's service unit creates it; namespaces share the filesystem).
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)

    def _start_sshd(self, host: TestHost) -> None:
        d = self.ssh_dir
        config = d / f"{host.name}-sshd_config"
        config.write_text("\n".join([
            f"ListenAddress {host.address}:{SSH_PORT}",
            f"HostKey {d / f'{host.name}_host_ed25519_key'}",
            f"PidFile {d / f'{host.name}-sshd.pid'}",
            f"AuthorizedKeysFile {d / 'authorized_keys'}",  # not /root/.ssh: nothing of the machine's
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "UsePAM no",
            "StrictModes no",   # the scratch directory's modes are the project's, not ~/.ssh's
            "PrintMotd no",
            "MaxStartups 200",  # a control channel opens many sessions at once
            # bash sources ~/.bashrc for commands run by sshd unless SHLVL says it is nested:
            # this machine's root .bashrc (pyenv init) would add ~0.2 s of CPU to each command.
            "SetEnv SHLVL=1",
            "",
        ]))
        proc = self._spawn(host, "sshd", [*_WITH_BLKIO, SSHD, "-D", "-e", "-f", str(config)])
        host.sshd_pid = proc.pid

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        pending_fio = {h.name for h in self.hosts} if self.fio_server else set()
        pending_metrics = {h.name for h in self.hosts if h.metrics}
        pending_ssh = {h.name for h in self.hosts} if self.ssh else set()
        while pending_fio or pending_metrics or pending_ssh:
            for h in self.hosts:
                for pid, what in ((h.server_pid, "fio"), (h.exporter_pid, "node-exporter"),
                                  (h.sshd_pid, "sshd")):
                    proc = next((p for p in self._procs if p.pid == pid), None)
                    if proc is not None and proc.poll() is not None:
                        log = (self.data_dir / "logs" / f"{h.name}-{what}.log").read_text(errors="replace")
                        raise FleetError(f"{h.name}: {what} exited with {proc.returncode}: {log.strip()[-500:]}")
            for name in sorted(pending_fio):
                h = self.host(name)
                if accepts(h.address, h.port):
                    pending_fio.discard(name)
            for name in sorted(pending_metrics):
                if _http_ok(self.host(name).metrics):
                    pending_metrics.discard(name)
            for name in sorted(pending_ssh):
                if accepts(self.host(name).address, SSH_PORT):
                    pending_ssh.discard(name)
            if not (pending_fio or pending_metrics or pending_ssh):
                break
            if time.monotonic() > deadline:
                raise FleetError(
                    f"test hosts not ready after {self.startup_timeout:.0f} s: "
                    f"fio --server not accepting on {sorted(pending_fio) or 'none'}, "
                    f"node_exporter not answering on {sorted(pending_metrics) or 'none'}, "
                    f"sshd not accepting on {sorted(pending_ssh) or 'none'}")
            time.sleep(0.05)

    # ---- tear-down

    def _killpg(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        """Remove everything this fleet created; raise FleetError if
        something could not be removed (after trying everything)."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        for proc in self._procs:
            self._killpg(proc.pid)
        for ns in self._created_ns:
            try:
                if stuck := _kill_namespace(ns):
                    problems.append(f"{ns}: processes {stuck} survive kill -9")
            except Exception as exc:  # keep tearing down
                problems.append(f"{ns}: {exc}")
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                problems.append(f"process {proc.pid} ({proc.args}) does not exit")
        for log in self._logs:
            log.close()
        # veths first (deleting one end removes the pair), then the
        # namespaces, then the bridge
        for link in reversed(self._created_links):
            proc = _ip("link", "del", link, check=False)
            if proc.returncode != 0 and "Cannot find device" not in proc.stderr:
                problems.append(f"ip link del {link}: {proc.stderr.strip()}")
        for ns in self._created_ns:
            proc = _ip("netns", "del", ns, check=False)
            if proc.returncode != 0 and "No such file" not in proc.stderr:
                problems.append(f"ip netns del {ns}: {proc.stderr.strip()}")
        if self.data_dir is not None and self.data_dir.exists():
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.ssh:  # what a test's deploy left when it failed before undeploy
            for d in self.deploy_dirs():
                shutil.rmtree(d, ignore_errors=True)
            with contextlib.suppress(OSError):
                DEPLOY_ROOT.rmdir()  # only when empty: other fleets may have hosts deployed
        problems += self.leftovers()
        if self._state_fd is not None:
            if not problems:  # else leave it, unlocked, for cleanup_stale
                (STATE_DIR / f"{self.token}.lock").unlink(missing_ok=True)
            os.close(self._state_fd)
            self._state_fd = None
        if self._slot_fd is not None:
            os.close(self._slot_fd)
            self._slot_fd = None
        if problems:
            raise FleetError("test fleet teardown incomplete: " + "; ".join(problems))


def _die_with_parent() -> None:
    """In the child before exec: get SIGKILL when the test process dies, so
    a killed pytest does not leave fio servers behind (fio's own forked
    children do not inherit this; cleanup_stale catches those)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def _http_ok(url: str) -> bool:
    try:
        http_get(url, timeout=1)
        return True
    except (OSError, FleetError, http.client.HTTPException):
        return False


def http_get(url: str, timeout: float = 5) -> str:
    """GET url directly, without any proxy; the body as text."""
    host_port, _, path = url.split("//", 1)[1].partition("/")
    host, port = host_port.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("GET", "/" + path)
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace")
        if resp.status != 200:
            raise FleetError(f"GET {url}: HTTP {resp.status}")
        return body
    finally:
        conn.close()
