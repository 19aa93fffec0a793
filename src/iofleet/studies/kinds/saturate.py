"""saturate: jobs × iodepth swept to find the knee and the most IOPS (studies/saturate.py)."""

from ..saturate import SWEEP_SETTINGS, Sweep, run_saturate
from ..study import Study, Where


class Saturate(Study):
    name = "saturate"
    order = 30
    after = "diagnose"
    title = "saturate: the knee and the most IOPS"
    settings = SWEEP_SETTINGS

    def defaults_from(self):
        return (Sweep,)

    def parse(self, given):
        from ..options import sweep_from_options
        return sweep_from_options(**given)

    def preview(self, where: Where, sweep):
        return sweep_preview(sweep, where, self.name)

    def about(self, sweep) -> str:
        return (f"a sweep of jobs × iodepth up to {sweep.max_iodepth} IOs per job"
                + (f", target {sweep.slo.text}" if sweep.slo else ""))

    def run(self, where: Where, sweep):
        return run_saturate(where, sweep)


def sweep_preview(sweep, where: Where, study: str):
    """The sweep's whole grid as a plan: its largest data files."""
    from ...plan import parse_plan
    from ..saturate import doubling, max_jobs_for, place_names, sweep_plan
    names = place_names(where.hosts, where.targets, study, checking=None)
    data, _ = sweep_plan(sweep, doubling(max_jobs_for(sweep, where.hosts)), doubling(sweep.max_iodepth), names)
    return parse_plan(data, study)
