"""`iofleet hosts check`, and the same check refusing a fleet run before
any test starts, on real fio servers in network namespaces."""

import shutil
import socket
import time

import yaml

from iofleet.results.store import Store

from ..cli import iofleet, write_plan

PLAN = {"name": "checked", "defaults": {"size": "4m", "runtime": "1s", "ramp": "0s", "engine": "psync"},
        "workloads": [{"name": "w"}]}


def _old_fio(tmp_path) -> str:
    """A real fio whose server reports another version: the distribution's
    binary with its version string patched (same length, so nothing moves)."""
    data = open(shutil.which("fio"), "rb").read()
    assert data.count(b"fio-3.33\0") == 1, "this test expects the distribution's fio 3.33"
    path = tmp_path / "old" / "fio"
    path.parent.mkdir()
    path.write_bytes(data.replace(b"fio-3.33\0", b"fio-3.30\0"))
    path.chmod(0o755)
    return str(path)


def _wait_listening(address: str, port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((address, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {address}:{port}")


def _no_run_stored(data_dir) -> bool:
    if not (data_dir / "iofleet.db").exists():
        return True
    with Store.open(data_dir) as store:
        return store.list_runs() == []


def test_ready_hosts_are_listed_with_version_and_free_space(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2, metrics=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    out = iofleet("hosts", "check", inv, data_dir=data_dir).stdout
    assert "2 of 2 hosts ready." in out
    for h in fleet.hosts:
        line = next(l for l in out.splitlines() if l.strip("│┃ ").startswith(h.name))
        assert "reachable" in line and "fio-3.33" in line and "yes" in line and "ok" in line
        assert "GiB" in line or "MiB" in line or "TiB" in line, line  # free space from node_exporter
    assert not list(fleet.hosts[0].target.rglob("*probe*")), "the probe file is removed"


def test_a_wrong_fio_version_is_refused_before_any_test(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2)
    old = fleet.host("h2")
    fleet.kill_server("h2")
    fleet.spawn("h2", [_old_fio(tmp_path), f"--server=ip:{old.address},{old.port}"], label="old-fio")
    _wait_listening(old.address, old.port)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")

    proc = iofleet("hosts", "check", inv, data_dir=data_dir, check_rc=1)
    assert "fio-3.30" in proc.stdout and "1 of 2 hosts ready." in proc.stdout
    assert f"host h2 ({old.endpoint}): runs fio-3.30 but this controller runs fio-3.33" in proc.stderr

    plan = write_plan(tmp_path / "p.yaml", **PLAN)
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, check_rc=2)
    assert "host h2" in proc.stderr and "fio-3.30" in proc.stderr and "no test was started" in proc.stderr
    assert "h1" not in proc.stderr, "only the bad host is named"
    assert "Traceback" not in proc.stderr
    assert _no_run_stored(data_dir)
    assert not list(fleet.host("h1").target.rglob("iofleet-data.*"))


def test_a_missing_target_is_refused_before_any_test(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    data = yaml.safe_load(inv.read_text())
    missing = str(fleet4.host("h3").target / "no-such-dir")
    data["hosts"][2]["targets"].append(missing)
    inv.write_text(yaml.safe_dump(data))

    proc = iofleet("hosts", "check", inv, data_dir=data_dir, check_rc=1)
    assert f"target {missing} does not exist" in proc.stderr
    assert "3 of 4 hosts ready." in proc.stdout

    plan = write_plan(tmp_path / "p.yaml", **PLAN)
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, check_rc=2)
    lines = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert lines[0].startswith("error: host h3 (") and missing in lines[0]
    assert _no_run_stored(data_dir)
    assert not [f for h in fleet4.hosts for f in h.target.rglob("iofleet-data.*")]


def test_an_unreachable_host_is_named_within_seconds(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2)
    fleet.kill_server("h1", unreachable=True)  # packets vanish: fio's client would hang ~2 min
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    started = time.monotonic()
    proc = iofleet("hosts", "check", inv, data_dir=data_dir, check_rc=1)
    assert time.monotonic() - started < 20
    assert "host h1 (" in proc.stderr and "not reachable" in proc.stderr and "no answer in 3 s" in proc.stderr
    assert "host h2" not in proc.stderr


def test_the_check_probes_the_run_engines_in_its_own_fio_run(tmp_path, fleet4):
    """One fio client checks every host and probes the engines a run asks
    for; a host it does not show ready is checked again on its own, which names its problem."""
    from iofleet.fio.command import fio_version
    from iofleet.fleet.check import check_hosts
    from iofleet.fleet.inventory import load_inventory

    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    data = yaml.safe_load(inv.read_text())
    missing = str(fleet4.host("h4").target / "no-such-dir")
    data["hosts"][3]["targets"].append(missing)
    inv.write_text(yaml.safe_dump(data))
    hosts = load_inventory(inv).hosts
    asked = [("auto", False), ("psync", True)]
    checks = check_hosts(hosts, fio_version(), probes={h.name: asked for h in hosts})

    for c in checks[:3]:
        assert c.ok and c.fio_version == fio_version() and c.leftovers is not None, c.problems
        assert c.engines[("psync", True)] == "psync" and c.engines[("auto", False)] == "io_uring"
    h4 = checks[3]
    assert h4.problems == [f"target {missing} does not exist (or is not a directory)"] and h4.engines == {}
    # (h4's own check may leave its probe file: fio lays it out, then refuses the job file)
    left = [p for h in fleet4.hosts[:3] for p in h.target.rglob("*probe*")]
    assert not left, left  # the probe files are removed
