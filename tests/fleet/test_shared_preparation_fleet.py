"""Easy Run on a fleet writes its working set once: the probe keeps its
data on every host for the profiles (their files are the probe's), whose
run finds it kept on each host (fleet/kept.py) and removes it at its end."""

import json

from iofleet.fleet.inventory import load_inventory
from iofleet.fleet.kept import KEPT_NAME
from iofleet.plan.easy import MiB, Durations
from iofleet.results.store import Store
from iofleet.studies.easy_run import easy_run, probe
from iofleet.studies.run import RunObserver

from .test_fleet_run import data_files

QUICK = Durations(runtime=1, ramp=0)


def test_easy_runs_profiles_use_the_probes_data_on_every_host(tmp_path, make_fleet, data_dir):
    fleet = make_fleet(2)
    hosts = load_inventory(fleet.write_inventory(tmp_path / "inv.yaml")).hosts
    with Store.open(data_dir) as store:
        probed = probe(store, hosts=hosts, durations=QUICK, working_set=8 * MiB, max_iodepth=2, max_jobs=1)
        assert probed.load.data is not None and data_files(fleet)
        held = {f: f.stat().st_mtime_ns for f in data_files(fleet)}
        seen = []

        class AtFirstTest(RunObserver):
            def test_started(self, index, spec):
                seen.append({f: f.stat().st_mtime_ns for f in data_files(fleet)})

        outcome = easy_run(store, hosts=hosts, durations=QUICK, working_set=8 * MiB, load=probed.load,
                           observer=AtFirstTest())
        assert outcome.status == "complete"
        assert seen[0] == held  # not written between the probe's end and the first profile
        prepared = store.get_run(outcome.run_id).methodology["prepare"]
        assert prepared["reused"] == {"h1": probed.run_id, "h2": probed.run_id}
        assert prepared["written_per_host"] == {}
        assert all(t.methodology["prepared"] for t in store.get_run(outcome.run_id).tests)
    assert not data_files(fleet)  # the profiles' run removed the probe's files on every host
    assert json.loads((data_dir / KEPT_NAME).read_text())["entries"] == {}
