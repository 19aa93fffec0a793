"""Host and target facts as records (fleet/facts_records.py): each writes
the JSON a run has always stored, key for key and in order, and reads every
stored shape back."""

import json
from dataclasses import replace
from pathlib import Path

from iofleet.analysis.host_facts import local_targets, recorded_facts, recorded_hosts
from iofleet.fleet.control.host import free_space, parse_facts
from iofleet.fleet.facts_records import MachineFacts, RecordedHost, SeenHost, TargetFacts
from iofleet.fleet.local import host_facts, this_machine
from iofleet.fleet.targets import kind_of
from iofleet.fleet.targets.facts import seen_target

ROOT = Path(__file__).parents[2]
CONTROL = ["/tmp/ctl-t", "/dev/vda", "/dev/shm", "/nonexistent dir$(x)", "/proc", "/dev/loop0"]


def _stored_runs() -> list[dict]:
    runs = []
    for path in sorted((ROOT / "tests/fixtures").glob("*/*.json")):
        doc = json.loads(path.read_text())
        for run in doc.get("runs", [doc]) if isinstance(doc, dict) else []:
            if isinstance(run, dict) and isinstance(run.get("host_facts"), dict):
                runs.append(run)
    return runs


def test_stored_target_facts_are_written_back_as_they_were():
    stored = [t for run in _stored_runs() for t in (run["host_facts"].get("target_facts") or {}).values()]
    assert len(stored) >= 6  # local directories, tmpfs, ceph-fuse
    for t in stored:
        assert json.dumps(TargetFacts.from_dict(t).to_dict()) == json.dumps(t)


def test_a_fleet_hosts_facts_as_stored_and_back():
    seen = parse_facts((ROOT / "tests/fixtures/control/facts-vm.txt").read_text(), CONTROL)
    stored = seen.to_dict()
    assert list(stored) == ["server_view", "hostname", "kernel", "os", "cpus", "memory_bytes", "targets"]
    assert list(stored["targets"]["/tmp/ctl-t"]) == ["kind", "filesystem", "source", "free_bytes", "device", "bytes",
                                                     "model", "firmware", "scheduler", "rotational"]
    assert SeenHost.from_dict(json.loads(json.dumps(stored))) == seen
    noted = replace(seen, ssh_note="host key trusted").to_dict()
    assert list(noted)[-2:] == ["targets", "ssh_note"]
    assert SeenHost.from_dict(noted).ssh_note == "host key trusted"


def test_facts_not_read_and_none_and_old_shapes():
    failed = SeenHost.from_dict({"error": "nothing answers SSH"})
    assert not failed.read and failed.to_dict() == {"error": "nothing answers SSH"} and failed.targets == {}
    assert SeenHost.from_dict(None) is None and SeenHost.from_dict("h1") is None
    old = SeenHost.from_dict({"kernel": "6.1", "targets": {"/data": {"kind": "directory"}, "/x": None}})
    assert old.read and old.kernel == "6.1" and old.cpus is None and old.server_view is None
    assert old.targets["/data"].filesystem is None and old.targets["/data"].to_dict() == {"kind": "directory"}
    assert old.targets["/x"] == TargetFacts() and old.targets["/x"].to_dict() == {}
    assert MachineFacts.from_dict(None) == MachineFacts() and MachineFacts.from_dict({"cpus": 2}).cpus == 2


def test_a_runs_hosts_and_targets_read_as_records():
    tmpfs = json.loads((ROOT / "tests/fixtures/runs/tmpfs.json").read_text())["host_facts"]
    assert local_targets(tmpfs)["/mnt/ram"].memory == "tmpfs"
    assert local_targets({}) == {} and local_targets({"target_facts": None}) == {}
    hosts = {"hosts": [{"name": "h1", "facts": {"error": "x"}}, {"name": "h2"}, "h3",
                       {"name": "h4", "facts": {"targets": {"/d": {"kind": "directory", "free_bytes": 7}}}}]}
    recorded = recorded_facts(hosts)
    assert recorded["h1"].error == "x" and recorded["h2"] is None and "h3" not in recorded
    read = {"h1": hosts["hosts"][0]["facts"], "h4": hosts["hosts"][3]["facts"]}
    assert free_space(read) == {"h4": {"/d": 7}}


def test_local_targets_write_todays_keys(tmp_path):
    assert list(seen_target(tmp_path).to_dict()) == ["kind", "filesystem", "source", "device", "rotational", "memory"]
    assert seen_target(tmp_path / "none").to_dict() == {"kind": "missing", "memory": None}
    shm = seen_target(Path("/dev/shm"))
    assert shm.memory == "tmpfs" and shm.device is None
    rbd = kind_of("rbd:rbd/img").fixed_facts("rbd:rbd/img")
    assert list(rbd.to_dict()) == ["kind", "device", "rotational", "memory", "client"] and rbd.client == "librbd"


def test_this_machine_as_stored():
    assert list(host_facts()) == ["hostname", "kernel", "os", "cpus", "memory_bytes"]
    assert MachineFacts.from_dict(host_facts()) == this_machine()


def test_a_fleet_host_as_the_run_records_it():
    """places.fleet's entry: where, targets, the kind's own keys, the SSH facts last."""
    stored = [h for run in _stored_runs() for h in run["host_facts"].get("hosts") or []]
    full = [h for h in stored if set(h) == {"name", "address", "labels", "targets", "nic_gbps"}]
    assert full and all(json.dumps(RecordedHost.from_dict(h).to_dict()) == json.dumps(h) for h in full)
    imported = RecordedHost.from_dict({"name": "h1", "address": "10.0.0.1:8765"})  # an import's hosts
    assert imported.targets == [] and imported.facts is None and imported.nic_gbps is None
    seen = parse_facts((ROOT / "tests/fixtures/control/facts-vm.txt").read_text(), ["rbd:rbd/img"])
    rbd = kind_of("rbd:rbd/img").fixed_facts("rbd:rbd/img").to_dict()
    entry = {"name": "h2", "address": "10.0.0.2:8765", "labels": {"role": "db"}, "targets": ["rbd:rbd/img"],
             "nic_gbps": 25.0, "target_facts": {"rbd:rbd/img": rbd}, "rbd": {"pool": "rbd"}, "facts": seen.to_dict()}
    host = RecordedHost.from_dict(entry)
    assert host.facts == seen and host.described == {"target_facts": {"rbd:rbd/img": rbd}, "rbd": {"pool": "rbd"}}
    assert json.dumps(host.to_dict()) == json.dumps(entry)
    assert [h.name for h in recorded_hosts({"hosts": [entry, "h3", {"address": "x"}]})] == ["h2"]
    assert recorded_hosts({}) == recorded_hosts({"hosts": None}) == []
