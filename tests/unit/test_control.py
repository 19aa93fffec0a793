"""The SSH control channel's parts that need no host: the facts script's
output parsed (recorded from running the real script on this project's VM,
tests/fixtures/control/facts-vm.txt), its quoting, the reasons a cache was
kept, and how facts are worded in the summary and the diagnostics."""

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from iofleet.analysis.diagnostics import diagnose
from iofleet.analysis.host_facts import comparable, differences, host_line, how_hosts_differ, recorded_facts
from iofleet.fleet.control.host import NO_SSH, _why_not, active_scheduler, facts_command, parse_facts
from iofleet.fleet.targets import Access, target_for
from iofleet.fleet.facts import ssh_facts
from iofleet.fleet.facts_records import SeenHost
from iofleet.fleet.inventory import Host
from iofleet.fleet.control.ssh import Reply
from iofleet.report.summary import host_facts_notes
from iofleet.results.model import Run

ROOT = Path(__file__).parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "control" / "facts-vm.txt"
# The targets the fixture was recorded with (the README of the fixture: this list, in this order).
TARGETS = ["/tmp/ctl-t", "/dev/vda", "/dev/shm", "/nonexistent dir$(x)", "/proc", "/dev/loop0"]


def recorded() -> SeenHost:
    return parse_facts(FIXTURE.read_text(), TARGETS)


def test_parse_facts_of_the_recorded_vm():
    facts = recorded()
    assert facts.kernel == "6.18.44-fc-v595" and facts.hostname == "vm"
    assert facts.os == "Debian GNU/Linux 12 (bookworm)"
    assert facts.cpus == 2 and facts.memory_bytes == 24684096 * 1024
    directory = facts.targets["/tmp/ctl-t"]
    assert directory.to_dict() == {"kind": "directory", "filesystem": "ext4", "source": "/dev/vda",
                         "free_bytes": 78637348 * 1024, "device": "vda", "bytes": 536870912 * 512,
                         "model": None, "firmware": None, "scheduler": "mq-deadline",
                         "rotational": None}  # a virtio disk's 1 tells nothing (fleet.devices.spinning)
    device = facts.targets["/dev/vda"]
    assert device.kind == "device" and device.device == "vda" and "filesystem" not in device.to_dict()
    # tmpfs and proc have no block device: no device facts, not made-up ones
    assert facts.targets["/dev/shm"].to_dict() == {"kind": "directory", "filesystem": "tmpfs", "source": "tmpfs",
                                                   "free_bytes": 24684096 * 1024}
    assert facts.targets["/nonexistent dir$(x)"].to_dict() == {"kind": "missing"}
    assert facts.targets["/dev/loop0"].scheduler == "none"
    assert SeenHost.from_dict(facts.to_dict()) == facts  # as a run stores it, and back


def test_parse_facts_of_nothing_is_all_unknown():
    facts = parse_facts("sh: 1: uname: not found\n", ["/data"])
    assert facts.to_dict() == {"server_view": None, "hostname": None, "kernel": None, "os": None, "cpus": None, "memory_bytes": None,
                     "targets": {"/data": {"kind": None}}}


def test_active_scheduler():
    assert active_scheduler("none [mq-deadline] kyber bfq ") == "mq-deadline"
    assert active_scheduler("[none] mq-deadline") == "none"
    assert active_scheduler("none") == "none"
    assert active_scheduler("") is None


def test_facts_command_takes_targets_as_data_not_shell(tmp_path):
    """A target named like shell code is only ever a path to the script."""
    marker = tmp_path / "ran"
    odd = f"{tmp_path}/a dir'; touch {marker}; echo '$(touch {marker})"
    out = subprocess.run(facts_command([odd, str(tmp_path)]), shell=True, capture_output=True, text=True,
                         check=True)
    facts = parse_facts(out.stdout, [odd, str(tmp_path)])
    assert not marker.exists()
    assert facts.targets[odd].to_dict() == {"kind": "missing"}
    assert facts.targets[str(tmp_path)].kind == "directory"
    assert facts.targets[str(tmp_path)].filesystem


def test_why_a_command_did_not_do_its_part():
    denied = Reply("h1", 2, "", "sh: 1: cannot create /proc/sys/vm/drop_caches: Permission denied\n")
    assert _why_not(denied, "ops", "write /proc/sys/vm/drop_caches") == (
        "SSH user ops cannot write /proc/sys/vm/drop_caches: sh: 1: cannot create /proc/sys/vm/drop_caches: "
        "Permission denied")
    refused = Reply("h1", None, "", "", "h1: nothing answers SSH on 10.0.0.1:22 (connection refused); start sshd")
    assert _why_not(refused, "root", "x") == "nothing answers SSH on 10.0.0.1:22 (connection refused); start sshd"
    assert _why_not(Reply("h1", 1, "", ""), "root", "x") == "SSH user root cannot x: exit status 1"


def test_cache_notes_read_like_the_local_one():
    host = target_for(["/tmp/ctl-t"], Access(host="h1"))
    assert host.cache_note(True, None, {}) == "page cache of iofleet's files invalidated; kernel caches dropped"
    assert host.cache_note(True, NO_SSH, {}) == ("page cache of iofleet's files invalidated; kernel caches kept "
                                                 "(no SSH access to the host: add `ssh:` to the inventory)")
    assert host.cache_note(False, NO_SSH, {}) == "caches kept (clear_cache: false)"
    fuse = {"/tmp/ctl-t": {"filesystem": "fuse.ceph-fuse"}}  # a client with a cache of its own is named
    assert "ceph-fuse's object cacher (client_oc) is not dropped" in host.cache_note(True, None, fuse)


def test_easy_run_facts_of_a_host_read_through_ssh():
    host = Host(name="h1", address="10.0.0.1", targets=["/tmp/ctl-t"])
    f = ssh_facts(host, recorded())
    assert (f.cpus, f.memory_bytes, f.free_bytes, f.rotational) == (2, 24684096 * 1024, 78637348 * 1024, None)
    tmpfs = ssh_facts(Host(name="h2", address="10.0.0.2", targets=["/dev/shm"]), recorded())
    assert tmpfs.rotational is None and tmpfs.free_bytes == 24684096 * 1024


def _other(facts: SeenHost, **change) -> SeenHost:
    """The host's facts with these changed, the directory target's where the host has none of the name."""
    own = {k: v for k, v in change.items() if hasattr(facts, k)}
    on_target = {k: v for k, v in change.items() if k not in own}
    targets = facts.targets | {"/tmp/ctl-t": facts.targets["/tmp/ctl-t"].with_facts(**on_target)}
    return replace(facts, **own, targets=targets)


def _only_dir(facts: SeenHost) -> SeenHost:
    return replace(facts, targets={"/tmp/ctl-t": facts.targets["/tmp/ctl-t"]})


def test_what_differs_between_hosts():
    a = _only_dir(recorded())
    assert comparable(a) == {"kernel": "6.18.44-fc-v595", "CPUs": "2", "memory": "23.5 GiB", "filesystem": "ext4",
                             "scheduler": "mq-deadline"}
    # A model only one host shows (a virtio disk has none) is no known difference.
    assert differences({"h1": a, "h2": _other(a, model="SAMSUNG MZ7L3960")}) == {}
    b = _other(a, kernel="6.1.0-18-amd64", model="SAMSUNG MZ7L3960")
    a = _other(a, model="QEMU HARDDISK")
    assert differences({"h1": a, "h2": a, "h3": b}) == {
        "kernel": {"6.18.44-fc-v595": ["h1", "h2"], "6.1.0-18-amd64": ["h3"]},
        "device model": {"QEMU HARDDISK": ["h1", "h2"], "SAMSUNG MZ7L3960": ["h3"]}}
    assert how_hosts_differ(["h3"], {"h1": a, "h2": a, "h3": b}) == (
        "kernel 6.1.0-18-amd64 (others 6.18.44-fc-v595); device model SAMSUNG MZ7L3960 (others QEMU HARDDISK)")
    a = _only_dir(recorded())
    assert how_hosts_differ(["h3"], {"h1": a, "h2": a, "h3": b}) == "kernel 6.1.0-18-amd64 (others 6.18.44-fc-v595)"
    assert how_hosts_differ(["h3"], {"h1": a, "h3": a}) is None
    assert host_line(a) == "kernel 6.18.44-fc-v595, 2 CPUs, 23.5 GiB RAM; target ext4 on vda (scheduler mq-deadline)"
    assert host_line(recorded()) == (
        "kernel 6.18.44-fc-v595, 2 CPUs, 23.5 GiB RAM; targets ext4 on vda (scheduler mq-deadline), "
        "vda (scheduler mq-deadline), tmpfs, missing, proc, loop0 (scheduler none)")
    assert host_line(SeenHost(error="nothing answers SSH")) == "facts not read (nothing answers SSH)"
    trusted = "host key of 10.0.0.1 is not in /k; trusted because the inventory sets trust_unknown_host_keys: true"
    assert host_line(SeenHost(kernel="6.1", ssh_note=trusted)) == f"kernel 6.1; {trusted}"


def _fleet_run(name: str = "fleet-uneven") -> dict:
    return json.loads((ROOT / "tests" / "fixtures" / "runs" / f"{name}.json").read_text())


def test_summary_names_hosts_by_their_facts_and_what_could_not_be_read():
    doc = _fleet_run()
    a = _only_dir(recorded())
    hosts = doc["host_facts"]["hosts"]
    for h in hosts[:2]:
        h["facts"] = a.to_dict()
    hosts[2]["facts"] = {"error": "SSH login as root@10.231.0.13:22 refused with your SSH keys/agent; add its key"}
    assert recorded_facts(doc["host_facts"])[hosts[3]["name"]] is None
    lines = [line for line, _ in host_facts_notes(SimpleNamespace(host_facts=doc["host_facts"]))]
    assert lines == [
        f"Hosts {hosts[0]['name']}, {hosts[1]['name']}: {host_line(a)}.",
        f"Host {hosts[2]['name']}: facts not read (SSH login as root@10.231.0.13:22 refused with your SSH "
        f"keys/agent; add its key).",
        f"Host {hosts[3]['name']}: no facts ({NO_SSH}).",
    ]
    assert host_facts_notes(SimpleNamespace(host_facts=_fleet_run()["host_facts"])) == []  # a run without SSH facts says nothing of them


def test_host_imbalance_names_what_differs_on_the_straggler():
    """fleet-uneven's straggler h4 (a slower target) given another kernel in
    its facts than h1-h3: the finding says so."""
    doc = _fleet_run()
    a = _only_dir(recorded())
    for h in doc["host_facts"]["hosts"]:
        h["facts"] = (_other(a, kernel="6.1.0-18-amd64") if h["name"] == "h4" else a).to_dict()
    (finding,) = [f for f in diagnose(Run.from_dict(doc)) if f.rule == "host_imbalance"]
    assert finding.evidence.endswith("; h4 differs: kernel 6.1.0-18-amd64 (others 6.18.44-fc-v595)")
    assert finding.change.startswith("check what differs on h4 (that difference, its targets' devices")
    (plain,) = [f for f in diagnose(Run.from_dict(_fleet_run())) if f.rule == "host_imbalance"]
    assert "differs:" not in plain.evidence


def test_a_deploy_whose_session_ends_under_it_says_so():
    """A session the SSH server closes (or a host that goes away) gives no exit status: that, not "exit None"."""
    from iofleet.fleet.control.deploy import _script_failed
    host = Host(name="h2", address="10.0.0.2", targets=["/data"])
    gone = _script_failed(host, Reply("h2", None, "", ""))
    assert gone.startswith("h2: the SSH session ended before the deploy script did (no exit status, nothing said)")
    assert "None" not in gone and "\n" not in gone
    failed = _script_failed(host, Reply("h2", 2, "", "mkdir: cannot create directory\n"))
    assert "(exit 2: mkdir: cannot create directory)" in failed
    assert _script_failed(host, Reply("h2", 0, "fio=/usr/bin/fio\n", "")) is None
