"""`iofleet hosts deploy|undeploy` over SSH on namespace hosts running a real
sshd (and no fio server until deploy starts one), through the CLI."""

import contextlib
import socket

from ..cli import iofleet, wait_for, write_plan
from .sshd import DEPLOY_ROOT
from .sshfleet import all_fio, deployed, ssh_fleet

TINY = {"size": "4m", "runtime": "1s", "ramp": "0s", "iodepth": 1, "engine": "psync", "round": "1s"}


def test_deploy_check_run_undeploy_leaves_nothing(tmp_path, make_fleet, data_dir):
    fleet = ssh_fleet(make_fleet, 3)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    assert not all_fio(fleet)

    out = deployed(fleet, inv, data_dir)
    for h in fleet.hosts:
        assert f"{h.name}: fio-" in out and f"fio --server started on {h.endpoint}" in out
    assert "3 of 3 hosts deployed." in out
    assert set(all_fio(fleet)) == {"h1", "h2", "h3"}
    assert len(fleet.deploy_dirs()) == 3

    again = deployed(fleet, inv, data_dir)  # idempotent: nothing new started
    assert again.count("fio --server already running") == 3 and "started" not in again

    assert "3 of 3 hosts ready." in iofleet("hosts", "check", inv, data_dir=data_dir).stdout
    plan = write_plan(tmp_path / "p.yaml", name="ssh", prepare="none", defaults=TINY,
                      workloads=[{"name": "r", "read_pct": 100}])
    assert "1 of 1 tests ok" in iofleet("run", plan, "--hosts", inv, data_dir=data_dir).stdout

    # a client still connected: each server has forked a process for it, which undeploy must end too
    with contextlib.ExitStack() as stack:
        for h in fleet.hosts:
            stack.enter_context(socket.create_connection((h.address, h.port), timeout=5))
        wait_for(lambda: all(len(p) >= 2 for p in all_fio(fleet).values()), 10, "a process per connection")
        out = iofleet("hosts", "undeploy", inv, data_dir=data_dir).stdout
        assert out.count("stopped fio --server") == 3 and "3 of 3 hosts clean." in out
        assert not all_fio(fleet), "no fio process is left in any namespace"
    assert not fleet.deploy_dirs(), "undeploy removes each host's directory"
    assert iofleet("hosts", "undeploy", inv, data_dir=data_dir).stdout.count("nothing deployed") == 3


def test_a_host_whose_login_fails_is_named_and_the_others_deploy(tmp_path, make_fleet, data_dir):
    fleet = ssh_fleet(make_fleet, 3)
    wrong_key = fleet.make_key("not-authorized")
    # h3's known_hosts lists another host's key for its address: a changed host key
    h1_key = fleet.known_hosts.read_text().splitlines()[0].split(" ", 1)[1]
    changed = tmp_path / "known_hosts"
    changed.write_text(f"{fleet.host('h3').address} {h1_key}\n")
    inv = fleet.write_inventory(tmp_path / "inv.yaml", ssh={"h2": {"key": str(wrong_key)},
                                                            "h3": {"known_hosts": str(changed)}})
    proc = iofleet("hosts", "deploy", inv, data_dir=data_dir, check_rc=1)
    errors = sorted(line for line in proc.stderr.splitlines() if line.startswith("error:"))  # in reply order
    assert len(errors) == 2, proc.stderr
    assert "h2: SSH login as root@" in errors[0] and "authorized_keys" in errors[0]
    assert "h3: the host key of" in errors[1] and "is not the one" in errors[1]
    assert "h1: fio-" in proc.stdout and "1 of 3 hosts deployed." in proc.stdout
    assert set(all_fio(fleet)) == {"h1"}

    # Hosts known_hosts does not list: refused, unless the inventory trusts unknown keys (then said).
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    inv = fleet.write_inventory(tmp_path / "inv.yaml", ssh={
        "h2": {"known_hosts": str(empty)}, "h3": {"known_hosts": str(empty), "trust_unknown_host_keys": True}})
    proc = iofleet("hosts", "deploy", inv, data_dir=data_dir, check_rc=1)
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "h2: the host key of" in error and "ssh-keyscan" in error and "trust_unknown_host_keys: true" in error
    h3 = next(line for line in proc.stdout.splitlines() if line.startswith("h3:"))
    assert "fio --server started" in h3 and "trusted because" in h3
    assert set(all_fio(fleet)) == {"h1", "h3"}

    fleet.close()  # without undeploy: the deployed servers, sshd and its sessions all go with the fleet
    assert not fleet.leftovers() and not fleet.deploy_dirs()


def test_undeploy_never_kills_a_process_that_reused_the_pid(tmp_path, make_fleet, data_dir):
    fleet = ssh_fleet(make_fleet, 1)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    # A pid file left behind (the server exited, e.g. a reboot) whose pid now belongs to another
    # program: here even a fio server, but on another port, so not the command deploy started.
    h = fleet.hosts[0]
    other = fleet.spawn("h1", ["fio", f"--server=ip:{h.address},{h.port + 1}"], label="other")
    state = DEPLOY_ROOT / f"{h.address}-{h.port}"
    state.mkdir(parents=True)
    (state / "fio.pid").write_text(f"{other.pid}\n")
    out = iofleet("hosts", "undeploy", inv, data_dir=data_dir).stdout
    assert f"fio --server (pid {other.pid}) had already exited" in out
    assert other.poll() is None, "the other program still runs"
    assert not state.exists()



def test_undeploy_leaves_a_host_a_run_is_testing_unless_forced(tmp_path, make_fleet, data_dir):
    """A run on this machine holds its hosts' target locks (fleet/targets/lock.py): here this test holds
    h1's, as a run would. undeploy stops h2's server and leaves h1's, naming the run; --force stops it."""
    from iofleet.fleet.inventory import load_inventory
    from iofleet.fleet.targets.lock import holder_facts, lock_fleet_target
    fleet = ssh_fleet(make_fleet, 2)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    deployed(fleet, inv, data_dir)
    h1 = load_inventory(inv).hosts[0]
    lock = lock_fleet_target(*h1.endpoint, h1.targets[0], holder_facts(run=7, data_dir=str(data_dir)))
    try:
        proc = iofleet("hosts", "undeploy", inv, data_dir=data_dir, check_rc=1)
        said = " ".join(proc.stderr.split())
        assert "h1: target" in said and "is being tested by another iofleet run" in said and "run 7" in said
        assert "--force" in said and "1 of 2 hosts clean." in proc.stdout
        assert set(all_fio(fleet)) == {"h1"}
        forced = iofleet("hosts", "undeploy", inv, "--force", data_dir=data_dir).stdout
        assert "stopped fio --server" in forced and not all_fio(fleet)
    finally:
        lock.release()
