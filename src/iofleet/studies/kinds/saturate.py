"""saturate: jobs × iodepth swept to find the knee and the most IOPS (studies/saturate.py)."""

from ..study import Setting, Study, Where

AXES = (  # the sweep's axes' upper bounds, bounded by the rows they bound
    Setting("max_jobs", int, "Most jobs per host.", words="its CPUs", bounded_by="jobs"),
    Setting("max_iodepth", int, "Most outstanding IOs per job.", bounded_by="iodepth"),
)


class Saturate(Study):
    name = "saturate"
    order = 30
    after = "diagnose"
    title = "saturate: the knee and the most IOPS"
    settings = (
        Setting("slo", str, "Latency target, e.g. 'p99<=2ms' or 'mean<500us'.", words="none"),
        *AXES,
        Setting("min_gain_pct", float, "A doubling gaining fewer % IOPS has stopped growing.", option="--min-gain",
                allowed=lambda v: 0 < v < 1000, why="give a share above 0, e.g. 10 (%)"),
        Setting("bisect", int, "Most bisection steps toward the target.", allowed=lambda v: 0 <= v <= 10,
                why="allowed 0 to 10 steps"),
        Setting("repeats", int, "Most runs of a cell whose verdict is within noise.", allowed=lambda v: 1 <= v <= 10,
                why="allowed 1 to 10 runs of a cell"),
        Setting("noise_pct", float, "Run-to-run IOPS noise, % (a single run is ± half).", option="--noise",
                allowed=lambda v: 0 <= v < 100, why="give a share from 0 to 99, e.g. 8 (%)"),
    )

    def defaults_from(self):
        from ..saturate import Sweep
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
        from ..saturate import run_saturate
        return run_saturate(where.store, sweep, targets=where.targets, hosts=where.hosts, label=where.label,
                            observer=where.observer, stop=where.stop, destroy_data=where.destroy_data)


def sweep_preview(sweep, where: Where, study: str):
    """The sweep's whole grid as a plan: its largest data files."""
    from ...plan import parse_plan
    from ..saturate import doubling, max_jobs_for, place_names, sweep_plan
    names = place_names(where.hosts, where.targets, study, checking=None)
    data, _ = sweep_plan(sweep, doubling(max_jobs_for(sweep, where.hosts)), doubling(sweep.max_iodepth), names)
    return parse_plan(data, study)
