"""The HTML report of a real run, opened in the distribution's Chromium:
it draws every chart, logs no error and asks for nothing over the network."""

import json
import shutil
import zipfile

import pytest

from ..browser import open_page
from ..cli import iofleet, show_json, write_plan
from ..conftest import ROOT

pytestmark = pytest.mark.integration

# A comment in the plan is shown in the report: it must stay text.
HOSTILE = "# </script><script>window.pwned = 1</script><img src=x onerror='window.pwned=2'>\n"


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):
    """Two block sizes × two read mixes and one sequential write until steady."""
    tmp = tmp_path_factory.mktemp("report")
    disk = ROOT / "scratch" / "tests" / tmp.name  # a real disk, not tmpfs
    disk.mkdir(parents=True, exist_ok=True)
    data = tmp / "data"
    plan = write_plan(tmp / "plan.yaml", name="report-demo", label="vm-disk", defaults={"size": "32m", "runtime": "2s", "ramp": "1s"},
                      workloads=[{"name": "rand", "matrix": {"bs": ["4k", "64k"], "read_pct": [100, 70]}},
                                 {"name": "seq", "bs": "128k", "read_pct": 0, "random_pct": 0,
                                  "until": "steady", "round": "1s", "max_runtime": "8s"}])
    plan.write_text(HOSTILE + plan.read_text())
    iofleet("run", plan, "--target", disk, data_dir=data)
    yield tmp, data
    shutil.rmtree(disk, ignore_errors=True)


def test_report_opens_offline_with_every_chart_drawn(stored_run):
    tmp, data = stored_run
    out = tmp / "report.html"
    proc = iofleet("report", "1", "-o", out, data_dir=data)
    assert f"Wrote {out}" in proc.stderr
    # plotly.js (4.8 MB as text) is embedded gzip-compressed; it was 5 MB for any run.
    assert out.stat().st_size < 2_500_000
    run = show_json(1, data)
    seen = open_page(out, "report-run.png", evaluate={"pwned": "window.pwned === undefined ? null : window.pwned"})

    assert seen.errors == []
    assert seen.requests == [out.resolve().as_uri()], "the report asks for nothing but itself"
    # Overview: one block-size chart per read mix (100, 70 and 0 % read) and the latency chart;
    # per test: the per-second series and the percentile curve (one host: no host chart), and
    # the per-round latency chart of a test with status rounds.
    rounds = sum(1 for t in run["tests"] if t["methodology"].get("latency_rounds"))
    assert seen.charts == 3 + 1 + 2 * len(run["tests"]) + rounds
    assert seen.empty_charts == []
    for text in ("Plan and environment", "fio-3.33", "vm-disk", "Steady state (SNIA PTS)", "Diagnostics",
                 "warm-up (in no figure)", "4k-r70-rand-j1-qd1", "block size", "latency, ms"):
        assert text in seen.text
    assert seen.values["pwned"] is None, "plan text is shown as text, never run"


def test_markdown_summary_has_the_summary_table_and_verdicts(stored_run):
    _, data = stored_run
    md = iofleet("report", "1", "--format", "md", data_dir=data).stdout
    run = show_json(1, data)
    assert md.startswith("# Run 1 · report-demo")
    assert "| test | status | IOPS | MB/s |" in md
    for t in run["tests"]:
        assert f"| {t['id']} | ok | {t['all']['iops']:,.0f} |" in md or t["methodology"]["window"]
    assert "## Steady state (SNIA PTS)" in md and "## Diagnostics" in md


def test_zip_bundle_holds_report_tables_and_each_tests_raw_fio_files(stored_run):
    tmp, data = stored_run
    out = tmp / "bundle.zip"
    iofleet("results", "export", "1", "--format", "zip", "-o", out, data_dir=data)
    run = show_json(1, data)
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        top = "iofleet-run-1/"
        for name in ("README.txt", "report.html", "summary.txt", "summary.md", "run.json", "tests.csv", "plan.yaml",
                     "tables/summary.csv", "tables/summary.json", "tables/steady.csv", "tables/diagnostics.json"):
            assert top + name in names
        for t in run["tests"]:
            folder = f"{top}tests/{t['seq']:04d}-{t['id']}/"
            raw = json.loads(z.read(folder + "fio-output.json"))
            assert raw["fio version"] == run["fio_version"]
            assert b"[" in z.read(folder + "job.fio")
            assert any(n.startswith(folder) and n.endswith(".log") for n in names)
        bundled = json.loads(z.read(top + "run.json"))
        assert [t["all"]["iops"] for t in bundled["tests"]] == [t["all"]["iops"] for t in run["tests"]]
        assert "lat_bins_ns" in bundled["tests"][0]["read"]
        summary = json.loads(z.read(top + "tables/summary.json"))
        assert [r["test"] for r in summary] == [t["id"] for t in run["tests"]]
        assert "Run 1 · report-demo" in z.read(top + "summary.txt").decode()


def test_report_errors_are_one_line(stored_run, tmp_path):
    _, data = stored_run
    proc = iofleet("report", "7", data_dir=data, check_rc=None)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "7" in proc.stderr
    proc = iofleet("report", "1", "--format", "pdf", data_dir=data, check_rc=None)
    assert proc.returncode != 0 and "use html or md" in proc.stderr
    proc = iofleet("report", "1", "-o", tmp_path / "missing" / "r.html", data_dir=data, check_rc=None)
    assert proc.returncode != 0 and "cannot write" in proc.stderr and "Traceback" not in proc.stderr


def test_the_plans_label_is_stored_and_a_run_can_be_relabelled(stored_run):
    _, data = stored_run
    assert show_json(1, data)["label"] == "vm-disk"
    assert "Run 1 is labelled raid1-vm-encryption." in iofleet("results", "label", "1", "raid1-vm-encryption",
                                                                data_dir=data).stdout
    assert show_json(1, data)["label"] == "raid1-vm-encryption"
    proc = iofleet("results", "label", "1", "no spaces", data_dir=data, check_rc=None)
    assert proc.returncode != 0 and "label 'no spaces': use 1-64 letters" in proc.stderr
    iofleet("results", "label", "1", "vm-disk", data_dir=data)
