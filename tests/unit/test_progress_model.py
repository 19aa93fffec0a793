"""The one progress model of a run (studies.progress), fed observer events
at chosen instants: phase, i of N, elapsed and ETA, live figures, headline
figures of finished tests; and the terminal drawing that model."""

from types import SimpleNamespace

import pytest
from rich.console import Console

from iofleet.cli.progress import ClockColumn, TerminalProgress, live_text, result_line
from iofleet.fio.records import DirectionStats
from iofleet.fleet.metrics.records import HostSample
from iofleet.fleet.fio_link.runner import LiveFigures, RoundFigures
from iofleet.results.model import Aggregate
from iofleet.studies.events import TestOutcome, estimate_seconds
from iofleet.studies.live_state import Publisher
from iofleet.studies.progress import RunProgress

from .progress_clock import STEADY, Clock, specs, started


def agg(iops, mb_s, p99_us):
    d = DirectionStats(ios=int(iops) * 10, iops=iops, bw_bytes_s=mb_s * 1e6, percentiles_ns={"p99": p99_us * 1000})
    return Aggregate(jobs=1, read=d, write=DirectionStats(), all=d, usr_cpu_pct=0, sys_cpu_pct=0)


def test_phase_elapsed_and_eta_follow_the_events():
    m, clock, (a, b) = started()
    assert (m.state, m.tests_planned, m.estimate_s, m.estimate_is_bound) == ("running", 2, 54.0, False)
    assert m.eta_s() == 54.0 and m.snapshot()["test_index"] is None

    clock.now += 3  # preparing data
    m.preparing(8e6, 32e6, 2.0, None)
    assert (m.state, m.phase) == ("preparing", "preparing data")
    assert m.preparing_data.mb_s == 4.0 and m.preparing_data.eta_s == 6.0

    m.test_started(0, a)
    assert (m.state, m.phase, m.test.planned_s) == ("running", "starting", 25)
    m.test_phase(0, a, "laying out data files")
    assert m.phase == "laying out data files"
    clock.now += 6  # fio started late (laying out files): its clock, not the test's, says warm-up or not
    m.test_live(0, a, LiveFigures(elapsed_s=3.0, iops=1000.0, bw_bytes_s=4.096e6, lat_mean_ns=250_000.0))
    assert m.phase == "warm-up"
    assert m.test.eta_s(clock.now) == 19 and m.eta_s() == 48.0
    clock.now += 3
    m.test_live(0, a, LiveFigures(elapsed_s=6.0, iops=1200.0, bw_bytes_s=4.9152e6, lat_mean_ns=200_000.0))
    assert m.phase == "measuring"
    s = m.snapshot()
    assert (s["test_index"], s["test_id"], s["elapsed_s"], s["eta_s"]) == (0, a.id, 12.0, 45.0)
    eta = ClockColumn(m, "eta").render(SimpleNamespace(fields={"part": "run"}))
    assert (eta.plain, ClockColumn(m, "elapsed").render(SimpleNamespace(fields={"part": "test"})).plain) == \
        ("0:00:45", "0:00:09")
    assert s["fleet"] == {"iops": 1200.0, "mb_s": 4.915, "lat_ms": 0.2, "source": "fio"}
    assert s["hosts"]["local"]["iops"] == 1200.0 and s["hosts"]["local"]["cpu_pct"] is None

    clock.now += 100  # a test never counts for more than it planned
    assert m.eta_s() == 54 - 25
    m.test_finished(0, a, TestOutcome(a, "ok", None, agg(1200.0, 4.9152, 800.0)))
    assert (m.tests_done, m.done_s, m.eta_s(), m.snapshot()["test_index"]) == (1, 27.0, 27.0, None)
    assert m.results[0].to_dict() == {"index": 0, "id": a.id, "status": "ok", "error": None,
                                      "iops": 1200.0, "mb_s": 4.915, "p99_ms": 0.8}

    m.test_started(1, b)
    assert m.snapshot()["fleet"] == {} and m.snapshot()["hosts"] == {}  # the last test's figures are gone
    m.stopping()
    assert m.state == "stopping"
    clock.now += 5
    m.ended()
    clock.now += 60
    s = m.snapshot()
    assert (s["state"], s["eta_s"], s["elapsed_s"], s["test_index"]) == ("ended", None, 117.0, None)


def test_a_fleet_sums_the_hosts_disk_iops_and_keeps_hosts_without_metrics():
    m, clock, (a, _) = started()
    m.test_started(0, a)
    hosts = {"h1": HostSample(3.0, 41.6, 80.0, 12_345.0, 2e6, 1e6), "h2": None,
             "h3": HostSample(3.0, 10.0, None, 655.0, None, None)}
    m.test_live(0, a, LiveFigures(elapsed_s=7.0, iops=None, bw_bytes_s=None, lat_mean_ns=None, hosts=hosts))
    live = m.live_dict()
    assert live["fleet"] == {"iops": 13_000.0, "mb_s": None, "lat_ms": None, "source": "node_exporter"}
    assert live["hosts"]["h1"] == {"disk_iops": 12_345.0, "cpu_pct": 41.6, "disk_busy_pct": 80.0, "net_mb_s": 3.0,
                                   "iops": None, "mb_s": None, "lat_ms": None, "p99_ms": None}
    assert live["hosts"]["h2"] is None and live["hosts"]["h3"]["net_mb_s"] is None
    assert (live["index"], live["t"], live["phase"]) == (0, 7.0, "measuring")
    assert live_text(m).splitlines()[0] == "  measuring on 3 hosts (disk IOPS until the first round)"


def test_a_fleet_shows_each_hosts_last_round_from_fio_and_the_fleets_whole_round():
    m, clock, (a, _) = started()
    m.test_started(0, a)
    samples = {"h1": HostSample(3.0, 41.6, 80.0, 12_345.0, 2e6, 1e6), "a-long-host-name-17": None}
    rounds = {"h1": RoundFigures(end_s=4.0, seconds=1.0, iops=1500.0, bw_bytes_s=6.144e6, lat_mean_ns=310_000.0,
                                 p99_ns=1_250_000.0),
              "a-long-host-name-17": None}
    m.test_live(0, a, LiveFigures(elapsed_s=7.0, iops=2900.0, bw_bytes_s=11.8784e6, lat_mean_ns=300_000.0,
                                  hosts=samples, rounds=rounds))
    live = m.live_dict()
    assert live["fleet"] == {"iops": 2900.0, "mb_s": 11.878, "lat_ms": 0.3, "source": "fio"}
    assert live["hosts"]["h1"] == {"iops": 1500.0, "mb_s": 6.144, "lat_ms": 0.31, "p99_ms": 1.25, "cpu_pct": 41.6,
                                   "disk_busy_pct": 80.0, "disk_iops": 12_345.0, "net_mb_s": 3.0}
    assert live["hosts"]["a-long-host-name-17"] is None
    lines = live_text(m).splitlines()
    assert lines[0] == "  measuring: 2,900 IOPS  11.9 MB/s  mean 0.300 ms (last round, 2 hosts)"
    assert lines[2].split() == ["h1", "1,500", "IOPS", "6.1", "MB/s", "0.310/1.250", "ms", "CPU", "42%"]
    assert lines[3].split()[:2] == ["a-long-host-nam…", "waiting"]
    assert all(len(line) <= 80 for line in lines), lines


def test_a_steady_test_is_headlined_by_its_window_and_the_estimate_is_a_bound():
    m, clock, (s,) = started(STEADY)
    assert m.estimate_is_bound and m.estimate_s == 5 + 100 + 2
    m.test_started(0, s)
    window = {"start_s": 10.0, "end_s": 60.0, "steady": True,
              "all": {"iops": 900.0, "bw_mb_s": 3.6864, "lat_p99_us": 500.0}}
    m.test_finished(0, s, TestOutcome(s, "ok", None, agg(1000.0, 4.096, 700.0), window=window, ended_early_s=60.0))
    r = m.results[0]
    assert (r.iops, r.mb_s, r.p99_ms) == (900.0, 3.6864, 0.5)
    assert result_line(r, "1/1") == (f"[green]ok[/]      1/1 {s.id}: 900 IOPS, 3.7 MB/s, p99 0.500 ms "
                                     f"(window 10.0–60.0 s, steady, ended early at 60.0 s of ≤100 s)")


def test_a_failed_test_says_why_and_a_sweep_counts_to_no_total():
    m, clock, (a, _) = started(sweep=True)
    assert m.estimate_is_bound
    m.test_started(0, a)
    m.test_finished(0, a, TestOutcome(a, "failed", "fio exited with 1", None))
    r = m.results[0]
    assert r.iops is None and r.to_dict()["p99_ms"] is None
    assert result_line(r, "1") == f"[red]failed[/] 1 {a.id}: fio exited with 1"


def test_cleaning_is_a_phase_of_its_own():
    m, clock, (a, _) = started()
    m.test_started(0, a)
    m.test_finished(0, a, TestOutcome(a, "ok", None, agg(1.0, 1.0, 1.0)))
    m.cleaning()
    assert m.phase == "removing data files" and live_text(m) == "  removing data files"


def test_the_terminal_draws_the_run_s_one_model(tmp_path):
    out = tmp_path / "out.txt"
    with out.open("w") as f:
        console = Console(file=f, width=200, force_terminal=False)
        tests = specs()
        with TerminalProgress(console) as progress:
            run = Publisher(tmp_path, progress, "p", None)  # as the run's session makes it
            assert progress.model is run.progress  # one model, the publisher's
            run.run_started(3, tests, estimate_seconds(tests))
            run.preparing(8e6, 32e6, 2.0, None)
            assert progress.live_text.plain == "  preparing data: 7.6 MiB of 30.5 MiB written, 4.0 MB/s, 0:00:06 left"
            run.test_started(0, tests[0])
            run.test_live(0, tests[0], LiveFigures(elapsed_s=6.0, iops=1200.0, bw_bytes_s=4.9e6,
                                                   lat_mean_ns=200_000.0))
            assert progress.live_text.plain == "  measuring: 1,200 IOPS  4.9 MB/s  mean latency 0.200 ms"
            run.test_finished(0, tests[0], TestOutcome(tests[0], "ok", None, agg(1200.0, 4.9, 800.0)))
            assert progress.model.tests_done == 1
            run.cleaning()
            assert progress.live_text.plain == "  removing data files"
    text = out.read_text()
    assert "Run 3: 2 tests, about 54 s" in text
    assert f"ok      1/2 {tests[0].id}: 1,200 IOPS, 4.9 MB/s, p99 0.800 ms" in text


@pytest.mark.parametrize("done,total,elapsed,eta", [(0, 10, 1.0, None), (None, 10, 1.0, None), (5, 10, 5.0, 5.0)])
def test_preparing_eta_is_at_the_rate_so_far(done, total, elapsed, eta):
    m = RunProgress(clock=Clock())
    m.preparing(done, total, elapsed, None)
    assert m.preparing_data.eta_s == eta


def test_a_missing_live_latency_is_n_a_as_everywhere_else():
    m, clock, (a, _) = started()
    m.test_started(0, a)
    m.test_live(0, a, LiveFigures(elapsed_s=10.0, iops=1200.0, bw_bytes_s=4_915_200.0, lat_mean_ns=None))
    assert live_text(m) == "  measuring: 1,200 IOPS  4.9 MB/s  mean latency n/a"
