"""Rounds from fio's status snapshots (fio/status.py) and the rule that
judges them (analysis/methodology.py), on recorded real fio outputs:
tests/fixtures/status/ holds job.fio run by fio 3.33 with
--status-interval=1, locally (one document per second) and through a fio
client (every snapshot in client_stats)."""

import gzip
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iofleet.analysis.methodology import judge_rounds, latency_rounds, span_figures, status_window, steady_now
from iofleet.errors import ImportFormatError
from iofleet.fio.merge import merge_bins, percentiles
from iofleet.fio.parse import DocumentSplitter, parse_output
from iofleet.fio.status import Round, Rounds, Totals, client_rounds, snapshot

FIXTURES = Path(__file__).parent.parent / "fixtures" / "status"
MEASURED = "4k-r70-rand-j2-qd4"


def documents(name: str) -> list[dict]:
    splitter, docs = DocumentSplitter(), []
    for line in gzip.open(FIXTURES / name, "rt"):
        docs += splitter.feed(line)
    return [json.loads(d) for d in docs]


def test_two_second_rounds_take_two_ticks():
    docs = documents("local-status.json.gz")
    one, two = Rounds(every=1), Rounds(every=2)
    for d in docs:
        one.add(snapshot(d["jobs"]))
        two.add(snapshot(d["jobs"]))
    assert len(two.rounds) == len(one.rounds) // 2
    assert two.rounds[0].read.ios == one.rounds[0].read.ios + one.rounds[1].read.ios


def test_local_snapshots_make_rounds_whose_sums_are_exactly_fios_final_counts():
    docs = documents("local-status.json.gz")
    rounds = Rounds(every=1)
    snaps = [snapshot(d["jobs"]) for d in docs]
    for s in snaps:
        rounds.add(s)
    first = next(s for s in snaps if s)  # the first tick inside the measured part
    assert len(rounds.rounds) >= 2
    final = parse_output(docs[-1])
    for d in ("read", "write"):
        in_rounds = sum(getattr(r, d).ios for r in rounds.rounds)
        after = getattr(snaps[-1], d).ios - (getattr(first, d).ios + in_rounds)
        # Everything fio counted is: before the first tick, in the rounds, or after the last one.
        assert getattr(first, d).ios + in_rounds + after == sum(getattr(j, d).ios for j in final.jobs)
        assert after >= 0
        # Histograms too: first tick + every round's bins = fio's final json+ bins, bucket by bucket.
        bins = merge_bins([getattr(first, d).bins] + [getattr(r, d).bins for r in rounds.rounds])
        last_round_end = next(s for s in snaps if s and s.t_ms == rounds.rounds[-1].end_ms)
        assert bins == getattr(last_round_end, d).bins
    # Rounds follow each other on the measured part's clock; fio's final document (at the
    # runtime's end, under a round after the last tick) closes none.
    for a, b in zip(rounds.rounds, rounds.rounds[1:]):
        assert a.end_ms == b.start_ms and 900 <= b.end_ms - b.start_ms <= 1500
    assert snaps[-1].t_ms - rounds.rounds[-1].end_ms < 900


def test_one_jobs_snapshot_bins_give_fios_own_percentiles():
    final = documents("local-status.json.gz")[-1]
    job = next(j for j in final["jobs"] if j["jobname"] == MEASURED)
    snap = snapshot([job])
    ours = percentiles(snap.read.bins)
    fio = {f"p{float(k):g}": v for k, v in job["read"]["lat_ns"]["percentile"].items()}
    for key in ("p50", "p90", "p99", "p99.9"):
        assert ours[key] == fio[key], key


def test_a_snapshot_before_the_measured_jobs_start_is_none():
    # fio lists the measured jobs during the warm-up with no IO (and their process's age as runtime).
    docs = documents("local-status.json.gz")
    assert snapshot(docs[0]["jobs"]) is None
    assert snapshot([j for j in docs[-1]["jobs"] if j["jobname"] == "iofleet-warmup"]) is None


def test_client_output_splits_into_snapshots_and_the_final_result():
    doc = documents("client-status.json.gz")[-1]
    rounds, final = client_rounds(doc, per_tick=4, interval_ms=1000)
    parsed = parse_output(final)
    assert [j.job for j in parsed.jobs] == [MEASURED, MEASURED] and len(parsed.warmup_jobs) == 2
    last = [e for e in doc["client_stats"] if e["jobname"] == MEASURED][-2:]
    assert [j.read.ios for j in parsed.jobs] == [e["read"]["total_ios"] for e in last]
    assert len(rounds.rounds) >= 2
    assert all(r.read.ios > 0 and r.seconds > 0.5 for r in rounds.rounds)


def test_client_output_that_is_not_whole_snapshots_is_refused():
    doc = documents("client-status.json.gz")[-1]
    with pytest.raises(ImportFormatError, match="not whole snapshots of 5 jobs"):
        client_rounds(doc, per_tick=5, interval_ms=1000)
    with pytest.raises(ImportFormatError, match="do not list the same jobs"):
        client_rounds(doc, per_tick=3, interval_ms=1000)


def _round(start_s: float, iops: float, lat_us: int = 100, seconds: float = 1.0) -> Round:
    ios = int(iops * seconds)
    read = Totals(ios=ios, io_bytes=4096 * ios, lat_n=ios, lat_sum_ns=lat_us * 1000.0 * ios,
                  bins={lat_us * 1000: ios - ios // 100, 10 * lat_us * 1000: ios // 100})
    return Round(int(start_s * 1000), int((start_s + seconds) * 1000), read, Totals(), 500.0 * seconds)


def test_window_figures_are_the_windows_own():
    # Two hosts; the first rounds are slow (warming), then steady at 1000 + 2000 IOPS.
    host_a = [_round(k, 300 if k < 3 else 1000, lat_us=500 if k < 3 else 100) for k in range(10)]
    host_b = [_round(k, 2000, lat_us=200) for k in range(10)]
    per_host = {"a": host_a, "b": host_b}
    verdict = judge_rounds(per_host, 1)["iops"]
    assert verdict.steady and (verdict.first_round, verdict.start_s, verdict.end_s) == (3, 3, 8)
    w = status_window(per_host, verdict)
    assert w["iops"] == pytest.approx(3000) and w["all"]["ios"] == 5 * 3000
    # p50: a's 100 µs and b's 200 µs IOs, 5000 vs 10000 of them: the median is b's; the slow
    # warm-up rounds (500 µs) are in no window figure.
    assert w["all"]["lat_p50_us"] == 200 and w["all"]["lat_mean_us"] == pytest.approx((5000 * 100 + 10000 * 200) / 15000)
    assert w["cpu"]["fio_pct"] == pytest.approx(50)
    rounds = latency_rounds(per_host, 1)
    assert rounds["fleet"]["p50"][0] == 200_000 and rounds["hosts"]["a"]["p50"][0] == 500_000
    assert rounds["fleet"]["iops"][5] == pytest.approx(3000)


def test_a_round_counts_only_where_every_host_has_it():
    per_host = {"a": [_round(k, 1000) for k in range(7)], "b": [_round(k, 1000) for k in range(5)]}
    assert len(judge_rounds(per_host, 1)["iops"].rounds) == 5
    assert span_figures(per_host, 0, 4)["all"].ios == 10 * 1000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=100, max_value=2000), min_size=5, max_size=40), st.integers(1, 3))
def test_the_rule_that_ends_a_test_early_is_the_verdict_afterwards(iops, hosts):
    """Rounds arrive one by one; the test ends at the first prefix the rule
    calls steady. Whatever comes after (fio's last rounds before it stops),
    the verdict on everything names that same window, steady."""
    rng = random.Random(len(iops))
    per_host = {f"h{i}": [_round(k, v * rng.uniform(0.9, 1.1)) for k, v in enumerate(iops)] for i in range(hosts)}
    for n in range(1, len(iops) + 1):
        prefix = {h: r[:n] for h, r in per_host.items()}
        if steady_now(prefix, 1):
            later = judge_rounds(per_host, 1)["iops"]
            now = judge_rounds(prefix, 1)["iops"]
            assert later.steady and (later.first_round, later.last_round) == (now.first_round, now.last_round)
            assert now.last_round == n - 1  # it ended at the round that made it steady
            break
    else:
        assert not judge_rounds(per_host, 1)["iops"].steady
