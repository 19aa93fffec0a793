"""Analysis and the report read the typed run (results.model.Run,
TestRecord and their records), never the exported dict: `to_dict` is for
the edges (export, bundle files, API and JSON output, the store). An AST
scan, so neither spacing nor a getattr hides a call. What they read of a
test's figures (typed, in export units) is what the export writes."""

import ast
import json
from pathlib import Path

from iofleet.results.methodology import TestMethodology
from iofleet.results.model import Run

SRC = Path(__file__).parents[2] / "src" / "iofleet"
READERS = ("analysis", "report")


def _to_dict_uses(source: str, name: str) -> list[str]:
    """Where a module reads `to_dict`: an attribute (called or passed on),
    or its name as a string (getattr); defining one is no use of it."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Attribute) and node.attr == "to_dict":
            found.append(f"{name}:{node.lineno}: .to_dict")
        elif isinstance(node, ast.Constant) and node.value == "to_dict":
            found.append(f"{name}:{node.lineno}: 'to_dict'")
    return found


def test_analysis_and_report_never_read_the_export_shape():
    files = [p for stage in READERS for p in sorted((SRC / stage).rglob("*.py"))]
    assert len(files) > 20  # the scan sees the stages' modules
    assert [use for p in files for use in _to_dict_uses(p.read_text(), str(p.relative_to(SRC)))] == []


def test_the_scan_finds_a_use_however_it_is_written():
    source = ("a = run.to_dict ()\nb = getattr(run, 'to_dict')()\nc = [t.to_dict for t in run.tests]\n"
              "class Finding:\n    def to_dict(self):\n        return {}\n")
    assert sorted(_to_dict_uses(source, "m.py")) == ["m.py:1: .to_dict", "m.py:2: 'to_dict'", "m.py:3: .to_dict"]


def _as_exported(d) -> dict:
    """Typed figures of one direction, as the export names them."""
    return {"iops": d.iops, "bw_mb_s": d.bw_mb_s, "bw_bytes_s": d.bw_bytes_s, "ios": d.ios, "io_bytes": d.io_bytes,
            "runtime_ms": d.runtime_ms, "lat_mean_us": d.lat_mean_us, "lat_stddev_us": d.lat_stddev_us,
            "lat_min_us": d.lat_min_us, "lat_max_us": d.lat_max_us, "lat_p50_us": d.lat_us("p50"),
            "lat_p90_us": d.lat_us("p90"), "lat_p95_us": d.lat_us("p95"), "lat_p99_us": d.lat_us("p99"),
            "lat_p99_9_us": d.lat_us("p99.9"), "percentile_basis": d.percentile_basis,
            "lat_bound_percentiles": d.lat_bound_percentiles}


def test_a_tests_typed_figures_are_the_exported_ones():
    """What analysis reads of a test, its hosts and its window (typed) is
    what the export writes of them, on real exports."""
    windows = 0
    for path in sorted((SRC.parents[1] / "tests" / "fixtures" / "exports").glob("*.json")):
        doc = json.loads(path.read_text())
        for exported, test in zip(doc["tests"], Run.from_dict(doc).tests):
            figures = test.figures()
            assert figures.fio_jobs == exported["fio_jobs"]
            assert (figures.fio_usr_cpu_pct, figures.fio_sys_cpu_pct) == (exported["fio_usr_cpu_pct"],
                                                                          exported["fio_sys_cpu_pct"])
            for d in ("read", "write", "all"):
                assert _as_exported(figures.direction(d)) == exported[d]
                assert {h: _as_exported(f.direction(d)) for h, f in test.host_figures().items()} == {
                    h: f[d] for h, f in exported["hosts"].items()}
            window = (exported["methodology"] or {}).get("window")
            if window:
                windows += 1
                typed = test.methodology.window_figures()
                # a stored window: as stored when it was measured (without the fields derived since)
                assert all({k: v for k, v in _as_exported(typed.direction(d)).items() if k in window[d]}
                           == window[d] for d in ("read", "write", "all"))
            assert test.metrics_by_host().keys() == exported["host_metrics"].keys()
    assert windows > 0


def test_a_record_says_which_keys_it_was_stored_with():
    stored = TestMethodology.from_dict({"steady": {}, "window": None})
    assert stored.has("window") and not stored.has("until")  # stored before `until` existed
    assert TestMethodology().has("until")  # a new record writes it
    assert not TestMethodology().has("fio_steady")  # an optional field left out while None
