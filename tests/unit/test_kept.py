"""Kept data (fleet/targets/kept.py): a run with keep_files records what its
targets hold and what prepared it; a later run with the same preparation
uses the data as it is, on the hosts where it is still there, and the
record goes with a clean-up, a failed or stopped preparation, or a new one."""

import json
import os
import time
import threading

import pytest

from iofleet.analysis.methodology import prepare_note
from iofleet.results.methodology import PrepareRecord, ResumeRecord
from iofleet.fleet.targets import Access, target_for
from iofleet.fleet.places import fleet as fleet_place
from iofleet.fleet.places import local as local_place
from iofleet.fleet.places.fleet import FleetPlace
from iofleet.fleet.places.local import LocalPlace
from iofleet.fleet.inventory import Host
from iofleet.fleet.targets.kept import (KEPT_NAME, KeptData, data_key, file_sizes, files_state, fingerprint, host_key,
                                kept_entry, tail_tiers)
from iofleet.fleet.targets.files import TargetDirs
from iofleet.fleet.fio_link.remote import FleetRun
from iofleet.fleet.fio_link.runner import FioRun
from iofleet.plan import expand, parse_plan

MiB = 1024 * 1024
PLAN = {"name": "k", "prepare_passes": 1, "defaults": {"size": "1m", "ramp": "0s", "runtime": "1s"},
        "workloads": [{"name": "w", "jobs": 2}]}


def test_the_fingerprint_is_what_is_written_where_not_how():
    tiers, names = [(2, MiB)], ["/data/a", "/data/b"]

    def on(names):
        return target_for(names, Access(host="h1"))  # a fleet host's paths, as written

    where = on(names)
    same = fingerprint(tiers, where, "random", 2, 131072)
    assert same == fingerprint(list(tiers), on(list(names)), "random", 2, 131072) and len(same) == 64
    others = [fingerprint([(2, 2 * MiB)], where, "random", 2, 131072), fingerprint([(3, MiB)], where, "random", 2,
              131072), fingerprint(tiers, on(names[:1]), "random", 2, 131072), fingerprint(tiers, on(names[::-1]),
              "random", 2, 131072), fingerprint(tiers, where, "zero", 2, 131072),
              fingerprint(tiers, where, "random", 1, 131072), fingerprint(tiers, where, "random", 2, 4096)]
    assert same not in others and len(set(others)) == len(others)
    assert fingerprint(tiers, on(["/dev/sdb"]), "random", 2, 131072) is None  # a device is never reused


def usable(kept: KeptData, key: str, print_: str, files: dict | None = None) -> dict | None:
    found = kept.find(key, print_, files)
    assert found is None or found.tails == []  # (no layout given: as it is, or not at all)
    return found.entry if found else None


def test_an_entry_is_used_only_when_it_matches(tmp_path):
    kept, key = KeptData(tmp_path), data_key("10.0.0.1:8765", ["/data"])
    assert usable(kept, key, "f1") is None  # no file yet
    kept.update({key: kept_entry({"fingerprint": "f1"}, 7, {"/data/x": [1, 2]})})
    assert usable(kept, key, "f1", {"/data/x": [1, 2]})["run"] == 7
    assert usable(kept, key, "f2", {"/data/x": [1, 2]}) is None  # another preparation
    assert usable(kept, key, "f1", {"/data/x": [1, 3]}) is None  # written since
    assert usable(kept, key, "f1", {}) is None  # the files are gone
    assert usable(kept, data_key("10.0.0.1:8765", ["/other"]), "f1") is None
    assert KeptData(tmp_path, reuse=False).find(key, "f1", {"/data/x": [1, 2]}) is None  # reuse_data: false
    # Used as kept by run 9: the run that prepared it stays named.
    kept.update({key: kept_entry(usable(kept, key, "f1", {"/data/x": [1, 2]}), 9)}, forget=[key])
    assert (kept.entries()[key]["run"], kept.entries()[key]["kept_by"]) == (7, 9)
    kept.update(forget=[key])
    assert kept.entries() == {} and usable(kept, key, "f1") is None
    (tmp_path / KEPT_NAME).write_text("{not json")
    assert kept.entries() == {}  # a damaged file: nothing is reused


def test_the_tails_that_turn_kept_files_into_the_ones_wanted():
    assert file_sizes([(4, MiB), (1, 4 * MiB)]) == [4 * MiB, MiB, MiB, MiB]
    # Easy Run: the probe's 2 files of 128 MiB, the profiles' 1 of 256 MiB: file 0 grows by 128 MiB.
    assert tail_tiers([(2, 128 * MiB)], [(1, 256 * MiB)]) == [(1, 128 * MiB)]
    assert tail_tiers([(2, 2 * MiB)], [(2, 2 * MiB)]) == []  # the same files: nothing to write
    assert tail_tiers([(2, 2 * MiB)], [(1, 2 * MiB)]) == []  # file 0 as it is (file 1 not needed)
    # More files, and larger ones: the widest tier first, then what file 0 needs more.
    assert tail_tiers([(1, MiB)], [(3, 2 * MiB), (1, 4 * MiB)]) == [(3, 2 * MiB), (1, MiB)]
    assert tail_tiers([(1, 4 * MiB)], [(1, 2 * MiB)]) is None  # a file cannot shrink
    assert tail_tiers([(2, MiB), (1, 4 * MiB)], [(2, 4 * MiB)]) is None  # file 1 would need more than file 0


def test_kept_files_of_the_same_layout_are_extended_not_written_again(tmp_path):
    kept, key = KeptData(tmp_path), data_key("local", ["/data"])
    kept.update({key: kept_entry({"fingerprint": "f2x1", "layout": "L", "tiers": [(2, MiB)]}, 7, {"/d": [1, 2]})})
    found = kept.find(key, "f1x2", {"/d": [1, 2]}, layout="L", tiers=[(1, 2 * MiB)])
    assert found.entry["run"] == 7 and found.tails == [(1, MiB)]
    assert kept.find(key, "f1x2", {"/d": [1, 2]}, layout="other", tiers=[(1, 2 * MiB)]) is None  # another layout
    assert kept.find(key, "f1x2", {"/d": [1, 3]}, layout="L", tiers=[(1, 2 * MiB)]) is None  # written since
    assert kept.find(key, "f1x2", {"/d": [1, 2]}) is None  # a target whose files cannot grow (no layout)
    assert kept.find(key, "f2x1", {"/d": [1, 2]}, layout="L", tiers=[(2, MiB)]).tails == []


def test_concurrent_runs_lose_no_entry_and_no_reader_sees_half_a_file(tmp_path):
    kept = KeptData(tmp_path)
    seen_bad = []

    def writer(n):
        for i in range(15):
            kept.update({f"h{n}-{i}": {"fingerprint": "f", "run": n}}, forget=[f"h{n}-{i - 1}"])

    def reader():
        for _ in range(200):
            try:
                json.loads((tmp_path / KEPT_NAME).read_text() or "{}")
            except FileNotFoundError:
                pass
            except ValueError:
                seen_bad.append(1)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(kept.entries()) == sorted(f"h{n}-14" for n in range(6)) and not seen_bad
    assert sorted(os.listdir(tmp_path)) == [KEPT_NAME, "kept-data.lock"]  # no temporary file left


def _local(tmp_path, kept):
    target = tmp_path / "t"
    target.mkdir(exist_ok=True)
    place = LocalPlace(target_for([str(target)]))
    place.prepare()
    steps = expand(parse_plan(PLAN))
    prepared = place.prepare_data(steps, "random", 1, 131072, tmp_path, threading.Event(), lambda *a: None, kept)
    return place, prepared


def test_local_data_is_reused_until_a_file_changes(tmp_path, monkeypatch):
    fio_calls = []

    def fake_fio(cmd, work, stop, on_live=None, **kw):  # writes the files as preparation would
        fio_calls.append(cmd)
        for n in range(2):
            (tmp_path / "t" / "iofleet" / f"iofleet-data.{n}.0").write_bytes(b"x" * 4096)
        return FioRun(0, None, "", "", False, False, 0.1)

    monkeypatch.setattr(local_place, "run_fio", fake_fio)
    monkeypatch.setattr(local_place, "resolve_engine", lambda target, engine, direct: "psync")
    kept = KeptData(tmp_path)
    place, prepared = _local(tmp_path, kept)
    assert len(fio_calls) == 1 and not prepared.reused and prepared.written_per_host == {"local": 2 * MiB}
    place.record_data(kept, 1, keep=True)
    place.release()
    key = data_key("local", [tmp_path / "t"])
    assert set(kept.entries()[key]["files"]) == {str(tmp_path / "t" / "iofleet" / f"iofleet-data.{n}.0")
                                                 for n in range(2)}

    place, prepared = _local(tmp_path, kept)
    assert len(fio_calls) == 1 and prepared.reused == {"local": 1} and prepared.written_per_host == {}
    assert prepared.to_dict()["reused"] == {"local": 1} and prepared.working_set_per_host == {"local": 2 * MiB}
    place.record_data(kept, 2, keep=True)
    place.release()
    assert (kept.entries()[key]["run"], kept.entries()[key]["kept_by"]) == (1, 2)

    # Changed in place, its mtime put back (as `touch -r` or a careful tool does): its ctime still moved.
    f = tmp_path / "t" / "iofleet" / "iofleet-data.1.0"
    before = f.stat()
    time.sleep(0.01)
    with open(f, "r+b") as out:
        out.write(b"y")
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    place, prepared = _local(tmp_path, kept)
    assert len(fio_calls) == 2 and not prepared.reused
    place.record_data(kept, 3, keep=False)  # not kept (its clean-up ran): the record goes
    place.release()
    assert kept.entries() == {}


def test_a_stopped_local_preparation_leaves_no_record(tmp_path, monkeypatch):
    monkeypatch.setattr(local_place, "run_fio", lambda *a, **kw: FioRun(-15, None, "", "", True, False, 0.1))
    monkeypatch.setattr(local_place, "resolve_engine", lambda target, engine, direct: "psync")
    kept = KeptData(tmp_path)
    key = data_key("local", [tmp_path / "t"])
    kept.update({key: {"fingerprint": "older", "run": 1}})
    place, prepared = _local(tmp_path, kept)
    assert key not in kept.entries()  # forgotten as the new preparation began
    place.record_data(kept, 2, keep=True)
    place.release()
    assert kept.entries() == {}


def _fleet(monkeypatch, tmp_path, leftovers):
    prepared_on = []

    def fake_run(jobfiles, hosts, work, stop, **kw):
        prepared_on.append(sorted(jobfiles))
        return FleetRun(fio=FioRun(0, None, "", "", False, False, 0.5))

    monkeypatch.setattr(fleet_place, "run_on_hosts", fake_run)
    monkeypatch.setattr(fleet_place, "resolve_fleet_engines",
                        lambda todo, engine, direct, work, stop, targets: {h.name: "psync" for h in todo})
    hosts = [Host(name=f"h{i}", address=f"10.0.0.{i}", targets=["/data"]) for i in (1, 2, 3)]
    place = FleetPlace(hosts)
    place._leftovers = leftovers  # what prepare()'s host check found
    return place, place.fit(expand(parse_plan(PLAN)), True), prepared_on


def test_only_fleet_hosts_without_their_kept_data_are_prepared(tmp_path, monkeypatch):
    kept = KeptData(tmp_path)
    place, steps, prepared_on = _fleet(monkeypatch, tmp_path, {"h1": True, "h2": True, "h3": True})
    place.prepare_data(steps, "random", 1, 131072, tmp_path, threading.Event(), lambda *a: None, kept)
    assert prepared_on == [["h1", "h2", "h3"]]
    place.lost = {"h3"}  # lost in a test: what it holds is not known
    place.record_data(kept, 4, keep=True)
    assert sorted(kept.entries()) == sorted(host_key(h) for h in place.hosts[:2])

    # h2's files are gone (its check read nothing): only h2 is written; h3 has no record.
    place, steps, prepared_on = _fleet(monkeypatch, tmp_path, {"h1": True, "h2": False, "h3": True})
    prepared = place.prepare_data(steps, "random", 1, 131072, tmp_path, threading.Event(), lambda *a: None, kept)
    assert prepared_on == [["h2", "h3"]] and prepared.reused == {"h1": 4}
    assert sorted(prepared.written_per_host) == ["h2", "h3"] and len(prepared.working_set_per_host) == 3
    place.record_data(kept, 5, keep=True)
    assert {k: v["run"] for k, v in kept.entries().items()} == {host_key(h): run for h, run in
                                                                zip(place.hosts, (4, 5, 5))}

    # Everything kept: no preparation round at all. Another preparation (2 passes): all written again.
    place, steps, prepared_on = _fleet(monkeypatch, tmp_path, {"h1": True, "h2": True, "h3": True})
    prepared = place.prepare_data(steps, "random", 1, 131072, tmp_path, threading.Event(), lambda *a: None, kept)
    assert prepared_on == [] and prepared.reused == {"h1": 4, "h2": 5, "h3": 5} and prepared.seconds == 0
    place.prepare_data(steps, "random", 2, 131072, tmp_path, threading.Event(), lambda *a: None, kept)
    assert prepared_on == [["h1", "h2", "h3"]] and kept.entries() == {}  # forgotten while it writes


def test_fleet_hosts_extend_kept_files_when_the_next_run_wants_fewer_larger_ones(tmp_path, monkeypatch):
    kept = KeptData(tmp_path)
    place, steps, prepared_on = _fleet(monkeypatch, tmp_path, {"h1": True, "h2": True, "h3": True})
    place.prepare_data(steps, "random", 1, 131072, tmp_path, threading.Event(), lambda *a: None, kept)
    place.record_data(kept, 4, keep=True)  # 2 files of 1 MiB on each host

    jobfiles = {}
    monkeypatch.setattr(fleet_place, "run_on_hosts", lambda files, hosts, work, stop, **kw: (
        jobfiles.update(files), FleetRun(fio=FioRun(0, None, "", "", False, False, 0.5)))[1])
    place = FleetPlace(place.hosts)
    place._leftovers = {"h1": True, "h2": False, "h3": True}  # h2's files are gone
    one = parse_plan(PLAN | {"defaults": PLAN["defaults"] | {"size": "3m"}, "workloads": [{"name": "w", "jobs": 1}]})
    prepared = place.prepare_data(place.fit(expand(one), True), "random", 1, 131072, tmp_path, threading.Event(),
                                  lambda *a: None, kept)
    assert prepared.extended == {"h1": 4, "h3": 4} and not prepared.reused
    assert prepared.written_per_host == {"h1": 2 * MiB, "h2": 3 * MiB, "h3": 2 * MiB}  # only file 0's missing end
    assert "file_append=1" in jobfiles["h1"] and "size=2097152" in jobfiles["h1"] and "numjobs=1" in jobfiles["h1"]
    assert "file_append" not in jobfiles["h2"] and "size=3145728" in jobfiles["h2"]
    place.record_data(kept, 5, keep=True)
    assert {v["run"] for v in kept.entries().values()} == {5}  # extended: the data is now run 5's preparation
    assert prepare_note(PrepareRecord.from_dict(prepared.to_dict())) == (
        "Preparation: random data written sequentially over 3.0 MiB per host (1 pass of 128.0 KiB writes) on 1 "
        "host in 0.5 s. Data prepared by run 4 and kept, in fewer or smaller files, is extended on 2 hosts: only "
        "each file's missing end is written (2.0 MiB per host, random data, 1 pass).")


def test_the_preparation_note_says_which_hosts_used_kept_data():
    old = {"mode": "random", "passes": 2, "bs": 131072, "working_set_per_host": {"h1": 16 * MiB, "h2": 16 * MiB},
           "written_per_host": {"h1": 32 * MiB, "h2": 32 * MiB}, "seconds": 4.84}
    assert prepare_note(PrepareRecord.from_dict(old)) == ("Preparation: random data written sequentially over 16.0 MiB per host (2 passes "
                                 "of 128.0 KiB writes) on 2 hosts in 4.8 s.")  # as runs stored before reuse say
    every = old | {"written_per_host": {}, "seconds": 0.0, "reused": {"h1": 12, "h2": 12}}
    assert prepare_note(PrepareRecord.from_dict(every)) == ("Preparation: data prepared by run 12 and kept (keep_files) is used as it is on "
                                   "2 hosts, as the last run's tests left it: not written again.")
    some = old | {"written_per_host": {"h2": 32 * MiB}, "seconds": 1.2, "reused": {"h1": 3, "h3": 5},
                  "working_set_per_host": {"h1": 16 * MiB, "h2": 8 * MiB, "h3": 16 * MiB}}
    assert prepare_note(PrepareRecord.from_dict(some)) == (
        "Preparation: random data written sequentially over 8.0 MiB per host (2 passes of 128.0 KiB writes) on 1 "
        "host in 1.2 s. Data prepared by runs 3 (1 host), 5 (1 host) and kept (keep_files) is used as it is on 2 "
        "hosts, as the last run's tests left it: not written again.")


def test_files_state_lists_only_iofleets_data_files(tmp_path):
    dirs = TargetDirs([tmp_path])
    dirs.prepare()
    dirs.claim(1)
    (tmp_path / "iofleet" / "iofleet-data.0.0").write_bytes(b"x" * 8192)
    (tmp_path / "iofleet" / "notes.txt").write_text("a user's")
    dirs.release()
    state = files_state([tmp_path])
    assert list(state) == [str(tmp_path / "iofleet" / "iofleet-data.0.0")] and state[list(state)[0]][0] == 8192


@pytest.mark.parametrize("value,ok", [(True, True), (False, True), ("maybe", False)])
def test_reuse_data_is_validated_like_the_other_run_settings(value, ok):
    if ok:
        assert parse_plan(PLAN | {"reuse_data": value}).reuse_data in (True, False)
    else:
        with pytest.raises(Exception, match="reuse_data: expected true or false"):
            parse_plan(PLAN | {"reuse_data": value})
    assert parse_plan(PLAN).reuse_data is True


def test_a_resume_that_used_kept_data_says_so_not_that_it_wrote_it():
    from iofleet.report.summary import resume_note
    r = {"at": "2026-11-24T13:00:00+00:00", "tests": ["t1"], "replaced": {}}
    reused = {"written_per_host": {}, "seconds": 0.0, "reused": {"local": 3}}
    assert resume_note(ResumeRecord.from_dict(r | {"prepare": reused})) == ("Resumed at 2026-11-24T13:00:00+00:00: ran t1. Data a run kept "
                                                    "(keep_files) was used as it is, not written again.")
    assert "written again first (0.4 s)" in resume_note(ResumeRecord.from_dict(r | {"prepare": {"seconds": 0.4}}))
