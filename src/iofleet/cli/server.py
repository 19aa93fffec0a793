"""`iofleet server`: run fio's own server on a host of the fleet.

iofleet drives a fleet through fio's client/server mode: each host runs
`fio --server`, and the machine running iofleet connects to all of them as
`fio --client`. This command checks the bind address and fio, says what it
does, and then *becomes* `fio --server=ip:ADDR,PORT` (exec), so a service
manager (see deploy/iofleet-fio-server.service) supervises fio itself.

fio's server protocol has no authentication: whoever reaches the port can
run jobs (and so write files) as the server's user. Bind it to the storage
network's interface, never to a public one.
"""

import ipaddress
import os
import re
import sys
from typing import Callable, NoReturn

from ..errors import FioError, IofleetError
from ..fio.command import fio_binary, fio_version

DEFAULT_PORT = 8765
DEFAULT_BIND = f"0.0.0.0:{DEFAULT_PORT}"

# RFC 1123 host name: dot-separated labels of letters, digits and inner '-'
_HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")

_EXAMPLES = "e.g. 10.0.0.11, 10.0.0.11:8765, [2001:db8::11]:8765 or storage01:8765"


class BindError(IofleetError):
    """`iofleet server --bind` got something that is not ADDRESS[:PORT]."""


def parse_bind(bind: str) -> tuple[str, str, int]:
    """'10.0.0.11:8766' → ('ip', '10.0.0.11', 8766); '[fd00::1]' → ('ip6',
    'fd00::1', 8765); 'storage01' → ('ip', 'storage01', 8765). An IPv6
    address with a port is written in brackets; a bare IPv6 address takes
    the default port. Anything else raises BindError."""
    if not isinstance(bind, str) or not bind.strip():
        raise BindError(f"--bind needs an address to listen on, {_EXAMPLES}")
    text = bind.strip()
    port = DEFAULT_PORT
    if re.match(r"^(ip6?|sock):", text):
        raise BindError(f"--bind {bind!r}: give the address without fio's ip:/ip6:/sock: prefix, {_EXAMPLES}")
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise BindError(f"--bind {bind!r}: write an IPv6 address as [ADDRESS] or [ADDRESS]:PORT")
        if rest:
            port = _port(rest[1:], bind)
        if _ip_version(host) != 6:
            raise BindError(f"--bind {bind!r}: only an IPv6 address goes in brackets, {_EXAMPLES}")
        return "ip6", host, port
    if text.count(":") > 1:  # a bare IPv6 address, default port
        if _ip_version(text) != 6:
            raise BindError(f"--bind {bind!r} is not an IPv6 address; with a port, write [ADDRESS]:PORT")
        return "ip6", text, port
    host, colon, port_text = text.partition(":")
    if colon:
        port = _port(port_text, bind)
    version = _ip_version(host)
    if version == 6:  # unreachable: an IPv6 address has more than one ':'
        return "ip6", host, port
    if version is None and (not _HOSTNAME_RE.match(host) or host.replace(".", "").isdigit()):
        raise BindError(f"--bind {bind!r}: {host!r} is not an IP address or host name, {_EXAMPLES}")
    return "ip", host, port


def _ip_version(text: str) -> int | None:
    try:
        return ipaddress.ip_address(text).version
    except ValueError:
        return None


def _port(text: str, bind: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise BindError(f"--bind {bind!r}: the port must be a number from 1 to 65535")
    return int(text)


def fio_server_command(bind: str) -> list[str]:
    """The fio command line `iofleet server --bind BIND` runs."""
    kind, host, port = parse_bind(bind)
    return [fio_binary(), f"--server={kind}:{host},{port}"]


def serve_fio(bind: str = DEFAULT_BIND, echo: Callable[[str], None] = print) -> NoReturn:
    """Check `bind` and fio, say what happens, then replace this process with
    `fio --server=ip:ADDR,PORT` (ip6: for IPv6). Returns only by raising an
    IofleetError (bad address, fio missing or too old, exec failing)."""
    kind, host, port = parse_bind(bind)
    version = fio_version()
    cmd = fio_server_command(bind)
    shown = f"[{host}]:{port}" if kind == "ip6" else f"{host}:{port}"
    echo(f"iofleet server: {version} serving fio jobs on {shown}: exec {' '.join(cmd)}")
    if host in ("0.0.0.0", "::"):
        echo("iofleet server: listening on every interface; fio's server protocol has no "
             "authentication, so prefer --bind with the storage network's address")
        echo(f"iofleet server: clients connect to this host's storage address, port {port}; stop with Ctrl-C")
    else:
        echo(f"iofleet server: clients connect with --client={kind}:{host},{port} "
             f"(inventory `address: {shown}`); stop with Ctrl-C")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        raise FioError(f"cannot start {cmd[0]} ({exc.strerror}); check the fio installation") from None
    raise AssertionError("unreachable")  # pragma: no cover - execvp does not return
