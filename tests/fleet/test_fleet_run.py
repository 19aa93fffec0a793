"""`iofleet run --hosts` on real fio servers in network namespaces."""

import signal
import time

import pytest
import yaml

from iofleet.fio.merge import percentile_from_bins
from iofleet.fleet.inventory import load_inventory
from iofleet.plan import parse_plan
from iofleet.results.store import Store
from iofleet.studies.events import RunObserver
from iofleet.studies.run import run_plan

from ..cli import iofleet, show_json, write_plan
from .helpers import SHORT, data_files, wait_for_jobs


def test_fleet_figures_are_exact_merges_of_every_host(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="fleet", defaults={**SHORT, "round": "1s"},
                      workloads=[{"name": "mix", "read_pct": 70, "jobs": 2}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir)
    assert "1 of 1 tests ok" in proc.stdout
    assert not data_files(fleet4), "iofleet's files are removed on every host"

    with Store.open(data_dir) as store:
        (t,) = store.get_run(1).tests
    assert {j.host for j in t.jobs} == {"h1", "h2", "h3", "h4"}
    assert len(t.jobs) == 8
    fleet = t.aggregate.all
    assert fleet.iops == pytest.approx(sum(j.all.iops for j in t.jobs), rel=1e-12)
    merged: dict[int, int] = {}
    for j in t.jobs:
        for d in (j.read, j.write):
            for k, v in d.bins.items():
                merged[k] = merged.get(k, 0) + v
    for p in (50.0, 99.0, 99.9):
        assert fleet.percentiles_ns[f"p{p:g}"] == percentile_from_bins(merged, p)
    run = show_json(1, data_dir)
    assert set(run["tests"][0]["hosts"]) == {"h1", "h2", "h3", "h4"}
    # Each server's status snapshots (one per 1 s round) make the rounds; the fleet's round is
    # the sum of the hosts' (fio/status.py), judged after the test.
    m = run["tests"][0]["methodology"]
    rounds = m["latency_rounds"]
    assert m["rounds_source"] == "fio status" and set(rounds["hosts"]) == {"h1", "h2", "h3", "h4"}
    assert len(rounds["fleet"]["iops"]) >= 1
    for k, fleet_iops in enumerate(rounds["fleet"]["iops"]):
        assert fleet_iops == pytest.approx(sum(h["iops"][k] for h in rounds["hosts"].values()), rel=1e-9)


def test_a_host_lost_mid_test_gives_a_partial_test_and_the_run_goes_on(tmp_path, fleet4, data_dir, spawn):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="loss", prepare="none", defaults={**SHORT, "ramp": "0s"},
                      workloads=[{"name": "long", "runtime": "8s"}, {"name": "after", "read_pct": 0}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    wait_for_jobs(fleet4, "h3")
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
    plan = write_plan(tmp_path / "p.yaml", name="stop", prepare="none", defaults={**SHORT, "ramp": "0s"},
                      workloads=[{"name": "long", "runtime": "60s"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    for h in fleet4.hosts:
        wait_for_jobs(fleet4, h.name)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(fleet4.fio_processes(h.name) for h in fleet4.hosts):
        time.sleep(0.2)
    assert {h.name: fleet4.fio_processes(h.name) for h in fleet4.hosts} == {h.name: [] for h in fleet4.hosts}
    assert show_json(1, data_dir)["tests"][0]["status"] == "interrupted"
    assert not data_files(fleet4)


def test_host_metrics_and_skew_are_stored_per_host(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(3, metrics=True)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    data = yaml.safe_load(inv.read_text())
    del data["hosts"][2]["metrics"]  # h3 has no node_exporter in the inventory
    inv.write_text(yaml.safe_dump(data))
    plan = write_plan(tmp_path / "p.yaml", name="metrics", defaults={**SHORT, "runtime": "3s"},
                      workloads=[{"name": "w"}])
    out = iofleet("run", plan, "--hosts", inv, data_dir=data_dir).stdout
    assert "Host CPU: n/a for h3" in out

    with Store.open(data_dir) as store:
        (t,) = store.get_run(1).tests
        series = store.get_host_series(t.pk)
    metrics = {m.host: m for m in t.host_metrics}
    assert [m.source for m in metrics.values()] == ["node_exporter", "node_exporter", "none"]
    for name in ("h1", "h2"):
        m = metrics[name]
        assert m.samples >= 2 and 0 <= m.cpu.avg_pct <= m.cpu.max_pct <= 100
        assert m.net_tx_avg_bytes_s > 0  # its exporter's own replies cross eth0
        assert len(series[("host", name)]) > m.samples  # the series keeps the warm-up
    assert metrics["h3"].samples == 0 and metrics["h3"].cpu.avg_pct is None
    assert t.controller.source == "local" and t.controller.samples >= 2
    # The test's CPU covers the hosts with metrics only.
    assert t.host_cpu.avg_pct == pytest.approx((metrics["h1"].cpu.avg_pct + metrics["h2"].cpu.avg_pct) / 2)

    skew = t.fleet.skew
    assert set(skew["windows_ms"]) == {"h1", "h2", "h3"}
    # Windows are on the series' time axis, which starts with the warm-up.
    assert min(w[0] for w in skew["windows_ms"].values()) == t.methodology.measured_from_ms > 0
    for start, end in skew["windows_ms"].values():
        assert 2500 <= end - start <= 4500  # 3 s measured, not the 1 s warm-up
    assert skew["start_spread_ms"] < 1000 and skew["overlap_pct"] > 60
    row = next(l for l in out.splitlines() if l.strip().startswith("h3"))
    assert row.rstrip().endswith("n/a")


def test_mixed_workloads_run_side_by_side_on_host_groups(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    data = yaml.safe_load(inv.read_text())
    for entry, role in zip(data["hosts"], ["db", "db", "db", "backup"]):
        entry["labels"] = {"role": role}
    inv.write_text(yaml.safe_dump(data))
    plan = write_plan(tmp_path / "p.yaml", name="mixed", mixed=True, defaults={**SHORT, "ramp": "0s"},
                      workloads=[{"name": "oltp", "hosts": {"role": "db"}, "read_pct": 70, "rate_iops": 300,
                                  "matrix": {"iodepth": [1, 2]}},
                                 {"name": "backup", "hosts": {"role": "backup"}, "bs": "256k",
                                  "read_pct": 100, "random_pct": 0, "rate_iops": 300}])
    out = iofleet("run", plan, "--hosts", inv, data_dir=data_dir).stdout
    assert "2 of 2 tests ok" in out

    run = show_json(1, data_dir)
    first, second = run["tests"]
    assert first["id"] == "oltp.4k-r70-rand-j1-qd1+backup.256k-r100-seq-j1-qd2"
    assert second["id"].startswith("oltp.4k-r70-rand-j1-qd2+")
    groups = first["fleet"]["groups"]
    assert groups == {"oltp": {"hosts": ["h1", "h2", "h3"], "test": "4k-r70-rand-j1-qd1"},
                      "backup": {"hosts": ["h4"], "test": "256k-r100-seq-j1-qd2"}}
    # Each group did its own workload, at the same time (windows overlap).
    assert first["hosts"]["h4"]["write"]["ios"] == 0 and first["hosts"]["h1"]["write"]["ios"] > 0
    assert first["fleet"]["skew"]["overlap_pct"] > 50
    # Group figures are exact merges of their hosts; the fleet's of both groups.
    oltp = sum(first["hosts"][h]["all"]["iops"] for h in ("h1", "h2", "h3"))
    assert first["groups"]["oltp"]["all"]["iops"] == pytest.approx(oltp, rel=1e-12)
    assert first["all"]["iops"] == pytest.approx(oltp + first["hosts"]["h4"]["all"]["iops"], rel=1e-12)
    # A rate is its group's total: oltp's 300 is 100 IOPS a host (70 reads + 30 writes); backup's one host does 300.
    assert oltp == pytest.approx(300, rel=0.1) and first["params"]["groups"]["oltp"]["rate_iops"] == 300
    assert first["hosts"]["h4"]["all"]["iops"] == pytest.approx(300, rel=0.1)
    for h in ("h1", "h2", "h3"):
        assert first["hosts"][h]["read"]["iops"] == pytest.approx(70, rel=0.15)
        assert first["hosts"][h]["write"]["iops"] == pytest.approx(30, rel=0.15)
    with Store.open(data_dir) as store:
        t = store.get_run(1).tests[0]
    assert {j.host for j in t.jobs if j.job.startswith("256k")} == {"h4"}
    assert "  oltp: 4k-r70-rand-j1-qd1" in out and "  backup: 256k-r100-seq-j1-qd2" in out
    # h4 ran another workload: it is never compared with the oltp hosts.
    assert not [l for l in out.splitlines() if "straggler" in l and "h4" in l]


@pytest.mark.scale  # about 30 s: `make test-scale`; a host lost mid-test stays in make test (server killed)
def test_a_host_that_vanishes_mid_test_is_dropped_and_the_others_kept(tmp_path, make_fleet, data_dir, spawn):
    fleet = make_fleet(2)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="vanish", prepare="none", defaults={**SHORT, "ramp": "0s", "runtime": "6s"},
                      workloads=[{"name": "w"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    started = time.monotonic()
    wait_for_jobs(fleet, "h2")
    fleet.cut_link("h2")  # no reset: packets to it vanish, like a powered-off host
    out, err = proc.communicate(timeout=6 + 120)
    # fio's client gives up on it after missing its ETA replies, not after iofleet's hang timeout.
    assert time.monotonic() - started < 6 + 60, out + err
    assert proc.returncode == 1, out + err
    (test,) = show_json(1, data_dir)["tests"]
    assert test["status"] == "partial" and "h2" in test["error"]
    assert set(test["hosts"]) == {"h1"} and test["all"]["ios"] > 0


def test_live_progress_has_each_hosts_figures_from_its_exporter(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2, metrics=True)
    hosts = load_inventory(fleet.write_inventory(tmp_path / "inv.yaml")).hosts
    plan = parse_plan({"name": "live", "defaults": {**SHORT, "ramp": "0s", "runtime": "4s"},
                       "workloads": [{"name": "w"}]})
    seen = []

    class Watch(RunObserver):
        def test_live(self, index, spec, live):
            seen.append(live)

    with Store.open(data_dir) as store:
        assert run_plan(plan, "", store, hosts=hosts, observer=Watch()).ok
    assert len(seen) >= 2 and all(set(live.hosts) == {"h1", "h2"} for live in seen)
    last = seen[-1].hosts
    assert all(s is not None and 0 <= s.cpu_pct <= 100 and s.net_tx_bytes_s > 0 for s in last.values())


@pytest.mark.scale  # about 50 s: `make test-scale` (make test keeps its 15 minutes)
def test_easy_run_on_the_fleet_prepares_every_host_and_judges_its_rounds(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    proc = iofleet("easy-run", "--hosts", inv, "--no-probe", "--size", "8m", "--ramp", "1s", "--round", "1s",
                   "--max-runtime", "7s", data_dir=data_dir, timeout=600)
    assert "Run 1 complete: 4 of 4 tests ok" in proc.stdout, proc.stdout
    assert "Preparation: random data written sequentially over 8.0 MiB per host" in proc.stdout
    assert not data_files(fleet4)
    run = show_json(1, data_dir)
    assert run["methodology"]["prepare"]["working_set_per_host"] == {h: 8 * 1024**2 for h in ("h1", "h2", "h3", "h4")}
    for t in run["tests"]:
        m = t["methodology"]
        assert set(t["hosts"]) == {"h1", "h2", "h3", "h4"}
        assert m["until"] == "steady" and m["steady"]["iops"]["round_s"] == 1
        # Ended early only when the fleet's summed rounds were steady, judged afterwards by the same rule.
        assert m["rounds_source"] == "fio status"
        if m["early_stop"]:
            assert m["steady"]["iops"]["steady"] and m["steady"]["iops"]["end_s"] == pytest.approx(m["early_stop"]["stopped_at_s"])
        else:
            assert t["all"]["runtime_ms"] >= 6_500
        assert set(m["latency_rounds"]["hosts"]) == {"h1", "h2", "h3", "h4"}
        assert len(m["steady"]["iops"]["rounds"]) >= 5 and m["window"]["all"]["ios"] > 0
        assert set(m["cache"]) == {"h1", "h2", "h3", "h4"}
        assert all("kernel caches kept (no SSH access to the host" in v for v in m["cache"].values())
