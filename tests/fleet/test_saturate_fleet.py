"""`iofleet saturate --hosts` on 4 real fio servers in network namespaces:
every cell runs on all hosts at once and reports fleet figures."""

import pytest

from iofleet.analysis.saturation import saturation_of_run
from iofleet.results.model import Run

from ..browser import open_page
from ..cli import iofleet, show_json


@pytest.mark.scale  # about 30 s: `make test-scale` (make test keeps its 15 minutes)
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
    sat = saturation_of_run(Run.from_dict(run))
    for t in run["tests"]:
        # Fleet figures: all four hosts ran the cell; IOPS are their sum (a
        # repeated cell holds each run's).
        c = next(c for c in sat.cells if c.test == t["id"])
        assert set(t["hosts"]) == {"h1", "h2", "h3", "h4"} and c.hosts == 4
        assert c.outstanding == 4 * c.jobs * (1 if t["params"]["engine_used"] in ("psync", "sync") else c.iodepth)
        summed = sum(h["all"]["iops"] for h in t["hosts"].values())
        assert any(abs(run_iops - summed) < 1e-6 * summed for run_iops in c.iops_runs)
        assert c.little is not None
    assert sat.best is not None and sat.slo_best is not None

    # Its report, in a real browser: the sweep chart, and per cell a host
    # chart with every host's IOPS as stored.
    report = tmp_path / "report.html"
    iofleet("report", "1", "-o", report, data_dir=data_dir)
    seen = open_page(report, "report-fleet-saturate.png", evaluate={"hosts": HOST_BARS})
    assert seen.errors == [] and seen.requests == [report.resolve().as_uri()]
    assert seen.empty_charts == []
    assert "Saturation sweep" in seen.text and "IOPS per host" in seen.text
    assert len(seen.values["hosts"]) == len(run["tests"])
    for bars, t in zip(seen.values["hosts"], run["tests"]):
        assert bars["x"] == ["h1", "h2", "h3", "h4"]
        assert bars["y"] == [t["hosts"][h]["all"]["iops"] for h in bars["x"]]


# The data of each host chart as plotly holds it in the page.
HOST_BARS = ("[...document.querySelectorAll('.js-plotly-plot')]"
             ".filter(c => c.layout.title.text.startsWith('IOPS per host'))"
             ".map(c => ({x: [...c.data[0].x], y: [...c.data[0].y]}))")
