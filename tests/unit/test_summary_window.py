"""The summary of `until: steady` tests: every figure of a row covers one
time span. Runs are stored in a real store from hand-built results (the
window figures as the run study stores them, issue 17); the assertions are
on the strings the text summary, the HTML report and the Markdown show."""

from iofleet.fio.records import DirectionStats, JobResult
from iofleet.fleet.metrics import HostCpu
from iofleet.results.methodology import FleetRecord, RunMethodology, TestMethodology
from iofleet.results.model import TestInfo
from iofleet.report.html import run_report_context, run_report_md
from iofleet.report.summary import shown_window, summary_notes, summary_rows
from iofleet.results.aggregate import aggregate
from iofleet.results.store import Store

PARAMS = {"bs": 4096, "read_pct": 100, "random_pct": 100, "iodepth": 8, "jobs": 1, "size": 2**26,
          "working_set_pct": 100, "runtime": 60, "ramp": 2, "engine": "io_uring", "direct": True,
          "until": "steady", "round": 2, "max_runtime": 60}
NONE = DirectionStats(percentiles_ns=dict.fromkeys(("p50", "p90", "p95", "p99", "p99.9")))


def reads(iops: float, mean_us: float, p95_us: float, p99_us: float, p99_9_us: float) -> DirectionStats:
    """A read direction over 30 s of the whole measured part."""
    ios = int(iops * 30)
    return DirectionStats(ios=ios, io_bytes=ios * 4096, runtime_ms=30_000, iops=iops, bw_bytes_s=iops * 4096,
                          lat_n=ios, lat_mean_ns=mean_us * 1000,
                          percentiles_ns={"p50": mean_us * 1000, "p90": p95_us * 1000, "p95": p95_us * 1000,
                                          "p99": p99_us * 1000, "p99.9": p99_9_us * 1000})


def job(host: str, iops: float, mean_us: float) -> JobResult:
    r = reads(iops, mean_us, 2 * mean_us, 3 * mean_us, 4 * mean_us)
    return JobResult(host=host, job="randread", index=0, error=0, runtime_ms=30_000, usr_cpu_pct=5.0,
                     sys_cpu_pct=20.0, read=r, write=NONE, all=r)


def figures(iops: float, mean_us: float, p95_us: float, p99_us: float, p99_9_us: float) -> dict:
    """One direction of a window, with the keys of results.export.direction_figures."""
    return {"iops": iops, "bw_mb_s": iops * 4096 / 1e6, "bw_bytes_s": iops * 4096, "ios": int(iops * 10),
            "io_bytes": int(iops * 10) * 4096, "runtime_ms": 10_000, "lat_mean_us": mean_us,
            "lat_stddev_us": None, "lat_min_us": None, "lat_max_us": None, "lat_p50_us": mean_us,
            "lat_p90_us": p95_us, "lat_p95_us": p95_us, "lat_p99_us": p99_us, "lat_p99_9_us": p99_9_us,
            "percentile_basis": "lat"}


NO_IO = dict.fromkeys(figures(1, 1, 1, 1, 1)) | {"ios": 0, "iops": 0.0, "bw_mb_s": 0.0, "bw_bytes_s": 0.0}


def window(start: float, end: float, *, steady: bool = True, cpu: dict | None = None) -> dict:
    """A read-only window of 1,200 IOPS: mean 800 us, p95 1.5 ms, p99 2.5 ms, p99.9 4 ms."""
    read = figures(1200, 800, 1500, 2500, 4000)
    out = {"start_s": start, "end_s": end, "steady": steady, "iops": 1200.0, "bw_bytes_s": 1200 * 4096.0,
           "lat_mean_ns": 800_000.0, "read": read, "write": dict(NO_IO), "all": dict(read)}
    if cpu:
        out["cpu"] = cpu
    return out


def verdict(steady: bool, start: float | None = None, end: float | None = None) -> dict:
    return {"metric": "iops", "steady": steady, "reason": "steady" if steady else "data excursion 31% > 20%",
            "round_s": 2, "window": 5, "rounds": [], "first_round": start // 2 if steady else None,
            "last_round": end // 2 - 1 if steady else None,
            "start_s": start, "end_s": end, "average": 1200.0 if steady else None,
            "data_excursion_pct": 5.0 if steady else 31.0, "slope_excursion_pct": 2.0, "data_pct": 20.0,
            "slope_pct": 10.0}


def method(until: str, win: dict | None, steady: bool = True) -> dict:
    v = verdict(steady, win["start_s"] if win and steady else None, win["end_s"] if win and steady else None)
    return {"steady": {"iops": v, "lat": v}, "until": until, "window": win, "prepared": True, "cache": {},
            "working_set": {}}


def store_run(tmp_path, tests: list[tuple[str, dict | None, list[JobResult]]], percentile: str = "p99") -> dict:
    """tests: (id, methodology, jobs); a fleet test when its jobs are on several hosts."""
    with Store.open(tmp_path) as st:
        run_id = st.create_run(plan_name="window", plan_text="name: window\n", label=None, fio_version="fio-3.33",
                               host_facts={"hostname": "vm"}, tests_planned=len(tests))
        st.set_run_methodology(run_id, RunMethodology.from_dict({"percentile": percentile}))
        for seq, (test_id, methodology, jobs) in enumerate(tests):
            hosts = list(dict.fromkeys(j.host for j in jobs))
            fleet = FleetRecord.from_dict({"hosts": hosts, "skew": None, "groups": {}}) if len(hosts) > 1 else None
            st.save_test(run_id, seq=seq, test=TestInfo(test_id, "w", 1, PARAMS),
                         status="ok", started_at="2026-11-24T00:00:00Z", ended_at="2026-11-24T00:00:40Z",
                         jobs=jobs, aggregate=aggregate(jobs), host_cpu=HostCpu(30, 50.0, 70.0), fleet=fleet,
                         methodology=methodology and TestMethodology.from_dict(methodology))
        st.finish_run(run_id, "complete")
        return st.get_run(run_id)


# The whole measured part of every test: 1,000 IOPS, mean 1 ms, p95 2 ms, p99 3 ms, p99.9 4 ms, CPU 50/70 %.
WHOLE = {"IOPS": "1,000", "MB/s": "4.1", "read ms": "1.000", "write ms": "n/a", "p95 ms": "2.000",
         "p99 ms": "3.000", "CPU % avg/max": "50/70"}


def shown(row: dict, *columns) -> dict:
    return {c: row[c] for c in columns or WHOLE}


def test_a_steady_tests_row_shows_every_figure_of_its_window_and_says_which_seconds(tmp_path):
    run = store_run(tmp_path, [
        ("with-cpu", method("steady", window(10, 20, cpu={"fio_pct": 12.5, "host_avg_pct": 40.4})),
         [job("local", 1000, 1000)]),
        ("no-cpu", method("steady", window(14.002, 24.004, cpu={"fio_pct": 9.0, "host_avg_pct": None})),
         [job("local", 1000, 1000)]),
        ("fixed", method("time", window(20, 30, steady=False)), [job("local", 1000, 1000)]),
    ])
    with_cpu, no_cpu, fixed = summary_rows(run)
    assert shown(with_cpu) == {"IOPS": "1,200", "MB/s": "4.9", "read ms": "0.800", "write ms": "n/a",
                               "p95 ms": "1.500", "p99 ms": "2.500", "CPU % avg/max": "40/n/a"}
    assert with_cpu["span"] == "window 10-20 s"
    # No CPU samples of its own in the window: the whole test's CPU, and a note says so.
    assert shown(no_cpu) == {**shown(with_cpu), "CPU % avg/max": "50/70"}
    assert no_cpu["span"] == "window 14-24 s"
    # A fixed-time test keeps its whole-test figures, whatever window it has.
    assert shown(fixed) == WHOLE and fixed["span"] == "whole test"
    notes = [line for line, _ in summary_notes(run)]
    assert ("until: steady tests show every figure of their row (IOPS, MB/s, latency, percentiles; CPU of no-cpu "
            "covers the whole measured part) from their measurement window of 5 rounds (column span); fixed-time "
            "tests and host rows cover the whole measured part.") in notes
    assert not any("their latency, percentiles and CPU cover the whole measured part" in n for n in notes)


def test_the_runs_tail_percentile_comes_from_the_window_too(tmp_path):
    cpu = {"fio_pct": 3.0, "host_avg_pct": 12.0, "host_max_pct": 30.0}
    run = store_run(tmp_path, [("t", method("steady", window(4, 14, cpu=cpu)),
                                [job("local", 1000, 1000)])], percentile="p99.9")
    [row] = summary_rows(run)
    assert row["p99.9 ms"] == "4.000" and row["p95 ms"] == "1.500" and row["CPU % avg/max"] == "12/30"
    notes = [line for line, _ in summary_notes(run)]
    assert any("(IOPS, MB/s, latency, percentiles and CPU) from their measurement window" in n for n in notes)


def test_a_fleet_tests_host_rows_cover_the_whole_test(tmp_path):
    run = store_run(tmp_path, [("fleet", method("steady", window(10, 20)),
                                [job("h1", 600, 900), job("h2", 400, 1150)])])
    fleet, h1, h2 = summary_rows(run)
    assert (fleet["IOPS"], fleet["p99 ms"], fleet["span"]) == ("1,200", "2.500", "window 10-20 s")
    assert (h1["test"], h1["IOPS"], h1["read ms"], h1["span"]) == ("  h1", "600", "0.900", "whole test")
    assert (h2["test"], h2["IOPS"], h2["read ms"], h2["span"]) == ("  h2", "400", "1.150", "whole test")


def test_not_steady_tests_say_their_figures_are_the_last_five_rounds(tmp_path):
    run = store_run(tmp_path, [
        ("unsteady", method("steady", window(50, 60, steady=False), steady=False), [job("local", 1000, 1000)]),
        ("short", method("steady", None, steady=False), [job("local", 1000, 1000)]),
    ])
    unsteady, short = summary_rows(run)
    assert shown(unsteady, "IOPS", "p99 ms") == {"IOPS": "1,200", "p99 ms": "2.500"}
    assert unsteady["span"] == "window 50-60 s"
    assert shown(short) == WHOLE and short["span"] == "whole test"
    notes = {line: style for line, style in summary_notes(run)}
    assert notes["unsteady: ran to max_runtime: iofleet's SNIA check found no steady window (data excursion "
                 "31% > 20%); its figures are from the last 5 rounds (50-60 s)."] == "yellow"
    assert notes["short: ran to max_runtime: iofleet's SNIA check found no steady window (data excursion "
                 "31% > 20%); its figures cover the whole measured part (fewer than 5 whole rounds)."] == "yellow"


def test_results_stored_before_window_percentiles_keep_todays_rows(tmp_path):
    old = {k: v for k, v in window(10, 20).items() if k not in ("read", "write", "all")}
    run = store_run(tmp_path, [("old", method("steady", old), [job("local", 1000, 1000)]),
                               ("fixed", method("time", None, steady=False), [job("local", 1000, 1000)])])
    assert shown_window(run.tests[0].methodology) is None
    old_row, fixed = summary_rows(run)
    # IOPS and MB/s of the window, the rest of the whole test, as the note says; no span column.
    assert shown(old_row) == {**WHOLE, "IOPS": "1,200", "MB/s": "4.9"}
    assert shown(fixed) == WHOLE
    assert "span" not in old_row and "span" not in fixed
    notes = [line for line, _ in summary_notes(run)]
    assert ("until: steady tests show IOPS and MB/s of their measurement window (5 rounds); their latency, "
            "percentiles and CPU cover the whole measured part.") in notes


def test_html_report_and_markdown_show_the_window_row(tmp_path):
    run = store_run(tmp_path, [("t", method("steady", window(10, 20, cpu={"fio_pct": 12.5, "host_avg_pct": 40.0})),
                                [job("local", 1000, 1000)])])
    context = run_report_context(run, {})
    [row] = context["rows"]
    assert (row["IOPS"], row["read ms"], row["p99 ms"], row["CPU % avg/max"], row["span"]) == (
        "1,200", "0.800", "2.500", "40/n/a", "window 10-20 s")
    md = run_report_md(run)
    assert "| t | ok | 1,200 | 4.9 | 0.800 | n/a | 1.500 | 2.500 | 40/n/a | steady r6–r10 | window 10-20 s |" in md
