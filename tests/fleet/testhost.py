"""One test host of a test fleet: what it is (TestHost), the command lines
of the services it runs (`fio --server`, prometheus-node-exporter), how to
reach them from the root namespace, and the wait until they all answer."""

from __future__ import annotations

import functools
import http.client
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from iofleet.fio.command import server_clock

from .network import FleetError

FIO_PORT = 8765
METRICS_PORT = 9100
NODE_EXPORTER = "prometheus-node-exporter"


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


@functools.cache
def _server_clock() -> tuple[str, ...]:
    return tuple(server_clock())


def fio_server_argv(host: TestHost) -> list[str]:
    # as `iofleet server` and deploy start it: with fio's own clock named
    return ["fio", f"--server=ip:{host.address},{host.port}", *_server_clock()]


def exporter_argv(host: TestHost) -> list[str]:
    return [NODE_EXPORTER, f"--web.listen-address={host.address}:{METRICS_PORT}"]


def accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def http_ok(url: str) -> bool:
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


def wait_ready(hosts: list[TestHost], fio: bool, ssh_port: int | None, timeout: float,
               check_alive: Callable[[], None]) -> None:
    """Wait until every host's fio server (fio=True), node_exporter (hosts
    with metrics) and sshd (on ssh_port, unless None) accept connections;
    `check_alive()` raises FleetError when one of them has exited."""
    by_name = {h.name: h for h in hosts}
    deadline = time.monotonic() + timeout
    pending_fio = {h.name for h in hosts} if fio else set()
    pending_metrics = {h.name for h in hosts if h.metrics}
    pending_ssh = {h.name for h in hosts} if ssh_port is not None else set()
    while pending_fio or pending_metrics or pending_ssh:
        check_alive()
        for name in sorted(pending_fio):
            h = by_name[name]
            if accepts(h.address, h.port):
                pending_fio.discard(name)
        for name in sorted(pending_metrics):
            if http_ok(by_name[name].metrics):
                pending_metrics.discard(name)
        for name in sorted(pending_ssh):
            if accepts(by_name[name].address, ssh_port):
                pending_ssh.discard(name)
        if not (pending_fio or pending_metrics or pending_ssh):
            break
        if time.monotonic() > deadline:
            raise FleetError(
                f"test hosts not ready after {timeout:.0f} s: "
                f"fio --server not accepting on {sorted(pending_fio) or 'none'}, "
                f"node_exporter not answering on {sorted(pending_metrics) or 'none'}, "
                f"sshd not accepting on {sorted(pending_ssh) or 'none'}")
        time.sleep(0.05)
