"""Easy Run's probe with real fio: a short saturate sweep of 4k random
reads, stored as its own run, that chooses its best jobs × iodepth."""

import yaml

from iofleet.plan.easy import MiB, Durations
from iofleet.results.store import Store
from iofleet.studies.easy_run import probe
from iofleet.studies.study import Where

QUICK = Durations(runtime=1, ramp=0)  # 1 s cells, no warm-up


def test_the_probe_is_a_stored_sweep_and_chooses_its_best_cell(disk_dir, data_dir):
    with Store.open(data_dir) as store:
        probed = probe(Where([disk_dir], store=store), QUICK, working_set=16 * MiB, max_iodepth=2)
        sweep = store.get_run(probed.run_id).to_dict()
        assert sweep["label"] == "easy-run-probe" and sweep["status"] == "complete"
        tests = [t for t in sweep["tests"] if t["status"] == "ok"]
        assert tests and all((t["params"]["bs"], t["params"]["read_pct"], t["params"]["random_pct"]) ==
                             (4096, 100, 100) for t in tests)
        # The choice is the probe cell with the most IOPS (median of its runs).
        result = probed.outcome.result
        top = max(result.cells, key=lambda c: c.iops)
        assert (probed.load.jobs, probed.load.iodepth) == (top.jobs, top.iodepth)
        assert f"{top.iops:,.0f}" in probed.load.why and f"of {len(result.cells)} probe cells" in probed.load.why
        assert f"probe run {probed.run_id}" in probed.load.why
        # Its files (one per job of its widest row) stay for the profiles, whichever jobs it chose.
        widest = yaml.safe_load(sweep["plan_text"])["workloads"][0]["matrix"]["jobs"][-1]
        assert probed.load.data is not None
        assert sorted(p.name for p in (disk_dir / "iofleet").glob("iofleet-data.*")) == [
            f"iofleet-data.{n}.0" for n in range(widest)]
        probed.discard_data()  # the profiles will not run here
    assert not (disk_dir / "iofleet").exists()  # the probe's files are gone
    # The run then uses it (easy_plan with a Load: tests/unit/test_easy.py).
