"""Validate before Start (HCIBench's Validate step): the checks a run makes
before its first test, made now and reported one line each instead of
stopping at the first. Nothing here checks anything itself: the plan's
preview (`iofleet validate`), fio's version check and the place's own
target checks (lock, device safety, fio still using it, room for the data
files) are the run's, so Validate passes exactly when the run would start."""

from dataclasses import asdict, dataclass

from ..errors import IofleetError
from ..fio.command import fio_version
from ..fleet.places import place_for
from ..fleet.inventory import Host
from ..fleet.targets.lock import holder_facts
from ..plan.model import Plan
from ..plan.units import format_bytes, format_duration
from .preview import preview_plan


@dataclass
class Check:
    name: str  # plan | duration | data | engine | targets
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def preflight(plan: Plan, hosts: list[Host] | None = None, data_dir: str | None = None) -> list[Check]:
    """One Check per step; the run would start when every one is ok."""
    preview = preview_plan(plan)
    checks = [Check("plan", True, f"{plan.name}: {len(preview.specs)} tests"),
              Check("duration", True, f"estimated {format_duration(preview.estimate_s)} at most")]
    checks.append(Check("data", True, "on the device: each job its own region, nothing to remove afterwards"
                        if preview.on_device else f"{format_bytes(preview.data_bytes)} of data files under "
                        f"<target>/iofleet/, removed afterwards"))
    try:
        checks.append(Check("engine", True, fio_version() + (" (and on each host at Start)" if hosts else "")))
    except IofleetError as exc:
        checks.append(Check("engine", False, _first_line(exc)))
    checks.append(_targets(plan, hosts, data_dir))
    return checks


def _targets(plan: Plan, hosts: list[Host] | None, data_dir: str | None) -> Check:
    """The run's own target checks, as RunSession makes them, then let go."""
    try:
        place, specs = place_for(plan, hosts)
        place.prepare(holder_facts(data_dir=data_dir, run=None))
    except IofleetError as exc:
        return Check("targets", False, _first_line(exc))
    try:
        place.check_targets(specs)
        where = ", ".join(place.describe().get("targets") or []) or f"{len(hosts or [])} hosts"
        return Check("targets", True, f"{where}: free, safe to use, room for the data files")
    except IofleetError as exc:
        return Check("targets", False, _first_line(exc))
    finally:
        try:
            place.cleanup()  # only what prepare made (iofleet's own directories)
        finally:
            place.release()
