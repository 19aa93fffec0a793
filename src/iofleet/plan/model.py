"""Plan model (pydantic): what a plan file may say, validated with field paths.

The workload fields are generated from the parameter table in params.py so
that validation, rendering and docs never disagree.
"""

import math
from pathlib import Path
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, create_model, field_validator, model_validator

from .names import check_name
from .params import MATRIX_PARAMS, PARAMS, RUN_PARAMS
from .target_kinds import SECTIONS, check_alone, check_destroyable, check_target

# Tests one plan may expand to (matrix cells × repeats, all workloads): a day
# of 10 s tests; more is a mistake in the matrix, refused before expanding.
MAX_TESTS = 10_000

# A plan's or a host's targets: directories, or one block device, or one RBD
# image — each checked by the target kind that claims it (target_kinds/).
Targets = Annotated[list[Annotated[str, BeforeValidator(check_target)]], AfterValidator(check_alone)]


def _param_type(name: str):
    return Annotated[Any, BeforeValidator(PARAMS[name].parse)]


Matrix = create_model(
    "Matrix",
    __config__=ConfigDict(extra="forbid"),
    **{
        name: (Optional[Annotated[list[_param_type(name)], Field(min_length=1)]], None)
        for name in MATRIX_PARAMS
    },
)

WorkloadParams = create_model(
    "WorkloadParams",
    __config__=ConfigDict(extra="forbid"),
    **{name: (Optional[_param_type(name)], None) for name in PARAMS},
)


RunSettings = create_model(
    "RunSettings",
    __config__=ConfigDict(extra="forbid"),
    **{name: (Annotated[Any, BeforeValidator(p.parse)], p.default) for name, p in RUN_PARAMS.items()},
)


class Workload(WorkloadParams):
    name: Annotated[str, BeforeValidator(check_name)]
    description: str = ""
    matrix: Optional[Matrix] = None  # type: ignore[valid-type]
    # In a mixed plan: the host group (by inventory labels) that runs this workload.
    hosts: Optional[dict[str, str]] = None


class _PlanRules(RunSettings):  # type: ignore[valid-type,misc]
    """A plan's rules across its fields; its fields are Plan's (below)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _host_groups(self):
        for i, w in enumerate(self.workloads):
            if self.mixed and not w.hosts:
                raise ValueError(f"workloads[{i}].hosts: a mixed plan gives every workload a host group, "
                                 f"e.g. `hosts: {{role: oltp}}`")
            if not self.mixed and w.hosts:
                raise ValueError(f"workloads[{i}].hosts: host groups per workload need `mixed: true` "
                                 f"(the workloads then run at the same time)")
        return self

    @model_validator(mode="after")
    def _bounded_tests(self):
        """Refused before expanding: a matrix of six keys of ten values is a
        million tests, which would take memory and time just to list."""
        default_repeat = self.defaults.repeat or 1
        counts = []
        for w in self.workloads:
            cells = math.prod(len(v) for v in (w.matrix.model_dump(exclude_none=True) if w.matrix else {}).values())
            counts.append(cells * (w.repeat or default_repeat))
        total = sum(counts)
        if total > MAX_TESTS:
            i = max(range(len(counts)), key=counts.__getitem__)
            where = f"workloads[{i}]" if counts[i] > MAX_TESTS or len(counts) == 1 else "workloads"
            raise ValueError(f"{where}: the plan expands to {total:,} tests (workload {self.workloads[i].name!r}: "
                             f"{counts[i]:,}), more than the limit of {MAX_TESTS:,} tests per plan; "
                             f"list fewer matrix values or split the plan")
        return self

    @field_validator("workloads", check_fields=False)
    @classmethod
    def _unique_workload_names(cls, workloads):
        seen = set()
        for w in workloads:
            if w.name in seen:
                raise ValueError(f"workload name {w.name!r} is used twice; names must differ")
            seen.add(w.name)
        return workloads

    def target_paths(self) -> list[Path]:
        return [Path(t) for t in self.targets]

    def sets(self, param: str) -> bool:
        """Whether the plan gives a workload parameter anywhere (defaults, a
        workload or its matrix), rather than leaving it to the default."""
        holders = [self.defaults, *self.workloads, *(w.matrix for w in self.workloads if w.matrix)]
        return any(getattr(h, param) is not None for h in holders)


# A plan's fields, in the order a plan file writes them; each target kind's
# own section (RBD's `ceph:`) after destroy_data.
Plan = create_model(
    "Plan",
    __base__=_PlanRules,
    name=(Annotated[str, BeforeValidator(check_name)], ...),
    description=(str, ""),
    # Stored with the run: runs of one configuration share a label, and
    # `iofleet compare` takes a label for all of them (--label overrides).
    label=(Optional[Annotated[str, BeforeValidator(check_name)]], None),
    # Where the IO goes (target_kinds/); iofleet writes only inside an
    # `iofleet/` sub-directory of a directory. `--target` replaces this list.
    targets=(Targets, []),
    # Devices or images whose data may be destroyed: one carrying data is
    # refused unless it is named here (never a mounted or in-use one).
    destroy_data=(list[Annotated[str, BeforeValidator(check_destroyable)]], []),
    **{section: (model, model()) for section, model in SECTIONS.items()},
    # With an inventory (--hosts): run only on hosts carrying these labels.
    hosts=(Optional[dict[str, str]], None),
    defaults=(WorkloadParams, WorkloadParams()),  # type: ignore[valid-type]
    workloads=(Annotated[list[Workload], Field(min_length=1)], ...),
)
