"""A repeated test is one summary row: the mean of its runs with their
spread (pyperf's way), how many runs, and a status that says how many were
ok. Runs are stored in a real store from hand-built results; the
assertions are on the strings the terminal, the HTML report and the
Markdown show."""

import io

from rich.console import Console

from iofleet.fio.records import DirectionStats, JobResult
from iofleet.fleet.metrics import HostCpu
from iofleet.report.html import run_report_context, run_report_md, tables_of_run
from iofleet.report.summary import (SUMMARY_CAPTION, repeat_rows, row_style, summary_caption, summary_notes,
                                    summary_rows, summary_table)
from iofleet.results.aggregate import aggregate
from iofleet.results.methodology import FleetRecord, TestMethodology
from iofleet.results.model import TestInfo
from iofleet.results.store import Store

from .test_summary_window import method, window

PARAMS = {"bs": 4096, "read_pct": 100, "random_pct": 100, "iodepth": 8, "jobs": 1, "size": 2**26,
          "working_set_pct": 100, "runtime": 30, "ramp": 2, "engine": "io_uring", "direct": True}
NONE = DirectionStats(percentiles_ns=dict.fromkeys(("p50", "p90", "p95", "p99", "p99.9")))
ID, ONCE = "4k-r100-rand-j1-qd8", "64k-r100-rand-j1-qd8"


def job(host: str, iops: float, mean_us: float) -> JobResult:
    """30 s of reads: p95 = 2 × mean, p99 = 3 × mean."""
    ios = int(iops * 30)
    r = DirectionStats(ios=ios, io_bytes=ios * 4096, runtime_ms=30_000, iops=iops, bw_bytes_s=iops * 4096,
                       lat_n=ios, lat_mean_ns=mean_us * 1000,
                       percentiles_ns={"p50": mean_us * 1000, "p90": 2000 * mean_us, "p95": 2000 * mean_us,
                                       "p99": 3000 * mean_us, "p99.9": 4000 * mean_us})
    return JobResult(host=host, job="randread", index=0, error=0, runtime_ms=30_000, usr_cpu_pct=5.0,
                     sys_cpu_pct=20.0, read=r, write=NONE, all=r)


def store_run(tmp_path, tests: list[tuple], methodology: list[dict] | None = None):
    """tests: (id, repeat, status, jobs, host CPU avg %); a fleet test when its jobs are on several hosts;
    methodology: each test's (until: steady windows)."""
    with Store.open(tmp_path) as st:
        run_id = st.create_run(plan_name="repeats", plan_text="name: repeats\n", label=None, fio_version="fio-3.33",
                               host_facts={"hostname": "vm"}, tests_planned=len(tests))
        for seq, (test_id, repeat, status, jobs, cpu) in enumerate(tests):
            hosts = list(dict.fromkeys(j.host for j in jobs))
            fleet = FleetRecord.from_dict({"hosts": hosts, "skew": None, "groups": {}}) if len(hosts) > 1 else None
            st.save_test(run_id, seq=seq, test=TestInfo(test_id, "w", repeat, PARAMS),
                         status=status, error=None if status == "ok" else "fio exited with 1",
                         started_at="2026-11-24T00:00:00Z", ended_at="2026-11-24T00:00:40Z", jobs=jobs,
                         aggregate=aggregate(jobs), host_cpu=HostCpu(30, cpu, cpu + 20), fleet=fleet,
                         methodology=TestMethodology.from_dict(methodology[seq]) if methodology else None)
        st.finish_run(run_id, "complete")
        return st.get_run(run_id)


def three_runs(tmp_path, third: str = "ok"):
    """IOPS 900, 1,000, 1,100 (mean 1,000, standard deviation 100: 10.0 %); mean latency 1.0, 1.2, 1.4 ms."""
    return store_run(tmp_path, [(ID, 1, "ok", [job("local", 900, 1000)], 40.0),
                                (ID, 2, "ok", [job("local", 1000, 1200)], 50.0),
                                (ID, 3, third, [job("local", 1100, 1400)], 60.0),
                                (ONCE, 1, "ok", [job("local", 500, 2000)], 30.0)])


def test_a_repeated_test_is_one_row_with_the_mean_and_spread_of_its_runs(tmp_path):
    run = three_runs(tmp_path)
    repeated, once = summary_rows(run)
    assert list(repeated)[:3] == ["test", "status", "runs"]
    assert repeated == {"test": ID, "status": "ok", "runs": "3", "IOPS": "1,000 ± 10.0 %", "MB/s": "4.1 ± 10.0 %",
                        "read ms": "1.200 ± 16.7 %", "write ms": "n/a", "p95 ms": "2.400 ± 16.7 %",
                        "p99 ms": "3.600 ± 16.7 %", "CPU % avg/max": "50/70"}  # no steady column: no `until`
    # A test that ran once keeps its plain figures.
    assert once == {"test": ONCE, "status": "ok", "runs": "1", "IOPS": "500", "MB/s": "2.0", "read ms": "2.000",
                    "write ms": "n/a", "p95 ms": "4.000", "p99 ms": "6.000", "CPU % avg/max": "30/50"}
    assert summary_caption(run).startswith(SUMMARY_CAPTION)
    assert "± = standard deviation of the runs, as % of the mean" in summary_caption(run)


def test_each_run_stays_visible_in_the_report(tmp_path):
    run = three_runs(tmp_path)
    each = repeat_rows(run)
    assert [(r["test"], r["IOPS"], r["read ms"]) for r in each] == [
        (f"{ID} #1", "900", "1.000"), (f"{ID} #2", "1,000", "1.200"), (f"{ID} #3", "1,100", "1.400")]
    context = run_report_context(run, {})
    assert [r["test"] for r in context["rows"]] == [ID, ONCE] and context["repeats"] == each
    assert context["caption"] == summary_caption(run)
    md = run_report_md(run)
    assert f"| {ID} | ok | 3 | 1,000 ± 10.0 % | 4.1 ± 10.0 % | 1.200 ± 16.7 % | n/a |" in md
    assert "### Each run of the repeated tests" in md and f"| {ID} #3 | ok | 1,100 | 4.5 | 1.400 |" in md
    assert tables_of_run(run)["repeats"] == each
    console = Console(file=io.StringIO(), width=220, record=True)
    console.print(summary_table(run))
    table = console.export_text().split("Diagnostics:")[0]  # (diagnostics name each run: "ID #1")
    assert "1,000 ± 10.0 %" in table and f"{ID} #" not in table


def test_some_runs_failed_the_row_says_how_many_were_ok_and_averages_those(tmp_path):
    run = three_runs(tmp_path, third="failed")
    repeated, _ = summary_rows(run)
    # The mean of runs 1 and 2 only: IOPS 950 ± 7.4 % (standard deviation 70.7).
    assert (repeated["status"], repeated["runs"], repeated["IOPS"], repeated["read ms"]) == (
        "2/3 ok", "3", "950 ± 7.4 %", "1.100 ± 12.9 %")
    assert row_style(repeated["status"]) == "yellow" and row_style("failed") == "red"
    notes = dict(summary_notes(run))
    assert notes[f"{ID} #3: failed: fio exited with 1"] == "red"
    assert notes[f"{ID}: 2 of 3 runs ok; its row shows the mean of the ok runs only."] == "yellow"


def test_a_run_without_repeats_keeps_its_rows(tmp_path):
    run = store_run(tmp_path, [(ID, 1, "ok", [job("local", 900, 1000)], 40.0),
                               (ONCE, 1, "failed", [job("local", 500, 2000)], 30.0)])
    rows = summary_rows(run)
    assert [(r["test"], r["status"], r["IOPS"]) for r in rows] == [(ID, "ok", "900"), (ONCE, "failed", "500")]
    assert "runs" not in rows[0] and repeat_rows(run) == [] and "repeats" not in tables_of_run(run)
    assert summary_caption(run) == SUMMARY_CAPTION
    assert (f"{ONCE}: failed: fio exited with 1", "red") in summary_notes(run)


def test_a_repeated_fleet_tests_hosts_are_means_too(tmp_path):
    run = store_run(tmp_path, [(ID, 1, "ok", [job("h1", 600, 900), job("h2", 400, 1100)], 40.0),
                               (ID, 2, "ok", [job("h1", 700, 900), job("h2", 500, 1100)], 40.0)])
    fleet, h1, h2 = summary_rows(run)
    assert (fleet["runs"], fleet["IOPS"]) == ("2", "1,100 ± 12.9 %")  # 1,000 and 1,200
    # stdev(600, 700) = 70.7, 10.9 % of 650; a latency equal in both runs has no spread.
    assert (h1["test"], h1["status"], h1["runs"], h1["IOPS"], h1["read ms"]) == (
        "  h1", "host", "", "650 ± 10.9 %", "0.900 ± 0.0 %")
    assert (h2["test"], h2["IOPS"]) == ("  h2", "450 ± 15.7 %")


def test_repeated_steady_tests_average_their_windows_and_list_them(tmp_path):
    # Each window: 1,200 IOPS, mean 0.8 ms (test_summary_window.window); runs 1 and 2 steady, run 3 not.
    methods = [method("steady", window(10, 20)), method("steady", window(12, 22)),
               method("steady", window(50, 60, steady=False), steady=False)]
    run = store_run(tmp_path, [(ID, r, "ok", [job("local", 1000, 1000)], 40.0) for r in (1, 2, 3)], methods)
    [row] = summary_rows(run)
    assert (row["IOPS"], row["read ms"], row["span"]) == (
        "1,200 ± 0.0 %", "0.800 ± 0.0 %", "window 10-20 s; window 12-22 s; window 50-60 s")
    assert row["steady (IOPS)"] == "steady 2/3"
    assert [r["span"] for r in repeat_rows(run)] == ["window 10-20 s", "window 12-22 s", "window 50-60 s"]
