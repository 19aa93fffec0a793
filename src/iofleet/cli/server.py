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

import os
import re
import sys
from typing import Callable, NoReturn

from ..errors import FioError, IofleetError
from ..fio.command import fio_binary, fio_version, server_clock
from ..fleet.inventory import ADDRESS_EXAMPLES, DEFAULT_FIO_PORT, parse_address

DEFAULT_BIND = f"0.0.0.0:{DEFAULT_FIO_PORT}"

class BindError(IofleetError):
    """`iofleet server --bind` got something that is not ADDRESS[:PORT]."""


def parse_bind(bind: str) -> tuple[str, str, int]:
    """'10.0.0.11:8766' → ('ip', '10.0.0.11', 8766); '[fd00::1]' → ('ip6',
    'fd00::1', 8765); 'storage01' → ('ip', 'storage01', 8765): the same
    ADDRESS[:PORT] an inventory takes. Anything else raises BindError."""
    if isinstance(bind, str) and re.match(r"^(ip6?|sock):", bind.strip()):
        raise BindError(f"--bind {bind!r}: give the address without fio's ip:/ip6:/sock: prefix, "
                        f"{ADDRESS_EXAMPLES}")
    try:
        host, port = parse_address(bind)
    except ValueError as exc:
        raise BindError(f"--bind {bind!r}: {exc}") from None
    return ("ip6" if ":" in host else "ip"), host, port


def fio_server_command(bind: str) -> list[str]:
    """The fio command line `iofleet server --bind BIND` runs."""
    kind, host, port = parse_bind(bind)
    return [fio_binary(), f"--server={kind}:{host},{port}", *server_clock()]


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
