"""Piped output (stdout not a terminal, e.g. a nohup log): a progress line
at a steady pace during a test, with its name, elapsed of planned time and
the latest IOPS; the pace is a constant an env var changes."""

import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from iofleet.cli.results import file_size
from iofleet.cli.run import resume_command
from iofleet.cli.progress import PIPE_PROGRESS_S, PROGRESS_EVERY_ENV, TerminalProgress, pipe_interval, pipe_line
from iofleet.errors import IofleetError
from iofleet.studies.live_state import Publisher
from iofleet.fleet.fio_link.runner import LiveFigures

from .progress_clock import specs, started


def test_the_pipe_line_names_the_test_its_time_and_latest_iops():
    m, clock, (a, _) = started()  # 5 s warm-up + 20 s
    assert pipe_line(m, "1/2") is None  # between tests: nothing to say
    m.test_started(0, a)
    plan = m.estimate_s
    assert pipe_line(m, "1/2") == (f"  test 1/2 {a.id}: starting, 0:00:00 of 0:00:25, no IOPS reported yet; "
                                   f"the plan: 0:00:{plan:02.0f} left")
    clock.now += 12
    m.test_live(0, a, LiveFigures(elapsed_s=12.0, iops=75_210.4, bw_bytes_s=3e8, lat_mean_ns=100_000.0))
    assert pipe_line(m, "1/2") == (f"  test 1/2 {a.id}: measuring, 0:00:12 of 0:00:25, 75,210 IOPS; "
                                   f"the plan: 0:00:{plan - 12:02.0f} left")


def test_piped_output_gets_a_line_every_interval_during_a_test(tmp_path):
    out = io.StringIO()
    (a, _) = specs()
    with TerminalProgress(Console(file=out, force_terminal=False, width=200), every_s=0.05) as progress:
        run = Publisher(tmp_path, progress, "p", None)  # as the run's session makes it
        run.run_started(3, specs(), 54.0)
        run.test_started(0, a)
        run.test_live(0, a, LiveFigures(elapsed_s=6.0, iops=1200.0, bw_bytes_s=4.9e6, lat_mean_ns=2e5))
        time.sleep(0.4)
    lines = [line for line in out.getvalue().splitlines() if line.startswith(f"  test 1/2 {a.id}: measuring")]
    assert 3 <= len(lines) <= 9 and lines[-1].split("; the plan: ")[0].endswith("1,200 IOPS")
    assert Console(file=io.StringIO(), force_terminal=True).is_terminal  # a terminal draws bars instead:
    assert TerminalProgress(Console(file=io.StringIO(), force_terminal=True)).every_s is None


def test_the_pace_is_10_s_unless_the_env_var_says_otherwise(monkeypatch):
    monkeypatch.delenv(PROGRESS_EVERY_ENV, raising=False)
    assert pipe_interval() == PIPE_PROGRESS_S == 10
    monkeypatch.setenv(PROGRESS_EVERY_ENV, "0.5")
    assert pipe_interval() == 0.5
    monkeypatch.setenv(PROGRESS_EVERY_ENV, "soon")
    with pytest.raises(IofleetError, match=f"{PROGRESS_EVERY_ENV}='soon': give the seconds"):
        pipe_interval()


def test_the_resume_hint_names_the_data_dir_only_when_it_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IOFLEET_DATA", raising=False)
    assert resume_command(4, tmp_path / "iofleet-data" / "results.db") == "iofleet run --resume 4"
    assert resume_command(4, Path("/srv/my runs/results.db")) == "iofleet run --resume 4 --data-dir '/srv/my runs'"
    monkeypatch.setenv("IOFLEET_DATA", "/srv/my runs")
    assert resume_command(4, Path("/srv/my runs/results.db")) == "iofleet run --resume 4"


def test_written_sizes_read_as_people_read_them():
    assert [file_size(n) for n in (700, 1_300, 999_949, 5_012_345)] == ["700 bytes", "1.3 kB", "999.9 kB", "5.0 MB"]
