"""`iofleet run --hosts` on real fio servers in network namespaces."""

import signal
import time

import pytest

from iofleet.fio.merge import percentile_from_bins
from iofleet.results.store import Store

from ..cli import iofleet, show_json, write_plan

SHORT = {"size": "4m", "runtime": "2s", "ramp": "1s", "iodepth": 2, "engine": "psync"}


def data_files(fleet) -> list:
    # On a fio server, fio prefixes iofleet's directory with the host's address.
    return [f for h in fleet.hosts for f in h.target.glob("*iofleet/iofleet-data.*")]


def test_fleet_figures_are_exact_merges_of_every_host(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="fleet", defaults=SHORT,
                      workloads=[{"name": "mix", "read_pct": 70, "jobs": 2}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir)
    assert "1 of 1 tests ok" in proc.stdout
    assert not data_files(fleet4), "iofleet's files are removed on every host"

    with Store.open(data_dir) as store:
        (t,) = store.get_run(1)["tests"]
    assert {j.host for j in t["jobs"]} == {"h1", "h2", "h3", "h4"}
    assert len(t["jobs"]) == 8
    fleet = t["aggregate"].all
    assert fleet.iops == pytest.approx(sum(j.all.iops for j in t["jobs"]), rel=1e-12)
    merged: dict[int, int] = {}
    for j in t["jobs"]:
        for d in (j.read, j.write):
            for k, v in d.bins.items():
                merged[k] = merged.get(k, 0) + v
    for p in (50.0, 99.0, 99.9):
        assert fleet.percentiles_ns[f"p{p:g}"] == percentile_from_bins(merged, p)
    run = show_json(1, data_dir)
    assert set(run["tests"][0]["hosts"]) == {"h1", "h2", "h3", "h4"}


def test_a_host_lost_mid_test_gives_a_partial_test_and_the_run_goes_on(tmp_path, fleet4, data_dir, spawn):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="loss", defaults={**SHORT, "ramp": "0s"},
                      workloads=[{"name": "long", "runtime": "8s"}, {"name": "after", "read_pct": 0}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    _wait_for_jobs(fleet4, "h3")
    killed_at = time.monotonic()
    fleet4.kill_server("h3")
    out, err = proc.communicate(timeout=8 + 30 + 30)
    assert time.monotonic() - killed_at < 8 + 30 + 20
    assert proc.returncode == 1, out + err
    run = show_json(1, data_dir)
    assert run["status"] == "partial"
    first, second = run["tests"]
    assert first["status"] == "partial" and "h3" in first["error"]
    assert set(first["hosts"]) == {"h1", "h2", "h4"}
    assert second["status"] == "ok" and set(second["hosts"]) == {"h1", "h2", "h4"}


def test_ctrl_c_leaves_no_fio_job_on_any_host(tmp_path, fleet4, data_dir, spawn):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="stop", defaults={**SHORT, "ramp": "0s"},
                      workloads=[{"name": "long", "runtime": "60s"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    for h in fleet4.hosts:
        _wait_for_jobs(fleet4, h.name)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(fleet4.fio_processes(h.name) for h in fleet4.hosts):
        time.sleep(0.2)
    assert {h.name: fleet4.fio_processes(h.name) for h in fleet4.hosts} == {h.name: [] for h in fleet4.hosts}
    assert show_json(1, data_dir)["tests"][0]["status"] == "interrupted"
    assert not data_files(fleet4)


def _wait_for_jobs(fleet, name, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fleet.fio_processes(name) and any(fleet.host(name).target.glob("*iofleet/iofleet-data.*")):
            time.sleep(1)
            return
        time.sleep(0.2)
    raise AssertionError(f"no fio job started on {name}")
