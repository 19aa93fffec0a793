"""`iofleet model` through the real CLI: the example model, a real run's share
of a model, and device figures taken from a real run."""

import json
from pathlib import Path

import pytest
import yaml

from ..cli import iofleet, show_json, write_plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "model-mirror.yaml"


def test_example_model_table_states_units_and_bounds(data_dir):
    out = iofleet("model", EXAMPLE, data_dir=data_dir).stdout
    assert "Model mirror-4x4: 16 devices (4 per host × 4 hosts), mirror, 2 copies, NIC 10 Gbit/s per host" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip().startswith(("4k-", "256k-"))}
    assert lines["4k-r100-rand"][-3:] == ["1,220,703", "5,000.0", "network"]
    assert lines["4k-r70-rand"][-3:] == ["842,105", "3,449.3", "devices"]
    assert lines["256k-r0-seq"][-3:] == ["9,537", "2,500.0", "network"]
    assert "MB/s = 10^6 bytes/s" in out and "Write penalty: mirror: 2 copies written on 2 hosts." in out
    assert not (data_dir / "results.db").exists()  # no store needed without --run


def test_json_and_csv_carry_the_same_figures(tmp_path, data_dir):
    doc = json.loads(iofleet("model", EXAMPLE, "--format", "json", data_dir=data_dir).stdout)
    assert doc["workloads"][2]["iops"] == 400000 and doc["workloads"][2]["bound"] == "devices"
    out = tmp_path / "m.csv"
    proc = iofleet("model", EXAMPLE, "-f", "csv", "-o", out, data_dir=data_dir)
    assert f"Wrote {out}" in proc.stderr
    assert out.read_text().splitlines()[3].startswith("4k-r0-rand,4096,0,random,2,0,2,1,")


def test_bad_model_is_one_line_without_traceback(tmp_path, data_dir):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"device": {"read_iops": 1, "write_iops": 1, "read_mb_s": 1, "write_mb_s": 1},
                                   "devices_per_host": 3, "layout": "raid6"}))
    proc = iofleet("model", bad, data_dir=data_dir, check_rc=2)
    assert proc.stderr.strip().splitlines() == [
        f"error: {bad}: devices_per_host: raid6 is a RAID set inside each host and needs at least 4 devices "
        f"per host (have 3); add devices or choose another layout"]
    proc = iofleet("model", EXAMPLE, "--run", 7, data_dir=data_dir, check_rc=2)
    assert "7" in proc.stderr and "Traceback" not in proc.stderr
    proc = iofleet("model", EXAMPLE, "--format", "html", data_dir=data_dir, check_rc=2)
    assert "use table, md, json, csv" in proc.stderr


@pytest.fixture
def device_run(tmp_path, disk_dir, data_dir):
    """A real run on one device: 4k random reads, then 4k random writes (run 1)."""
    plan = write_plan(tmp_path / "p.yaml", name="device", targets=[str(disk_dir)],
                      defaults={"size": "8m", "runtime": "1s", "ramp": "0s", "iodepth": 4, "bs": "4k"},
                      workloads=[{"name": "read", "read_pct": 100}, {"name": "write", "read_pct": 0}])
    iofleet("run", plan, data_dir=data_dir)
    return show_json(1, data_dir)


def test_run_share_and_device_from_run(tmp_path, data_dir, device_run):
    read, write = device_run["tests"]
    # A model of exactly this device (its own best figures): every test achieves 100 %.
    model = tmp_path / "self.yaml"
    model.write_text(yaml.safe_dump({"name": "self", "device": {"run": 1}, "devices_per_host": 1,
                                     "layout": "raid0", "workloads": [{"bs": "4k", "read_pct": 0}]}))
    doc = json.loads(iofleet("model", model, "--run", 1, "-f", "json", data_dir=data_dir).stdout)
    assert doc["device"]["read_iops"] == round(read["read"]["iops"])
    assert doc["device"]["sources"]["write_iops"] == f"run 1 test {write['id']}"
    shares = {t["test"]: t["achieved_pct"] for t in doc["run"]["tests"]}
    assert shares == {read["id"]: 100.0, write["id"]: 100.0}
    # Entered figures: a device twice as fast as measured, mirrored on 2 devices: reads 4×, writes 2× the run.
    fast = {"read_iops": 2 * read["read"]["iops"], "write_iops": 2 * write["write"]["iops"],
            "read_mb_s": 1e6, "write_mb_s": 1e6}
    model.write_text(yaml.safe_dump({"name": "fast", "device": fast, "devices_per_host": 2, "layout": "mirror"}))
    out = iofleet("model", model, "--run", 1, data_dir=data_dir).stdout
    assert "Run 1: measured vs theoretical" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith(read["id"]))
    assert row[-3:] == ["25.0", "%", "devices"]
    row = next(line.split() for line in out.splitlines() if line.strip().startswith(write["id"]))
    assert row[-3:] == ["50.0", "%", "devices"]
    assert "the run's tests ran on 1 host(s)" not in out  # one host in the model and the run


def test_device_from_a_run_without_writes_is_a_clear_error(tmp_path, disk_dir, data_dir):
    plan = write_plan(tmp_path / "p.yaml", name="reads", targets=[str(disk_dir)],
                      defaults={"size": "8m", "runtime": "1s", "ramp": "0s"}, workloads=[{"name": "read"}])
    iofleet("run", plan, data_dir=data_dir)
    model = tmp_path / "m.yaml"
    model.write_text(yaml.safe_dump({"device": {"run": 1}, "devices_per_host": 1, "layout": "raid0"}))
    proc = iofleet("model", model, data_dir=data_dir, check_rc=2)
    assert "run 1 has no successful 0 %-read test on one host" in proc.stderr and "Traceback" not in proc.stderr
