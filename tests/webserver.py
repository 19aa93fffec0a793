"""A real `iofleet serve` in a subprocess on a free loopback port, and an
HTTP client for its API that sends the CSRF header (or the token) as a
script would."""

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    data_dir: Path
    proc: subprocess.Popen
    token: str | None = None

    def client(self, token: str | None = None, csrf: bool = True) -> httpx.Client:
        """An API client: with the server's token as Bearer if it has one, else
        the CSRF cookie and header from GET /api/session."""
        token = token if token is not None else self.token
        client = httpx.Client(base_url=self.url, timeout=60)
        if token:
            client.headers["Authorization"] = f"Bearer {token}"
        elif csrf:
            client.headers["X-CSRF-Token"] = client.get("/api/session").json()["csrf_token"]
        return client

    def wait_run(self, client: httpx.Client, timeout: float = 120) -> dict:
        """Poll GET /api/runs/current until the run has ended; its status."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            status = client.get("/api/runs/current").json()
            if status.get("state") in ("ended", "idle"):
                return status
            time.sleep(0.5)
        raise AssertionError(f"the run did not end within {timeout} s: {status}")

    def stop(self) -> str:
        """Stop the server; what it printed on stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stderr.read() if self.proc.stderr else ""


def start_server(data_dir: Path, *args: str, token: str | None = None, bind_host: str = "127.0.0.1") -> Server:
    """`iofleet serve --data-dir DATA_DIR --bind HOST:PORT [args]`, once it answers."""
    port = free_port()
    cmd = [sys.executable, "-m", "iofleet", "serve", "--data-dir", str(data_dir), "--bind", f"{bind_host}:{port}",
           *args] + (["--token", token] if token else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    url = f"http://{bind_host}:{port}"
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"iofleet serve exited {proc.returncode}: {proc.stderr.read()}")
        try:
            httpx.get(url + "/api/openapi.json", timeout=2)
            return Server(url, data_dir, proc, token)
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("iofleet serve did not answer within 30 s")


def save_plan(client: httpx.Client, text: str) -> dict:
    r = client.post("/api/plans", json={"yaml": text})
    assert r.status_code == 200, r.text
    return r.json()
