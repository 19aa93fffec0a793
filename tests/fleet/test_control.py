"""Kernel caches and host facts through the SSH control channel, on
namespace hosts running a real sshd and a real fio server."""

import time

import yaml

from iofleet.fleet.control.host import drop_caches
from iofleet.fleet.facts import fleet_facts, local_facts
from iofleet.fleet.inventory import load_inventory

from ..cli import iofleet, show_json, write_plan
from .sshfleet import ssh_fleet

TINY = {"size": "4m", "runtime": "1s", "ramp": "0s", "iodepth": 1, "engine": "psync", "round": "1s"}
DROPPED = "page cache of iofleet's files invalidated; kernel caches dropped"
KEPT = ("page cache of iofleet's files invalidated; kernel caches kept (no SSH access to the host: add `ssh:` "
        "to the inventory)")


def _without_ssh(inventory, host: str):
    """The inventory with `ssh:` on every host but `host` (no defaults)."""
    data = yaml.safe_load(inventory.read_text())
    ssh = data.pop("defaults")["ssh"]
    for h in data["hosts"]:
        if h["name"] != host:
            h["ssh"] = ssh
    inventory.write_text(yaml.safe_dump(data, sort_keys=False))
    return inventory


def test_a_run_drops_kernel_caches_and_records_facts_where_ssh_reaches(tmp_path, make_fleet, data_dir):
    fleet = ssh_fleet(make_fleet, 3, fio_server=True)
    inv = _without_ssh(fleet.write_inventory(tmp_path / "inv.yaml"), "h3")
    plan = write_plan(tmp_path / "p.yaml", name="caches", prepare="none", defaults=TINY,
                      workloads=[{"name": "r", "read_pct": 100}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir)
    assert "1 of 1 tests ok" in proc.stdout

    run = show_json(1, data_dir)
    (test,) = run["tests"]
    assert test["methodology"]["cache"] == {"h1": DROPPED, "h2": DROPPED, "h3": KEPT}
    out = " ".join(proc.stdout.split())  # rich wraps long lines
    assert f"Caches before each test on h1, h2: {DROPPED}." in out
    assert f"Caches before each test on h3: {KEPT}." in out

    hosts = {h["name"]: h for h in run["host_facts"]["hosts"]}
    assert "facts" not in hosts["h3"]
    for name in ("h1", "h2"):
        facts = hosts[name]["facts"]
        assert facts["kernel"] and facts["cpus"] >= 1 and facts["memory_bytes"] > 0
        (target,) = hosts[name]["targets"]
        assert facts["targets"][target]["kind"] == "directory"
        assert facts["targets"][target]["filesystem"]  # the namespaces share this machine's disk
    assert "Hosts h1, h2: kernel " in out and "Host h3: no facts (no SSH access to the host" in out


def test_drop_caches_and_easy_run_facts_on_all_hosts_at_once(tmp_path, make_fleet):
    """All hosts at once: one SSH round (measured here, not asserted
    tightly: the machine is shared); a host whose login fails says why,
    and Easy Run falls back to what node_exporter (none here) tells of it."""
    fleet = ssh_fleet(make_fleet, 3)
    hosts = load_inventory(fleet.write_inventory(tmp_path / "inv.yaml", ssh={"h3": {"key": str(
        fleet.make_key("not-authorized"))}})).hosts
    start = time.monotonic()
    dropped = drop_caches(hosts)
    took = time.monotonic() - start
    assert dropped["h1"] is None and dropped["h2"] is None
    assert dropped["h3"].startswith("SSH login as root@") and "authorized_keys" in dropped["h3"]
    assert took < 30, took
    print(f"drop_caches on 3 hosts: {took:.2f} s")

    h1, h2, h3 = fleet_facts(hosts)
    here = local_facts([fleet.host("h1").target])  # the namespaces share this machine's disk
    assert (h1.cpus, h1.memory_bytes, h1.rotational) == (here.cpus, here.memory_bytes, here.rotational)
    assert h1.free_bytes > 0 and h2.cpus == here.cpus  # rotational: None on this VM (a virtio disk)
    assert (h3.cpus, h3.rotational) == (None, None)
