"""Terminal tables fit the window and never cut a figure: the summary of
recorded real runs (tests/fixtures/runs) rendered at 80, 100 and 160
columns, each printed figure parsed back and compared with the stored one
formatted in full; which columns each width keeps; the steady column only
when a test measured `until: steady`; the spread of repeats."""

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from iofleet.cli.main import app

from iofleet.report.fit import fit_table, middle_ellipsis, print_wide
from iofleet.results.methodology import ResumeRecord
from iofleet.report.summary import (NARROW_DROP, repeat_spread, repeat_spreads, resume_note, summary_rows,
                                    summary_table)
from iofleet.units import format_value

from .terminal_runs import recorded_run
from .repeated_runs import ID, three_runs
from .steady_runs import job, method, store_run, window

ALL = ["test", "status", "IOPS", "MB/s", "read ms", "write ms", "p95 ms", "p99 ms", "CPU % avg/max"]
KEPT = ["test", "status", "IOPS", "MB/s", "p99 ms"]
MODEL = Path(__file__).parents[2] / "examples" / "model-raid6.yaml"


def render(run, width: int | None, console_width: int | None = None) -> list[str]:
    """The summary as the CLI prints it: fitted to `width`, or (None) --wide in a console_width terminal."""
    console = Console(file=io.StringIO(), width=console_width or width, record=True)
    if width is None:
        print_wide(console, summary_table(run, None))
    else:
        console.print(summary_table(run, width))
    return console.export_text().splitlines()


def table_of(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """The header and the cells of each row of the printed summary table
    (rich puts two spaces or more between columns; no cell holds two)."""
    start = next(i for i, line in enumerate(lines) if line.startswith("  test "))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return header, rows


def stored(doc: dict) -> list[tuple[str, dict]]:
    """(name as the row shows it, exported figures) of each row: a test, its
    host groups, then its hosts (fleet tests of a few hosts). A group's
    percentiles come from its hosts' merged bins, which the export leaves
    out (terminal_runs rebuilds hosts without them): the row says n/a."""
    out = []
    for t in doc["tests"]:
        out.append((t["id"], t))
        for group, figures in (t["groups"] or {}).items():
            no_bins = {"lat_p95_us": None, "lat_p99_us": None}
            figures = figures | {"all": figures["all"] | no_bins}
            out.append((f"{group}: {t['fleet']['groups'][group]['test']}", figures))
        if t["fleet"] and len(t["hosts"]) > 1:
            order = t["fleet"]["hosts"]
            out += [(h, t["hosts"][h]) for h in sorted(t["hosts"], key=order.index)]
    return out


def expected(figures: dict) -> dict:
    """The stored figures formatted in full, independently of the summary."""
    a = figures["all"]
    ms = {"read ms": figures["read"]["lat_mean_us"], "write ms": figures["write"]["lat_mean_us"],
          "p95 ms": a["lat_p95_us"], "p99 ms": a["lat_p99_us"]}
    return {"IOPS": format_value(a["iops"], "IOPS"),
            "MB/s": format_value(None if a["bw_bytes_s"] is None else a["bw_bytes_s"] / 1e6, "MB/s"),
            **{k: format_value(None if v is None else v / 1000, "ms") for k, v in ms.items()}}


@pytest.mark.parametrize("name", ["qd-sweep", "buffered", "fleet-mixed", "fleet-uneven"])
@pytest.mark.parametrize("width", [80, 100, 160])
def test_every_printed_figure_is_the_stored_one_in_full(name, width):
    run, doc = recorded_run(name)
    lines = render(run, width)
    header, rows = table_of(lines)
    assert max(len(line.rstrip()) for line in lines[:len(rows) + 4]) <= width
    assert [c for c in ALL if c in header] == header and set(KEPT) <= set(header)
    rows_stored = stored(doc)
    assert len(rows) == len(rows_stored)
    shortened = False
    for cells, (name_stored, figures) in zip(rows, rows_stored):
        row = dict(zip(header, cells))
        assert len(cells) == len(header)
        want = expected(figures)
        for column in header:
            if column in want:
                assert row[column] == want[column], (name_stored, column)
                assert "…" not in row[column]
        if row["test"] != name_stored:  # shortened in the middle, by the visible rule only
            head, _, tail = row["test"].partition("…")
            assert name_stored.startswith(head) and name_stored.endswith(tail) and len(head) >= 5
            shortened = True
    left_out = re.findall(rf"To fit {width} columns: .*? in full\.", " ".join(line.strip() for line in lines))
    missing = [c for c in ALL if c not in header]
    if missing or shortened:
        (note,) = left_out
        assert all(c in note for c in missing) and ("shortened" in note) == shortened and "--wide" in note
    else:
        assert not left_out


def test_each_width_keeps_the_essential_columns_and_drops_the_rest_in_order():
    run, _ = recorded_run("qd-sweep")  # read only: every column would be 104 columns wide
    assert table_of(render(run, 160))[0] == ALL
    assert table_of(render(run, 100))[0] == [c for c in ALL if c != "CPU % avg/max"]
    header80 = table_of(render(run, 80))[0]
    assert set(KEPT) <= set(header80) and "CPU % avg/max" not in header80 and "write ms" not in header80
    # The order of leaving out: the first columns of NARROW_DROP go first.
    dropped = [c for c in NARROW_DROP if c in ALL and c not in header80]
    assert dropped == [c for c in NARROW_DROP if c in ALL][:len(dropped)]


def test_a_test_that_writes_keeps_its_write_latency_at_80_columns():
    run, doc = recorded_run("unprepared")  # a read test and a write test
    assert any(t["write"]["ios"] for t in doc["tests"]) and any(t["read"]["ios"] for t in doc["tests"])
    header, rows = table_of(render(run, 80))
    assert {"read ms", "write ms", "p99.9 ms"} <= set(header), header  # the plan's percentile: p99.9
    write = next(r for r in rows if r[0].startswith("4k-r0-"))
    assert write[header.index("write ms")] != "n/a" and write[header.index("read ms")] == "n/a"


def test_wide_shows_every_column_and_wraps_rather_than_cuts():
    run, doc = recorded_run("buffered")
    lines = render(run, None, console_width=80)  # --wide in an 80-column terminal
    header, rows = table_of(lines)
    assert header == ALL and "To fit" not in "\n".join(lines)
    for cells, t in zip(rows, doc["tests"]):  # full width: the terminal wraps the long lines
        assert cells[0] == t["id"] and cells[2] == format_value(t["all"]["iops"], "IOPS")


def test_names_shorten_in_the_middle_and_figures_never():
    name = "4k-r100-rand-j1-qd1-sz128m-rt6s-ramp0s"
    assert middle_ellipsis(name, 20) == "4k-r100-ra…6s-ramp0s"  # 10 first, 9 last characters
    assert middle_ellipsis("short", 20) == "short"
    table = Table()
    table.add_column("test")
    table.add_column("IOPS", justify="right")
    table.add_row("x" * 60, "1,231,830")
    dropped, shortened = fit_table(table, 40, ("test", "IOPS"))
    console = Console(file=io.StringIO(), width=40, record=True)
    console.print(table)
    out = console.export_text()
    assert not dropped and shortened and "1,231,830" in out and max(map(len, out.splitlines())) <= 40


def test_the_steady_column_only_when_a_test_measured_until_steady(tmp_path):
    run, _ = recorded_run("qd-sweep")  # every test fixed-time
    assert all("steady (IOPS)" not in row for row in summary_rows(run))
    steady = store_run(tmp_path, [("a", method("steady", window(10, 20)), [job("local", 1000, 1000)]),
                                  ("b", method("time", None, steady=False), [job("local", 1000, 1000)])])
    assert [row["steady (IOPS)"] for row in summary_rows(steady)][0].startswith("steady")


def test_repeat_spread_gives_the_mean_and_the_spread_the_row_shows(tmp_path):
    run = three_runs(tmp_path)  # IOPS 900, 1,000, 1,100; p99 3.0, 3.6, 4.2 ms
    runs = [t for t in run.tests if t.id == ID]
    spread = repeat_spread(runs)
    assert spread["IOPS"] == {"n": 3, "mean": 1000.0, "stdev": 100.0, "min": 900.0, "max": 1100.0}
    assert spread["tail ms"]["min"] == pytest.approx(3.0) and spread["tail ms"]["max"] == pytest.approx(4.2)
    assert summary_rows(run)[0]["IOPS"] == "1,000 ± 10.0 %"
    assert repeat_spreads(run)[ID] == spread and repeat_spreads(run)["64k-r100-rand-j1-qd8"]["IOPS"]["n"] == 1


def test_a_resume_note_says_what_happened_in_plain_sentences():
    note = resume_note(ResumeRecord.from_dict({"at": "2026-11-21T09:56:01+00:00", "tests": ["4k-qd4", "4k-qd8"],
                                               "replaced": {"4k-qd8": "interrupted"}, "prepare": {"seconds": 0.4}}))
    assert note == ("Resumed at 2026-11-21T09:56:01+00:00: ran 4k-qd4, 4k-qd8. 4k-qd8 was run again; its "
                    "interrupted result was replaced. The data files were written again first (0.4 s).")


def test_the_model_table_fits_80_columns_with_its_expected_figures_whole():
    runner = CliRunner()
    doc = json.loads(runner.invoke(app, ["model", str(MODEL), "-f", "json"]).output)
    out = runner.invoke(app, ["model", str(MODEL)], env={"COLUMNS": "80"}).output
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("workload "))
    header = re.split(r"\s{2,}", lines[start].strip())
    assert max(map(len, lines)) <= 80 and {"workload", "expected IOPS", "expected MB/s", "bound"} <= set(header)
    rows = [dict(zip(header, re.split(r"\s{2,}", line.strip()))) for line in lines[start + 2:start + 2 + 5]]
    assert [(r["workload"], r["expected IOPS"]) for r in rows] == \
        [(w["workload"], format_value(w["iops"], "IOPS")) for w in doc["workloads"]]
    assert "To fit 80 columns: left out write penalty" in " ".join(out.split())
