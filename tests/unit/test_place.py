"""The place protocol (fleet/places/base.py): both places answer every call a
study makes, the study never asks which place it has, and a test is judged
and its files kept by one rule on this host and on a fleet."""

import ast
import inspect
from dataclasses import replace
from pathlib import Path

import pytest

import iofleet
from iofleet.fio.parse import parse_output
from iofleet.fleet.places.fleet import FleetPlace
from iofleet.fleet.places.local import LocalPlace
from iofleet.fio.jobfile import LOG_PREFIX, WARMUP_LOG_PREFIX
from iofleet.fleet.targets import target_for
from iofleet.fleet.places.base import Place, collect_artifacts, verdict
from iofleet.fleet.fio_link.runner import FioRun

FIO = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
STUDIES = Path(iofleet.__file__).parent / "studies"


def _fio(returncode=0, stdout="", stderr="", stopped=False, killed=False, ended_early=False, output=None):
    return FioRun(returncode, output, stdout, stderr, stopped, killed, 3.0, ended_early)


@pytest.mark.parametrize("cls", [LocalPlace, FleetPlace])
def test_both_places_implement_every_call_with_the_protocols_parameters(cls):
    calls = [n for n, f in vars(Place).items() if getattr(f, "__isabstractmethod__", False)]
    assert {"run_test", "prepare_data", "specs_by_host", "hosts_record", "drop", "cleanup"} <= set(calls)
    assert not cls.__abstractmethods__
    for name in calls:
        ours, theirs = inspect.signature(getattr(cls, name)), inspect.signature(getattr(Place, name))
        assert list(ours.parameters) == list(theirs.parameters), (cls.__name__, name)


def test_no_study_asks_which_place_it_has():
    for path in STUDIES.glob("*.py"):
        names = {n.id for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)
                  for a in n.names}
        assert not names & {"LocalPlace", "FleetPlace"}, path.name


def test_the_local_place_is_one_host_that_is_never_lost(tmp_path):
    place = LocalPlace(target_for([str(tmp_path)]))
    assert place.specs_by_host("spec") == {"local": "spec"}
    assert place.hosts_record("spec") is None
    assert place.drop([]) == 1
    assert place.resume_record(None) == {"targets": [str(tmp_path)], "created_dirs": []}


def test_verdict_one_rule_for_every_place():
    parsed = parse_output((FIO / "multi-job-json+.json").read_text())
    jobs, disks = parsed.jobs, parsed.disks
    bad = replace(jobs[0], error=5)
    # What ended fio comes first: unreadable output, lost hosts, a kill, a stop.
    m = verdict(_fio(), jobs, disks, [], parse_error="host h2: no jobs", lost=["h2"], lost_why="lost host h2")
    assert (m.status, m.error, m.lost) == ("failed", "fio's output could not be read: host h2: no jobs", [])
    m = verdict(_fio(-9), jobs, disks, [], lost=["h2"], lost_why="lost host h2: no result")
    assert (m.status, m.error, m.lost, m.jobs) == ("partial", "lost host h2: no result", ["h2"], jobs)
    assert verdict(_fio(), [], [], [], lost=["h1"], lost_why="lost").status == "failed"
    m = verdict(_fio(-9), [], [], [])
    assert m.status == "failed" and m.error.startswith("fio was killed by signal 9 (SIGKILL)")
    m = verdict(_fio(-9, stopped=True, killed=True), jobs, disks, [])
    assert (m.status, m.error) == ("interrupted", "stopped and killed (fio did not exit)")
    assert verdict(_fio(1, stopped=True), jobs, disks, []).error == "stopped by the user"
    # Then fio's exit code and the jobs' errors; ended early (steady) is no failure.
    assert verdict(_fio(1, ended_early=True), jobs, disks, []).status == "ok"
    assert verdict(_fio(1, stderr="fio: pid=1, err=5/file:io_u.c"), jobs, disks, []).error.startswith("fio: pid=1")
    assert verdict(_fio(), jobs, disks, [bad]).error == "fio job error 5 (Input/output error)"
    assert verdict(_fio(), [], [], [], output=False).error == "fio failed without a message"
    m = verdict(_fio(), jobs, disks, [])
    assert (m.status, m.error, m.jobs, m.disks) == ("ok", None, jobs, disks)


def test_artifacts_one_rule_named_by_host_on_a_fleet(tmp_path):
    warmup, measured = f"{WARMUP_LOG_PREFIX}_iops.1.log", f"{LOG_PREFIX}_iops.1.log"
    for name in (measured, warmup, f"{measured}.10.0.0.1", "other.log"):
        (tmp_path / name).write_text(name)
    here = collect_artifacts(tmp_path, {"": "[job]"}, _fio(stdout="a\n", stderr="b\n", output="{}"), ".log")
    assert list(here) == ["job.fio", "fio-output.json", "fio-messages.txt", warmup, measured]
    assert (here["fio-messages.txt"], here[measured]) == (b"a\nb\n", measured.encode())
    fleet = collect_artifacts(tmp_path, {"h1": "[job]", "h2": "[job]"}, _fio(stdout="<10.0.0.1> a\n", output="{}"),
                              ".log.*")
    assert list(fleet) == ["job.h1.fio", "job.h2.fio", "fio-output.json", "fio-messages.txt",
                           f"{measured}.10.0.0.1"]
    assert fleet["fio-messages.txt"] == b"<10.0.0.1> a\n"
