"""Where `iofleet serve` listens: the --bind address, loopback unless a
token guards it (web/security.py says why). Apart from the middleware so
that the CLI reads its default without importing starlette."""

import ipaddress

from ..errors import IofleetError
from ..fleet.inventory import parse_address

DEFAULT_WEB_BIND = "127.0.0.1:8080"


def parse_web_bind(bind: str, token: str | None) -> tuple[str, int]:
    """'127.0.0.1:8080' → ('127.0.0.1', 8080). A bind that is not loopback
    needs a token; IofleetError otherwise."""
    try:
        host, port = parse_address(bind)
    except ValueError as exc:
        raise IofleetError(f"--bind {bind!r}: {exc}") from None
    text = bind.strip()
    if not (text.count(":") == 1 or "]:" in text):  # no port given: the web UI's, not fio's
        port = 8080
    if not is_loopback(host) and not token:
        raise IofleetError(f"--bind {bind}: listening beyond this machine needs --token TOKEN "
                           f"(anyone reaching the port could run fio); or bind to {DEFAULT_WEB_BIND}")
    if token is not None and len(token) < 16:
        raise IofleetError("--token: use at least 16 characters, e.g. $(openssl rand -hex 16)")
    return host, port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
