"""Bad input, fuzzed: every loader and parser either succeeds or raises one
of iofleet's own errors, whose message is a few plain lines naming the
file or field — never KeyError, TypeError, ValueError, OverflowError,
RecursionError & co., never a traceback or Python's own wording.

Extends the hypothesis tests of test_parse.py (one part of the single-job
document broken) and test_plan.py / test_imports.py (plan shapes, job-file
lines) with: nasty scalars everywhere (NaN, inf, 1e308, 2**80, a
5000-digit hex number, bytes, dates, YAML tags), text truncated and
garbled, every recorded fio output broken in several places at once, and
the paths after a successful load (expansion, aggregation, the model's
table, storing an import).
"""

import copy
import json
import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from iofleet.analysis.theoretical import entered_device, model_table
from iofleet.errors import IofleetError
from iofleet.fio.parse import parse_log, parse_output, split_documents
from iofleet.fleet.inventory import load_inventory
from iofleet.importers import import_file, load_plan_source
from iofleet.plan import expand
from iofleet.plan.hardware import load_model, parse_model
from iofleet.plan.load import load_plan, parse_plan, parse_plan_text
from iofleet.plan.params import PARAMS, RUN_PARAMS
from iofleet.plan.units import parse_duration, parse_size
from iofleet.report.theoretical import json_report, markdown_report, model_data
from iofleet.results.aggregate import aggregate
from iofleet.results.ingest import import_outputs
from iofleet.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
FIO = ROOT / "tests" / "fixtures" / "fio"
FIO_DOCS = ["single-job-json+.json", "multi-job-json+.json", "multi-job-json.json", "clat-only-json+.json",
            "clientserver-2hosts-json+.json"]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

# Python's own wording, which must never reach a user.
NOISE = re.compile(
    r"Traceback|File \"|object at 0x|sys\.set_int_max_str_digits|invalid literal for int|could not convert "
    r"string to float|cannot convert float|NoneType|unhashable type|has no attribute|positional argument|"
    r"maximum recursion|division by zero|Exceeds the limit|codec can't|is not subscriptable|not iterable|"
    r"KeyError|TypeError|AttributeError|OverflowError|ZeroDivisionError")


def clean_message(text: str, max_lines: int = 60) -> None:
    lines = text.splitlines()
    assert lines and len(lines) <= max_lines, text
    for line in lines:
        assert line.strip(), f"blank line in {text!r}"
        assert not NOISE.search(line), line


def settles(call, *args, **kwargs):
    """The call's result, or None after an iofleet error with a clean message.
    Anything else (a bug) propagates and fails the test."""
    try:
        return call(*args, **kwargs)
    except IofleetError as exc:
        clean_message(str(exc))
        return None


# --- nasty values ------------------------------------------------------------------

HUGE_HEX = "0x" + "f" * 5000  # YAML reads hex without Python's 4300-digit limit
NASTY_SCALARS = st.one_of(
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 2**80, -(2**80), 2**64, 2**63 - 1,
                     -1, 0, 0.5, -0.0, True, False, None, "", " ", "²", "٣", "1e308", "4k", "4x", "1h30m",
                     "90s", "10%", "NaN", "inf", "-1", "0x10", "1_000", "\x00", "\n", "a\nb", b"\xff", "9" * 5000, "9" * 400 + "k"]),
    st.builds(lambda: 16**5000),  # built, not listed: hypothesis would repr it
    st.integers(), st.floats(), st.text(max_size=12),
)
DUMPABLE_SCALARS = NASTY_SCALARS.filter(lambda v: not (isinstance(v, int) and v > 16**4000))  # for yaml.dump
NASTY = st.recursive(NASTY_SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(max_size=6), c, max_size=3), max_leaves=6)

# (Nesting deep enough to exhaust the stack takes ~1 s a time: tested once, below.)
# YAML text that breaks loaders in their own ways.
YAML_SNIPPETS = [".inf", "-.inf", ".nan", "1e308", "2e400", HUGE_HEX, "9" * 5000, "!!int x", "!!float x",
                 "!!bool x", "!!timestamp x", "2001-13-45", "2001-02-30 10:00:00", "!!binary aGk=", "!!set {a}",
                 "!!python/object:os.system x", "&a [*a]", "*nope", "[" * 50, "{a: " * 50, "- " * 500 + "x",
                 "? [a]\n: b", "'unterminated", "\t", "\x00", "\ufeff", "%YAML 9.9\n---", "--- a\n--- b",
                 "{a: 1, a: 2}", "[]", "{}", "null", "~", "|\n  x", "b: !!str [1]"]


# --- plans ---------------------------------------------------------------------------

PLAN_KEYS = sorted({"name", "description", "label", "targets", "hosts", "keep_files", "on_error", "on_host_loss",
                    "mixed", "defaults", "workloads", "matrix", *PARAMS, *RUN_PARAMS, "x"})


def plan_with(where: str, key: str, value) -> dict:
    plan = {"name": "p", "targets": ["/t"], "workloads": [{"name": "w", "matrix": {"iodepth": [1]}}]}
    if where == "top":
        plan[key] = value
    elif where == "defaults":
        plan["defaults"] = {key: value}
    elif where == "workload":
        plan["workloads"][0][key] = value
    else:
        plan["workloads"][0]["matrix"][key] = value
    return plan


def plan_settles(data, source="fuzz.yaml"):
    plan = settles(parse_plan, data, source)
    if plan is not None:
        settles(expand, plan)


@FAST
@given(st.sampled_from(["top", "defaults", "workload", "matrix"]), st.sampled_from(PLAN_KEYS), NASTY)
def test_plan_fields_with_nasty_values(where, key, value):
    plan_settles(plan_with(where, key, value))


@FAST
@given(st.recursive(NASTY_SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.sampled_from(PLAN_KEYS) | NASTY_SCALARS.filter(lambda v: isinstance(v, (str, int))), c, max_size=5),
    max_leaves=15))
def test_plan_of_any_shape(data):
    plan_settles(data)


QUICK = (ROOT / "examples" / "quick.yaml").read_text()
HCIBENCH = (ROOT / "examples" / "hcibench-24.yaml").read_text()


@FAST
@given(st.sampled_from([QUICK, HCIBENCH]), st.lists(st.tuples(
    st.floats(0, 1), st.sampled_from(YAML_SNIPPETS) | st.text(max_size=6)), min_size=1, max_size=3),
    st.floats(0, 1))
def test_plan_text_truncated_and_garbled(text, inserts, cut):
    for at, junk in inserts:
        i = int(at * len(text))
        text = text[:i] + junk + text[i:]
    text = text[: max(1, int(cut * len(text)))] if cut < 0.9 else text
    plan = settles(parse_plan_text, text, "plan.yaml")
    if plan is not None:
        settles(expand, plan)


@FAST
@given(st.sampled_from(YAML_SNIPPETS), st.sampled_from(["name", "description", "label", "targets", "bs", "size",
                                                         "runtime", "iodepth", "matrix", "hosts", "cache_size",
                                                         "prepare_passes", "defaults", "workloads"]))
def test_plan_field_given_nasty_yaml(snippet, key):
    line = snippet.replace("\n", "\n  ")
    top = f"name: p\nworkloads: [{{name: w}}]\n{key}: {line}\n"
    nested = f"name: p\nworkloads:\n  - name: w\n    {key}: {line}\n"
    for text in (top, nested):
        plan = settles(parse_plan_text, text, "plan.yaml")
        if plan is not None:
            settles(expand, plan)


def test_plan_files_that_are_not_text(tmp_path):
    for name, data in [("bin.yaml", b"\xff\xfe\x00name: p"), ("empty.yaml", b""), ("latin.yaml", "name: é".encode("latin-1"))]:
        (tmp_path / name).write_bytes(data)
        settles(load_plan, tmp_path / name)
    settles(load_plan, tmp_path)  # a directory
    with pytest.raises(IofleetError) as info:
        parse_plan_text("name: p\nworkloads: [{name: w, size: .inf}]", "p.yaml")
    assert str(info.value) == "p.yaml: workloads[0].size: a size such as 4k, 128KiB or 20GiB is a whole, " \
                              "non-negative number (got inf)"
    with pytest.raises(IofleetError, match=r"^p\.yaml: not valid YAML: a value cannot be read"):
        parse_plan_text("name: p\ndescription: 2001-13-45\nworkloads: [{name: w}]", "p.yaml")
    with pytest.raises(IofleetError, match=r"^p\.yaml: not valid YAML: nested too deeply$"):
        parse_plan_text("[" * 5000, "p.yaml")
    with pytest.raises(IofleetError, match=r"^p\.yaml: workloads\[0\]\.iodepth: .* \(got a number too long to show\)$"):
        parse_plan_text(f"name: p\nworkloads: [{{name: w, iodepth: {HUGE_HEX}}}]", "p.yaml")


# --- units ------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(NASTY)
def test_units_give_a_number_or_a_plain_value_error(value):
    """The unit parsers are pydantic validators: ValueError *is* their error
    (the plan loader turns it into a PlanError line), but with a message of
    their own, and never another exception."""
    for parse in (parse_size, parse_duration, *(p.parse for p in PARAMS.values()),
                  *(p.parse for p in RUN_PARAMS.values())):
        try:
            out = parse(value)
        except ValueError as exc:
            assert type(exc) is ValueError
            clean_message(str(exc), max_lines=1)
        else:
            if parse in (parse_size, parse_duration):
                assert isinstance(out, int) and out >= 0


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"\s*[0-9²٣.]{0,6}\s*(ms|min|[kmgtpKMGTP]?(i?[bB])?|[smhd]){0,3}\s*", fullmatch=True))
def test_unit_like_text(text):
    for parse in (parse_size, parse_duration):
        try:
            assert parse(text) >= 0
        except ValueError as exc:
            clean_message(str(exc), max_lines=1)


# --- inventory ------------------------------------------------------------------------

HOST_KEYS = ["name", "address", "labels", "targets", "metrics", "nic_gbps", "cache_size", "x"]
GOOD_HOST = {"name": "h1", "address": "10.0.0.1:8765", "labels": {"role": "db"}, "targets": ["/t"],
             "metrics": "http://10.0.0.1:9100/metrics", "nic_gbps": 25, "cache_size": "1g"}


def inventory_settles(path: Path):
    inv = settles(load_inventory, path)
    if inv is not None:  # what an accepted inventory hands on is plain and safe
        for h in inv.hosts:
            assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", h.name)
            assert re.fullmatch(r"((ip|ip6):)?[A-Za-z0-9.:%_-]+,[0-9]{1,5}", h.fio_client_arg), h.fio_client_arg


@FAST
@given(st.sampled_from(HOST_KEYS), st.recursive(DUMPABLE_SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(max_size=6), c, max_size=3), max_leaves=6), st.booleans())
def test_inventory_host_fields_with_nasty_values(tmp_path_factory, key, value, drop):
    host = dict(GOOD_HOST)
    if drop:
        host.pop(key, None)
    else:
        host[key] = value
    path = tmp_path_factory.mktemp("inv") / "inventory.yaml"
    path.write_text(yaml.safe_dump({"hosts": [host]}))
    inventory_settles(path)


@FAST
@given(st.sampled_from(YAML_SNIPPETS), st.sampled_from(HOST_KEYS))
def test_inventory_field_given_nasty_yaml(tmp_path_factory, snippet, key):
    path = tmp_path_factory.mktemp("inv") / "inventory.yaml"
    path.write_text(f"hosts:\n  - address: 10.0.0.1\n    targets: [/t]\n    {key}: {snippet.replace(chr(10), ' ')}\n")
    inventory_settles(path)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(list("0123456789abcdef:.[]%,-_ \n\t$;/") + ["eth0", "::1", "fe80::", "²", "٨"]),
                max_size=20).map("".join))
@example(address="::")  # found by a long run: its default host name was ''
@example(address="fe80::1%a,b")
@example(address="fe80::1%a\nb")
@example(address="10.0.0.1:²")
def test_inventory_addresses(tmp_path_factory, address):
    path = tmp_path_factory.mktemp("inv") / "inventory.yaml"
    path.write_text(yaml.safe_dump({"hosts": [{"address": address, "targets": ["/t"]}]}))
    inventory_settles(path)


def test_inventory_files_that_are_not_inventories(tmp_path):
    for i, data in enumerate([b"\xff\xfe", b"", b"[1, 2]", b"hosts: []", b"hosts: 5", b"a: " + b"9" * 5000,
                              b"[" * 5000, b"hosts: [{address: 10.0.0.1, targets: [/t], x: 2001-13-45}]"]):
        (tmp_path / f"{i}.yaml").write_bytes(data)
        with pytest.raises(IofleetError) as info:
            load_inventory(tmp_path / f"{i}.yaml")
        clean_message(str(info.value))
        assert str(tmp_path / f"{i}.yaml") in str(info.value)
    with pytest.raises(IofleetError):
        load_inventory(tmp_path)


# --- hardware model -------------------------------------------------------------------------

GOOD_MODEL = {"device": {"read_iops": 90000, "write_iops": 30000, "read_mb_s": 500, "write_mb_s": 450, "bs": "4k"},
              "devices_per_host": 4, "hosts": 3, "layout": "erasure", "k": 2, "m": 1, "stripe_unit": "64k",
              "nic_gbps": 25, "workloads": [{"bs": "4k", "read_pct": 70}, {"bs": "1m", "read_pct": 0,
                                                                          "pattern": "sequential"}]}
MODEL_PATHS = [("device",), ("device", "read_iops"), ("device", "write_mb_s"), ("device", "bs"), ("device", "run"),
               ("devices_per_host",), ("hosts",), ("layout",), ("copies",), ("k",), ("m",), ("stripe_unit",),
               ("nic_gbps",), ("name",), ("workloads",), ("workloads", 0), ("workloads", 0, "bs"),
               ("workloads", 0, "read_pct"), ("workloads", 1, "pattern"), ("x",)]


def set_path(doc, path: tuple, value, delete: bool = False) -> None:
    """Replace (or delete) the part of a document at `path`, if an earlier
    change left it there."""
    try:
        target = doc
        for key in path[:-1]:
            target = target[key]
        if delete and isinstance(target, dict):
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


def model_settles(data, source="m.yaml"):
    model = settles(parse_model, data, source)
    if model is not None:  # the table and its reports work with what was accepted
        device = entered_device(model)
        data = model_data(model, device, model_table(model, device))
        json.loads(json_report(data))
        markdown_report(data)


@FAST
@given(st.lists(st.tuples(st.sampled_from(MODEL_PATHS), NASTY, st.booleans()), min_size=1, max_size=3),
       st.sampled_from(["raid0", "mirror", "raid5", "raid6", "erasure"]))
def test_model_with_nasty_values(changes, layout):
    data = copy.deepcopy(GOOD_MODEL) | {"layout": layout}
    for path, value, delete in changes:
        set_path(data, path, value, delete)
    model_settles(data)


@FAST
@given(st.sampled_from(YAML_SNIPPETS), st.sampled_from(["device", "devices_per_host", "layout", "bs", "read_iops",
                                                         "nic_gbps", "workloads"]))
def test_model_file_given_nasty_yaml(tmp_path_factory, snippet, key):
    path = tmp_path_factory.mktemp("model") / "m.yaml"
    text = yaml.safe_dump(GOOD_MODEL, sort_keys=False)
    path.write_text(re.sub(rf"^(\s*){key}:.*$", lambda m: f"{m[1]}{key}: {snippet.replace(chr(10), ' ')}", text,
                           count=1, flags=re.MULTILINE))
    model = settles(load_model, path)
    if model is not None:
        model_settles(model.model_dump(), str(path))


def test_infinite_device_figures_are_refused():
    data = copy.deepcopy(GOOD_MODEL)
    data["device"]["read_iops"] = float("inf")
    with pytest.raises(IofleetError, match=r"^m\.yaml: device\.read_iops: .*finite"):
        parse_model(data, "m.yaml")


# --- fio output -------------------------------------------------------------------------------

def paths(obj, prefix=()):
    """Every (dict key | list index) path in a document; a bins/percentile
    dict stands for itself and one of its entries (they are thousands)."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    for key, value in items:
        yield prefix + (key,)
        if key in ("bins", "percentile") and isinstance(value, dict) and value:
            yield prefix + (key, next(iter(value)))
            continue
        yield from paths(value, prefix + (key,))


DOCS = {name: json.loads((FIO / name).read_text()) for name in FIO_DOCS}
DOC_PATHS = {name: list(paths(doc)) for name, doc in DOCS.items()}
JSON_NASTY = st.one_of(NASTY_SCALARS.filter(lambda v: not isinstance(v, bytes)),
                       st.sampled_from([[], {}, [1], {"a": None}, "x" * 100, {"N": 2**80}]))


def output_settles(doc, host="local"):
    out = settles(parse_output, doc, host)
    if out is not None:
        names = {j.job for j in out.jobs}
        for name in names:
            aggregate([j for j in out.jobs if j.job == name])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(FIO_DOCS), st.data())
def test_fio_output_broken_in_several_places(name, data):
    doc = copy.deepcopy(DOCS[name])
    for _ in range(data.draw(st.integers(1, 4))):
        set_path(doc, data.draw(st.sampled_from(DOC_PATHS[name])), data.draw(JSON_NASTY), data.draw(st.booleans()))
    output_settles(doc)
    try:
        text = json.dumps(doc)  # NaN, Infinity: Python's json reads them back
    except ValueError:  # a 5000-digit int
        return
    output_settles(text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FIO_DOCS + ["status-stream-json+.txt"]), st.floats(0, 1),
       st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["{", "}", "\n{\n", "\n}\n", "]", "[", '"', ",", "\x00",
                                                            "NaN", "1e999", "9" * 5000, "\ufffd", "null", "\n"])
                          | st.text(max_size=4)), max_size=3))
def test_fio_output_text_truncated_and_garbled(name, cut, inserts):
    text = (FIO / name).read_text()
    for at, junk in inserts:
        i = int(at * len(text))
        text = text[:i] + junk + text[i:]
    text = text[: int(cut * len(text))] if cut < 0.95 else text
    docs = split_documents(text) if name.endswith(".txt") else [text]
    for doc in docs or [text]:
        output_settles(doc)
        output_settles(doc.encode("utf-8", "surrogatepass"))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["iops.log", "bw.log", "lat.log"]), st.floats(0, 1),
       st.lists(st.tuples(st.floats(0, 1), st.sampled_from([",", "\n", "nan", "inf", "1e999", "9" * 5000, "-1",
                                                            "x", " ", "3"]) | st.text(max_size=3)), max_size=3))
def test_fio_logs_truncated_and_garbled(name, cut, inserts):
    text = (FIO / name).read_text()
    for at, junk in inserts:
        i = int(at * len(text))
        text = text[:i] + junk + text[i:]
    series = settles(parse_log, text[: int(cut * len(text))] if cut < 0.95 else text)
    for times, values in (series or {}).values():
        assert all(math.isfinite(v) for v in values) and len(times) == len(values)


# --- fio job files (import) ------------------------------------------------------------------------

FIO_KEYS = ["rw", "rwmixread", "rwmixwrite", "percentage_random", "bs", "iodepth", "numjobs", "size", "runtime",
            "ramp_time", "time_based", "ioengine", "direct", "buffered", "buffer_compress_percentage",
            "dedupe_percentage", "directory", "filename", "description", "stonewall", "wait_for", "kb_base",
            "exec_prerun", "include", "name", "bssplit", "rate", "verify"]
FIO_VALUES = st.one_of(st.sampled_from(["", "4k", "²", "٣", "1e308", "-1", "0x10", ".inf", "nan", "9" * 5000,
                                        "99999999999999999999999p", "randrw:8", "exec", "a:b:/dev/sda", "${HOME}",
                                        "$mb_memory", "/t;id", "1,2", "10%", "1h30m", "on", "maybe", "\ufeff"]),
                       st.text(max_size=10).map(lambda t: t.replace("\n", " ")))


@FAST
@given(st.lists(st.tuples(st.sampled_from(FIO_KEYS), FIO_VALUES, st.booleans()), min_size=1, max_size=5),
       st.sampled_from(["x.fio", "fio-4vmdk-50ws-8k-50rdpct-100randompct-16threads", "x.txt"]))
def test_fio_job_file_values(tmp_path_factory, options, name):
    lines = ["[global]", "[job]"] + [f"{k}={v}" if with_value else k for k, v, with_value in options]
    path = tmp_path_factory.mktemp("fio") / name
    path.write_text("\n".join(lines) + "\n")
    result = settles(import_file, path)
    if result is not None:
        assert all(n and "\n" not in n for n in result.notes)
        settles(expand, parse_plan(result.plan))
    loaded = settles(load_plan_source, path)
    if loaded is not None:
        settles(expand, loaded[0])


@FAST
@given(st.lists(st.sampled_from(["sd=sd1,lun=/t/f,size=", "wd=wd1,sd=sd1,xfersize=", "rd=rd1,wd=wd1,elapsed=",
                                 "rd=rd2,wd=wd1,forthreads=(", "rd=rd3,wd=wd1,forxfersize=(", "compratio=",
                                 "wd=wd2,sd=sd1,rdpct=", "rd=rd4,wd=wd*,warmup=", "wd=wd3,sd=sd1,range=("]),
                min_size=1, max_size=5), st.lists(FIO_VALUES, min_size=5, max_size=5))
def test_vdbench_values(tmp_path_factory, lines, values):
    path = tmp_path_factory.mktemp("vdb") / "x.vdb"
    text = "\n".join(line + value + (")" if line.endswith("(") else "") for line, value in zip(lines, values))
    path.write_text("sd=sd0,lun=/t/g\n" + text + "\n")
    result = settles(import_file, path)
    if result is not None:
        settles(expand, parse_plan(result.plan))


# --- results import --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def import_store(tmp_path_factory):
    with Store.open(tmp_path_factory.mktemp("store")) as store:
        yield store, tmp_path_factory.mktemp("files")


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(FIO_DOCS), st.data())
def test_results_import_of_broken_outputs(import_store, name, data):
    store, files = import_store
    doc = copy.deepcopy(DOCS[name])
    option_paths = [("global options",), ("jobs",), ("client_stats",), ("jobs", 0, "job options"),
                    ("jobs", 0, "jobname"), ("client_stats", 0, "job options"), ("global options", "bs"),
                    ("global options", "rw"), ("jobs", 0, "job options", "rwmixread")]
    for _ in range(data.draw(st.integers(1, 3))):
        set_path(doc, data.draw(st.sampled_from(option_paths + DOC_PATHS[name])),
                 data.draw(JSON_NASTY | st.sampled_from(["4k", "randrw", "²", "x\n[evil]"])))
    try:
        text = json.dumps(doc)
    except ValueError:
        return
    path = files / data.draw(st.sampled_from(["out.json", "x y.json", "-.json", "ü.json"]))
    path.write_text(data.draw(st.sampled_from(["", "fio: note: something\n"])) + text)
    settles(import_outputs, store, [path], label=data.draw(st.sampled_from([None, "lbl"])))


def test_results_import_of_files_that_are_not_outputs(import_store):
    store, files = import_store
    for i, data in enumerate([b"", b"\xff\xfe{}", b"[]", b"{}", b"{" * 5000, b'{"jobs": 5, "client_stats": 5}',
                              b'{"fio version": "x", "client_stats": [], "jobs": 5}']):
        (files / f"bad{i}.json").write_bytes(data)
        with pytest.raises(IofleetError) as info:
            import_outputs(store, [files / f"bad{i}.json"])
        clean_message(str(info.value))
    for broken in ({"global options": [1, 2]}, {"global options": "abc"}):
        doc = DOCS["single-job-json+.json"] | broken
        (files / "opts.json").write_text(json.dumps(doc))
        assert import_outputs(store, [files / "opts.json"]) > 0  # fio's options are only informative
