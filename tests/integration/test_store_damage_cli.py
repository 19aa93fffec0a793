"""The CLI on a damaged store, huge run ids, impossible imported figures and
bad labels (issue 16, items 8 to 11): one line each, a non-zero exit, never
a traceback; `results check` and `results recover` as a user runs them."""

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iofleet.results.ingest import import_outputs
from iofleet.results.store import DB_NAME, Store

from ..cli import iofleet

ROOT = Path(__file__).resolve().parents[2]
FIO = ROOT / "tests" / "fixtures" / "fio"
OUTPUT = FIO / "single-job-json+.json"
HUGE = "99999999999999999999"
PAGE = 4096


def run_all(calls: list[tuple], data_dir: Path) -> list:
    """Run CLI calls at once (each is a fresh interpreter, ~1 s of start-up)."""
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda args: iofleet(*args, data_dir=data_dir, check_rc=None), calls))


def store_of(data_dir: Path, runs: int = 3) -> Path:
    with Store.open(data_dir) as store:
        for _ in range(runs):
            import_outputs(store, [OUTPUT])
    return data_dir / DB_NAME


def assert_one_error_line(proc, rc: int, line: str) -> None:
    assert proc.returncode == rc, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [line], proc.stderr


def test_a_damaged_store_is_one_line_everywhere_and_check_and_recover_say_what(tmp_path):
    data = tmp_path / "data"
    db = store_of(data)
    with open(db, "r+b") as f:  # the pages of the tests table and its index
        f.seek(3 * PAGE)
        f.write(os.urandom(2 * PAGE))
    before = db.read_bytes()
    damaged = (f"error: {db} is damaged (database disk image is malformed); see what with "
               f"`iofleet results check --data-dir {data}`, and copy the runs that can still be read to a new "
               f"store with `iofleet results recover --data-dir {data}`")
    calls = [("results", "list"), ("results", "show", "1"), ("results", "export", "1"),
             ("compare", "1", "2", "--baseline", "1")]
    for args, proc in zip(calls, run_all(calls, data)):
        assert_one_error_line(proc, 2, damaged)

    check, recover = run_all([("results", "check"), ("results", "recover", "-o", tmp_path / "new")], data)
    assert check.returncode == 1 and "Traceback" not in check.stdout + check.stderr
    assert f"{db} is damaged." in check.stdout and "SQLite's integrity check found:" in check.stdout
    assert "Run 1 cannot be read: database disk image is malformed." in check.stdout
    assert recover.returncode == 1 and "Traceback" not in recover.stdout + recover.stderr
    assert f"into {tmp_path / 'new' / DB_NAME}; lost: 1, 2, 3." in recover.stdout
    assert f"{db} is unchanged; use the new store with --data-dir {tmp_path / 'new'}" in recover.stdout
    assert db.read_bytes() == before
    assert_one_error_line(iofleet("results", "import", OUTPUT, data_dir=data, check_rc=None), 2, damaged)


def test_check_and_recover_of_a_store_that_reads(tmp_path):
    data = tmp_path / "data"
    db = store_of(data, runs=2)
    check, recover = run_all([("results", "check"), ("results", "recover", "-o", tmp_path / "new")], data)
    assert check.returncode == 0 and check.stdout.strip() == \
        f"ok: {db} passed SQLite's integrity check; 2 runs read whole."
    assert recover.returncode == 0 and \
        f"Recovered 2 runs (1, 2) from {db} into {tmp_path / 'new' / DB_NAME}; lost: none." in recover.stdout
    shown = iofleet("results", "show", "2", "--format", "json", data_dir=tmp_path / "new")
    assert json.loads(shown.stdout)["id"] == 2


def test_a_file_that_is_not_a_database(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    db = data / DB_NAME
    db.write_text("not a database\n" * 300)
    listing, check = run_all([("results", "list"), ("results", "check")], data)
    assert_one_error_line(listing, 2, f"error: {db} is damaged (file is not a database); see what with "
                                      f"`iofleet results check --data-dir {data}`, and copy the runs that can "
                                      f"still be read to a new store with `iofleet results recover --data-dir {data}`")
    assert_one_error_line(check, 2, f"error: {db} is not an SQLite database (its first bytes are not SQLite's "
                                    f"header): no run can be read from it; move it away (e.g. to results.db.bad) "
                                    f"and a new store is made")


def test_a_huge_run_id_is_no_such_run(tmp_path):
    data = tmp_path / "data"
    db = store_of(data, runs=1)
    calls = [("results", "show", HUGE), ("results", "label", HUGE, "x"), ("results", "export", HUGE),
             ("report", HUGE), ("diagnose", HUGE),
             ("run", "--resume", HUGE, "--target", tmp_path)]
    for args, proc in zip(calls, run_all(calls, data)):
        assert_one_error_line(proc, 2, f"error: no run {HUGE} in {db}; see `iofleet results list`")


IMPOSSIBLE = [
    ("iops", -1e308, "jobs[0].read.iops should be a number from 0 up to 2^63, got -1e+308"),
    ("bw_bytes", -5, "jobs[0].read.bw_bytes should be a number from 0 up to 2^63, got -5"),
    ("total_ios", 2**63, "jobs[0].read.total_ios should be a non-negative integer below 2^63, "
                         "got 9223372036854775808"),
]


def test_import_refuses_impossible_figures_naming_file_and_field(tmp_path):
    data = tmp_path / "data"
    calls = []
    for field, value, _ in IMPOSSIBLE:
        raw = json.loads(OUTPUT.read_text())
        raw["jobs"][0]["read"][field] = value
        bad = tmp_path / f"{field}.json"
        bad.write_text(json.dumps(raw))
        calls.append(("results", "import", OUTPUT, bad))  # with a good file: neither is stored
    for (*_, bad), (_, _, says), proc in zip(calls, IMPOSSIBLE, run_all(calls, data)):
        assert_one_error_line(proc, 2, f"error: {bad}: not fio JSON output: {says}")
    with Store.open(data) as store:
        assert store.list_runs() == []


def test_import_and_run_labels_follow_the_one_label_rule(tmp_path):
    data = tmp_path / "data"
    rule = "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    plan = tmp_path / "tiny.yaml"  # short, should the rule ever let a label through
    plan.write_text("name: tiny\ndefaults: {size: 8m, runtime: 1s, ramp: 0s}\nworkloads: [{name: r, bs: 4k}]\n")
    short = ("--runtime", "1s", "--ramp", "0s", "--size", "16m")
    calls = [("results", "import", OUTPUT, "--label", "a b"), ("results", "import", OUTPUT, "--label", "x" * 65),
             ("run", plan, "--target", tmp_path, "--label", "x;y"),
             ("easy-run", "--target", tmp_path, *short, "--label", "")]
    labels = ["a b", "x" * 65, "x;y", ""]
    for label, proc in zip(labels, run_all(calls, data)):
        assert_one_error_line(proc, 2, f"error: label {label!r}: {rule}")
    with Store.open(data) as store:
        assert store.list_runs() == []
