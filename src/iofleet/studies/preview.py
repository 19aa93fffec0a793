"""What a plan will do, before anything runs (`iofleet validate`; the web's
plan check can show the same): its tests as a table, the steps of a mixed
plan, how long it takes and how much data it writes."""

from dataclasses import dataclass, field

from ..plan.expand import MixedStep, TestSpec, data_per_target_set, expand, expand_mixed, tests_table
from ..fleet.targets import target_for
from ..plan.model import Plan
from ..plan.params import rate_note
from .events import estimate_seconds


@dataclass
class PlanPreview:
    plan: Plan
    specs: list[TestSpec]
    columns: list[str]  # the tests table's parameters (tests_table)
    rows: list[dict[str, str]]
    steps: list[MixedStep] = field(default_factory=list)  # a mixed plan's steps (its workloads at once)
    estimate_s: float = 0.0
    on_device: bool = False  # the target holds no data files (a block device, an RBD image)
    data_bytes: int = 0  # data files created per set of targets (directories)
    notes: list[str] = field(default_factory=list)  # e.g. a rate rounded up per job (on one host)


def preview_plan(plan: Plan) -> PlanPreview:
    """The plan's tests and what running them costs; a mixed plan runs its
    steps (the workloads at once), so its duration is the steps'."""
    specs = expand(plan)
    columns, rows = tests_table(specs)
    steps = expand_mixed(plan) if plan.mixed else []
    return PlanPreview(plan, specs, columns, rows, steps, estimate_seconds(steps or specs),
                       on_device=bool(plan.targets) and not target_for(plan.targets).holds_files,
                       data_bytes=data_per_target_set(specs),
                       notes=list(dict.fromkeys(n for s in specs if (n := rate_note(s.values())))))
