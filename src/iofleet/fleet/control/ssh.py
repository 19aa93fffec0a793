"""The SSH control channel: one shell command on many hosts at once.

fio's client/server carries the load and the results; this channel does
what fio cannot (deploy and stop fio servers, drop kernel caches, read host
facts). It uses asyncssh: every host's connection runs concurrently (up to
MAX_CONNECTIONS at a time) in one event loop, and host keys are checked
against known_hosts (the user's ~/.ssh/known_hosts, or the inventory's
`ssh.known_hosts`). A host key that known_hosts does not list is refused
unless the inventory says `trust_unknown_host_keys: true`; a key that
differs from the listed one is always refused.

    replies = run_on_all(hosts, "uname -r")
    for name, reply in replies.items():
        reply.ok, reply.stdout, reply.error
"""

from __future__ import annotations

import concurrent.futures
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable

from ..inventory import Host, SshConfig

if TYPE_CHECKING:  # imported where used: a fleet without `ssh:` never loads them (~0.1 s)
    import asyncio

    import asyncssh

# Connections opened at once: enough for 64 hosts in one wave; a bound so a
# large inventory does not open thousands of sockets and handshakes at once.
MAX_CONNECTIONS = 64
CONNECT_TIMEOUT_S = 10.0


@dataclass
class Reply:
    host: str                 # inventory name
    exit_status: int | None   # None: not connected, or timed out
    stdout: str
    stderr: str
    error: str | None = None  # one line naming the host and the fix when it could not run the command
    note: str | None = None   # e.g. the host key was trusted because of trust_unknown_host_keys

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_status == 0


def run_on_all(hosts: list[Host], command: str | Callable[[Host], str], timeout_s: float = 30.0,
               as_root: bool = False,
               on_reply: Callable[[Host, Reply], Awaitable[None]] | None = None) -> dict[str, Reply]:
    """Run one shell command on every host that has `ssh` set, all at once (asyncssh, host keys
    checked); hosts without ssh are left out of the result. `as_root`: prefixed with `sudo -n` when
    the ssh user is not root. Callable from synchronous code (runs its own event loop).
    `on_reply`: a coroutine function awaited with each host's reply as soon as it comes (per-host
    progress, a follow-up check), concurrently with the other hosts."""
    targets = [h for h in hosts if h.ssh is not None]
    if not targets:
        return {}
    import asyncio

    commands = {h.name: command(h) if callable(command) else command for h in targets}
    work = _run_all(targets, commands, timeout_s, as_root, on_reply)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    # Called from inside an event loop (e.g. the web front door): run ours in a thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


async def _run_all(hosts: list[Host], commands: dict[str, str], timeout_s: float,
                   as_root: bool, on_reply) -> dict[str, Reply]:
    import asyncio

    limit = asyncio.Semaphore(MAX_CONNECTIONS)
    known = _KnownHosts()

    async def one(host: Host) -> Reply:
        reply = await _run_one(host, commands[host.name], timeout_s, as_root, limit, known)
        if on_reply is not None:
            await on_reply(host, reply)
        return reply

    replies = await asyncio.gather(*(one(h) for h in hosts))
    return {r.host: r for r in replies}


def _as_root(command: str, cfg: SshConfig) -> str:
    if cfg.user == "root":
        return command
    return f"sudo -n sh -c {shlex.quote(command)}"


async def _run_one(host: Host, command: str, timeout_s: float, as_root: bool,
                   limit: asyncio.Semaphore, known: "_KnownHosts") -> Reply:
    import asyncio

    import asyncssh

    cfg = host.ssh
    address = host.endpoint[0]
    if as_root:
        command = _as_root(command, cfg)
    async with limit:
        try:
            known_hosts, key_state = known.for_host(cfg, address)
        except (OSError, ValueError, asyncssh.Error) as exc:
            return _failed(host, f"{host.name}: cannot read known_hosts {_known_hosts_path(cfg)} ({_why(exc)}); "
                                 f"fix the file or `ssh.known_hosts` in the inventory")
        if cfg.key is not None and not os.access(cfg.key, os.R_OK):
            return _failed(host, f"{host.name}: cannot read the SSH key {cfg.key}; fix `ssh.key` in the inventory")
        options = dict(port=cfg.port, username=cfg.user, known_hosts=known_hosts,
                       connect_timeout=min(CONNECT_TIMEOUT_S, timeout_s))
        if cfg.key is not None:
            options.update(client_keys=[str(cfg.key)], agent_path=None)
        try:
            async with asyncssh.connect(address, **options) as conn:
                result = await conn.run(command, check=False, timeout=timeout_s)
        except asyncssh.ProcessError as exc:  # TimeoutError of conn.run is one
            return Reply(host.name, None, _text(exc.stdout), _text(exc.stderr),
                         f"{host.name}: the command did not finish within {timeout_s:g} s over SSH; "
                         f"check the host's load or raise the timeout")
        except (OSError, asyncssh.Error, asyncssh.KeyImportError, asyncio.TimeoutError) as exc:
            return _failed(host, _connect_error(host, exc, key_state))
    note = (f"{host.name}: host key of {address} is not in {_known_hosts_path(cfg)}; trusted because "
            f"the inventory sets trust_unknown_host_keys: true" if key_state == "trusted" else None)
    reply = Reply(host.name, result.exit_status, _text(result.stdout), _text(result.stderr), note=note)
    if as_root and cfg.user != "root" and result.exit_status != 0 and "sudo:" in reply.stderr \
            and "password" in reply.stderr:
        reply.error = (f"{host.name}: sudo asks {cfg.user} for a password; allow {cfg.user} "
                       f"passwordless sudo on the host or set `ssh.user: root`")
    return reply


def _failed(host: Host, error: str) -> Reply:
    return Reply(host.name, None, "", "", error)


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _why(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


def _known_hosts_path(cfg: SshConfig) -> Path:
    return cfg.known_hosts or Path("~/.ssh/known_hosts").expanduser()


def _connect_error(host: Host, exc: BaseException, key_state: str) -> str:
    """One line naming the host and the fix, for a failed connect or login."""
    import asyncio

    import asyncssh

    cfg, address = host.ssh, host.endpoint[0]
    where = f"{cfg.user}@{address}:{cfg.port}"
    kh = _known_hosts_path(cfg)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        if key_state == "listed":  # known_hosts lists the host with another key
            return (f"{host.name}: the host key of {address} is not the one {kh} lists (changed or "
                    f"another machine); if the host was reinstalled, check its key and replace its "
                    f"line in {kh} (ssh-keygen -R {address} -f {kh})")
        return (f"{host.name}: the host key of {address} is not in {kh}; check the key and add it "
                f"(ssh-keyscan -p {cfg.port} {address} >> {kh}), or set `ssh.trust_unknown_host_keys: true`")
    if isinstance(exc, asyncssh.PermissionDenied):
        key = cfg.key or "your SSH keys/agent"
        return (f"{host.name}: SSH login as {where} refused with {key}; add its public key to "
                f"{cfg.user}'s ~/.ssh/authorized_keys on the host, or fix `ssh.user`/`ssh.key`")
    if isinstance(exc, asyncssh.KeyImportError):
        return (f"{host.name}: cannot use the SSH key {cfg.key} ({_why(exc)}); fix `ssh.key` "
                f"(an unencrypted private key, or leave it out and use an agent)")
    if isinstance(exc, ConnectionRefusedError):
        return (f"{host.name}: nothing answers SSH on {address}:{cfg.port} (connection refused); "
                f"start sshd there or fix `ssh.port`")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return (f"{host.name}: no SSH answer from {address}:{cfg.port} in time; "
                f"check the address, the network and firewalls")
    if isinstance(exc, OSError):
        return (f"{host.name}: cannot connect to {address}:{cfg.port} over SSH ({_why(exc)}); "
                f"check the address and the network")
    return f"{host.name}: SSH to {where} failed ({_why(exc)}); check `ssh:` in the inventory and the host's sshd"


class _KnownHosts:
    """known_hosts files read once per call, shared by every host's connection."""

    def __init__(self):
        self._files: dict[Path, asyncssh.SSHKnownHosts] = {}

    def for_host(self, cfg: SshConfig, address: str):
        """(known_hosts for asyncssh, key state): "listed" (its key is checked),
        "unknown" (not listed: the connection will be refused) or "trusted" (not
        listed and the inventory trusts unknown keys: asyncssh checks nothing)."""
        import asyncssh

        path = _known_hosts_path(cfg)
        if path not in self._files:
            self._files[path] = (asyncssh.read_known_hosts(str(path)) if path.exists() or cfg.known_hosts
                                 else asyncssh.import_known_hosts(""))
        known = self._files[path]
        listed = any(known.match(address, address, cfg.port)[:2])
        if listed:
            return known, "listed"
        return (None, "trusted") if cfg.trust_unknown_host_keys else (known, "unknown")
