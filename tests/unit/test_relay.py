"""The relay's reading of fio's frames (fleet/fio_link/relay.py): what each server
said, and when it ended, whatever the chunks the bytes arrive in. The
frames are built as fio's server.h lays them out; the relay end to end,
between a real fio client and real servers, is tested by tests/fleet
(a frozen host ended alone: test_host_failures.py), and against servers
that misbehave by tests/integration/test_misbehaving_servers.py."""

import gzip
import socket
import struct
import time
from pathlib import Path

import pytest

from iofleet.fleet.fio_link.relay import Relay, _crc16, _Frames, loopback_address

HEADER = struct.Struct("<HHIQIHH")


def frame(opcode: int, payload: bytes = b"", more: bool = False) -> bytes:
    return HEADER.pack(121, opcode, 1 if more else 0, 7, len(payload), 0, 0) + payload


def text(message: str) -> bytes:
    body = message.encode() + b"\0"
    return struct.pack("<IIQQ", 2, len(body), 0, 0) + body


STREAM = (frame(10, b"p" * 300)  # PROBE reply: counted past
          + frame(5, text("Starting 1 process\n"))
          + frame(6, b"t" * 5000)  # a TS: large, not kept
          + frame(5, text("x" * 1500)[:1024], more=True) + frame(5, text("x" * 1500)[1024:])  # fragments
          + frame(12, struct.pack("<II", 5, 0))  # STOP: exit value 5
          + frame(1))  # QUIT


@pytest.mark.parametrize("chunk", [1, 7, 24, 25, 1000, len(STREAM)])
def test_frames_give_the_same_messages_exit_and_end_in_any_chunking(chunk):
    frames, got = _Frames(), []
    for i in range(0, len(STREAM), chunk):
        got += frames.feed(STREAM[i:i + chunk])
    assert [op for op, _ in got] == [5, 5, 12, 1]
    assert got[0][1][24:].rstrip(b"\0") == b"Starting 1 process\n"
    assert got[1][1][24:].rstrip(b"\0") == b"x" * 1500  # the fragments joined
    assert struct.unpack("<II", got[2][1]) == (5, 0)


def test_every_host_has_a_loopback_address_of_its_own():
    addresses = [loopback_address(i) for i in range(2000)]
    assert len(set(addresses)) == 2000
    assert all(a.startswith("127.") and all(0 <= int(o) <= 255 for o in a.split(".")) for a in addresses)
    assert not any(a.endswith(".0") for a in addresses)


RECORDINGS = sorted((Path(__file__).parents[1] / "fixtures" / "status_frames").glob("*.stream.gz"))


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_fios_header_checksum_is_computed_as_fio_does(recording):
    """On the headers real fio servers sent (the relay tells fio's protocol from something else by it)."""
    stream, at = gzip.decompress(recording.read_bytes()), 0
    for _ in range(100):
        head = stream[at:at + HEADER.size]
        assert _crc16(head[:20]) == HEADER.unpack(head)[5]
        at += HEADER.size + HEADER.unpack(head)[4]


def test_a_server_that_resets_the_connection_mid_message_is_said_to_have_closed_it_there():
    """A server that dies with data unread resets the connection (no plain
    close): the relay reads what it sent, then says where it stopped."""
    with socket.create_server(("127.0.0.1", 0)) as listener, \
            Relay({"h1": ("127.0.0.1", listener.getsockname()[1])}) as relay:
        assert relay.open() == {}
        server, _ = listener.accept()
        link = relay.links["h1"]
        with socket.create_connection((link.address, link.port)) as client:
            client.sendall(frame(10, b"p" * 40))  # as fio's client starts: its PROBE
            assert len(server.recv(HEADER.size, socket.MSG_WAITALL)) == HEADER.size  # the rest left unread
            server.sendall(frame(5, text("x"))[:12])
            server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            server.close()  # with data unread: a reset
            deadline = time.monotonic() + 10
            while relay.ended("h1") is None:
                assert time.monotonic() < deadline, "the relay did not end the host's connection"
                time.sleep(0.01)
            # What it sent is passed on before the end.
            assert client.recv(12, socket.MSG_WAITALL) == frame(5, text("x"))[:12]
        port = listener.getsockname()[1]
        assert relay.fault("h1") == (f"its fio server at 127.0.0.1:{port} closed the connection in the middle of a "
                                     f"message (after 12 of its 24 header bytes): it stopped, crashed or was killed; "
                                     f"check the host with `iofleet hosts check INVENTORY`")
