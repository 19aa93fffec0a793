"""Data kept on fleet hosts (keep_files) is not prepared again: a later run
with the same preparation writes only the hosts whose files are gone
(fleet/targets/kept.py, docs/fleet.md)."""

from ..cli import iofleet, show_json, write_plan
from .helpers import SHORT, host_files


def test_kept_data_is_used_as_it_is_where_its_files_are_still_there(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2)
    inv = fleet.write_inventory(tmp_path / "inv.yaml")
    plan = write_plan(tmp_path / "p.yaml", name="keep", keep_files=True, prepare_passes=1,
                      defaults={**SHORT, "ramp": "0s", "runtime": "1s", "read_pct": 100}, workloads=[{"name": "w"}])
    iofleet("run", plan, "--hosts", inv, data_dir=data_dir)
    kept = {f: f.stat().st_mtime_ns for f in host_files(fleet, "h1")}
    assert kept and host_files(fleet, "h2")
    for f in host_files(fleet, "h2"):
        f.unlink()  # gone from h2 (as after a clean-up iofleet did not see): h2 is prepared again

    said = " ".join(iofleet("run", plan, "--hosts", inv, data_dir=data_dir).stdout.split())
    assert ("on 1 host in" in said and "Data prepared by run 1 and kept (keep_files) is used as it is on 1 host, as "
            "the last run's tests left it: not written again.") in said, said
    assert {f: f.stat().st_mtime_ns for f in host_files(fleet, "h1")} == kept
    assert host_files(fleet, "h2")
    prepared = show_json(2, data_dir)["methodology"]["prepare"]
    assert prepared["reused"] == {"h1": 1} and list(prepared["written_per_host"]) == ["h2"]
    assert show_json(2, data_dir)["tests"][0]["methodology"]["prepared"] is True
