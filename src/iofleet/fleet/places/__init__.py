"""Where a run's tests run (the place protocol, base.py): one module per
place, found by listing this package — this host (local.py), fio servers at
once (fleet.py). `place_for` gives a run to the first place that takes it."""

from functools import cache

from ...errors import IofleetError
from ...kinds import import_modules
from ...plan.model import Plan
from ...plan.target_kinds import SECTIONS
from ..inventory import Host
from ..targets import Access
from .base import PLACES, Place

__all__ = ["place_for", "place_class", "plan_access"]


def plan_access(plan: Plan) -> Access:
    """How the plan's targets are reached: its target kinds' sections (`ceph:`)."""
    return Access({name: getattr(plan, name) for name in SECTIONS})


@cache
def _places() -> list[type[Place]]:
    """Every place, in the order they are asked: the package's modules, imported once."""
    import_modules(__name__, __path__)
    return sorted(PLACES, key=lambda p: p.order)


def place_class(hosts: list[Host] | None) -> type[Place]:
    """The place that runs on these hosts (the inventory's; None: this machine)."""
    found = next((p for p in _places() if p.takes(hosts)), None)
    if found is None:  # pragma: no cover - this host takes any run without hosts
        raise IofleetError("no place takes this run; give --hosts INVENTORY or --target")
    return found


def place_for(plan: Plan, hosts: list[Host] | None) -> tuple[Place, list]:
    """Where the plan runs (on `hosts`, fio servers, or on the plan's
    targets here), and its tests in run order."""
    place, specs = place_class(hosts).for_plan(plan, hosts, plan_access(plan))
    # On a device or image each job gets its own region (sized to the
    # device when the plan gives no size): the tests as they will run.
    return place, place.fit(specs, plan.sets("size"))
