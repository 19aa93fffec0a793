"""The theoretical model against hand-computed worked examples (docs/model.md),
the model file's validation, and a recorded run's share of the model."""

import json
from pathlib import Path

import pytest

from iofleet.analysis.theoretical import (
    device_from_run, entered_device, expected, measured_vs_theoretical, model_table, write_penalty,
)
from iofleet.errors import IofleetError, PlanError
from iofleet.plan.hardware import load_model, parse_model
from iofleet.report.theoretical import csv_report, markdown_report, model_data
from iofleet.results.model import Run

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "fixtures" / "runs"
SATA = {"read_iops": 100000, "write_iops": 50000, "read_mb_s": 550, "write_mb_s": 500}
KiB = 1024
GBE10 = 10e9 / 8  # bytes/s of a 10 Gbit/s link, one direction


def model(**fields):
    return parse_model({"device": SATA, "devices_per_host": 4, "hosts": 4, "layout": "raid0", **fields}, "m.yaml")


def run(name: str) -> Run:
    return Run.from_dict(json.loads((RUNS / name).read_text()))


def test_the_example_mirror_model_is_the_worked_example():
    m = load_model(ROOT / "examples" / "model-mirror.yaml")
    rows = {e.name: e for e in model_table(m, entered_device(m))}
    # 16 devices, 2 copies: reads 16 × 100,000; writes 16 × 50,000 / 2.
    assert rows["4k-r100-rand"].device_iops == pytest.approx(1_600_000)
    assert rows["4k-r0-rand"].device_iops == pytest.approx(400_000)
    assert rows["4k-r0-rand"].iops == pytest.approx(400_000) and rows["4k-r0-rand"].bound == "devices"
    # 70/30: each client IO costs 0.7/100,000 + 0.3 × 2/50,000 device-seconds = 19 µs.
    assert rows["4k-r70-rand"].device_iops == pytest.approx(16 / 19e-6)  # 842,105
    assert rows["4k-r70-rand"].bound == "devices"
    # 4 hosts × 1.25 GB/s ÷ 4 KiB beats 1.6 M device reads: the network wins.
    assert rows["4k-r100-rand"].network_iops == pytest.approx(4 * GBE10 / (4 * KiB))  # 1,220,703
    assert rows["4k-r100-rand"].iops == pytest.approx(1_220_703.125) and rows["4k-r100-rand"].bound == "network"
    assert rows["4k-r100-rand"].mb_s == pytest.approx(5000)
    # 256k: devices are bandwidth-bound (550 MB/s ÷ 256 KiB = 2,098 IOPS each) ...
    assert rows["256k-r100-seq"].device_iops == pytest.approx(16 * 550e6 / (256 * KiB))  # 33,569
    assert rows["256k-r100-seq"].iops == pytest.approx(4 * GBE10 / (256 * KiB)) == pytest.approx(19_073.486)
    # ... and each client write enters a host, whose copy for the other host enters that one: 2 × 256 KiB in.
    assert rows["256k-r0-seq"].device_iops == pytest.approx(16 * 500e6 / (256 * KiB) / 2)  # 15,259
    assert rows["256k-r0-seq"].iops == pytest.approx(4 * GBE10 / (2 * 256 * KiB)) == pytest.approx(9_536.743)
    assert rows["256k-r0-seq"].bound == "network" and rows["256k-r0-seq"].mb_s == pytest.approx(2500)


def test_equal_read_and_write_iops_give_the_issue_formula():
    same = {"read_iops": 80000, "write_iops": 80000, "read_mb_s": 4000, "write_mb_s": 4000}
    m = parse_model({"device": same, "devices_per_host": 6, "hosts": 3, "layout": "mirror", "copies": 3})
    e = expected(m, entered_device(m), 4 * KiB, 70)
    assert e.penalty.total == 3
    assert e.iops == pytest.approx(18 * 80000 / (0.7 + 0.3 * 3))  # N · IOPS / (r + w · penalty) = 900,000
    assert e.network_iops is None and e.bound == "devices"


def test_raid6_small_writes_read_and_write_three_times():
    m = parse_model({"device": SATA, "devices_per_host": 12, "layout": "raid6", "nic_gbps": 10}, "m.yaml")
    dev = entered_device(m)
    p = write_penalty(m, 4 * KiB)
    assert (p.reads, p.writes, p.total, p.forwarded) == (3, 3, 6, 0)
    writes = expected(m, dev, 4 * KiB, 0)
    # Each write: 3 reads at 100,000 and 3 writes at 50,000 IOPS per device, on 12 devices.
    assert writes.iops == pytest.approx(12 / (3 / 100000 + 3 / 50000))  # 133,333
    mixed = expected(m, dev, 4 * KiB, 70)
    assert mixed.iops == pytest.approx(12 / (0.7 / 100000 + 0.3 * (3 / 100000 + 3 / 50000)))  # 350,877
    assert mixed.bound == "devices"
    reads = expected(m, dev, 4 * KiB, 100)
    assert reads.device_iops == pytest.approx(1_200_000)
    # One host, one 10 GbE link: 1.25 GB/s ÷ 4 KiB = 305,176 reads/s, below the devices.
    assert reads.iops == pytest.approx(GBE10 / (4 * KiB)) and reads.bound == "network"


def test_raid5_penalty_is_four_and_full_stripes_only_with_a_stripe_unit():
    m = model(layout="raid5")
    assert write_penalty(m, 4 * KiB).total == 4
    assert write_penalty(m, 1024 * KiB, "sequential").total == 4  # no stripe_unit: stripe size unknown
    striped = model(layout="raid5", stripe_unit="64k")  # 3+1 per host: stripe of 192 KiB
    assert write_penalty(striped, 128 * KiB, "sequential").total == 4  # smaller than a stripe
    assert write_penalty(striped, 1024 * KiB, "random").total == 4  # random: not whole stripes
    assert write_penalty(striped, 1024 * KiB, "sequential").total == pytest.approx(4 / 3)


def test_erasure_across_hosts_sends_parity_to_other_hosts():
    m = parse_model({"device": SATA, "devices_per_host": 2, "hosts": 6, "layout": "erasure", "k": 4, "m": 2,
                     "stripe_unit": "64k", "nic_gbps": 10})
    dev = entered_device(m)
    small = expected(m, dev, 4 * KiB, 0)
    assert (small.penalty.reads, small.penalty.writes, small.penalty.forwarded) == (3, 3, 2)
    assert small.device_iops == pytest.approx(12 / (3 / 100000 + 3 / 50000))  # 133,333
    # In: the client's 4 KiB plus 2 parity updates from other hosts = 3 × 4 KiB per write.
    assert small.network_iops == pytest.approx(6 * GBE10 / (3 * 4 * KiB))  # 610,352
    assert small.bound == "devices"
    full = expected(m, dev, 1024 * KiB, 0, "sequential")  # 1 MiB ≥ 4 × 64 KiB: whole stripes
    assert full.penalty.total == pytest.approx(6 / 4) and full.penalty.forwarded == pytest.approx(5 / 4)
    assert full.device_iops == pytest.approx(12 * 500e6 / (1024 * KiB) / 1.5)  # 3,815
    assert full.network_iops == pytest.approx(6 * GBE10 / (1024 * KiB * (1 + 5 / 4)))  # 3,179
    assert full.bound == "network"
    one_host = parse_model({"device": SATA, "devices_per_host": 6, "layout": "erasure", "k": 4, "m": 2})
    assert write_penalty(one_host, 4 * KiB).forwarded == 0  # all chunks on the host's own devices


def test_reads_and_writes_use_opposite_directions_of_a_full_duplex_link():
    m = model(nic_gbps=10)  # raid0: nothing forwarded
    half = expected(m, entered_device(m), 4 * KiB, 50)
    # Per client IO 0.5 × 4 KiB leaves and 0.5 × 4 KiB enters: each direction carries half.
    assert half.network_iops == pytest.approx(4 * GBE10 / (0.5 * 4 * KiB))


@pytest.mark.parametrize("fields, line", [
    ({"layout": "raid6", "devices_per_host": 3},
     "m.yaml: devices_per_host: raid6 is a RAID set inside each host and needs at least 4 devices per host "
     "(have 3); add devices or choose another layout"),
    ({"layout": "raid5", "devices_per_host": 2}, "m.yaml: devices_per_host: raid5 is a RAID set inside each host"),
    ({"layout": "mirror", "copies": 5}, "m.yaml: copies: 5 copies need at least 5 hosts (have 4)"),
    ({"layout": "mirror", "copies": 1}, "m.yaml: copies: Input should be greater than or equal to 2 (got 1)"),
    ({"layout": "erasure", "k": 4}, "m.yaml: k: layout erasure needs k and m"),
    ({"layout": "erasure", "k": 4, "m": 2}, "m.yaml: k: 4+2 needs 6 hosts (one chunk on each), but there are 4"),
    ({"layout": "erasure", "k": 0, "m": 1}, "m.yaml: k: Input should be greater than or equal to 1 (got 0)"),
    ({"layout": "raid0", "copies": 2}, "m.yaml: copies: only for layout mirror (layout is raid0); remove it"),
    ({"layout": "raid10"}, "m.yaml: layout: Input should be 'raid0', 'mirror', 'raid5', 'raid6' or 'erasure'"),
    ({"devices_per_host": 0}, "m.yaml: devices_per_host: Input should be greater than or equal to 1 (got 0)"),
    ({"nic_gbps": -1}, "m.yaml: nic_gbps: Input should be greater than 0 (got -1)"),
    ({"device": {"read_iops": 1000}}, "m.yaml: device: missing write_iops, read_mb_s, write_mb_s; give"),
    ({"device": {"run": 3, "bs": "4k"}}, "m.yaml: device: give either run: N or the four figures, not both"),
    ({"device": {**SATA, "bs": "4x"}}, "m.yaml: device.bs: '4x' is not a size"),
    ({"workloads": [{"bs": "4k", "read_pct": 170}]}, "m.yaml: workloads[0].read_pct: Input should be less than or equal to 100"),
    ({"workloads": [{"bs": "4k", "read_pct": 70, "pattern": "zigzag"}]}, "m.yaml: workloads[0].pattern: Input should be"),
    ({"nics": 2}, "m.yaml: nics: unknown field; check the spelling (see docs/model.md)"),
])
def test_a_bad_model_gives_one_line_naming_file_and_field(fields, line):
    with pytest.raises(PlanError) as exc:
        model(**fields)
    assert len(exc.value.problems) == 1
    assert exc.value.problems[0].startswith(line), exc.value.problems[0]


def test_model_file_errors_name_the_file(tmp_path):
    with pytest.raises(PlanError, match="no such model file"):
        load_model(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: [1, 2\n")
    with pytest.raises(PlanError, match=r"bad.yaml: not valid YAML at line 2"):
        load_model(bad)
    bad.write_text("- 1\n")
    with pytest.raises(PlanError, match="a model is a YAML mapping"):
        load_model(bad)


def test_default_workloads_are_easy_runs_four_plus_two_corners():
    names = [w.name for w in model().workloads]
    assert names == ["4k-r100-rand", "4k-r70-rand", "4k-r0-rand", "8k-r50-rand", "256k-r100-seq", "256k-r0-seq"]


def test_a_recorded_run_as_a_share_of_the_model():
    # big-blocks.json: 1 MiB random reads (1,354.03 IOPS) and writes (2,406.70 IOPS) on one disk.
    m = parse_model({"device": {"read_iops": 10000, "write_iops": 10000, "read_mb_s": 2000, "write_mb_s": 4000},
                     "devices_per_host": 1, "layout": "raid0"})
    cmp = measured_vs_theoretical(run("big-blocks.json"), m)
    read, write = cmp.rows
    assert read.test == "1m-r100-rand-j1-qd64" and write.test == "1m-r0-rand-j1-qd64"
    # At 1 MiB the device is bandwidth-bound: 2,000 MB/s ÷ 1,048,576 B = 1,907.35 reads/s.
    assert read.expected.iops == pytest.approx(2000e6 / 1048576)
    assert read.share_pct == pytest.approx(100 * 1354.03423 / (2000e6 / 1048576))  # 70.99 %
    assert write.share_pct == pytest.approx(100 * 2406.696209 / (4000e6 / 1048576))  # 63.09 %
    assert read.mb_s == pytest.approx(1419.807796) and read.expected.mb_s == pytest.approx(2000)
    assert cmp.skipped == [] and cmp.notes == []
    data = model_data(m, entered_device(m), model_table(m, entered_device(m)), cmp, run_id=1)
    assert [t["achieved_pct"] for t in data["run"]["tests"]] == [71.0, 63.1]
    assert "| 1m-r100-rand-j1-qd64 | 1m-r100-rand | 1,354 | 1,907 | 1,419.8 | 2,000.0 | 71.0 % | devices |" \
        in markdown_report(data)
    assert csv_report(data).splitlines()[1].startswith("1m-r100-rand-j1-qd64,1m-r100-rand,1048576,100,random,")


def test_a_run_on_more_hosts_than_the_model_is_said_and_mixed_tests_are_skipped():
    cmp = measured_vs_theoretical(run("fleet-mixed.json"), model())
    assert cmp.rows == []
    assert cmp.skipped and all("mixed test" in s for s in cmp.skipped)
    cmp = measured_vs_theoretical(run("qd-sweep.json"), model())
    assert len(cmp.rows) == 16 and "ran on 1 host(s) but the model has 4" in cmp.notes[0]


def test_device_figures_from_a_run_name_their_tests():
    dev = device_from_run(run("big-blocks.json"))
    assert dev.read_iops == pytest.approx(1354.03423) and dev.write_mb_s == pytest.approx(2523.603883)
    assert dev.read_bs == 1048576
    assert dev.sources["write_iops"] == "run 1 test 1m-r0-rand-j1-qd64"
    with pytest.raises(IofleetError, match="run 1 has no successful 0 %-read test on one host"):
        device_from_run(run("qd-sweep.json"))  # reads only


def test_the_example_raid6_model_is_the_second_worked_example():
    m = load_model(ROOT / "examples" / "model-raid6.yaml")  # 12 SSDs, 10+2, 64k stripe unit, one 10 GbE link
    rows = {e.name: e for e in model_table(m, entered_device(m))}
    assert rows["4k-r0-rand"].iops == pytest.approx(12 / (3 / 100000 + 3 / 40000))  # 114,286
    assert rows["4k-r70-rand"].iops == pytest.approx(12 / (0.7 / 100000 + 0.3 * (3 / 100000 + 3 / 40000)))  # 311,688
    assert rows["4k-r100-rand"].iops == pytest.approx(GBE10 / (4 * KiB)) and rows["4k-r100-rand"].bound == "network"
    full = rows["1m-r0-seq"]  # 1 MiB ≥ 10 × 64 KiB: whole stripes
    assert full.penalty.total == pytest.approx(1.2)
    assert full.device_iops == pytest.approx(12 * 800e6 / (1024 * KiB) / 1.2)  # 7,629
    assert full.iops == pytest.approx(GBE10 / (1024 * KiB)) and full.bound == "network"  # 1,192
