"""One prepared working set for a study's two runs, with real fio: Easy
Run's probe keeps its data files for the profiles (as they are, or
extended when the profiles' files are fewer and larger), and a curve's sweep for its fixed-rate tests; the second run finds
them kept (fleet/targets/kept.py) and does not write them again; whatever happens,
nothing is left on the target at the end. And a scenario keeps and uses
kept data like any run."""

import dataclasses
import hashlib
import json
import threading

import pytest

from iofleet.errors import IofleetError
from iofleet.fleet.places import place_for
from iofleet.fleet.targets.kept import KEPT_NAME, files_state
from iofleet.plan import parse_plan
from iofleet.plan.easy import MiB, Durations
from iofleet.plan.scenario import parse_scenario
from iofleet.report.summary import summary_notes
from iofleet.results.store import Store
from iofleet.studies.curve import Curve, run_curve
from iofleet.studies.easy_run import easy_run, probe
from iofleet.studies.events import RunObserver
from iofleet.studies.run import RunSession
from iofleet.studies.saturate import Sweep, run_saturate
from iofleet.studies.scenario import run_scenario
from iofleet.studies.study import Where

QUICK = Durations(runtime=1, ramp=0)  # 1 s cells and profiles, no warm-up


def kept_entries(data_dir) -> dict:
    path = data_dir / KEPT_NAME
    return json.loads(path.read_text())["entries"] if path.exists() else {}


class FilesAtFirstTest(RunObserver):
    """The data files as the first test finds them (after preparation)."""

    def __init__(self, target):
        self.target, self.seen = target, None

    def test_started(self, index, spec):
        if self.seen is None:
            self.seen = files_state([self.target])


def test_easy_runs_profiles_use_the_probes_data_as_it_is(disk_dir, data_dir):
    with Store.open(data_dir) as store:
        # One job at most: the profiles' jobs are the probe's widest row, so their files are the probe's.
        probed = probe(Where([disk_dir], store=store), QUICK, working_set=16 * MiB, max_iodepth=2, max_jobs=1)
        assert probed.load.jobs == 1 and probed.load.data is not None
        after_probe = files_state([disk_dir])
        assert list(after_probe) == [str(disk_dir / "iofleet" / "iofleet-data.0.0")]
        assert [e["run"] for e in kept_entries(data_dir).values()] == [probed.run_id]
        sweep = store.get_run(probed.run_id).to_dict()
        assert sweep["methodology"]["saturate"]["kept_for_next_run"] is True
        assert sweep["methodology"]["prepare"]["written_per_host"] == {"local": 2 * 16 * MiB}  # 2 passes

        first = FilesAtFirstTest(disk_dir)
        outcome = easy_run(Where([disk_dir], store=store, observer=first), QUICK, working_set=16 * MiB,
                           load=probed.load)
        assert outcome.status == "complete"
        assert first.seen == after_probe  # nothing wrote the data between the probe's end and the first profile
        run = store.get_run(outcome.run_id)
        prepared = run.methodology.prepare.to_dict()
        assert prepared["reused"] == {"local": probed.run_id} and prepared["written_per_host"] == {}
        assert prepared["working_set_per_host"] == {"local": 16 * MiB}
        assert all(t.methodology.prepared for t in run.tests)
        assert any(line.startswith(f"Preparation: data prepared by run {probed.run_id} and kept")
                   and "not written again" in line for line, _ in summary_notes(run))
        assert "random data the probe prepared and kept for the profiles" in run.plan_text
        # The probe's summary says how fast it wrote.
        said = [line for line, _ in summary_notes(store.get_run(probed.run_id)) if line.startswith("Preparation")]
        assert said and " Written: 32.0 MiB at " in said[0] and said[0].endswith(" MB/s.")
    assert not (disk_dir / "iofleet").exists()  # the profiles' run removed the files, and the probe's directory
    assert kept_entries(data_dir) == {}


def head_digest(path, size: int) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(size)).hexdigest()


def test_profiles_with_fewer_jobs_than_the_probes_widest_row_extend_its_files(disk_dir, data_dir):
    class FirstFile(RunObserver):
        """File 0 as the profiles' first test finds it: its size and its first 8 MiB."""

        seen = None

        def test_started(self, index, spec):
            if self.seen is None:
                f = disk_dir / "iofleet" / "iofleet-data.0.0"
                self.seen = (f.stat().st_size, head_digest(f, 8 * MiB))

    with Store.open(data_dir) as store:
        probed = probe(Where([disk_dir], store=store), QUICK, working_set=16 * MiB, max_iodepth=1, max_jobs=2)
        files = disk_dir / "iofleet"
        assert probed.load.data is not None and sorted(p.name for p in files.glob("iofleet-data.*")) == [
            "iofleet-data.0.0", "iofleet-data.1.0"]
        before = head_digest(files / "iofleet-data.0.0", 8 * MiB)
        # The profiles on 1 job (whatever the probe chose here): one file of 16 MiB, the probe's file 0 extended.
        first = FirstFile()
        outcome = easy_run(Where([disk_dir], store=store, observer=first), QUICK, working_set=16 * MiB,
                           load=dataclasses.replace(probed.load, jobs=1))
        assert outcome.status == "complete"
        assert first.seen == (16 * MiB, before)  # the probe's 8 MiB kept as written, the other 8 MiB added
        run = store.get_run(outcome.run_id)
        prepared = run.methodology.prepare.to_dict()
        assert prepared["extended"] == {"local": probed.run_id} and "reused" not in prepared
        assert prepared["written_per_host"] == {"local": 2 * 8 * MiB}  # 2 passes of file 0's missing 8 MiB
        assert prepared["working_set_per_host"] == {"local": 16 * MiB}
        said = [line for line, _ in summary_notes(run) if line.startswith("Preparation")]
        assert said and said[0].startswith(f"Preparation: data prepared by run {probed.run_id} and kept, in fewer "
                                           f"or smaller files, is extended on 1 host: only each file's missing end "
                                           f"is written (8.0 MiB per host")
        assert " Written: 16.0 MiB at " in said[0]
    assert not (disk_dir / "iofleet").exists() and kept_entries(data_dir) == {}


def test_a_stopped_probe_or_profiles_that_cannot_start_leave_nothing(disk_dir, data_dir):
    stop = threading.Event()

    class StopAfterFirstCell(RunObserver):
        def test_finished(self, index, spec, result):
            stop.set()

    with Store.open(data_dir) as store:
        probed = probe(Where([disk_dir], store=store, observer=StopAfterFirstCell(), stop=stop), QUICK,
                       working_set=16 * MiB, max_iodepth=2, max_jobs=1)
        assert probed.outcome.run.status == "interrupted" and probed.outcome.data is None
        assert not (disk_dir / "iofleet").exists() and kept_entries(data_dir) == {}

        # A probe that kept its data, then profiles that fail before their run starts: the data goes.
        probed = probe(Where([disk_dir], store=store), QUICK, working_set=16 * MiB, max_iodepth=2, max_jobs=1)
        assert files_state([disk_dir])

        def refuse(plan_text, reasons):
            raise IofleetError("refused")

        with pytest.raises(IofleetError, match="refused"):
            easy_run(Where([disk_dir], store=store), QUICK, load=probed.load, on_plan=refuse)
        assert not (disk_dir / "iofleet").exists() and kept_entries(data_dir) == {}
        probed.discard_data()  # (the CLI's call after a Ctrl-C as the probe ended): once removed, nothing to do


def test_a_curves_fixed_rate_tests_use_its_sweeps_data(disk_dir, data_dir):
    curve = Curve(runtime=1, ramp=0, loads=[30], sweep=Sweep(size=8 * MiB, runtime=1, ramp=0, max_jobs=2,
                                                             max_iodepth=1, repeats=1))

    class Watch(FilesAtFirstTest):
        """The data files as the curve's run starts, and as its first test finds them."""

        runs, before = 0, None

        def run_started(self, run_id, specs, estimate_s):
            self.runs += 1
            if self.runs == 2:
                self.seen, self.before = None, files_state([self.target])

    watch = Watch(disk_dir)
    with Store.open(data_dir) as store:
        out = run_curve(Where([disk_dir], store=store, observer=watch), curve)
        assert out.result is not None and out.run.status == "complete"
        sweep, points = store.get_run(out.max_run_id), store.get_run(out.run.run_id)
        # The sweep prepared the files of its widest row (2 jobs); the points run on its best jobs × iodepth,
        # and their preparation, the same, found the data kept.
        assert sweep.methodology.prepare.working_set_per_host == {"local": 2 * 8 * MiB}
        prepared = points.methodology.prepare.to_dict()
        assert prepared["reused"] == {"local": out.max_run_id} and prepared["written_per_host"] == {}
        assert watch.before and watch.seen == watch.before  # not written between the sweep and the first point
    assert not (disk_dir / "iofleet").exists() and kept_entries(data_dir) == {}


def test_a_run_with_fewer_jobs_than_the_sweep_finds_its_data_by_covering_the_sweeps_files(disk_dir, data_dir):
    # (A curve whose most IOPS came from fewer jobs than the sweep's widest row: its preparation alone
    # would be 1 file, not the sweep's 2, and would write it again.)
    with Store.open(data_dir) as store:
        swept = run_saturate(Where([disk_dir], store=store),
                             Sweep(size=8 * MiB, runtime=1, ramp=0, max_jobs=2, max_iodepth=1, repeats=1),
                             keep_for_next=True)
        assert swept.data is not None and len(files_state([disk_dir])) == 2
        plan = parse_plan({"name": "one-job", "targets": [str(disk_dir)], "workloads": [
            {"name": "w", "bs": "4k", "read_pct": 100, "jobs": 1, "size": "8m", "runtime": "1s", "ramp": "0s"}]})
        place, specs = place_for(plan, None)
        swept.data.adopt_into(place)
        with RunSession(plan, "", store, specs=specs, place=place, prepare_for=swept.data.covers) as session:
            session.run(specs[0])
        prepared = store.get_run(session.run_id).methodology.prepare.to_dict()
        assert prepared["reused"] == {"local": swept.run_id} and prepared["written_per_host"] == {}
        assert prepared["working_set_per_host"] == {"local": 2 * 8 * MiB}  # the sweep's 2 files, kept
    assert not (disk_dir / "iofleet").exists() and kept_entries(data_dir) == {}


def test_a_scenario_keeps_its_data_when_asked_and_uses_data_kept_before(disk_dir, data_dir):
    scenario = parse_scenario({"name": "steady-load", "load": {"bs": "4k", "read_pct": 100, "iodepth": 1,
                                                               "rate_iops": 200, "size": "8m", "runtime": "2s",
                                                               "ramp": "0s"},
                               "events": [{"at": "1s", "fault": "device-slow", "mbps": 10}]})
    with Store.open(data_dir) as store:  # (the load alone: no fault is applied, none given)
        kept = run_scenario(scenario, "", "s.yaml", store, [], targets=[disk_dir], keep_files=True)
        assert kept.run.status == "complete" and files_state([disk_dir])
        assert [e["run"] for e in kept_entries(data_dir).values()] == [kept.run.run_id]
        again = run_scenario(scenario, "", "s.yaml", store, [], targets=[disk_dir])
        prepared = store.get_run(again.run.run_id).methodology.prepare.to_dict()
        assert prepared["reused"] == {"local": kept.run.run_id} and prepared["written_per_host"] == {}
    # The second one removed the files (iofleet's directory stays, empty, made by a run that kept its data).
    assert list((disk_dir / "iofleet").iterdir()) == [] and kept_entries(data_dir) == {}
