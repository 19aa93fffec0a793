"""What a test does to the hosts of a running test fleet, and how it looks at
their fio: kill a host, cut its link, freeze its fio, start its server again;
the fio processes left on it.

TestFleet's own methods, kept here to keep the fleet's set-up and tear-down
apart from them: they use its `hosts`, `host()`, the processes it started
(`_procs`) and `_start_server()`."""

from __future__ import annotations

import signal
import subprocess
import time

from .network import FleetError, ip, kill_namespace, netns_pids
from .processes import comm, is_running, kill, kill_group, parent_pid
from .testhost import accepts


class HostControl:
    """TestFleet's methods that disturb a running host or look at its fio."""

    def kill_server(self, name: str, unreachable: bool = False) -> None:
        """Simulate a dead host: kill -9 everything in its namespace (fio
        server, its jobs, node_exporter). Connections are then refused at
        once. With unreachable=True the host's link also goes down, so
        packets to it vanish (a powered-off host): then `fio --client` hangs
        in connect() for the kernel's SYN timeout (about 2 min with
        tcp_syn_retries=6) before it runs the other hosts, so keep that
        for tests that probe reachability with their own timeout."""
        host = self.host(name)
        mine = [p for p in self._procs if p.args[3] == host.namespace]  # ["ip", "netns", "exec", NS, ...]
        for proc in mine:
            kill_group(proc.pid)
        stuck = kill_namespace(host.namespace)
        for proc in mine:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                stuck.append(proc.pid)
        if stuck:
            raise FleetError(f"{name}: processes {stuck} survive kill -9")
        if unreachable:
            ip("link", "set", host.veth, "down")
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
        ip("link", "set", self.host(name).veth, "down")

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
            fios = [p for p in fios if p != host.server_pid and parent_pid(p) != host.server_pid]
        for pid in fios:
            kill(pid, signal.SIGSTOP)
        return fios

    def thaw(self, pids: list[int]) -> None:
        """kill -CONT what `freeze` stopped."""
        for pid in pids:
            kill(pid, signal.SIGCONT)

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
