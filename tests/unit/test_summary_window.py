"""The summary of `until: steady` tests: every figure of a row covers one
time span. Runs are stored in a real store from hand-built results (the
window figures as the run study stores them, issue 17); the assertions are
on the strings the text summary, the HTML report and the Markdown show."""

from iofleet.report.html import run_report_context, run_report_md
from iofleet.report.summary import shown_window, summary_notes, summary_rows

from .steady_runs import NO_IO, figures, job, method, store_run, window

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
            "tests cover the whole measured part.") in notes
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


def test_a_fleet_window_with_each_hosts_part_gives_each_host_row_its_own_window_figures(tmp_path):
    win = window(10, 20)
    win["hosts"] = {"h1": {"read": figures(700, 850, 1600, 2600, 4100), "write": dict(NO_IO),
                           "all": figures(700, 850, 1600, 2600, 4100)},
                    "h2": {"read": figures(500, 730, 1400, 2400, 3900), "write": dict(NO_IO),
                           "all": figures(500, 730, 1400, 2400, 3900)}}
    run = store_run(tmp_path, [("fleet", method("steady", win) | {"round_spread_s": 0.031},
                                [job("h1", 600, 900), job("h2", 400, 1150)]),
                               ("apart", method("steady", window(10, 20)) | {"round_spread_s": 0.9},
                                [job("h1", 600, 900), job("h2", 400, 1150)])])
    _, h1, h2, _, old_h1, _ = summary_rows(run)
    assert (h1["IOPS"], h1["read ms"], h1["p99 ms"], h1["span"]) == ("700", "0.850", "2.600", "window 10-20 s")
    assert (h2["IOPS"], h2["read ms"], h2["p99 ms"], h2["span"]) == ("500", "0.730", "2.400", "window 10-20 s")
    assert old_h1["span"] == "whole test"  # a window stored without the hosts' parts: the whole test, as before
    notes = dict(summary_notes(run))
    assert ("Fleet rounds: each host's from its own fio server's status; the hosts closed the same round at most "
            "0.90 s apart.") in notes
    # 0.9 s of a 2-s round is further apart than a quarter of a round: said in yellow.
    assert notes["Fleet rounds far apart: apart (0.9 s of 2 s); a fleet round sums seconds that differ from host "
                 "to host by more than 25% of a round (hosts whose fio started apart: see the start skew)."] == "yellow"
    assert any("host rows cover the whole measured part" in n for n in notes)  # the old window's


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
