"""Studies on the parameter table: a new study setting or plan parameter is
a row of plan/params.py (and its tests), nothing else. A row added to the
table shows up as an option of the studies that take it, as their setting,
in the plans they write and in fio's job file; and no module outside
params.py keeps its own list of parameter names."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from iofleet.plan.easy import Durations
from iofleet.plan.params import CURVE, EASY_RUN, PARAMS, RUN_PARAMS, SATURATE, UNTIL
from iofleet.plan.settings import offered, plan_entries, study_params
from iofleet.studies.curve import Curve
from iofleet.studies.saturate import Sweep

SRC = Path(__file__).resolve().parents[2] / "src" / "iofleet"
NAMES = set(PARAMS) | set(RUN_PARAMS)

# Modules whose lists of these names are not iofleet's parameters: another
# tool's names that happen to be the same words (fio's job-file options).
NOT_PARAMETERS = {"fio/jobfile.py": "fio's own options of iofleet's preparation and check jobs",
                  "importers/vdbench.py": "vdbench's parameters and defaults, each mapped onto a row"}


def _mirrors(node: ast.AST, name: str) -> bool:
    """`node` is the value of `name` copied from elsewhere: name, x.name,
    x["name"], or a call on one (format_size(sweep.bs))."""
    if isinstance(node, ast.Name):
        return node.id.rstrip("_") == name
    if isinstance(node, ast.Attribute):
        return node.attr == name
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == name
    if isinstance(node, ast.Call):
        return any(_mirrors(arg, name) for arg in node.args)
    if isinstance(node, ast.Tuple):  # ("--bs", PARAMS["bs"])
        return any(_mirrors(e, name) for e in node.elts)
    return False


def _name(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in NAMES else None


def name_lists(tree: ast.AST):
    """(line, names) of each literal list of at least 3 parameter names: a
    tuple, list or set of them or of (name, something) pairs, or a dict of
    them to their values copied from elsewhere (a schema written again; a
    dict of them to plain values is data, such as Easy Run's profiles)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = [_name(e) for e in node.elts]
            names += [_name(e.elts[0]) for e in node.elts if isinstance(e, ast.Tuple) and len(e.elts) == 2]
        elif isinstance(node, ast.Dict):
            names = [_name(k) for k, v in zip(node.keys, node.values) if k is not None and _name(k)
                     and _mirrors(v, k.value)]
        else:
            continue
        names = [n for n in names if n]
        if len(names) >= 3:
            yield node.lineno, names


def test_the_scan_finds_a_list_of_names_and_a_schema_written_again():
    found = list(name_lists(ast.parse(
        'A = ("bs", "read_pct", "random_pct")\n'
        'B = {"bs": format_size(sweep.bs), "size": sweep.size, "ramp": ramp}\n'
        'C = (("runtime", runtime), ("ramp", ramp), ("round", round_))\n'
        'E = {"bs": ("--bs", PARAMS["bs"]), "size": ("--size", PARAMS["size"]), "ramp": ("--ramp", PARAMS["ramp"])}\n'
        'D = {"bs": "4k", "read_pct": 70, "random_pct": 100}\n')))  # data: a profile, not a schema
    assert sorted(line for line, _ in found) == [1, 2, 3, 4]


def test_no_module_outside_the_table_lists_parameter_names():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where == "plan/params.py" or where in NOT_PARAMETERS:
            continue
        found += [f"{where}:{line}: {', '.join(names)}" for line, names in name_lists(ast.parse(path.read_text()))]
    assert found == [], "lists of parameter names outside plan/params.py (query the table instead):\n" + "\n".join(found)


def test_every_study_setting_has_a_home():
    """Each row a study takes is a field of its settings: a curve's without a
    default of its own is its sweep's; Easy Run's are durations but --size
    (the working set per host)."""
    assert set(Sweep.rows) == set(study_params(SATURATE))
    assert set(offered(CURVE)) <= set(Sweep.rows) | set(Curve.rows)
    assert set(Curve.rows) == set(study_params(CURVE, own_default=True))
    assert set(offered(EASY_RUN)) - set(Durations.rows) == {"size"}
    assert {name for names in UNTIL.values() for name in names} <= set(PARAMS)


def test_plan_entries_state_how_tests_end_where_the_runtime_goes():
    steady = plan_entries(Sweep().table_values())
    assert list(steady)[3:7] == ["size", "until", "round", "max_runtime"] and steady["until"] == "steady"
    timed = plan_entries(Sweep(runtime=5).table_values())
    assert "until" not in timed and timed["runtime"] == "5s" and "round" not in timed


# ---- a new row, and nothing else -------------------------------------------

# A workload parameter whose fio option is one iofleet already writes (fio/jobfile.py
# ALLOWED_OPTIONS: a parameter with a new fio option adds it there, the job file's fence).
NEW_ROW = '''        Param("end_fsync", "bool", False, "write the files' data back when the IO ends", "end_fsync",
              label="end fsync", column="end_fsync", id_part=lambda v: "endfsync" if v else "noendfsync",
              to_fio=lambda v: [("end_fsync", True)] if v["end_fsync"] else [],
              from_fio=lambda o: _flag(o, "end_fsync"), fio_keys=("end_fsync",),
              studies={SATURATE: StudyUse(), CURVE: StudyUse()}),
'''
ANCHOR = '''        Param("until", "choice", "time",'''

CHECK = r'''
import json
from typer.testing import CliRunner
from iofleet.cli.main import app
from pathlib import Path
from iofleet.errors import IofleetError
from iofleet.fio.jobfile import directory_where, render_test
from iofleet.plan import parse_plan
from iofleet.plan.expand import expand
from iofleet.plan.params import fio_options
from iofleet.studies.curve import Curve, curve_plan
from iofleet.studies.options import curve_from_options, sweep_from_options
from iofleet.studies.saturate import Sweep, sweep_plan



def refused():
    try:
        sweep_from_options(end_fsync="x")
    except IofleetError as exc:
        return str(exc)


helps = {cmd: CliRunner().invoke(app, [cmd, "--help"]).output
         for cmd in ("saturate", "curve", "easy-run")}
sweep = sweep_from_options(end_fsync=True)
data, _ = sweep_plan(sweep, [1], [1, 2], ["/t"])
spec = expand(parse_plan(data, "saturate"))[0]
curve = curve_from_options(end_fsync=True, bs="8k")
cdata, _ = curve_plan(curve, {"bs": 8192, "read_pct": 100, "random_pct": 100}, 1, 2, [100], ["/t"], [], "libaio",
                      200.0, "rule")
print(json.dumps({
    "options": {cmd: "--end-fsync" in text for cmd, text in helps.items()},
    "help": "Write the files' data back when the IO ends. [default: false]" in helps["saturate"],
    "sweep": [Sweep().end_fsync, sweep.end_fsync, curve.sweep.end_fsync],
    "plan": [data["workloads"][0]["end_fsync"], cdata["workloads"][0]["end_fsync"]],
    "spec": spec.end_fsync, "fio": ["end_fsync", True] in [list(o) for o in fio_options(spec.values())],
    "job_file": "end_fsync=1" in render_test(spec, directory_where([Path("/t")]), "libaio").splitlines(),
    "refused": refused(),
}))
'''


def test_a_new_row_is_a_study_option_a_setting_and_part_of_the_plan(tmp_path):
    """Copy the package, add one row to its table (only that), and find it
    everywhere a study setting goes."""
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy / "iofleet", ignore=shutil.ignore_patterns("__pycache__"))
    table = copy / "iofleet" / "plan" / "params.py"
    text = table.read_text()
    assert text.count(ANCHOR) == 1
    table.write_text(text.replace(ANCHOR, NEW_ROW + ANCHOR))
    out = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "COLUMNS": "200"}, timeout=110)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["options"] == {"saturate": True, "curve": True, "easy-run": False}
    assert found["help"]
    assert found["sweep"] == [False, True, True]
    assert found["plan"] == [True, True]
    assert found["spec"] is True and found["fio"] and found["job_file"]
    assert found["refused"] == "--end-fsync x: expected true or false"


def test_the_studies_options_are_the_tables_rows_with_the_studies_words(monkeypatch):
    from typer.testing import CliRunner

    from iofleet.cli.main import app
    from iofleet.plan.settings import option_name
    monkeypatch.setenv("COLUMNS", "250")
    helps = {study: " ".join(CliRunner().invoke(app, [study, "--help"]).output.split())
             for study in (SATURATE, CURVE, EASY_RUN)}
    for study, text in helps.items():
        assert all(option_name(name) in text for name in offered(study)), study
    assert "--round <str> Each cell measures until steady: 5 rounds of this. [default: 1s]" in helps[SATURATE]
    assert "--runtime <str> Each point's measured time" in helps[CURVE] and "[default: 10s]" in helps[CURVE]
    assert "--bs <str> Block size of each IO (a multiple of 512 bytes). [default: 4k]" in helps[CURVE]
    assert "--max-runtime <str> Longest a profile may measure. [default: 30m]" in helps[EASY_RUN]
    assert "--round" not in helps[CURVE]  # a curve's sweep cells measure until steady with the sweep's round
