"""RBD image targets without a cluster: how they are written in a plan, in
an inventory and in fio's job files, which engine drives them, and fio job
files for the rbd engine imported as RBD targets (the cluster itself:
tests/ceph)."""

from pathlib import Path

import pytest

from iofleet.errors import FioError, PlanError
from iofleet.fio.jobfile import render_probe, render_test
from iofleet.fleet.targets.engines import engine_candidates
from iofleet.plan.target_kinds.rbd import CephSettings
from iofleet.fleet.targets import Access, target_for
from iofleet.importers.load import import_file
from iofleet.plan import expand, parse_plan

PLAN = {"name": "p", "targets": ["rbd:rbd/iofleet"], "defaults": {"size": "64m", "jobs": 2},
        "workloads": [{"name": "w"}]}


def options(text: str) -> dict:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith(";"))


def test_the_plan_takes_one_image_alone_and_names_it_in_destroy_data():
    plan = parse_plan(PLAN | {"destroy_data": ["rbd:rbd/iofleet"], "ceph": {"conf": "/etc/ceph/c.conf"}})
    assert plan.targets == ["rbd:rbd/iofleet"] and plan.ceph.conf == "/etc/ceph/c.conf" and plan.ceph.client == "admin"
    for bad in ({"targets": ["rbd:rbd"]}, {"targets": ["rbd:rbd/a/b"]}, {"targets": ["rbd:rbd/a:b"]},
                {"targets": ["rbd:../x/y"]}, {"targets": ["rbd:rbd/a", "/mnt/x"]},
                {"targets": ["rbd:rbd/a", "rbd:rbd/b"]}, {"destroy_data": ["rbd:rbd/*"]},
                {"ceph": {"client": "admin;id"}}, {"ceph": {"keyring": "/x"}}):
        with pytest.raises(PlanError):
            parse_plan(PLAN | bad)


def test_an_image_job_file_names_pool_image_client_and_one_region_per_job():
    plan = parse_plan(PLAN)
    target = target_for(plan.targets, Access({"ceph": CephSettings(client="bench")}))
    specs = target.fit(expand(plan), plan.sets("size"), local=True)
    assert (target.kind, target.holds_files, target.needed) == ("rbd", False, 2 * 64 * 2**20)
    o = options(render_test(specs[0], target.fio_where(), "rbd"))
    assert (o["pool"], o["rbdname"], o["clientname"], o["offset_increment"]) == ("rbd", "iofleet", "bench",
                                                                                 str(64 * 2**20))
    assert "directory" not in o and "filename" not in o and o["ioengine"] == "rbd"
    probe = options(render_probe(target.probe_where("probe"), "rbd", False))
    assert probe["rw"] == "randread" and "offset_increment" not in probe  # nothing written before preparation


def test_only_the_rbd_engine_drives_an_image_and_only_an_image():
    image, directory = target_for(["rbd:rbd/a"]), target_for(["/mnt/a"])
    assert engine_candidates(image, "auto") == ("rbd",) == engine_candidates(image, "rbd")
    with pytest.raises(FioError, match="driven by fio's rbd engine only, not engine: libaio"):
        engine_candidates(image, "libaio")
    with pytest.raises(FioError, match="engine: rbd drives an RBD image only"):
        engine_candidates(directory, "rbd")


def test_each_fleet_host_gets_its_own_image_unless_they_share_it():
    assert target_for(["rbd:rbd/vm"], Access(host="h1")).label == "rbd:rbd/vm-h1"
    assert target_for(["rbd:rbd/vm"], Access({"ceph": CephSettings(shared_image=True)}, host="h1")).label == "rbd:rbd/vm"
    assert target_for(["rbd:rbd/vm"]).label == "rbd:rbd/vm"  # this host: the image named


def test_an_rbd_job_file_imports_as_an_rbd_target_with_its_client(tmp_path):
    job = tmp_path / "rbd.fio"
    job.write_text("[global]\nioengine=rbd\nclientname=client.bench\npool=vms\nrbdname=disk1\nrw=randwrite\n"
                   "bs=4k\nsize=1g\ntime_based=1\nruntime=30\n\n[qd32]\niodepth=32\n")
    result = import_file(Path(job))
    assert result.plan["targets"] == ["rbd:vms/disk1"] and result.plan["ceph"] == {"client": "bench"}
    assert result.plan["workloads"][0]["engine"] == "rbd"
    assert any("an RBD image target rbd:vms/disk1" in n for n in result.notes)
    job.write_text("[j]\nioengine=rbd\npool=vms\nrbdname=bad;name\nrw=read\n")
    assert "rbd:vms/bad;name" not in str(import_file(Path(job)).plan.get("targets"))
