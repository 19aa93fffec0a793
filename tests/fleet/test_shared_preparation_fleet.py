"""Easy Run on a fleet writes its working set once: the probe keeps its
data on every host for the profiles, whose run finds it kept on each host
(fleet/targets/kept.py) — here extended, the profiles running fewer jobs than the
probe's widest row — and removes it at its end."""

import dataclasses
import hashlib
import json

import pytest

from iofleet.fleet.inventory import load_inventory
from iofleet.fleet.targets.kept import KEPT_NAME
from iofleet.plan.easy import MiB, Durations
from iofleet.results.store import Store
from iofleet.studies.easy_run import easy_run, probe
from iofleet.studies.events import RunObserver
from iofleet.studies.study import Where

from .helpers import data_files

QUICK = Durations(runtime=1, ramp=0)


def heads(files) -> dict:
    """Each file 0 of a host: its size and the digest of its first 4 MiB (the probe's part)."""
    out = {}
    for f in files:
        if f.name == "iofleet-data.0.0":
            with open(f, "rb") as fh:
                out[f] = (f.stat().st_size, hashlib.sha256(fh.read(4 * MiB)).hexdigest())
    return out


@pytest.mark.scale  # about 21 s: `make test-scale` (make test keeps under 20 minutes)
def test_easy_runs_profiles_extend_the_probes_data_on_every_host(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2)
    hosts = load_inventory(fleet.write_inventory(tmp_path / "inv.yaml")).hosts
    with Store.open(data_dir) as store:
        probed = probe(Where(hosts=hosts, store=store), QUICK, working_set=8 * MiB, max_iodepth=1, max_jobs=2)
        assert probed.load.data is not None and len(data_files(fleet)) == 4  # 2 files of 4 MiB per host
        held = heads(data_files(fleet))
        seen = []

        class AtFirstTest(RunObserver):
            def test_started(self, index, spec):
                seen.append(heads(data_files(fleet)))

        # The profiles on 1 job (whatever the probe chose): each host's file 0 grows to 8 MiB.
        outcome = easy_run(Where(hosts=hosts, store=store, observer=AtFirstTest()), QUICK, working_set=8 * MiB,
                           load=dataclasses.replace(probed.load, jobs=1))
        assert outcome.status == "complete"
        assert len(held) == 2 and seen[0] == {f: (8 * MiB, digest) for f, (_, digest) in held.items()}
        prepared = store.get_run(outcome.run_id).methodology.prepare.to_dict()
        assert prepared["extended"] == {"h1": probed.run_id, "h2": probed.run_id} and "reused" not in prepared
        assert prepared["written_per_host"] == {"h1": 2 * 4 * MiB, "h2": 2 * 4 * MiB}  # 2 passes of the missing half
        assert all(t.methodology.prepared for t in store.get_run(outcome.run_id).tests)
    assert not data_files(fleet)  # the profiles' run removed the probe's files on every host
    assert json.loads((data_dir / KEPT_NAME).read_text())["entries"] == {}
