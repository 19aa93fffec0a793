"""Stands between iofleet's one fio client and every host's fio server.

One fio client for all hosts starts them within about a second of each
other: one process sends every server its job file, then RUN to all at
once. A client per host costs a fio process each (64 on a controller of 2
cores) and spreads the starts over seconds. But fio's client prints its
results only when its last server has ended: a frozen host would hold
them all, and killing the client would lose them all. So each host's
connection goes through a relay of iofleet's: ending it ends that host
alone (fio's client sees its server disconnect, leaves it out and prints
the others'), and the server stops its jobs, as when its client dies.

The relay also reads the headers of what each server sends (fio's network
protocol, server.h: a 24-byte little-endian header, then `pdu_len` bytes):
when the server ended (STOP carries its exit value, QUIT follows), its
messages (TEXT), which fio's client would prefix with the server's own
hostname only (the same on every host of some fleets), and, given
`LiveRounds`, its periodic status (TS: each job's figures, which fio's
client holds until the end), so each host's rounds are known live.
When a host's server fails, what the relay saw says what went wrong
(`Relay.fault`): fio's client only says it "disconnected".

fio's client names a server's logs and JSON entries by the address it
connected to, so each host gets an address of its own on loopback
(127.100.x.y): a host's files are told apart by name, as with a client
of its own.
"""

import contextlib
import errno
import re
import selectors
import socket
import struct
import threading
import time

from ...errors import FioError
from .live_rounds import LiveRounds

# fio's network protocol (server.h).
_HEADER = struct.Struct("<HHIQIHH")  # version, opcode, flags, tag, pdu_len, cmd_crc16, pdu_crc16
_CHECKED = 20  # FIO_NET_CMD_CRC_SZ: the header's bytes before its checksums, which cmd_crc16 covers
_QUIT, _TEXT, _TS, _STOP = 1, 5, 6, 12
_MORE = 1  # FIO_NET_CMD_F_MORE: the payload goes on in the next frame
_TEXT_HEAD = struct.Struct("<IIQQ")  # level, buf_len, log_sec, log_usec
_END = struct.Struct("<II")  # exit value, signal
_CHUNK = 65536
# How long the relay waits for every server to accept its connection.
CONNECT_TIMEOUT_S = 10.0


def loopback_address(i: int) -> str:
    """The relay's own address for the i-th host (127.0.0.0/8 is all loopback on Linux)."""
    return f"127.100.{i // 250}.{i % 250 + 1}"


# One of these addresses in a line of fio's client.
RELAY_ADDRESS = re.compile(r"(?<![0-9.])127\.100\.[0-9]+\.[0-9]+(?![0-9])")


class _Frames:
    """Reads fio's frames from a server's byte stream: keeps the payloads
    of STOP and TEXT, and with `status` TS (fragments joined), counts its
    way past the rest."""

    def __init__(self, status: bool = False):
        self.kept = (_STOP, _TEXT, _TS) if status else (_STOP, _TEXT)
        self.version = 0  # the server's protocol version (every frame's header)
        self.head = bytearray()  # a header split between two reads, so far
        self.in_frame = False  # a header was read: its payload is coming
        self.left = 0  # payload bytes of the current frame still to come
        self.opcode = self.flags = 0
        self.parts: list = []  # of a kept frame, fragments so far (views of what was read)

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """The whole payloads kept completed by `data`, and (QUIT, b"").
        A status frame comes in 1-KiB fragments, so this runs per fragment
        (about 11,000 a second from 64 hosts): headers are read in place,
        the state is kept in locals until the end."""
        out, view, i, n = [], memoryview(data), 0, len(data)
        kept, parts, size = self.kept, self.parts, _HEADER.size
        version, opcode, flags, left, in_frame = self.version, self.opcode, self.flags, self.left, self.in_frame
        while i < n:
            if not in_frame:
                if self.head or n - i < size:  # a header split between two reads
                    take = min(size - len(self.head), n - i)
                    self.head += view[i:i + take]
                    i += take
                    if len(self.head) < size:
                        break
                    version, opcode, flags, _, left, _, _ = _HEADER.unpack(self.head)
                    self.head.clear()
                else:
                    version, opcode, flags, _, left, _, _ = _HEADER.unpack_from(view, i)
                    i += size
                in_frame = True
            take = left if left <= n - i else n - i
            if take and opcode in kept:
                parts.append(view[i:i + take])
            i += take
            left -= take
            if left == 0:
                in_frame = False
                if opcode == _QUIT:
                    out.append((_QUIT, b""))
                elif opcode in kept and not flags & _MORE:
                    out.append((opcode, b"".join(parts)))
                    parts.clear()
        self.version, self.opcode, self.flags, self.left, self.in_frame = version, opcode, flags, left, in_frame
        return out


class _Link:
    """One host: fio's client ↔ the relay ↔ the host's fio server."""

    def __init__(self, name: str, upstream: tuple[str, int], address: str, status: bool):
        self.name, self.upstream, self.address = name, upstream, address
        self.listener: socket.socket | None = None
        self.client: socket.socket | None = None
        self.server: socket.socket | None = None
        self.pending: dict[socket.socket, bytearray] = {}  # bytes still to write to that socket
        self.frames = _Frames(status)
        self.connected = False
        self.unreachable: str | None = None  # why the server did not accept the relay's connection
        self.ended_at: float | None = None  # monotonic time the connection was over
        self.quit_at: float | None = None  # ... the server said it was done (QUIT)
        self.exit: tuple[int, int] | None = None  # (exit value, signal) from its STOP
        self.messages: list[str] = []
        self.dropped = False
        self.draining = False  # one side has closed: what it sent is still being written to the other
        # What tells a server's failure (Relay.fault): its first header, fio's client's protocol
        # version, and whether the server closed the connection before the client did.
        self.first_reply = bytearray()
        self.client_version: int | None = None
        self.server_closed = False

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]


class Relay:
    """A relay per host (name → (address, port) of its fio server), run on
    one thread. `open()` connects to every server; `client_arg(name)` is
    fio's --client value for the host's relay; `drop(name)` ends it.
    `status`: takes each host's status frames as they pass."""

    def __init__(self, upstreams: dict[str, tuple[str, int]], status: "LiveRounds | None" = None):
        self.status = status
        self.links = {name: _Link(name, up, loopback_address(i), status is not None)
                      for i, (name, up) in enumerate(upstreams.items())}
        self._sel = selectors.DefaultSelector()
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name="iofleet-relay", daemon=True)
        self.opened_at = 0.0
        self.cpu_s: float | None = None  # CPU seconds the relay's thread used, once closed (bench/)
        # (monotonic s, thread CPU s) at the first and the latest status frame: the relay's CPU while hosts run (bench/)
        self.status_cpu: list[tuple[float, float]] = []

    def __enter__(self) -> "Relay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self, timeout_s: float = CONNECT_TIMEOUT_S) -> dict[str, str]:
        """Connect to every server at once and listen for fio's client;
        return host → why its server could not be reached (those are left
        out of the relay)."""
        waiting = {}
        for link in self.links.values():
            link.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                link.listener.bind((link.address, 0))
            except OSError as exc:
                raise FioError(f"iofleet's relay cannot listen on {link.address} ({exc.strerror}): it needs "
                               f"this machine's loopback interface up with 127.0.0.0/8 (`ip addr show lo`)") from None
            link.listener.listen(1)
            try:
                family, _, _, _, peer = socket.getaddrinfo(*link.upstream, type=socket.SOCK_STREAM)[0]
            except OSError as exc:  # the name does not resolve
                link.unreachable = f"cannot resolve {link.upstream[0]} ({exc.strerror or exc})"
                continue
            link.server = socket.socket(family, socket.SOCK_STREAM)
            link.server.setblocking(False)
            code = link.server.connect_ex(peer)
            if code not in (0, errno.EINPROGRESS):
                link.unreachable = _reason(code)
            else:
                waiting[link.server] = link
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            for sock in waiting:
                sel.register(sock, selectors.EVENT_WRITE)
            while waiting and time.monotonic() < deadline:
                for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                    link = waiting.pop(key.fileobj)
                    sel.unregister(key.fileobj)
                    code = link.server.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if code:
                        link.unreachable = _reason(code)
        for link in waiting.values():
            link.unreachable = f"no answer in {timeout_s:g} s (host down or port filtered)"
        for link in self.links.values():
            if link.unreachable:
                self._close_link(link)
            else:
                link.connected = True
                link.server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                link.listener.setblocking(False)
                self._sel.register(link.listener, selectors.EVENT_READ, (link, "accept"))
        self.opened_at = time.monotonic()
        self._thread.start()
        return {n: link.unreachable for n, link in self.links.items() if link.unreachable}

    def client_arg(self, name: str) -> str:
        link = self.links[name]
        return f"ip:{link.address},{link.port}"

    def drop(self, name: str) -> None:
        """End the host's connection: its server stops its jobs, fio's client goes on without it."""
        self.links[name].dropped = True

    def ended(self, name: str) -> float | None:
        """When the host's connection ended (monotonic), or None while it lasts."""
        return self.links[name].ended_at

    def fault(self, name: str) -> str | None:
        """What the host's server did wrong, and what to do, as the relay
        saw it: an answer in something other than fio's protocol, or in
        another fio version's, or a connection it closed before it was done;
        None when it did none of these."""
        link = self.links[name]
        host, port = link.upstream
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        first, expected = bytes(link.first_reply), link.client_version
        whole = len(first) == _HEADER.size
        version = int.from_bytes(first[:2], "little") if len(first) >= 2 else None
        other_version = None not in (version, expected) and version != expected
        # fio's client checks each header's checksum too (server.c, verify_convert_cmd); a
        # server sends whole headers, so a short reply of another version is not one either.
        if whole and _crc16(first[:_CHECKED]) != _HEADER.unpack(first)[5] or other_version and not whole:
            return (f"what answers at {where} is not a fio server (it sent {_shown(first)}, not fio's protocol): "
                    f"correct the host's address in the inventory, or start a fio server there with "
                    f"`iofleet server --bind {where}`")
        if other_version:
            return (f"its fio server at {where} speaks version {version} of fio's protocol and this controller's "
                    f"fio speaks {expected}: they are different fio releases; install the same fio version "
                    f"on every host (`iofleet hosts check INVENTORY` names each host's)")
        if not link.server_closed or link.quit_at is not None or link.exit is not None:
            return None
        frames = link.frames
        if frames.head:
            when = f"in the middle of a message (after {len(frames.head)} of its {_HEADER.size} header bytes)"
        elif frames.in_frame:
            when = f"in the middle of a message ({frames.left} bytes of it still to come)"
        else:
            when = "before its jobs ended"
        return (f"its fio server at {where} closed the connection {when}: it stopped, crashed or was killed; "
                f"check the host with `iofleet hosts check INVENTORY`")

    def finished(self, name: str) -> float | None:
        """When the host's server said it was done, its jobs without error (monotonic), else None."""
        link = self.links[name]
        return link.quit_at if link.exit == (0, 0) else None

    def close(self) -> None:
        self._closing = True
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for link in self.links.values():
            self._close_link(link)
        self._sel.close()

    # The relay's thread.

    def _loop(self) -> None:
        try:
            self._relay()
        finally:
            self.cpu_s = time.thread_time()

    def _relay(self) -> None:
        while not self._closing:
            for key, mask in self._sel.select(0.05):
                link, role = key.data
                try:
                    self._serve(link, role, key.fileobj, mask)
                except Exception:  # noqa: BLE001 — a broken link ends that host alone, never the relay
                    self._close_link(link)
            for link in self.links.values():
                if link.dropped and link.ended_at is None:
                    self._close_link(link)

    def _serve(self, link: _Link, role: str, sock: socket.socket, mask: int) -> None:
        if role == "accept":
            link.client, _ = sock.accept()
            link.client.setblocking(False)
            link.client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sel.unregister(sock)
            sock.close()
            link.listener = None
            self._watch(link, link.client)
            self._watch(link, link.server)
            return
        other = link.server if sock is link.client else link.client
        if mask & selectors.EVENT_WRITE:
            out = link.pending[sock]
            del out[:sock.send(out)]
        if mask & selectors.EVENT_READ:
            try:
                data = sock.recv(_CHUNK)
            except ConnectionResetError:  # a server that dies with data unread resets: a close all the same
                if sock is not link.server:
                    raise
                data = b""
            if not data:  # closed: once what it sent is written on, the link ends
                if not link.draining:  # the first side to close: the other is not read after it
                    link.server_closed = sock is link.server
                link.draining = True
                self._sel.unregister(sock)
            else:
                if sock is link.server:
                    self._heard(link, data)
                elif link.client_version is None and len(data) >= 2:  # its first frame's header
                    link.client_version = int.from_bytes(data[:2], "little")
                link.pending.setdefault(other, bytearray()).extend(data)
                try:
                    del link.pending[other][:other.send(link.pending[other])]
                except BlockingIOError:
                    pass
        if link.draining and not any(link.pending.values()):
            self._close_link(link)
            return
        self._watch(link, link.client)
        self._watch(link, link.server)

    def _watch(self, link: _Link, sock: socket.socket) -> None:
        """Read a socket unless what it sent still waits to be written on;
        write to it while something waits for it."""
        other = link.server if sock is link.client else link.client
        events = 0 if link.pending.get(other) or link.draining else selectors.EVENT_READ
        if link.pending.get(sock):
            events |= selectors.EVENT_WRITE
        key = self._sel.get_map().get(sock)
        if key is None and events:
            self._sel.register(sock, events, (link, "pipe"))
        elif key is not None and not events:
            self._sel.unregister(sock)
        elif key is not None and key.events != events:
            self._sel.modify(sock, events, (link, "pipe"))

    def _heard(self, link: _Link, data: bytes) -> None:
        if len(link.first_reply) < _HEADER.size:
            link.first_reply += data[:_HEADER.size - len(link.first_reply)]
        for opcode, payload in link.frames.feed(data):
            if opcode == _QUIT:
                link.quit_at = time.monotonic()
            elif opcode == _TS:
                self.status.take(link.name, link.frames.version, payload)
                self.status_cpu[1:] = [(time.monotonic(), time.thread_time())]
            elif opcode == _STOP and len(payload) >= _END.size:
                link.exit = _END.unpack_from(payload)
            elif opcode == _TEXT and len(payload) >= _TEXT_HEAD.size:
                size = _TEXT_HEAD.unpack_from(payload)[1]
                text = payload[_TEXT_HEAD.size:_TEXT_HEAD.size + size].rstrip(b"\0")
                link.messages.append(text.decode(errors="replace"))

    def _close_link(self, link: _Link) -> None:
        for sock in (link.listener, link.client, link.server):
            if sock is None:
                continue
            with contextlib.suppress(KeyError, ValueError):  # not registered, or already closed
                self._sel.unregister(sock)
            sock.close()
        link.listener = link.client = link.server = None
        if link.ended_at is None:
            link.ended_at = time.monotonic()


def _crc16(data: bytes) -> int:
    """fio's CRC-16 (crc/crc16.c: polynomial 0x8005, bits reflected, from 0)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = crc >> 1 ^ (0xA001 if crc & 1 else 0)
    return crc


def _shown(data: bytes) -> str:
    """The start of what a server sent: its first line when it reads as text, else its first bytes in hex."""
    line = data.split(b"\n")[0].rstrip(b"\r")
    if line and all(32 <= b < 127 for b in line):
        return f'"{line.decode()}"'
    return f"bytes {data[:8].hex(' ')}"


def _reason(code: int) -> str:
    return {errno.ECONNREFUSED: "connection refused (no fio server listening)",
            errno.EHOSTUNREACH: "no route to host", errno.ENETUNREACH: "network unreachable",
            errno.ETIMEDOUT: "connection timed out"}.get(code, errno.errorcode.get(code, str(code)))
