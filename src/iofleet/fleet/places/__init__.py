"""The two places of the place protocol (fleet/places/base.py): this host
(`LocalPlace`) and fio servers at once (`FleetPlace`); `place_for` picks
one from the plan and its hosts."""

from ...errors import IofleetError
from ...plan.expand import expand, expand_mixed
from ...plan.model import Plan
from ...plan.target_kinds import SECTIONS
from ..inventory import Host, host_groups
from .base import Place
from ..targets import Access, target_for
from .fleet import FleetPlace
from .local import LocalPlace

__all__ = ["FleetPlace", "LocalPlace", "place_for", "plan_access"]


def plan_access(plan: Plan) -> Access:
    """How the plan's targets are reached: its target kinds' sections (`ceph:`)."""
    return Access({name: getattr(plan, name) for name in SECTIONS})


def place_for(plan: Plan, hosts: list[Host] | None) -> tuple[Place, list]:
    """Where the plan runs (on `hosts`, fio servers, or on the plan's
    targets here), and its tests in run order."""
    access = plan_access(plan)
    if plan.mixed:
        if not hosts:
            raise IofleetError(f"plan {plan.name!r} is mixed (workloads side by side on host groups); "
                               f"run it on a fleet with --hosts INVENTORY")
        groups = host_groups(hosts, {w.name: w.hosts for w in plan.workloads})
        place, specs = FleetPlace(hosts, groups, clear_cache=plan.clear_cache, destroy_data=plan.destroy_data,
                                  access=access), expand_mixed(plan)
    elif hosts:
        place, specs = FleetPlace(hosts, clear_cache=plan.clear_cache, destroy_data=plan.destroy_data,
                                  access=access), expand(plan)
    elif not plan.targets:
        raise IofleetError(
            f"plan {plan.name!r} has no targets; add `targets:` to the plan or give --target DIR")
    else:
        place, specs = LocalPlace(target_for(plan.targets, access), clear_cache=plan.clear_cache,
                                  destroy_data=plan.destroy_data), expand(plan)
    # On a device or image each job gets its own region (sized to the
    # device when the plan gives no size): the tests as they will run.
    return place, place.fit(specs, plan.sets("size"))
