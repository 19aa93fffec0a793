"""Pieces of the runner that need no fio process: live rates from fio's
status documents, fio's version and error lines."""

import json
from pathlib import Path

import pytest

from iofleet.errors import FioError
from iofleet.fio.command import error_line, parse_version
from iofleet.fio.parse import split_documents
from iofleet.fleet.fio_link.runner import LiveRates

STREAM = Path(__file__).resolve().parents[1] / "fixtures" / "fio" / "status-stream-json+.txt"


def test_live_rates_from_recorded_status_stream():
    docs = [json.loads(d) for d in split_documents(STREAM.read_text())]
    rates = LiveRates()
    figures = [rates.update(doc, now=float(i), elapsed=float(i)) for i, doc in enumerate(docs)]
    assert figures[0] is None  # nothing to compare the first document with
    shown = [f for f in figures if f is not None]
    assert shown, "later documents give rates"
    for f, prev, cur in zip(figures[1:], docs, docs[1:]):
        if f is None:
            continue
        ios = lambda d: sum(j[k]["total_ios"] for j in d["jobs"] for k in ("read", "write"))
        assert f.iops == pytest.approx(ios(cur) - ios(prev))  # one second apart
        assert f.lat_mean_ns is None or 1_000 < f.lat_mean_ns < 1e9


def test_counter_reset_after_warm_up_is_skipped():
    doc = lambda n: {"jobs": [{"read": {"total_ios": n, "io_bytes": 4096 * n, "lat_ns": {"N": n, "mean": 1000.0}},
                               "write": {"total_ios": 0, "io_bytes": 0, "lat_ns": {"N": 0, "mean": 0.0}}}]}
    rates = LiveRates()
    rates.update(doc(5000), 0.0, 0.0)
    assert rates.update(doc(100), 1.0, 1.0) is None  # fio reset its counters
    f = rates.update(doc(2100), 2.0, 2.0)
    assert f.iops == 2000 and f.bw_bytes_s == 2000 * 4096 and f.lat_mean_ns == 1000.0


@pytest.mark.parametrize("text,version", [("fio-3.33", (3, 33)), ("fio-3.36-12-gabc\n", (3, 36))])
def test_fio_version(text, version):
    assert parse_version(text) == version


def test_unreadable_fio_version():
    with pytest.raises(FioError, match="apt-get install fio"):
        parse_version("something else")


def test_error_line_prefers_fios_own_message():
    stderr = "note: both iodepth >= 1 and synchronous I/O engine\nfio: io_u error on file /x: No space left on device: write offset=0"
    assert error_line(stderr) == "fio: io_u error on file /x: No space left on device: write offset=0"
    assert error_line("") == "fio failed without a message"
