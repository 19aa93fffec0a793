"""fio's binary status frames (FIO_NET_CMD_TS) decoded by iofleet, checked
against fio's own JSON of the same run, on recorded real streams
(tests/fixtures/status_frames: what a fio server sent its client through
iofleet's relay, and the client's document)."""

import gzip
import json
from pathlib import Path

import pytest

from iofleet.fio.parse import ALL_CLIENTS
from iofleet.fio.status import client_rounds, job_status
from iofleet.fio.status_frames import LAYOUTS, decode_job
from iofleet.fleet.fio_link.live_rounds import LiveRounds
from iofleet.fleet.fio_link.relay import _Frames

FIXTURES = Path(__file__).parents[1] / "fixtures" / "status_frames"
PROTOCOL = {"fio-3.33": 97, "fio-3.36": 101, "fio-3.42": 120}  # FIO_SERVER_VER of each release
RECORDED = sorted(p.name.removesuffix(".stream.gz") for p in FIXTURES.glob("*.stream.gz"))
TS = 6
PER_TICK = 4  # job.fio: the warm-up group's two jobs and the measured group's two


def recorded(name: str) -> tuple[int, list[bytes], dict]:
    """(protocol version, each TS frame's payload, fio's client document)."""
    stream = gzip.decompress((FIXTURES / f"{name}.stream.gz").read_bytes())
    frames = _Frames(status=True)
    payloads = [p for i in range(0, len(stream), 65536) for op, p in frames.feed(stream[i:i + 65536]) if op == TS]
    doc = json.loads(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))
    return frames.version, payloads, doc


def test_the_recordings_cover_each_layout():
    assert {"fio-3.33", "fio-3.36", "fio-3.42"} <= set(RECORDED)
    for name in RECORDED:
        assert recorded(name)[0] == PROTOCOL[name] in LAYOUTS


@pytest.mark.parametrize("name", RECORDED)
def test_every_frame_is_fios_own_json_entry_bucket_for_bucket(name):
    version, payloads, doc = recorded(name)
    entries = [e for e in doc["client_stats"] if e["jobname"] != ALL_CLIENTS]
    assert len(payloads) == len(entries) >= 4 * PER_TICK
    for i, (payload, entry) in enumerate(zip(payloads, entries)):
        got, want = decode_job(payload, version), job_status(entry, f"entry {i}")
        assert (got.name, got.runtime_ms) == (want.name, want.runtime_ms)
        for d in ("read", "write"):
            a, b = getattr(got, d), getattr(want, d)
            assert (a.ios, a.io_bytes, a.lat_n, a.bins) == (b.ios, b.io_bytes, b.lat_n, b.bins), (i, d)
            # fio's JSON prints the mean with 6 decimals
            assert a.lat_sum_ns == pytest.approx(b.lat_sum_ns, rel=1e-9, abs=1e-6 * b.lat_n)
        # fio's JSON gives CPU as a share of the runtime, rounded
        assert got.cpu_ms == pytest.approx(want.cpu_ms, abs=0.01 * want.runtime_ms)
    # The last frame of each measured job is fio's final result for it, and it has IO in every bucket it lists.
    last = {decode_job(p, version).name: decode_job(p, version) for p in payloads[-PER_TICK:]}
    assert last["t1"].read.ios > 0 and sum(last["t1"].read.bins.values()) == last["t1"].read.lat_n


@pytest.mark.parametrize("name", RECORDED)
def test_live_rounds_are_the_rounds_of_fios_own_document(name):
    version, payloads, doc = recorded(name)
    closed = []
    live = LiveRounds({"h": PER_TICK}, 1000, on_round=closed.append)
    for p in payloads:
        live.take("h", version, p)
    got = live.rounds(["h"])["h"]
    want = client_rounds(doc, PER_TICK, 1000)[0].rounds
    assert len(got) == len(want) == len(closed) >= 2 and live.unreadable() == {}
    for a, b in zip(got, want):
        assert (a.start_ms, a.end_ms) == (b.start_ms, b.end_ms)
        for d in ("read", "write"):
            x, y = getattr(a, d), getattr(b, d)
            assert (x.ios, x.io_bytes, x.lat_n, x.bins) == (y.ios, y.io_bytes, y.lat_n, y.bins)
    latest = live.latest()["h"]
    assert latest.end_s == got[-1].end_ms / 1000 and latest.iops > 0 and latest.p99_ns > 0


def test_an_unknown_version_or_a_short_frame_is_refused_and_live_figures_stop_for_that_host():
    version, payloads, _ = recorded("fio-3.33")
    with pytest.raises(ValueError, match="protocol version 98 is not one iofleet decodes"):
        decode_job(payloads[0], 98)
    with pytest.raises(ValueError, match="a status frame of 1000 bytes, shorter than version 97's"):
        decode_job(payloads[0][:1000], version)
    live = LiveRounds({"h": PER_TICK}, 1000)
    live.take("h", 98, payloads[0])
    for p in payloads:
        live.take("h", version, p)
    assert live.rounds(["h"]) == {"h": []} and "version 98" in live.unreadable()["h"]
    assert live.latest() == {"h": None}
