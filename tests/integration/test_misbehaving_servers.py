"""What a fleet test says of a host whose "fio server" misbehaves: the real
fio client and iofleet's relay against a fake server on loopback that
answers fio's first message with half a header, a cut message, an HTTP
reply, binary garbage or another protocol version, or closes at once. The
host's error names it, its address, what happened and what to do, where
fio's client only says it disconnected (fleet/fio_link/relay.py, Relay.fault)."""

import socket
import struct
import threading
from pathlib import Path

import pytest

from iofleet.errors import FioError
from iofleet.fleet.fio_link.relay import _crc16
from iofleet.fleet.fio_link.remote import lost_reason, resolve_fleet_engines, run_on_hosts
from iofleet.fleet.inventory import Host
from iofleet.fleet.targets import target_for

HEADER = struct.Struct("<HHIQIHH")  # fio's server.h: version, opcode, flags, tag, pdu_len, cmd_crc16, pdu_crc16
TEXT = 5
CRASHED = "it stopped, crashed or was killed; check the host with `iofleet hosts check INVENTORY`"


def header(version: int, opcode: int, pdu_len: int) -> bytes:
    """A header fio's client would accept (its checksum right)."""
    head = HEADER.pack(version, opcode, 0, 0, pdu_len, 0, 0)
    return head[:20] + struct.pack("<HH", _crc16(head[:20]), 0)


def receive(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            break
        data += more
    return data


class FakeServer:
    """Listens on 127.0.0.1; to each connection, once fio's client's first
    header is in, sends `answer(client's protocol version)`, then stops
    sending (it still reads, so nothing the client sends resets the
    connection) and closes once the other side has."""

    def __init__(self, answer):
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            with conn:
                first = receive(conn, HEADER.size)
                if len(first) == HEADER.size:
                    conn.sendall(self.answer(HEADER.unpack(first)[0]))
                conn.shutdown(socket.SHUT_WR)
                while conn.recv(65536):
                    pass

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes its accept() (close alone would not)
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture
def fake_server():
    servers = []

    def start(answer) -> FakeServer:
        servers.append(FakeServer(answer))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def host(server: FakeServer) -> Host:
    return Host(name="h2", address=f"127.0.0.1:{server.port}", targets=["/tmp/iofleet-never-written"])


def lost_line(server: FakeServer, tmp_path: Path) -> str:
    run = run_on_hosts({"h2": "[w]\nsize=4k\n"}, [host(server)], tmp_path, threading.Event(), timeout_s=60)
    assert run.lost == ["h2"] and not run.jobs
    return lost_reason(run)  # the test's error, as the fleet place stores it


@pytest.mark.parametrize("answer, what", [
    (lambda v: header(v, TEXT, 100)[:12],
     "closed the connection in the middle of a message (after 12 of its 24 header bytes)"),
    (lambda v: header(v, TEXT, 100) + b"x" * 40,
     "closed the connection in the middle of a message (60 bytes of it still to come)"),
    (lambda v: b"", "closed the connection before its jobs ended"),
])
def test_a_server_that_closes_too_soon_is_named_with_where_it_stopped(fake_server, tmp_path, answer, what):
    server = fake_server(answer)
    assert lost_line(server, tmp_path) == f"lost host h2: no result: its fio server at 127.0.0.1:{server.port} " \
                                          f"{what}: {CRASHED}"


@pytest.mark.parametrize("answer, sent", [
    (lambda v: b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", '"HTTP/1.1 400 Bad Request"'),
    (lambda v: bytes(range(200, 256)), "bytes c8 c9 ca cb cc cd ce cf"),
    (lambda v: b"\x4b\x4a\x01", "bytes 4b 4a 01"),  # short, and not the client's version
])
def test_something_other_than_a_fio_server_is_named_with_what_it_sent(fake_server, tmp_path, answer, sent):
    server = fake_server(answer)
    where = f"127.0.0.1:{server.port}"
    assert lost_line(server, tmp_path) == (
        f"lost host h2: no result: what answers at {where} is not a fio server (it sent {sent}, not fio's "
        f"protocol): correct the host's address in the inventory, or start a fio server there with "
        f"`iofleet server --bind {where}`")


def test_a_fio_server_of_another_version_is_named_with_both_versions(fake_server, tmp_path):
    versions = []

    def answer(v):
        versions.append(v)
        return header(v + 1, TEXT, 0)

    server = fake_server(answer)
    line = lost_line(server, tmp_path)
    (mine,) = versions  # fio's client's protocol version, from its first header
    assert line == (f"lost host h2: no result: its fio server at 127.0.0.1:{server.port} speaks version {mine + 1} "
                    f"of fio's protocol and this controller's fio speaks {mine}: they are different fio "
                    f"releases; install the same fio version on every host (`iofleet hosts check INVENTORY` "
                    f"names each host's)")


def test_the_engine_probe_says_what_the_server_did_once_for_every_engine(fake_server, tmp_path):
    server = fake_server(lambda v: header(v, TEXT, 100)[:12])
    h = host(server)
    with pytest.raises(FioError) as info:
        resolve_fleet_engines([h], "auto", True, tmp_path, threading.Event(), {h.name: target_for(h.targets)})
    assert str(info.value) == (f"host h2: no IO engine works (io_uring/libaio/psync: no result: its fio server at "
                               f"127.0.0.1:{server.port} closed the connection in the middle of a message "
                               f"(after 12 of its 24 header bytes): {CRASHED})")
