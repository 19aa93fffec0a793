"""A plan or a study as the web's Run page starts it, from what the page
sends. A study (studies/kinds/) is checked as the terminal's command checks
it (the same option parsers), gives the plan whose targets Validate checks
(the study's first run's, or its largest), and runs through the same study
function as the terminal's command; a plan runs as `iofleet run` runs it."""

from ..fleet.inventory import Host
from ..plan.model import Plan
from .study import Launch

__all__ = ["Launch", "plan_launch"]


def plan_launch(plan: Plan, text: str, hosts: list[Host] | None, label: str | None) -> Launch:
    from .run import run_plan

    def go(store, observer, stop):
        return run_plan(plan, text, store, hosts=hosts, label=label, observer=observer, stop=stop).status
    return Launch("plan", plan.name, label or plan.label, hosts, plan, go, f"plan {plan.name}", text)
