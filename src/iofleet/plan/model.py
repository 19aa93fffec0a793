"""Plan model (pydantic): what a plan file may say, validated with field paths.

The workload fields are generated from the parameter table in params.py so
that validation, rendering and docs never disagree.
"""

import math
import re
from pathlib import Path
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator, model_validator

from .params import MATRIX_PARAMS, PARAMS, RUN_PARAMS

# Tests one plan may expand to (matrix cells × repeats, all workloads): a day
# of 10 s tests; more is a mistake in the matrix, refused before expanding.
MAX_TESTS = 10_000
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")  # \Z: `$` would pass "name\n"
# Characters a target path may hold. Excludes what fio or a shell would
# interpret: ':' (fio's directory separator), '$' (fio expands ${VAR}),
# ';', '`', quotes, '%', newlines and other control characters.
PATH_RE = re.compile(r"^[A-Za-z0-9_./+@,=~ -]+\Z")


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise ValueError(
            "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return value


# A block device path: it goes to fio's `filename=` as it is, where ':'
# separates files and ',' or spaces could start other values, so neither
# they nor '.'/'..' components (which could leave /dev) are allowed; \Z,
# as `$` would let a trailing newline through.
DEVICE_RE = re.compile(r"^/dev(/[A-Za-z0-9_+@=~-][A-Za-z0-9_.+@=~-]*)+\Z")


def is_device_path(value: str) -> bool:
    """A target under /dev names a raw block device, not a directory."""
    return value == "/dev" or value.startswith("/dev/")


def check_device_path(value: Any) -> str:
    if not isinstance(value, str) or not DEVICE_RE.match(value):
        raise ValueError(
            "a device is /dev/NAME with letters, digits and _ . + @ = ~ - only "
            "(no ',', ':', spaces or '..'), e.g. /dev/sdb or /dev/disk/by-id/NAME"
        )
    return value


# A Ceph RBD image, driven through fio's rbd engine (librbd): rbd:POOL/IMAGE.
# Pool and image names go to fio's `pool=`/`rbdname=` and to the `rbd`
# command as arguments: plain names only.
RBD_PREFIX = "rbd:"
RBD_RE = re.compile(r"^rbd:([A-Za-z0-9][A-Za-z0-9_.-]{0,62})/([A-Za-z0-9][A-Za-z0-9_.-]{0,62})\Z")


def is_rbd_target(value: str) -> bool:
    return value.startswith(RBD_PREFIX)


def check_rbd_target(value: Any) -> str:
    if not isinstance(value, str) or not RBD_RE.match(value):
        raise ValueError("an RBD image is rbd:POOL/IMAGE, each 1-63 letters, digits, '.', '_' or '-' "
                         "starting with a letter or digit, e.g. rbd:rbd/iofleet")
    return value


def check_target_path(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a directory path, a block device (/dev/...) or an RBD image (rbd:POOL/IMAGE)")
    if is_device_path(value):
        return check_device_path(value)
    if is_rbd_target(value):
        return check_rbd_target(value)
    if not PATH_RE.match(value) or value != value.strip():
        raise ValueError(
            "a target path may hold only letters, digits, spaces and _ . / + @ , = ~ - "
            "(no ':', '$', ';', quotes or control characters)"
        )
    return value


def device_alone(targets: list[str]) -> list[str]:
    """A list of targets mixing a device or an RBD image with others is
    refused: each is one region per job, which fio cannot spread over
    several targets the way it spreads job files over directories."""
    if len(targets) > 1 and any(is_device_path(t) or is_rbd_target(t) for t in targets):
        raise ValueError("a device or RBD image target is tested alone (one per host, nothing beside it); "
                         "run one plan per device or image, or give directories only")
    return targets


# A plan's or a host's targets: directories, or one block device, or one RBD image.
Targets = Annotated[list[Annotated[str, BeforeValidator(check_target_path)]], AfterValidator(device_alone)]


def check_destroy_target(value: Any) -> str:
    """destroy_data names devices or RBD images, exactly."""
    if isinstance(value, str) and is_rbd_target(value):
        return check_rbd_target(value)
    return check_device_path(value)


class CephSettings(BaseModel):
    """How iofleet reaches a Ceph cluster (RBD targets). Each default is
    Ceph's own: its config file search (CEPH_CONF, /etc/ceph/ceph.conf)
    and client.admin."""

    model_config = ConfigDict(extra="forbid")
    conf: Optional[Annotated[str, BeforeValidator(check_target_path)]] = None
    client: Annotated[str, BeforeValidator(check_name)] = "admin"
    # On a fleet, hosts naming the same image each get their own
    # (IMAGE-HOST); true: they share it.
    shared_image: bool = False


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


class Plan(RunSettings):  # type: ignore[valid-type,misc]
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, BeforeValidator(check_name)]
    description: str = ""
    # Stored with the run: runs of one configuration share a label, and
    # `iofleet compare` takes a label for all of them (--label overrides).
    label: Optional[Annotated[str, BeforeValidator(check_name)]] = None
    # Directories on the storage under test. iofleet writes only inside an
    # `iofleet/` sub-directory of each. `--target` on the command line
    # replaces this list.
    targets: Targets = []
    # Devices whose data may be destroyed: a device target carrying a
    # filesystem, partition table or other signature is refused unless it is
    # named here (never a mounted or in-use one).
    destroy_data: list[Annotated[str, BeforeValidator(check_destroy_target)]] = []
    # Ceph clusters (RBD targets): config file and client name.
    ceph: CephSettings = CephSettings()
    # With an inventory (--hosts): run only on hosts carrying these labels.
    hosts: Optional[dict[str, str]] = None
    defaults: WorkloadParams = WorkloadParams()  # type: ignore[valid-type]
    workloads: Annotated[list[Workload], Field(min_length=1)]

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

    @field_validator("workloads")
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
