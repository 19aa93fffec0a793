"""Parsing recorded real fio outputs, streams and logs; bad input."""

import copy
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iofleet.errors import ImportFormatError
from iofleet.fio.parse import DocumentSplitter, parse_log, parse_output, split_documents
from iofleet.results.aggregate import aggregate
from iofleet.fio.records import PERCENTILES, pct_key

FIO = Path(__file__).resolve().parents[1] / "fixtures" / "fio"
NONE = {pct_key(p): None for p in PERCENTILES}


def text(name):
    return (FIO / name).read_text()


def fio_pct(lat):
    """fio's own percentile dict in our keys."""
    return {pct_key(p): lat["percentile"][f"{p:f}"] for p in PERCENTILES}


# --- normal runs ----------------------------------------------------------------


def test_single_job_json_plus():
    raw = json.loads(text("single-job-json+.json"))
    out = parse_output(text("single-job-json+.json"), host="h1")
    assert out.fio_version == "fio-3.33" and out.timestamp == raw["timestamp"]
    assert out.has_bins and out.fio_all_clients is None
    [job] = out.jobs
    fio_job = raw["jobs"][0]
    assert (job.host, job.job, job.index, job.error) == ("h1", "single", 0, 0)
    assert job.runtime_ms == fio_job["job_runtime"]
    assert job.usr_cpu_pct == fio_job["usr_cpu"] and job.sys_cpu_pct == fio_job["sys_cpu"]

    r, fr = job.read, fio_job["read"]
    assert (r.ios, r.io_bytes, r.runtime_ms) == (fr["total_ios"], fr["io_bytes"], fr["runtime"])
    assert (r.iops, r.bw_bytes_s) == (fr["iops"], fr["bw_bytes"])
    lat = fr["lat_ns"]
    assert (r.lat_n, r.lat_mean_ns, r.lat_stddev_ns, r.lat_min_ns, r.lat_max_ns) == (
        lat["N"], lat["mean"], lat["stddev"], lat["min"], lat["max"])
    assert r.percentile_basis == "lat"
    assert r.bins == {int(k): v for k, v in lat["bins"].items()}
    assert r.percentiles_ns == fio_pct(lat)

    # randread: the write direction did no IO.
    w = job.write
    assert w.ios == 0 and w.lat_n == 0 and w.iops == 0.0
    assert w.lat_mean_ns is None and w.lat_min_ns is None and w.bins is None
    assert w.percentiles_ns == NONE
    # ... so "all" is the read side, exactly.
    assert job.all.percentiles_ns == r.percentiles_ns and job.all.lat_mean_ns == r.lat_mean_ns

    [disk] = out.disks
    assert disk.host == "h1" and disk.name == raw["disk_util"][0]["name"]
    assert disk.util_pct == raw["disk_util"][0]["util"]


def test_multi_job_json_plus_each_job_matches_fio():
    raw = json.loads(text("multi-job-json+.json"))
    out = parse_output(raw)
    assert [j.index for j in out.jobs] == [0, 1, 2, 3]
    assert {j.host for j in out.jobs} == {"local"}
    for job, fio_job in zip(out.jobs, raw["jobs"], strict=True):
        for direction in ("read", "write"):
            lat = fio_job[direction]["lat_ns"]
            assert getattr(job, direction).percentiles_ns == fio_pct(lat)
            assert getattr(job, direction).lat_n == fio_job[direction]["total_ios"]


def test_plain_json_uses_fios_percentiles_without_bins():
    raw = json.loads(text("multi-job-json.json"))
    out = parse_output(raw)
    assert not out.has_bins
    for job, fio_job in zip(out.jobs, raw["jobs"], strict=True):
        for direction in ("read", "write"):
            d = getattr(job, direction)
            assert d.bins is None and d.percentile_basis == "lat"
            assert d.percentiles_ns == fio_pct(fio_job[direction]["lat_ns"])
            assert all(v is not None for v in d.percentiles_ns.values())
        # read and write both did IO: their percentiles cannot be merged.
        assert job.all.percentiles_ns == NONE and job.all.bins is None
    assert aggregate(out.jobs).read.percentiles_ns == NONE


def test_clat_only_output():
    raw = json.loads(text("clat-only-json+.json"))
    [job] = parse_output(raw).jobs
    for direction in ("read", "write"):
        d = getattr(job, direction)
        fio_d = raw["jobs"][0][direction]
        assert "percentile" not in fio_d["lat_ns"]  # as recorded: no lat percentiles
        assert d.percentile_basis == "clat"
        assert d.percentiles_ns == fio_pct(fio_d["clat_ns"])
        assert sum(d.bins.values()) == fio_d["clat_ns"]["N"]
        # Mean/stddev are still total latency.
        assert d.lat_mean_ns == fio_d["lat_ns"]["mean"]


def test_warning_lines_before_the_document_are_tolerated():
    doc = text("single-job-json+.json")
    noisy = "note: both iodepth >= 1 and synchronous I/O engine are selected\nfio: some warning {\n" + doc
    assert parse_output(noisy) == parse_output(doc)


def test_compact_json_without_a_brace_line():
    raw = json.loads(text("single-job-json+.json"))
    assert parse_output(json.dumps(raw)) == parse_output(raw)


# --- client/server -----------------------------------------------------------------


def test_client_server_hosts_and_all_clients():
    raw = json.loads(text("clientserver-2hosts-json+.json"))
    out = parse_output(raw, host="ignored")
    assert len(out.jobs) == 4
    assert all(j.job != "All clients" for j in out.jobs)
    assert [(j.host, j.index) for j in out.jobs] == [
        ("127.0.0.1:8765", 0), ("127.0.0.1:8766", 0), ("127.0.0.1:8765", 1), ("127.0.0.1:8766", 1)]
    fio_all = [e for e in raw["client_stats"] if e["jobname"] == "All clients"][0]
    assert out.fio_all_clients["read"]["iops"] == fio_all["read"]["iops"]
    assert out.fio_all_clients["read"]["total_ios"] == fio_all["read"]["total_ios"]
    ours = aggregate(out.jobs)
    assert ours.read.iops == pytest.approx(fio_all["read"]["iops"], rel=1e-6)
    assert ours.read.ios == fio_all["read"]["total_ios"]
    assert ours.read.io_bytes == fio_all["read"]["io_bytes"]
    assert [d.host for d in out.disks] == ["127.0.0.1:8765", "127.0.0.1:8766"]


def test_client_server_distinct_hostnames_drop_the_port():
    raw = json.loads(text("clientserver-2hosts-json+.json"))
    for entry in raw["client_stats"] + raw["disk_util"]:
        if entry["port"] == 8766:
            entry["hostname"] = "10.0.0.2"
    out = parse_output(raw)
    assert [j.host for j in out.jobs] == ["127.0.0.1", "10.0.0.2", "127.0.0.1", "10.0.0.2"]
    assert [d.host for d in out.disks] == ["127.0.0.1", "10.0.0.2"]


# --- status stream -----------------------------------------------------------------


def test_split_documents_on_stream():
    stream = text("status-stream-json+.txt")
    docs = split_documents(stream)
    assert len(docs) >= 3
    parsed = [json.loads(d) for d in docs]
    elapsed = [p["jobs"][0]["elapsed"] for p in parsed]
    assert elapsed == sorted(elapsed)
    final = parse_output(docs[-1])
    # The last document is the final result: the job ran its 3 s and
    # every issued IO completed.
    assert final.jobs[0].runtime_ms == 3000
    assert final.jobs[0].read.ios == final.jobs[0].read.lat_n
    assert all(p["jobs"][0]["job_runtime"] < 3000 for p in parsed[:-1])


def test_splitter_random_chunks_give_the_same_documents():
    stream = "fio: a warning line\n" + text("status-stream-json+.txt")
    expected = split_documents(stream)
    rng = random.Random(3)
    for _ in range(20):
        splitter, got, pos = DocumentSplitter(), [], 0
        while pos < len(stream):
            size = rng.randint(1, 5000)
            got += splitter.feed(stream[pos:pos + size])
            pos += size
        got += splitter.close()
        assert got == expected


def test_splitter_returns_documents_as_they_complete():
    docs = split_documents(text("status-stream-json+.txt"))
    splitter = DocumentSplitter()
    assert splitter.feed(docs[0][:-3]) == []
    assert splitter.feed(docs[0][-3:] + "noise\n" + docs[1]) == docs[:2]


def test_incomplete_trailing_document_is_ignored():
    docs = split_documents(text("status-stream-json+.txt"))
    cut = docs[0] + docs[1][: docs[1].index("\n", len(docs[1]) // 2) + 1]  # at a line end
    assert split_documents(cut) == docs[:1]
    # An unfinished document followed by a new one is dropped too.
    assert split_documents(cut + docs[2]) == [docs[0], docs[2]]


def test_final_brace_without_newline():
    doc = split_documents(text("single-job-json+.json"))[0]
    assert split_documents(doc.rstrip("\n")) == [doc]


def test_parse_output_refuses_a_whole_stream():
    with pytest.raises(ImportFormatError, match="split_documents"):
        parse_output(text("status-stream-json+.txt"))


# --- logs --------------------------------------------------------------------------


def test_parse_iops_log():
    series = parse_log(text("iops.log"))
    assert set(series) == {"read", "write"}
    t, v = series["read"]
    assert t == [1000, 2001] and v == [44345.0, 43860.0]
    assert series["write"] == ([1000, 2001], [18940.0, 18764.0])


def test_parse_bw_and_lat_logs():
    bw = parse_log(text("bw.log"))
    assert bw["read"][1][0] == 177380.0  # KiB/s as fio writes it
    lat = parse_log(text("lat.log"))
    assert lat["read"][0] == [1000, 2000, 3000, 3000]
    assert lat["write"] == ([1000, 2000, 3000], [69381.0, 69903.0, 69056.0])


def test_log_trim_and_blank_lines_and_offsets():
    log = "1000, 5, 2, 4096, 0\n\n1000, 7, 0, 4096, 8192, 0\n"
    assert parse_log(log) == {"read": ([1000], [7.0])}
    assert parse_log("") == {}


@pytest.mark.parametrize("bad", ["1000, 5\n", "1000, x, 0, 0, 0\n", "1000, 5, 3, 0, 0\n", "garbage\n"])
def test_bad_log_lines_name_the_line(bad):
    with pytest.raises(ImportFormatError, match="line 2"):
        parse_log("1000, 1, 0, 0, 0\n" + bad)


# --- bad input -----------------------------------------------------------------------


@pytest.mark.parametrize("bad, says", [
    ("", "empty"),
    ("hello, world", "not JSON"),
    ('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n', "truncated"),
    ("{}", "'jobs' nor 'client_stats'"),
    ("[1, 2]", "JSON object"),
    ('{"fio version": "fio-3.33", "jobs": {}}', "jobs should be a list"),
    ('{"fio version": "fio-3.33", "jobs": [{}]}', "jobs[0].jobname is missing"),
    ('{"jobs": []}', "fio version is missing"),
])
def test_bad_documents(bad, says):
    with pytest.raises(ImportFormatError) as e:
        parse_output(bad)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_truncated_real_output():
    doc = text("multi-job-json+.json")
    for cut in (10, len(doc) // 3, len(doc) - 5):
        with pytest.raises(ImportFormatError):
            parse_output(doc[:cut])


@pytest.mark.parametrize("path, value, says", [
    (("jobs", 0, "read", "iops"), "fast", "jobs[0].read.iops should be a number"),
    (("jobs", 0, "read", "lat_ns"), None, "jobs[0].read.lat_ns should be an object"),
    (("jobs", 0, "read", "lat_ns", "N"), -1, "jobs[0].read.lat_ns.N should be a non-negative integer"),
    (("jobs", 0, "read", "lat_ns", "bins"), {"abc": 1}, "bins has a bucket"),
    (("jobs", 0, "read", "lat_ns", "bins"), {"100": "many"}, "should be a count"),
    (("jobs", 0, "error"), True, "jobs[0].error should be"),
    (("jobs", 0, "jobname"), 5, "jobs[0].jobname should be a string"),
    (("disk_util",), "vda", "disk_util should be a list"),
])
def test_wrong_types_are_named(path, value, says):
    raw = json.loads(text("single-job-json+.json"))
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ImportFormatError) as e:
        parse_output(raw)
    assert says in str(e.value)


def test_missing_field_is_named():
    raw = json.loads(text("single-job-json+.json"))
    del raw["jobs"][0]["write"]["total_ios"]
    with pytest.raises(ImportFormatError, match=r"jobs\[0\]\.write\.total_ios is missing"):
        parse_output(raw)


def test_client_entry_without_port():
    raw = json.loads(text("clientserver-2hosts-json+.json"))
    del raw["client_stats"][1]["port"]
    with pytest.raises(ImportFormatError, match=r"client_stats\[1\]\.port is missing"):
        parse_output(raw)


# Random JSON-like values, and the real document with one part replaced.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["jobs", "client_stats", "fio version", "read", "write", "lat_ns", "clat_ns",
                         "bins", "percentile", "N", "jobname", "hostname", "port", "disk_util"])
        | st.text(max_size=6), inner, max_size=5),
    max_leaves=20,
)


def paths(obj, prefix=()):
    """Every path into a JSON document; of the long bins/percentile lists
    only the first entry."""
    yield prefix
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    else:
        return
    for key, value in items:
        if key in ("bins", "percentile") and value:
            yield prefix + (key,)
            yield prefix + (key, next(iter(value)))
            continue
        yield from paths(value, prefix + (key,))


# The parts of fio's document the parser reads (breaking others is harmless).
READ_KEYS = {"fio version", "timestamp", "jobs", "client_stats", "disk_util", "jobname", "error",
             "job_runtime", "usr_cpu", "sys_cpu", "read", "write", "total_ios", "io_bytes", "runtime",
             "iops", "bw_bytes", "lat_ns", "clat_ns", "min", "max", "mean", "stddev", "N",
             "percentile", "bins", "name", "util", "read_ios", "write_ios", "hostname", "port"}


def read_by_parser(path):
    return all(isinstance(k, int) or k in READ_KEYS or parent in ("bins", "percentile")
               for parent, k in zip((None,) + path, path))


SINGLE = json.loads(text("single-job-json+.json"))
SINGLE_PATHS = [p for p in paths(SINGLE) if p and read_by_parser(p)]


def only_import_errors(doc):
    try:
        parse_output(doc)
    except ImportFormatError as e:
        assert str(e) and "\n" not in str(e)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_random_json_values_raise_only_import_errors(value):
    only_import_errors(value if isinstance(value, dict) else json.dumps(value))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["jobs", "client_stats", "fio version", "disk_util", "timestamp"]),
                       json_values, max_size=4))
def test_random_top_level_dicts_raise_only_import_errors(doc):
    only_import_errors(doc)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(SINGLE_PATHS), json_values, st.booleans())
def test_real_document_with_one_part_broken(path, value, delete):
    doc = copy.deepcopy(SINGLE)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = value
    only_import_errors(doc)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=len(text("single-job-json+.json"))), st.text(max_size=5))
def test_cut_or_garbled_text_raises_only_import_errors(cut, junk):
    doc = text("single-job-json+.json")
    only_import_errors(doc[:cut] + junk)
