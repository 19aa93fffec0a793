"""Easy Run: no plan, four standard profiles sized for the hosts (studies/easy_run.py)."""

from dataclasses import dataclass

from ..study import Setting, Study, Where


@dataclass
class EasyRunSettings:
    durations: object  # plan.easy.Durations
    working_set: int | None  # per host (None: sized from the hosts' free space)
    probe_first: bool = True
    profiles: int = 0  # in its plan, once previewed


class EasyRun(Study):
    name = "easy-run"
    order = 10
    after = "run"
    title = "Easy Run: the four standard profiles"
    settings = (
        Setting("probe", bool, "Guess jobs × iodepth from CPUs and device type instead of measuring them (saves "
                "the probe's ~1–2 min).", default=True),
    )

    def defaults_from(self):
        from ...plan.easy import Durations
        return (Durations,)

    def parse(self, given) -> EasyRunSettings:
        from ..options import easy_run_options
        given = dict(given)
        probe_first = given.pop("probe", True)
        probe_first = True if probe_first is None else probe_first
        return EasyRunSettings(*easy_run_options(**given), probe_first=probe_first)

    def preview(self, where: Where, settings: EasyRunSettings):
        from ...plan import parse_plan
        from ...plan.easy import easy_plan
        from ..easy_run import survey
        facts, names = survey(where.targets, where.hosts)
        data, _ = easy_plan(facts, names, settings.durations, settings.working_set)
        settings.profiles = len(data["workloads"])
        return parse_plan(data, self.name)

    def about(self, settings: EasyRunSettings) -> str:
        return ("a probe of jobs × iodepth (4k random reads in short cells), then " if settings.probe_first else "") + \
            f"{settings.profiles} standard profiles"

    def run(self, where: Where, settings: EasyRunSettings, on_plan=None):
        from ..easy_run import run_easy_run
        return run_easy_run(where, settings.durations, working_set=settings.working_set, on_plan=on_plan,
                            probe_first=settings.probe_first)

    def status(self, outcome) -> str:
        return outcome.last.status
