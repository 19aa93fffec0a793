"""How fast preparation writes, and what it shares: the rate and the time
left while it writes (one progress model, drawn by the terminal), the
rate in the run's summary from its stored record, and Easy Run's profiles
on the probe's kept working set (plan.easy, studies.easy_run)."""

from types import SimpleNamespace

from iofleet.cli.progress import live_text, pipe_line
from iofleet.plan import expand, parse_plan
from iofleet.plan.easy import GiB, MiB, Durations, HostFacts, Load, easy_plan
from iofleet.report.summary import prepare_line
from iofleet.results.methodology import PrepareRecord
from iofleet.studies.easy_run import shares_files
from iofleet.studies.progress import RunProgress

from .progress_clock import Clock

RECORD = {"mode": "random", "passes": 2, "bs": 131072, "working_set_per_host": {"h1": 256 * MiB, "h2": 256 * MiB},
          "written_per_host": {"h1": 512 * MiB, "h2": 512 * MiB}, "seconds": 74.0}


def test_the_progress_while_preparing_says_the_rate_and_the_time_left():
    m = RunProgress(clock=Clock())
    m.preparing(21e6, 105e6, 3.0, None)  # 7 MB/s so far: 12 s left for the other 84 MB
    assert m.preparing_data.to_dict() == {"done_bytes": 21e6, "total_bytes": 105e6, "elapsed_s": 3.0, "mb_s": 7.0,
                                          "eta_s": 12.0}
    assert live_text(m) == "  preparing data: 20.0 MiB of 100.1 MiB written, 7.0 MB/s, 0:00:12 left"
    assert pipe_line(m, "1") == "  preparing data: 20.0 MiB of 100.1 MiB, 0:00:03 so far, 7.0 MB/s, 0:00:12 left"
    # Before the first byte: no rate, no guess.
    m.preparing(0, 105e6, 0.5, None)
    assert m.preparing_data.to_dict()["eta_s"] is None and live_text(m).endswith(" written, 0.0 MB/s")
    # On a fleet fio's client says nothing until the end: elapsed only.
    m.preparing(None, 105e6, 9.0, {})
    said = m.preparing_data.to_dict()
    assert said["mb_s"] is None and said["eta_s"] is None
    assert pipe_line(m, "1") == "  preparing data: 100.1 MiB, 0:00:09 so far"


def test_the_summary_says_how_much_preparation_wrote_and_how_fast():
    assert prepare_line(PrepareRecord.from_dict(RECORD)) == (
        "Preparation: random data written sequentially over 256.0 MiB per host (2 passes of 128.0 KiB writes) on 2 "
        "hosts in 74.0 s. Written: 1.0 GiB at 14.5 MB/s (7.3 MB/s per host).")
    one = RECORD | {"working_set_per_host": {"local": 256 * MiB}, "written_per_host": {"local": 512 * MiB},
                    "seconds": 1.1}
    assert prepare_line(PrepareRecord.from_dict(one)).endswith(" on 1 host in 1.1 s. Written: 512.0 MiB at 488.1 MB/s.")
    # Data used as it was kept: nothing written, no rate; the run that prepared it is named.
    reused = RECORD | {"written_per_host": {}, "seconds": 0.0, "reused": {"h1": 7, "h2": 7}}
    assert prepare_line(PrepareRecord.from_dict(reused)) == ("Preparation: data prepared by run 7 and kept (keep_files) is used as it is on 2 "
                                    "hosts, as the last run's tests left it: not written again.")


def test_profiles_on_the_probes_data_keep_its_working_set_and_say_so():
    # The free space now counts the probe's files: the working set (and why) is the probe's, not 10 % of what is left.
    facts = [HostFacts("local", cpus=2, free_bytes=3 * GiB)]
    load = Load(2, 16, "jobs × iodepth: 2 × 16 (measured)", working_set=1 * GiB,
                working_set_why="working set: 1.0 GiB per host (10% of …)", data=object())
    data, reasons = easy_plan(facts, ["/d"], Durations(), None, load)
    specs = expand(parse_plan(data))
    assert {(s.jobs, s.size) for s in specs} == {(2, 512 * MiB)}
    assert "working set: 1.0 GiB per host (10% of …)" in reasons
    assert any(r.startswith("files: 2 per host (one per job) of 512.0 MiB: random data the probe prepared and kept")
               for r in reasons)


def test_the_profiles_use_the_probes_files_as_they_are_or_extended():
    covers = [SimpleNamespace(jobs=j, working_set=128 * MiB) for j in (1, 2)]  # the probe's grid: 2 files of 128 MiB
    probed = SimpleNamespace(data=SimpleNamespace(covers=covers))
    assert shares_files(probed, Load(2, 8, ""), 256 * MiB)  # its widest row: the same 2 files
    assert shares_files(probed, Load(1, 16, ""), 256 * MiB)  # 1 job: file 0 extended to 256 MiB
    assert not shares_files(probed, Load(2, 8, ""), 128 * MiB)  # files of 64 MiB: the probe's cannot shrink
    assert not shares_files(SimpleNamespace(data=None), Load(2, 8, ""), 256 * MiB)
