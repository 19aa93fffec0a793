"""`iofleet scale` on real fio servers in network namespaces."""

import pytest
import re

import yaml

from iofleet.results.store import Store

from ..cli import iofleet, write_plan

TINY = {"size": "4m", "runtime": "1s", "ramp": "0s", "engine": "psync"}


def table_rows(out: str) -> list[list[str]]:
    """The scaling table's data rows, cell by cell."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()
            if line.startswith("│")]


@pytest.mark.scale  # about 30 s: `make test-scale` (make test keeps its 15 minutes)
def test_scale_runs_each_step_on_the_first_hosts_and_reports_growth(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="scale", defaults=TINY,
                      workloads=[{"name": "rr", "matrix": {"iodepth": [1, 2]}}])
    proc = iofleet("scale", plan, "--hosts", inv, "--steps", "1,2,4", "--test", "4k-r100-rand-j1-qd2",
                   data_dir=data_dir)
    out = proc.stdout

    steps = re.findall(r"^ok +step (\d)/3: (\d) hosts? \(run (\d+)\): ", out, re.M)
    assert [(n, k) for n, k, _ in steps] == [("1", "1"), ("2", "2"), ("3", "4")], out
    run_ids = [int(r) for _, _, r in steps]
    iops = []
    with Store.open(data_dir) as store:
        for k, run_id in zip((1, 2, 4), run_ids):
            run = store.get_run(run_id)
            assert run.status == "complete" and run.label == f"scale {k}/4 hosts"
            (test,) = run.tests
            assert test.params["iodepth"] == 2  # the chosen test, not the plan's first
            assert {j.host for j in test.jobs} == {f"h{i}" for i in range(1, k + 1)}
            assert run.plan_text.startswith(f"# iofleet scale: test 4k-r100-rand-j1-qd2 of this plan, "
                                               f"step {run_ids.index(run_id) + 1}/3 on {k} of 4 hosts\n")
            iops.append(test.aggregate.all.iops)

    growth = [None] + [(b - a) * 100 / a for a, b in zip(iops, iops[1:])]
    rows = table_rows(out)
    assert [r[0] for r in rows] == ["1", "2", "4"]
    for row, k, value, g, run_id in zip(rows, (1, 2, 4), iops, growth, run_ids):
        hosts, status, shown_iops, _, _, _, shown_growth, per_host, shown_run = row
        assert (status, shown_iops, shown_run) == ("ok", f"{value:,.0f}", str(run_id))
        assert shown_growth.split(" ◀")[0] == ("n/a" if g is None else f"{g:+.1f}")
        assert per_host == f"{value / k:,.0f}"

    saturated = next((i for i in (1, 2) if growth[i] <= 10), None)
    if saturated is None:
        verdict = f"No saturation: still growing at 4 hosts (IOPS +{growth[2]:.1f} % from 2 to 4 hosts)."
    else:
        k, prev = (1, 2, 4)[saturated], (1, 2, 4)[saturated - 1]
        verdict = (f"Saturation: the fleet stops growing at {k} hosts ({growth[saturated]:+.1f} % over "
                   f"{prev} host{'s' if prev > 1 else ''}); best: {prev} host{'s' if prev > 1 else ''}, "
                   f"{iops[saturated - 1]:,.0f} IOPS")
        assert rows[saturated][6].endswith("◀ saturation")
    assert verdict in out


def _unreachable_inventory(path, n=4):
    """Hosts nobody listens on: these errors must come before any host is contacted."""
    path.write_text(yaml.safe_dump({"hosts": [
        {"name": f"h{i}", "address": f"127.0.0.1:{i}", "targets": ["/tmp"]} for i in range(1, n + 1)]}))
    return path


def test_a_plan_of_several_tests_needs_test(tmp_path, data_dir):
    inv = _unreachable_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="multi", defaults=TINY,
                      workloads=[{"name": "w", "matrix": {"bs": ["4k", "64k"], "read_pct": [100, 0]}}])
    proc = iofleet("scale", plan, "--hosts", inv, data_dir=data_dir, check_rc=2)
    assert proc.stderr == (
        "error: plan 'multi' expands to 4 tests and a scaling study runs one: pass --test ID with one of "
        "4k-r100-rand-j1-qd1, 4k-r0-rand-j1-qd1, 64k-r100-rand-j1-qd1, 64k-r0-rand-j1-qd1\n")
    assert proc.stdout == ""
    with Store.open(data_dir) as store:
        assert store.list_runs() == []


def test_bad_steps_are_refused_in_one_line(tmp_path, data_dir):
    inv = _unreachable_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="one", defaults=TINY, workloads=[{"name": "w"}])
    for steps, message in (("1,2,9", "--steps 1,2,9: the inventory has 4 hosts"),
                           ("4,2", "--steps 4,2: give the host counts in increasing order, each once"),
                           ("0", "--steps 0: host counts start at 1"),
                           ("1;2", "--steps 1;2: give host counts as whole numbers separated by commas, e.g. 1,2,4,8")):
        proc = iofleet("scale", plan, "--hosts", inv, "--steps", steps, data_dir=data_dir, check_rc=2)
        assert proc.stderr == f"error: {message}\n"


@pytest.mark.scale  # about a minute: 64 hosts share this machine's cores with the controller
def test_a_run_on_64_hosts_checks_prepares_and_measures_every_host(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(64)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="sixty-four", defaults={**TINY, "engine": "auto"},
                      workloads=[{"name": "rr", "read_pct": 100}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, timeout=600)
    assert "error" not in proc.stderr.lower(), proc.stderr

    with Store.open(data_dir) as store:
        run = store.get_run(1)
        (test,) = run.tests
    assert run.status == "complete" and test.status == "ok"
    assert {j.host for j in test.jobs} == {h.name for h in fleet.hosts}
    assert all(j.error == 0 and j.read.io_bytes > 0 for j in test.jobs)
    # auto: the first engine that works on every host, found by the hosts check's own fio run
    assert test.params["engine_used"] in ("io_uring", "libaio", "psync")
    assert fleet.wait_fio_gone() == {}
    left = [p for h in fleet.hosts for p in h.target.glob("*iofleet/iofleet-*")]
    assert not left, left  # prepared files and probe files removed
