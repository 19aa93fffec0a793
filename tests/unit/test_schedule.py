"""How far a fixed-rate load fell behind its schedule (bench/schedule_bounds.py),
on a recorded real fio run: tests/fixtures/status/stall/ holds fio 3.33's
stdout (--status-interval=1, json+) of a 12 s job at rate_iops=140,60
(4k randrw 70 % reads, libaio iodepth 4, a loop device's ext4) whose disk
was stalled (blkio throttle at 1 byte/s) for 3 s, its per-IO logs (iolog
and latency log) and the stall's times on fio's clock (run.json), recorded
by `bench/coordinated_omission.py --record DIR --runtime 12 --at 4 --for 3
--rate 200`. The per-IO truth (each IO's wait from its slot) is rebuilt
from the logs by the bench's own code."""

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from bench.coordinated_omission import per_io
from bench.schedule_bounds import (
    backlog_drained_s, behind_schedule, schedule_lag, slot_waits, status_times, wait_percentiles_ms,
)
from iofleet.errors import ImportFormatError
from iofleet.fio.parse import split_documents
from iofleet.fio.status import snapshot

STALL = Path(__file__).parent.parent / "fixtures" / "status" / "stall"
RUN = json.loads((STALL / "run.json").read_text())
RATES = dict(zip(("read", "write"), RUN["rates_per_job"]))  # one job: the host's rates
FAULT_FROM, FAULT_TO = RUN["fault_s"]
IN_FLIGHT = 4  # iodepth × jobs: completions overtake each other only among these


def documents() -> list[dict]:
    return [json.loads(d) for d in split_documents(gzip.open(STALL / "fio-stdout.json.gz", "rt").read())]


def series():
    """(times, completed IOs per direction) of the documents with measured IO."""
    docs = documents()
    kept = [(t, snapshot(d["jobs"])) for t, d in zip(status_times(docs), docs)]
    kept = [(t, s) for t, s in kept if s is not None]
    return [t for t, _ in kept], {d: [getattr(s, d).lat_n for _, s in kept] for d in RATES}


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    """Every IO of the recorded run per direction: due, fio's latency, wait from its slot."""
    logs = tmp_path_factory.mktemp("stall-logs")
    for gz in STALL.glob("load1*.gz"):
        with gzip.open(gz, "rb") as src, open(logs / gz.name[:-3], "wb") as dst:
            shutil.copyfileobj(src, dst)
    return per_io(logs, 1, RUN["rates_per_job"])


def test_the_snapshot_after_the_stall_has_the_time_its_counts_were_read():
    docs = documents()
    times = status_times(docs)
    runtimes = [snapshot(d["jobs"]).t_ms / 1e3 for d in docs]
    # The recording holds the case: one document printed after the stall whose
    # job_runtime is that of before it (fio's status thread waited for the job).
    stale = [i for i, (t, r) in enumerate(zip(times, runtimes)) if t - r > 1.0]
    assert len(stale) == 1
    i = stale[0]
    assert runtimes[i] < FAULT_FROM + 1 and times[i] >= FAULT_TO
    assert all(b > a for a, b in zip(times, times[1:]))  # in time order once placed right
    assert times[-1] == runtimes[-1] == 12.0  # the final document: the jobs' end


def test_the_lag_is_the_stall_while_it_lasts_and_none_before_or_after():
    times, completed = series()
    for d, rate in RATES.items():
        lag = schedule_lag(times, completed[d], rate)
        during = [x for t, x in zip(times, lag) if FAULT_FROM < t <= FAULT_TO + 0.1]
        others = [x for t, x in zip(times, lag) if t <= FAULT_FROM or t > FAULT_TO + 0.5]
        # The snapshot printed as the stall ended: ~3 s behind (the stall), less the
        # slots completed before it began.
        assert len(during) == 1 and FAULT_TO - FAULT_FROM - 0.1 < during[0] <= FAULT_TO - FAULT_FROM + 0.1
        assert max(others) <= 1 / rate + 0.005


def test_the_bounds_hold_every_io_wait_from_its_slot(truth):
    """The p50, p99 and max of the waits' lower and upper bounds (from the
    snapshots) bracket those of the real waits (from the per-IO logs), within
    the IOs that can overtake each other in flight."""
    times, completed = series()
    waits = {d: slot_waits(times, completed[d], rate) for d, rate in RATES.items()}
    for d, rate in RATES.items():
        real = truth[d]
        assert real["unmatched"].sum() == 0
        assert len(waits[d].due_s) == len(real["due"])  # every completed IO has a slot
        tolerance = IN_FLIGHT / rate
        for lo, hi in ((0.0, float("inf")), (FAULT_FROM, FAULT_TO)):
            chosen = (real["due"] >= lo) & (real["due"] < hi)
            got = behind_schedule([waits[d]], lo, hi)
            true = wait_percentiles_ms(real["wait"][chosen])
            assert got["slots"] == np.count_nonzero(chosen)
            for p in ("p50", "p99", "max"):
                assert got["at_least_ms"][p] <= true[p] + tolerance * 1e3
                assert true[p] <= got["at_most_ms"][p] + tolerance * 1e3
            # The stall's slots: the lower bound is close (the post-stall snapshot came as it ended).
            if lo == FAULT_FROM:
                assert true["p99"] - got["at_least_ms"]["p99"] < 100
                # fio's own latency of the same IOs does not show the stall at its median
                assert wait_percentiles_ms(real["fio"][chosen])["p50"] < 100


def test_waited_at_least_a_second_is_a_lower_bound(truth):
    times, completed = series()
    waits = [slot_waits(times, completed[d], rate) for d, rate in RATES.items()]
    got = behind_schedule(waits)["waited_at_least"]
    real = sum(int(np.count_nonzero(truth[d]["wait"] >= 1.0)) for d in RATES)
    assert 0.9 * real <= got <= real + IN_FLIGHT


def test_the_backlog_drained_by_the_first_snapshot_with_every_slot_due_done(truth):
    times, completed = series()
    for d, rate in RATES.items():
        drained = backlog_drained_s(times, completed[d], rate, FAULT_TO)
        last = truth[d]["completion"][truth[d]["due"] < FAULT_TO].max()  # the backlog's last IO
        assert drained is not None and last <= drained < FAULT_TO + 1.1
        before = max(t for t in times if t < drained)
        assert before < last + IN_FLIGHT / rate  # … and after the snapshot before it
        assert backlog_drained_s(times, completed[d], rate, times[-1] + 1) is None  # slots never due


def test_bounds_by_hand():
    # 10 IOs/s: 10 done by 1 s (on time), none more by 2 s, 30 by 3 s (the backlog).
    w = slot_waits([1.0, 2.0, 3.0], [10, 10, 30], 10)
    assert len(w.due_s) == 30
    assert w.due_s[10] == 1.0 and w.at_least_s[10] == 1.0 and w.at_most_s[10] == 2.0
    assert w.at_least_s[29] == 0.0 and w.at_most_s[29] == pytest.approx(0.1)
    assert w.at_least_s[0] == 0.0 and w.at_most_s[0] == 1.0
    assert schedule_lag([1.0, 2.0, 3.0], [10, 10, 30], 10) == [0.0, 1.0, 0.0]
    assert backlog_drained_s([1.0, 2.0, 3.0], [10, 10, 30], 10, due_by_s=1.0) == 1.0
    assert backlog_drained_s([1.0, 2.0, 3.0], [10, 10, 30], 10, due_by_s=1.05) == 3.0
    summary = behind_schedule([w], 1.0, 2.0)
    assert summary["slots"] == 10 and summary["at_least_ms"]["max"] == 1000.0
    assert summary["waited_at_least"] == 1
    assert behind_schedule([w], 5.0, 6.0)["at_least_ms"] == {"p50": None, "p99": None, "max": None}


@pytest.mark.parametrize("times, counts, rate, message", [
    ([1.0], [5], 0, "rate above 0"),
    ([1.0, 2.0], [5], 10, "2 times but 1 counts"),
    ([1.0, 2.0], [5, 4], 10, "cumulative"),
])
def test_bad_series_are_refused(times, counts, rate, message):
    with pytest.raises(ValueError, match=message):
        schedule_lag(times, counts, rate)


def test_documents_without_measured_io_have_no_time():
    docs = documents()
    before = {**docs[0], "jobs": [{**j, "read": {**j["read"], "total_ios": 0}, "write": {**j["write"], "total_ios": 0}}
                                  for j in docs[0]["jobs"]]}
    assert status_times([before]) == [None]
    assert status_times([before, *docs])[0] is None


def test_a_document_without_its_time_is_refused():
    docs = documents()
    with pytest.raises(ImportFormatError, match="document 1: no timestamp_ms"):
        status_times([docs[0], {k: v for k, v in docs[1].items() if k != "timestamp_ms"}])
