"""The relay's reading of fio's frames (fleet/fio_link/relay.py): what each server
said, and when it ended, whatever the chunks the bytes arrive in. The
frames are built as fio's server.h lays them out; the relay end to end,
between a real fio client and real servers, is tested by tests/fleet
(a frozen host ended alone: test_host_failures.py)."""

import struct

import pytest

from iofleet.fleet.fio_link.relay import _Frames, loopback_address

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
