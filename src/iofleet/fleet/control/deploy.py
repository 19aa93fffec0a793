"""`iofleet hosts deploy|undeploy`: start and stop each host's fio server over SSH.

Deploy, on every host with `ssh:` at once, runs one small POSIX shell script
that finds fio (installing it with apt-get/dnf/zypper only when allowed),
checks its version against the controller's (the rule of `hosts check`),
and starts `fio --server` bound to the inventory address with fio's own
`--daemonize=PIDFILE`, so the server outlives the SSH session, and with
fio's own clock choice named (fio.command.server_clock) (and, when
asked, node_exporter on ADDRESS:9100). Then the controller checks that the
server answers on ADDRESS:PORT.

Everything deploy leaves on a host is in one directory per endpoint,
/var/tmp/iofleet/ADDR-PORT (hosts sharing one machine, such as the test
fleet's namespaces, stay apart). Undeploy stops a process only when the pid
in its pid file still runs that exact command line (a reused pid is never
killed), then removes the directory. Both are idempotent.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from ...fio.command import CLOCK_NAMES, CLOCK_PROBE
from ..inventory import Host
from .ssh import Reply, run_on_all

STATE_ROOT = "/var/tmp/iofleet"
METRICS_PORT = 9100
ANSWER_TIMEOUT_S = 5.0   # a server just started takes a moment to listen
SCRIPT_TIMEOUT_S = 60.0
INSTALL_TIMEOUT_S = 600.0  # a package install may refresh the package lists first

# Shell helpers shared by both scripts. `ours FILE ARG`: the pid in FILE
# runs a command with exactly the argument ARG (sets $pid). `in_use PORT`:
# something listens on TCP PORT in the host's network namespace.
_HELPERS = r"""
ours() {
  pid=$(cat "$1" 2>/dev/null) || return 1
  case "$pid" in ''|*[!0-9]*) return 1;; esac
  tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$2"
}
in_use() {
  hex=$(printf '%04X' "$1")
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
    awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}
"""

# fio, and the network check's iperf3 and ping (`hosts network`): installed
# together where missing, with --install; a missing network tool is a note.
_FIND_FIO = r"""
fio=$(command -v fio || true)
pm=$(for p in apt-get dnf zypper; do command -v $p >/dev/null 2>&1 && echo $p && break; done)
echo "pm=$pm"
ping_pkg=iputils; [ "$pm" = apt-get ] && ping_pkg=iputils-ping
need=""
[ -n "$fio" ] || need=fio
command -v iperf3 >/dev/null 2>&1 || need="$need iperf3"
command -v ping >/dev/null 2>&1 || need="$need $ping_pkg"
if [ -n "$need" ] && [ "$install" = 1 ] && [ -n "$pm" ]; then
  case $pm in
    apt-get) out=$( (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need) 2>&1);;
    dnf) out=$(dnf install -y -q $need 2>&1);;
    zypper) out=$(zypper --non-interactive --quiet install $need 2>&1);;
  esac && echo "installed=$pm" && echo "installed_pkgs=$need" ||
    echo "install_failed=$(printf '%s\n' "$out" | tail -n 1)"
  fio=$(command -v fio || true)
fi
missing=""
for t in iperf3 ping; do command -v $t >/dev/null 2>&1 || missing="$missing $t"; done
[ -z "$missing" ] || echo "net_missing=${missing# }"
[ -n "$fio" ] || { echo "fio=missing"; exit 0; }
version=$("$fio" --version)
echo "fio=$fio"
echo "version=$version"
[ "$version" = "$want" ] || exit 0
"""

_START_FIO = r"""
if ours "$dir/fio.pid" "--server=$server"; then
  echo "fio_state=running"; echo "fio_pid=$pid"
elif in_use "$port"; then
  echo "fio_state=port-busy"
else
  mkdir -p "$dir" || mkdir -p "$dir"  # again if an undeploy removed the empty parent meanwhile
  rm -f "$dir/fio.pid"
  @CLOCK@
  "$fio" "--server=$server" $clock "--daemonize=$dir/fio.pid" < /dev/null > "$dir/fio.log" 2>&1
  i=0
  while ! ours "$dir/fio.pid" "--server=$server" && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
  if ours "$dir/fio.pid" "--server=$server"; then
    echo "fio_state=started"; echo "fio_pid=$pid"
  else
    echo "fio_state=failed"; echo "log=$(tail -n 1 "$dir/fio.log" 2>/dev/null)"
  fi
fi
"""
# fio's own clock choice, named so that the server sets it up once (fio.command.server_clock).
_START_FIO = _START_FIO.replace("@CLOCK@\n", (
    f'clock=$("$fio" {" ".join(CLOCK_PROBE)} 2>/dev/null | '
    "sed -n 's/.*gettime: clocksource=\\([0-9]\\).*/\\1/p' | head -n 1)\n"
    '  case "$clock" in ' + " ".join(f"{n}) clock=--clocksource={name};;" for n, name in CLOCK_NAMES.items())
    + " *) clock=;; esac\n"))

_START_EXPORTER = r"""
[ "$metrics" = 1 ] || exit 0
ne=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -z "$ne" ]; then
  echo "ne_state=missing"
elif ours "$dir/node_exporter.pid" "--web.listen-address=$listen"; then
  echo "ne_state=running"; echo "ne_pid=$pid"
elif in_use "$metrics_port"; then
  echo "ne_state=port-busy"
else
  mkdir -p "$dir"
  setsid "$ne" "--web.listen-address=$listen" < /dev/null > "$dir/node_exporter.log" 2>&1 &
  echo $! > "$dir/node_exporter.pid"
  echo "ne_state=started"; echo "ne_pid=$!"
fi
"""

_STOP = r"""
[ -d "$dir" ] || { echo "state=nothing"; exit 0; }
stop() {
  if ours "$dir/$1.pid" "$2"; then
    # its process group (a session of its own: fio --daemonize, setsid): fio's
    # per-client and job processes go with the server. `kill -s SIG -- -PGID`:
    # dash refuses `kill -SIG -- -PGID` ("Illegal number").
    kill -s TERM -- "-$pid" 2>/dev/null || kill -s TERM "$pid"
    i=0
    # until the whole group is gone, not just the server: "stopped" means no process left
    while { kill -s 0 -- "-$pid" 2>/dev/null || ours "$dir/$1.pid" "$2"; } && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    if [ $i -ge 50 ]; then  # what SIGTERM did not end in 5 s
      kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "$pid" 2>/dev/null
      i=0
      while kill -s 0 -- "-$pid" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    echo "stopped_$1=$pid"
  elif [ -f "$dir/$1.pid" ]; then
    echo "gone_$1=$(cat "$dir/$1.pid")"
  fi
}
stop fio "--server=$server"
stop node_exporter "--web.listen-address=$listen"
rm -rf "$dir" && echo "removed=$dir"
rmdir "$root" 2>/dev/null || true
"""


@dataclass
class HostOutcome:
    host: str
    ok: bool
    line: str  # what happened, or (when not ok) what failed and the fix


def state_dir(host: Host) -> str:
    """The host's iofleet directory: one per endpoint, as namespace hosts share a filesystem."""
    address, port = host.endpoint
    return f"{STATE_ROOT}/{re.sub(r'[^A-Za-z0-9.-]', '-', address)}-{port}"


def _listen(host: Host, port: int) -> str:
    address = host.endpoint[0]
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _variables(host: Host, **extra) -> str:
    """Shell assignments, every value quoted: the only way inventory text reaches the script."""
    values = {"dir": state_dir(host), "root": STATE_ROOT, "server": host.fio_client_arg,
              "port": host.endpoint[1], "listen": _listen(host, METRICS_PORT),
              "metrics_port": METRICS_PORT, **extra}
    return "".join(f"{k}={shlex.quote(str(v))}\n" for k, v in values.items())


def deploy_command(host: Host, want_version: str, install: bool, metrics: bool) -> str:
    """The one command deploy runs on `host` (sh -c, whatever the login shell)."""
    script = (_variables(host, want=want_version, install=int(install), metrics=int(metrics))
              + _HELPERS + _FIND_FIO + _START_FIO + _START_EXPORTER)
    return f"sh -c {shlex.quote(script)}"


def undeploy_command(host: Host) -> str:
    return f"sh -c {shlex.quote(_variables(host) + _HELPERS + _STOP)}"


def _fields(reply: Reply) -> dict[str, str]:
    return dict(line.split("=", 1) for line in reply.stdout.splitlines() if "=" in line)


def _script_failed(host: Host, reply: Reply) -> str | None:
    if reply.error:
        return reply.error
    said = (reply.stderr.strip().splitlines() or [None])[-1]
    if reply.exit_status is None:  # the session closed under the script: its own exit never came
        return (f"{host.name}: the SSH session ended before the deploy script did (no exit status"
                f"{f'; it said: {said}' if said else ', nothing said'}): the SSH server or the host went away; "
                f"run `iofleet hosts deploy` again, and `iofleet hosts check` if it repeats")
    if reply.exit_status != 0:
        return (f"{host.name}: the deploy script failed (exit {reply.exit_status}: {said or 'nothing said'}); "
                f"check that the SSH user may write {STATE_ROOT} and run fio")
    return None


async def _answers(address: str, port: int, timeout_s: float = ANSWER_TIMEOUT_S) -> bool:
    """A TCP connection opens from the controller (short retries: a fresh server may not listen yet)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(address, port), 1.0)
            writer.close()
            return True
        except (OSError, asyncio.TimeoutError):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.1)


def _fio_problem(host: Host, f: dict[str, str], want: str, install: bool) -> str | None:
    """Why fio cannot be started on the host, as one line with the fix; None when it can."""
    if "install_failed" in f and f.get("fio") == "missing":
        return (f"{host.name}: installing fio with {f.get('pm')} failed ({f['install_failed']}); "
                f"install fio ({want}) on the host by hand")
    if f.get("fio") == "missing":
        if install and not f.get("pm"):
            return (f"{host.name}: fio is not installed and no apt-get, dnf or zypper was found; "
                    f"install fio ({want}) by hand")
        how = f"with `{f['pm']} install fio`" if f.get("pm") else "from the distribution"
        return (f"{host.name}: fio is not installed; deploy again with --install to install it {how}, "
                f"or install fio ({want}) by hand")
    if f.get("version") != want:
        return (f"{host.name}: runs {f.get('version') or 'an unknown fio'} but this controller runs {want}; "
                f"install the same fio version on every host")
    return None


async def _deploy_outcome(host: Host, reply: Reply, want: str, install: bool, metrics: bool) -> HostOutcome:
    fail = _script_failed(host, reply)
    f = _fields(reply)
    fail = fail or _fio_problem(host, f, want, install)
    if fail:
        return HostOutcome(host.name, False, fail)
    address, port = host.endpoint
    where = _listen(host, port)
    state = f.get("fio_state")
    if state == "failed":
        return HostOutcome(host.name, False, f"{host.name}: fio --server did not start on {where} "
                           f"({f.get('log') or 'no message'}); check the address is this host's")
    if not await _answers(address, port):
        return HostOutcome(host.name, False, f"{host.name}: fio --server runs but nothing answers on {where} "
                           f"from here; open TCP port {port} in the host's firewall")
    installed = f" ({f['installed_pkgs'].strip()}) installed with {f['installed']}" if "installed" in f else ""
    parts = [f"{host.name}: {want}{installed}"]
    parts.append({"started": f"fio --server started on {where} (pid {f.get('fio_pid')})",
                  "running": f"fio --server already running on {where} (pid {f.get('fio_pid')})",
                  "port-busy": f"something deploy did not start already listens on {where}; left alone "
                               f"(`iofleet hosts check` tells whether it is a fio server)"}.get(state, "?"))
    ok = True
    if metrics:
        line, ok = await _exporter_outcome(host, f)
        parts.append(line)
    if "net_missing" in f:  # not a failure: fio runs; the network check cannot
        tried = f" (installing them failed: {f['install_failed']})" if "install_failed" in f else (
            "" if install else "; deploy with --install to install them")
        parts.append(f"no {' or '.join(f['net_missing'].split())} for the network check (`iofleet hosts "
                     f"network`){tried}")
    if reply.note:
        parts.append(reply.note.split(": ", 1)[1])
    return HostOutcome(host.name, ok, "; ".join(parts))


async def _exporter_outcome(host: Host, f: dict[str, str]) -> tuple[str, bool]:
    url = f"http://{_listen(host, METRICS_PORT)}/metrics"
    state = f.get("ne_state")
    if state == "missing":
        return ("node_exporter is not installed; install prometheus-node-exporter (Debian, Ubuntu) or "
                "node_exporter there, or deploy without --metrics", False)
    if not await _answers(host.endpoint[0], METRICS_PORT):
        return f"node_exporter does not answer on {url}; open TCP port {METRICS_PORT} in the host's firewall", False
    said = {"started": f"node_exporter started (pid {f.get('ne_pid')})",
            "running": f"node_exporter already running (pid {f.get('ne_pid')})",
            "port-busy": "a node_exporter deploy did not start already listens"}.get(state, "?")
    hint = "" if host.metrics == url else f" (set `metrics: {url}` in the inventory)"
    return f"{said}: {url}{hint}", True


def _on_every_host(hosts: list[Host], command: Callable[[Host], str], timeout_s: float,
                   outcome: Callable[[Host, Reply], Awaitable[HostOutcome]],
                   progress: Callable[[HostOutcome], None] | None) -> list[HostOutcome]:
    """Run `command` as root on every host with `ssh:` at once; each host's
    `outcome` goes to `progress` as it comes (hosts without `ssh:` first)."""
    outcomes = [HostOutcome(h.name, True, f"{h.name}: no `ssh:` settings in the inventory; skipped "
                            f"(start `iofleet server` there by hand)") for h in hosts if h.ssh is None]
    for skipped in outcomes:
        if progress:
            progress(skipped)

    async def done(host: Host, reply: Reply) -> None:
        outcomes.append(await outcome(host, reply))
        if progress:
            progress(outcomes[-1])

    run_on_all(hosts, command, timeout_s=timeout_s, as_root=True, on_reply=done)
    order = {h.name: i for i, h in enumerate(hosts)}
    return sorted(outcomes, key=lambda o: order[o.host])


def deploy(hosts: list[Host], want_version: str, install: bool = False, metrics: bool = False,
           progress: Callable[[HostOutcome], None] | None = None) -> list[HostOutcome]:
    """Start a fio server (and node_exporter with `metrics`) on every host with `ssh:`,
    all at once; `progress` gets each host's outcome as it comes."""
    return _on_every_host(hosts, lambda h: deploy_command(h, want_version, install, metrics),
                          INSTALL_TIMEOUT_S if install else SCRIPT_TIMEOUT_S,
                          lambda h, r: _deploy_outcome(h, r, want_version, install, metrics), progress)


def undeploy(hosts: list[Host], progress: Callable[[HostOutcome], None] | None = None) -> list[HostOutcome]:
    """Stop what deploy started on every host with `ssh:` and remove its directory."""
    return _on_every_host(hosts, undeploy_command, SCRIPT_TIMEOUT_S, _undeploy_outcome, progress)


async def _undeploy_outcome(host: Host, reply: Reply) -> HostOutcome:
    fail = _script_failed(host, reply)
    if fail:
        return HostOutcome(host.name, False, fail)
    f = _fields(reply)
    if f.get("state") == "nothing":
        return HostOutcome(host.name, True, f"{host.name}: nothing deployed")
    parts = []
    for what, shown in (("fio", "fio --server"), ("node_exporter", "node_exporter")):
        if f"stopped_{what}" in f:
            parts.append(f"stopped {shown} (pid {f[f'stopped_{what}']})")
        elif f"gone_{what}" in f:
            parts.append(f"{shown} (pid {f[f'gone_{what}']}) had already exited")
    if "removed" not in f:
        return HostOutcome(host.name, False, f"{host.name}: could not remove {state_dir(host)}; "
                           f"remove it by hand")
    parts.append(f"removed {f['removed']}")
    return HostOutcome(host.name, True, f"{host.name}: " + ", ".join(parts))
