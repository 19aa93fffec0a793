"""curve: latency against load, fixed-rate tests up to the most IOPS (studies/curve.py)."""

from dataclasses import dataclass, field, replace

from ..study import Launch, Setting, Study, Where


@dataclass
class CurveSettings:
    curve: object  # studies.curve.Curve
    given: set[str] = field(default_factory=set)  # the IO rows given (bs, read_pct, random_pct)


class CurveStudy(Study):
    name = "curve"
    order = 40
    after = "saturate"
    short_help = "Latency against load: fixed-rate tests up to the most IOPS."
    title = "curve: latency against load"
    settings = (
        Setting("points", int, "Loads evenly spaced up to the most IOPS: k/N of it, k = 1..N.", given_default=True),
        Setting("loads", str, "Loads in % of the most IOPS instead, e.g. 10,50,90,120 (above 100 shows where the "
                "storage stops keeping up).", words="none"),
        Setting("from_run", int, "Take the most IOPS from this stored saturate run instead of sweeping.",
                words="none", metavar="RUN"),
        Setting("max_jobs", int, "Most jobs per host in the sweep.", words="its CPUs"),
        Setting("max_iodepth", int, "Most outstanding IOs per job in the sweep."),
    )

    def defaults_from(self):
        from ..curve import Curve
        from ..saturate import Sweep
        return (Curve, Sweep)

    def parse(self, given) -> CurveSettings:
        from ...plan.params import IO_PARAMS
        from ..options import curve_from_options
        return CurveSettings(curve_from_options(**given), {name for name in IO_PARAMS if given.get(name)})

    def launch(self, where: Where, settings, text=None, data_dir=None) -> Launch:
        """From a stored saturate run (`from_run`, read from the store at
        `data_dir`) its fixed-rate tests are the preview; else the sweep's grid."""
        from ...plan import parse_plan
        from ...results.store import Store
        from ..curve import fixed_rate_plan, stored_maximum
        from ..saturate import place_names
        from .saturate import sweep_preview
        parsed = self.parse(self.given(settings))
        curve = parsed.curve
        if curve.from_run is not None:
            with Store.open(data_dir) as store:
                jobs, iodepth, max_iops, io = stored_maximum(store, curve.from_run, curve, parsed.given)
            names = place_names(where.hosts, where.targets, self.name, checking=None)
            preview = parse_plan(fixed_rate_plan(curve, io, jobs, iodepth, max_iops, names, [])[0], self.name)
            first = f"the most IOPS of saturate run {curve.from_run}, {max_iops:,.0f}"
        else:
            preview = sweep_preview(curve.sweep, where, self.name)
            first = "a saturate sweep for the most IOPS"

        def go(store, observer, stop):
            return self.status(self.run(replace(where, store=store, observer=observer, stop=stop), parsed))
        about = f"{first}, then {len(curve.load_list())} fixed-rate tests up to it"
        return Launch(self.name, self.name, where.label or self.name, where.hosts, preview, go, about)

    def headline(self, run, best: dict) -> dict:
        """A curve's best IOPS is the most IOPS its sweep found, not one of its fixed-rate points."""
        from ...units import format_value
        curve = run.methodology.curve if run.methodology is not None else None
        if curve and curve.max_iops:
            best |= {"iops": round(curve.max_iops, 1), "iops_test": f"the most IOPS ({curve.source})",
                     "p99_ms": None, "p99_text": format_value(None, "ns")}
        return best

    def run(self, where: Where, settings: CurveSettings, on_maximum=None):
        from ..curve import run_curve
        return run_curve(where, settings.curve, given=settings.given, on_maximum=on_maximum)
