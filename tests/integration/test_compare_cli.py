"""`iofleet compare` end to end: real fio runs, labelled, then compared
through the real CLI."""

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest

from tests.cli import iofleet, show_json, write_plan


def _plan(path, name, engine, repeat):
    return write_plan(path, name=name, defaults={"size": "16m", "runtime": "1s", "ramp": 0, "engine": engine,
                                                  "iodepth": 4, "repeat": repeat},
                      workloads=[{"name": "randread", "bs": "4k", "read_pct": 100}])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    target, data_dir = tmp / "target", tmp / "data"
    target.mkdir()
    a = _plan(tmp / "a.yaml", "cmp-a", "libaio", 3)
    b = _plan(tmp / "b.yaml", "cmp-b", "psync", 3)
    one = _plan(tmp / "one.yaml", "cmp-one", "psync", 1)
    iofleet("run", a, "--target", target, "--label", "aio", data_dir=data_dir)   # run 1
    iofleet("run", b, "--target", target, "--label", "sync", data_dir=data_dir)  # run 2
    iofleet("run", one, "--target", target, data_dir=data_dir)                   # run 3
    return data_dir


def _iops(run: dict) -> list[float]:
    return [t["all"]["iops"] for t in run["tests"] if t["status"] == "ok"]


def test_json_reproduces_the_change_computed_by_hand(data):
    out = json.loads(iofleet("compare", "sync", "--baseline", "aio", "--format", "json", data_dir=data).stdout)
    a, b = _iops(show_json(1, data)), _iops(show_json(2, data))
    assert len(a) == len(b) == 3
    expected = 100 * (sum(b) / 3 - sum(a) / 3) / (sum(a) / 3)
    assert [c["name"] for c in out["configs"]] == ["aio", "sync"]
    (test,) = out["tests"]
    assert test["label"] == "4k-r100-rand-j1-qd4"
    iops = next(r for r in test["rows"] if r["metric"] == "iops")
    base, other = iops["cells"]
    assert base["verdict"] == "baseline" and base["n"] == 3 and sorted(base["samples"]) == sorted(a)
    assert other["pct_change"] == pytest.approx(expected)
    assert other["ci_low"] <= other["pct_change"] <= other["ci_high"]
    assert 0 <= other["p_value"] <= 1
    assert other["verdict"] in ("better", "worse", "within noise")
    assert [p["config"] for p in iops["ranking"]] == sorted(["aio", "sync"], key=lambda n: -(
        sum(a) if n == "aio" else sum(b)))


def test_one_run_against_repeats_is_not_enough(data):
    out = iofleet("compare", "3", "--baseline", "aio", data_dir=data).stdout
    assert "run 3" in out and "not enough repeats" in out
    assert " winner " in out and "Winners per test" not in out and "Rankings" not in out


def test_markdown_and_csv_files(data, tmp_path):
    md, table = tmp_path / "c.md", tmp_path / "c.csv"
    iofleet("compare", "aio", "sync", "3", "--baseline", "aio", "--format", "md", "-o", md, data_dir=data)
    text = md.read_text()
    assert text.startswith("# Comparison against aio") and "| test |" in text and "| winner |" in text
    iofleet("compare", "sync", "-b", "aio", "--format", "csv", "-o", table, "--noise", "5", data_dir=data)
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert {r["config"] for r in rows} == {"aio", "sync"}
    iops = [r for r in rows if r["metric"] == "iops"]
    assert [r["verdict"] for r in iops if r["config"] == "aio"] == ["baseline"]


def test_html_page_beside_the_table(data, tmp_path):
    page = tmp_path / "c.html"
    proc = iofleet("compare", "sync", "-b", "aio", "--html", page, data_dir=data)
    assert f"Wrote {page}" in proc.stderr and " winner " in proc.stdout
    html = page.read_text()
    assert "<title>Comparison against aio</title>" in html and "Plotly.newPlot" in html
    assert 'data-chart="metric-1-2"' in html  # IOPS: values and % change


def test_regression_gate_exit_code_and_junit(data, tmp_path):
    """Exit 3 exactly when a figure of aio is worse than sync's by more than 5 % beyond noise, as the
    JSON comparison of the same runs says, else 4 when one is worse by more than 5 % within noise
    (inconclusive); the JUnit file names the same failures and errors."""
    report = tmp_path / "gate.xml"
    proc = iofleet("compare", "sync", "aio", "--fail-above", "5", "--junit", report, "--format", "json",
                   data_dir=data, check_rc=None)
    doc = json.loads(proc.stdout)
    assert doc["baseline"] == "sync"  # the first configuration named
    labels = {m["name"]: m["label"] for m in doc["metrics"]}
    higher = {m["name"]: m["higher_is_better"] for m in doc["metrics"]}
    beyond = {(f"{t['label']} {labels[r['metric']]}", c["verdict"]) for t in doc["tests"] for r in t["rows"]
              for c in r["cells"] if c["pct_change"] is not None
              and (-c["pct_change"] if higher[r["metric"]] else c["pct_change"]) > 5}
    worse = {name for name, verdict in beyond if verdict == "worse"}
    unsure = {name for name, verdict in beyond if verdict != "worse"}
    assert proc.returncode == (3 if worse else 4 if unsure else 0), proc.stderr
    first = proc.stderr.split("Wrote")[-1].splitlines()[1]
    assert first.startswith("FAILED --fail-above 5" if worse else "INCONCLUSIVE --fail-above 5" if unsure
                            else "passed --fail-above 5"), proc.stderr
    assert all(f"aio, {name.replace(' ', ', ', 1)}:" in proc.stderr for name in worse | unsure)
    cases = ET.parse(report).getroot().findall("testsuite/testcase")
    assert {c.get("name") for c in cases if c.find("failure") is not None} == worse
    assert {c.get("name") for c in cases if c.find("error") is not None} == unsure
    assert len(cases) == sum(len(t["rows"]) for t in doc["tests"])
    easy = iofleet("compare", "aio", "-b", "sync", "--fail-above", "1000", data_dir=data, check_rc=None)
    assert easy.returncode in (0, 4) and "--fail-above 1000: " in easy.stderr


def test_no_matched_test_is_an_error_that_says_which_match_pairs_them(data):
    proc = iofleet("compare", "aio", "sync", "--match", "bs,read_pct,engine", data_dir=data, check_rc=2)
    assert proc.stderr == ("error: no test is in every configuration: they differ in engine (libaio in aio, psync "
                           "in sync); to compare them, pair tests with --match bs,read_pct\n")
    assert proc.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["nosuch", "--baseline", "aio"], "CONFIG 'nosuch': no run has this label or id"),
    (["sync", "--baseline", "99"], "--baseline 99: no run 99"),
    (["sync", "--baseline", "aio", "--match", "bs,colour"], "--match bs,colour: no test has the parameter colour"),
    (["sync", "--baseline", "aio", "--format", "xml"], "--format 'xml': use table, md, csv, json"),
    (["sync", "--baseline", "aio", "--noise", "-1"], "--noise -1: give a share from 0 to 100 %"),
    (["aio", "--baseline", "aio"], "compare needs at least two configurations"),
    (["aio"], "compare needs at least two configurations"),
    (["aio", "sync", "--junit", "x.xml"], "--junit: give --fail-above PCT too"),
    (["aio", "sync", "--fail-above", "inf"], "--fail-above inf: give a share from 0 to 1000 %"),
    (["aio", "sync", "--fail-above", "1e308"], "--fail-above 1e+308: give a share from 0 to 1000 %"),
    (["sync", "sync", "--baseline", "aio"], "CONFIG sync: given twice"),
])
def test_bad_arguments_are_one_line_errors(data, args, message):
    proc = iofleet("compare", *args, data_dir=data, check_rc=2)
    assert proc.stderr.startswith(f"error: {message}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
