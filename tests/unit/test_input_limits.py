"""Input sizes are bounded (issue 16, items 5, 6, 7, 12): a YAML alias bomb,
a matrix of a million cells, special files given as input and an empty
--target are refused in one line, quickly, instead of hanging or filling
the memory."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from iofleet.cli.main import app
from iofleet.errors import IofleetError, PlanError
from iofleet.fleet.inventory import load_inventory
from iofleet.plan.expand import expand
from iofleet.plan.load import load_plan, parse_plan_text
from iofleet.plan.model import MAX_TESTS

from ..yaml_bomb import BOMB

TOO_MANY_ALIASES = "too many YAML aliases (they would add more than 10,000 values); write the values out"
# Six keys of ten values: 10^6 tests.
MILLION = {"name": "big", "workloads": [{"name": "grid", "matrix": {
    "bs": ["4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", "1m", "2m"],
    "read_pct": list(range(0, 100, 10)), "random_pct": list(range(0, 100, 10)), "iodepth": list(range(1, 11)),
    "jobs": list(range(1, 11)), "working_set_pct": list(range(10, 101, 10))}}]}
CLI_TIMEOUT_S = 30  # a hang fails the test instead of blocking the suite


def start(*args, data_dir: Path) -> subprocess.Popen:
    """The real CLI in a subprocess."""
    env = dict(os.environ, COLUMNS="200", IOFLEET_DATA=str(data_dir))
    return subprocess.Popen([sys.executable, "-m", "iofleet", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"{proc.args[3:]} still running after {CLI_TIMEOUT_S} s") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def one_error(proc: subprocess.CompletedProcess) -> str:
    """The CLI's single error line (exit 2, no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0].removeprefix("error: ")


# --- item 5: YAML aliases ------------------------------------------------------------------

def test_alias_bomb_plan_is_refused_quickly_in_one_line(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(BOMB + "name: p\nworkloads: *i\n")
    start = time.monotonic()
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert time.monotonic() - start < 5  # was 42.8 s and 3.1 GB
    assert str(info.value) == f"{path}: {TOO_MANY_ALIASES}"
    start = time.monotonic()
    with pytest.raises(PlanError) as info:  # the web's path: text, not a file
        parse_plan_text(BOMB, "plan")
    assert time.monotonic() - start < 5
    assert info.value.fields == [("", TOO_MANY_ALIASES)]


def test_alias_bomb_inventory_is_refused_quickly_in_one_line(tmp_path):
    path = tmp_path / "inventory.yaml"
    path.write_text(BOMB + "hosts: *i\n")
    start = time.monotonic()
    with pytest.raises(IofleetError) as info:
        load_inventory(path)
    assert time.monotonic() - start < 5
    assert str(info.value) == f"{path}: {TOO_MANY_ALIASES}"


def test_merge_bomb_and_self_reference_are_refused():
    # `<<:` merges double a mapping per line: 2^40 keys in 40 lines.
    merges = "l0: &l0 {k: 1}\n" + "".join(f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}], k{i}: 1}}\n"
                                          for i in range(1, 40))
    start = time.monotonic()
    with pytest.raises(PlanError) as info:
        parse_plan_text(merges, "p.yaml")
    assert time.monotonic() - start < 5
    assert str(info.value) == f"p.yaml: {TOO_MANY_ALIASES}"
    with pytest.raises(PlanError) as info:
        parse_plan_text("a: &a [1, *a]\n", "p.yaml")
    assert str(info.value) == "p.yaml: a YAML alias refers to the value that holds it; write the values out"


def test_plain_aliases_and_merges_still_work():
    plan = parse_plan_text("name: p\ndefaults: &d {bs: 8k, size: 16m}\nworkloads:\n"
                           "  - &w {name: a, <<: *d}\n  - {<<: *w, name: b}\n", "p.yaml")
    assert [(w.name, w.bs, w.size) for w in plan.workloads] == [("a", 8192, 16 * 2**20), ("b", 8192, 16 * 2**20)]


def test_plan_text_is_bounded():
    text = "name: p\nworkloads: [{name: w}]\n" + "# padding\n" * 120_000  # 1.2 MB
    with pytest.raises(PlanError) as info:
        parse_plan_text(text, "p.yaml")
    assert str(info.value) == f"p.yaml: {len(text) // 1024:,} KiB of YAML is too large (limit 1,024 KiB)"


# --- item 6: matrix cells ----------------------------------------------------------------------

def test_million_cell_matrix_is_refused_before_expanding(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(MILLION))
    start = time.monotonic()
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert time.monotonic() - start < 5  # `validate` showed nothing after 100 s
    assert str(info.value) == (f"{path}: workloads[0]: the plan expands to 1,000,000 tests (workload 'grid': "
                               f"1,000,000), more than the limit of 10,000 tests per plan; list fewer matrix "
                               f"values or split the plan")


def test_test_limit_counts_repeats_and_every_workload():
    at_limit = {"name": "p", "workloads": [{"name": "w", "repeat": 100, "matrix": {"iodepth": list(range(1, 101))}}]}
    start = time.monotonic()
    assert len(expand(parse_plan_text(yaml.safe_dump(at_limit)))) == MAX_TESTS == 10_000
    assert time.monotonic() - start < 5
    two = {"name": "p", "defaults": {"repeat": 60},
           "workloads": [{"name": "a", "matrix": {"iodepth": list(range(1, 101))}},
                         {"name": "b", "bs": "8k", "matrix": {"jobs": list(range(1, 101))}}]}
    with pytest.raises(PlanError) as info:
        parse_plan_text(yaml.safe_dump(two), "p.yaml")
    assert str(info.value) == ("p.yaml: workloads: the plan expands to 12,000 tests (workload 'a': 6,000), more "
                               "than the limit of 10,000 tests per plan; list fewer matrix values or split the plan")


# --- item 12: special files --------------------------------------------------------------------

@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


def test_special_files_are_refused_by_every_command_that_reads_one(tmp_path, fifo):
    checks = [
        (("validate", "/dev/zero"), "/dev/zero: is a character device, not a plan file; give the plan file itself"),
        (("validate", fifo), f"{fifo}: is a named pipe (FIFO), not a plan file; give the plan file itself"),
        (("import", fifo), f"{fifo}: is a named pipe (FIFO), not a parameter or job file; "
                           f"give the parameter or job file itself"),
        (("results", "import", fifo), f"{fifo}: is a named pipe (FIFO), not a fio output file; "
                                      f"give the fio output file itself"),
        (("results", "import", "/dev/zero"), "/dev/zero: is a character device, not a fio output file; "
                                             "give the fio output file itself"),
        (("hosts", "check", fifo), f"{fifo}: is a named pipe (FIFO), not an inventory file; "
                                   f"give the inventory file itself"),
    ]
    running = [(args, message, start(*args, data_dir=tmp_path / "data")) for args, message in checks]  # at once
    try:
        for args, message, proc in running:
            assert one_error(finish(proc)) == message, args
    finally:
        for _, _, proc in running:  # a hang (the old FIFO read) must not outlive the test
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "plan.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(PlanError) as info:
            load_plan(path)
    assert str(info.value) == f"{path}: is a socket, not a plan file; give the plan file itself"


def test_large_files_are_refused_by_size(tmp_path):
    plan = tmp_path / "plan.yaml"
    with open(plan, "wb") as f:
        f.truncate(3 * 1024**2)  # sparse: 3 MiB of zeros
    with pytest.raises(PlanError) as info:
        load_plan(plan)
    assert str(info.value) == (f"{plan}: 3 MiB is too large for a plan (limit 1 MiB); "
                               f"check that this is the plan file")


# --- item 7: --target '' -----------------------------------------------------------------------

def test_empty_target_is_refused_like_the_plans(tmp_path, monkeypatch):
    # In process (typer's runner): the parsing of --target is what is tested.
    plan = tmp_path / "p.yaml"
    plan.write_text("name: p\ndefaults: {size: 16m, runtime: 1s, ramp: 0s}\nworkloads: [{name: w}]\n")
    in_plan = tmp_path / "in-plan.yaml"
    in_plan.write_text(plan.read_text() + "targets: ['']\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IOFLEET_DATA", str(tmp_path / "data"))
    runner = CliRunner()
    said = runner.invoke(app, ["validate", str(in_plan)])
    assert (said.exit_code, said.stderr) == (2, f"error: {in_plan}: targets[0]: expected a directory path, a "
                                                f"block device (/dev/...), an RBD image (rbd:POOL/IMAGE) or a PersistentVolumeClaim "
                                                f"(pvc:NAME) (got '')\n")
    for args in (["validate", str(plan)], ["run", str(plan)], ["easy-run"], ["saturate"], ["run", "--resume", "1"]):
        said = runner.invoke(app, [*args, "--target", ""])
        assert (said.exit_code, said.stderr) == (2, "error: --target: targets[0]: expected a directory path, a "
                                                    "block device (/dev/...), an RBD image (rbd:POOL/IMAGE) or a "
                                                    "PersistentVolumeClaim (pvc:NAME) (got '')\n"), (args, said.output)
    assert not (tmp_path / "iofleet").exists()  # nothing ran in the current directory
    said = runner.invoke(app, ["validate", str(plan), "--target", "."])  # the current directory, said so, is fine
    assert said.exit_code == 0 and "Targets: ." in said.stdout
