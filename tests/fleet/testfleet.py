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

Its parts: network.py (namespaces, bridge, addresses), testhost.py (one
host and its services), sshd.py (the SSH side), hostcontrol.py (what a test
does to a running host), stale.py (leftovers of crashed runs).

Cleanup. Every fleet first creates and locks a state file
/run/iofleet-testfleet/T.lock (atomically: created locked, then renamed into
place), and only then creates namespaces, links, processes and directories.
The lock lives as long as the owning process, so `cleanup_stale()` can tell
the leftovers of a crashed run (state file missing or not locked) from a
fleet that is alive in another process (locked), and removes only the
former.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import yaml

from .hostcontrol import HostControl
from .network import MAX_HOSTS, PREFIX, STATE_DIR, FleetError, FleetNetwork, link_names, netns_names, token_of
from .prerequisites import unavailable_reason
from .processes import die_with_parent, kill_group
from .sshd import DEPLOY_ROOT, SSH_PORT, deploy_dirs, fault_dirs, make_key, make_ssh_keys, sshd_argv
from .stale import cleanup_stale, leftovers
from .statefile import default_base_dir, filesystem_type, take_token
from .testhost import FIO_PORT, METRICS_PORT, TestHost, exporter_argv, fio_server_argv, wait_ready


class TestFleet(HostControl):
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
        self.network: FleetNetwork | None = None  # once the token is taken
        self.data_dir: Path | None = None
        self.hosts: list[TestHost] = []
        self.startup_seconds: float | None = None
        self._procs: list[subprocess.Popen] = []
        self._logs: list = []
        self._state_fd: int | None = None
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
    def slot(self) -> int | None:
        return self.network.slot if self.network else None

    @property
    def bridge(self) -> str:
        return self.network.bridge if self.network else ""

    @property
    def subnet(self) -> str:
        return self.network.subnet

    @property
    def gateway(self) -> str:
        """The bridge's address: where connections from the root namespace come from."""
        return self.network.gateway

    def client_args(self, jobfiles: dict[str, Path | str]) -> list[str]:
        """fio client arguments for {host name: job file}: --client=ip:A,P JOB ..."""
        args: list[str] = []
        for name, job in jobfiles.items():
            args += [f"--client={self.host(name).fio_client_arg}", str(job)]
        return args

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
        return deploy_dirs(self.hosts)

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
        netns_ids = set(self.network.netns_ids) if self.network else set()
        found = leftovers(self.token, netns_ids, needles)
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
        self.network = FleetNetwork(self.token)
        self.network.take_slot()
        self.network.check_subnet_free()
        self.data_dir = self.base_dir / f"fleet-{self.token}"
        fstype = filesystem_type(self.base_dir if self.base_dir.exists() else self.base_dir.parent)
        if fstype in ("tmpfs", "ramfs"):
            raise FleetError(f"{self.base_dir} is on {fstype}; the fleet's targets need a real disk "
                             "(set IOFLEET_FLEET_DIR or base_dir)")
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        self._write_state()

        self.network.add_bridge()
        for i in range(1, self.n + 1):
            self.hosts.append(self._add_host(i))
        if self.ssh:
            for d in fault_dirs(self.hosts):  # an earlier fleet's on these addresses, its test killed
                shutil.rmtree(d, ignore_errors=True)
            self.ssh_key, self.known_hosts = make_ssh_keys(self.ssh_dir, self.hosts, f"{PREFIX}{self.token}")
        for h in self.hosts:
            if self.fio_server:
                self._start_server(h)
            if self.metrics:
                self._start_exporter(h)
            if self.ssh:
                self._start_sshd(h)
        wait_ready(self.hosts, self.fio_server, SSH_PORT if self.ssh else None, self.startup_timeout,
                   self._check_alive)
        self.startup_seconds = time.monotonic() - t0

    def _take_token(self) -> None:
        existing = set(netns_names()) | set(link_names())
        taken = take_token(STATE_DIR, lambda t: any(token_of(n) == t for n in existing))
        if taken is None:
            raise FleetError("could not pick a free fleet token")
        self.token, self._state_fd = taken

    def _write_state(self) -> None:
        info = {"pid": os.getpid(), "slot": self.slot, "data_dir": str(self.data_dir),
                "created": time.time()}
        os.ftruncate(self._state_fd, 0)
        os.pwrite(self._state_fd, json.dumps(info).encode(), 0)

    def _add_host(self, i: int) -> TestHost:
        name = f"h{i}"
        ns, veth, address = self.network.add_host(i, name)
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
            preexec_fn=die_with_parent,
        )
        self._procs.append(proc)
        return proc

    def _start_server(self, host: TestHost) -> None:
        host.server_pid = self._spawn(host, "fio", fio_server_argv(host)).pid

    def _start_exporter(self, host: TestHost) -> None:
        host.exporter_pid = self._spawn(host, "node-exporter", exporter_argv(host)).pid

    @property
    def ssh_dir(self) -> Path:
        """Keys, known_hosts, sshd configs and pid files of the fleet (ssh=True)."""
        return self.data_dir / "ssh"

    def make_key(self, name: str) -> Path:
        """A new ed25519 key pair in ssh_dir (no passphrase); the private key's path."""
        return make_key(self.ssh_dir / name, f"{PREFIX}{self.token}")

    def _start_sshd(self, host: TestHost) -> None:
        host.sshd_pid = self._spawn(host, "sshd", sshd_argv(host, self.ssh_dir)).pid

    def _check_alive(self) -> None:
        """Raise FleetError if a service of a host has exited while starting."""
        for h in self.hosts:
            for pid, what in ((h.server_pid, "fio"), (h.exporter_pid, "node-exporter"), (h.sshd_pid, "sshd")):
                proc = next((p for p in self._procs if p.pid == pid), None)
                if proc is not None and proc.poll() is not None:
                    log = (self.data_dir / "logs" / f"{h.name}-{what}.log").read_text(errors="replace")
                    raise FleetError(f"{h.name}: {what} exited with {proc.returncode}: {log.strip()[-500:]}")

    # ---- tear-down

    def close(self) -> None:
        """Remove everything this fleet created; raise FleetError if
        something could not be removed (after trying everything)."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        for proc in self._procs:
            kill_group(proc.pid)
        if self.network is not None:
            problems += self.network.kill_processes()
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                problems.append(f"process {proc.pid} ({proc.args}) does not exit")
        for log in self._logs:
            log.close()
        if self.network is not None:
            problems += self.network.remove()
        if self.data_dir is not None and self.data_dir.exists():
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.ssh:  # what a test's deploy left when it failed before undeploy
            for d in self.deploy_dirs():
                shutil.rmtree(d, ignore_errors=True)
            with contextlib.suppress(OSError):
                DEPLOY_ROOT.rmdir()  # only when empty: other fleets may have hosts deployed
            for d in fault_dirs(self.hosts):  # (the faults themselves went with the namespaces, or the test undid them)
                shutil.rmtree(d, ignore_errors=True)
        problems += self.leftovers()
        if self._state_fd is not None:
            if not problems:  # else leave it, unlocked, for cleanup_stale
                (STATE_DIR / f"{self.token}.lock").unlink(missing_ok=True)
            os.close(self._state_fd)
            self._state_fd = None
        if self.network is not None:
            self.network.release_slot()
        if problems:
            raise FleetError("test fleet teardown incomplete: " + "; ".join(problems))
