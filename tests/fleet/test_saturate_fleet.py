"""`iofleet saturate --hosts` on 4 real fio servers in network namespaces:
every cell runs on all hosts at once and reports fleet figures."""

from iofleet.analysis.saturation import saturation_of_run

from ..cli import iofleet, show_json


def test_saturate_on_the_fleet_reports_fleet_figures(tmp_path, fleet4, data_dir):
    inv = fleet4.write_inventory(tmp_path / "inv.yaml")
    proc = iofleet("saturate", "--hosts", inv, "--max-jobs", "2", "--max-iodepth", "8", "--slo", "p99<=50ms",
                   "--size", "8m", "--runtime", "1s", "--ramp", "0s", "--prepare", "none",
                   data_dir=data_dir, timeout=600)
    out = proc.stdout
    assert "saturation of 4k 100% read random on 4 hosts" in out
    assert "OIO fleet" in out and "outstanding IO per host × 4" in out
    assert "Best configuration: jobs" in out and "Target p99<=50ms:" in out

    run = show_json(1, data_dir)
    assert run["status"] == "complete" and len(run["tests"]) >= 2
    sat = saturation_of_run(run)
    for c, t in zip(sat.cells, run["tests"]):
        # Fleet figures: all four hosts ran the cell; IOPS are their sum.
        assert set(t["hosts"]) == {"h1", "h2", "h3", "h4"} and c.hosts == 4
        assert c.outstanding == 4 * c.jobs * (1 if t["params"]["engine_used"] in ("psync", "sync") else c.iodepth)
        assert abs(c.iops - sum(h["all"]["iops"] for h in t["hosts"].values())) < 1e-6 * c.iops
        assert c.little is not None
    assert sat.best is not None and sat.slo_best is not None
