"""The hardware model file (MODEL.yaml) for `iofleet model`: device figures,
devices per host, hosts, data layout and NIC speed, validated with one line
per problem that names the file and the field."""

from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..errors import PlanError
from .load import format_validation_error, read_yaml
from .units import format_size, parse_size



def _block(value: int) -> int:
    if value < 512:
        raise ValueError(f"{value} bytes is below 512; use e.g. 4k or 256k")
    if value > 1024**4:  # (a number of thousands of digits would not even print)
        raise ValueError("above 1t (1 TiB); use e.g. 4k or 256k")
    return value


BlockSize = Annotated[int, BeforeValidator(parse_size), AfterValidator(_block)]
Rate = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # .inf would divide by zero in the model
LAYOUTS = ("raid0", "mirror", "raid5", "raid6", "erasure")
FIGURES = ("read_iops", "write_iops", "read_mb_s", "write_mb_s")


class DeviceSpec(BaseModel):
    """One device's figures as entered, or `run: N` to take them from a
    stored iofleet run on one device."""

    model_config = ConfigDict(extra="forbid")
    read_iops: Optional[Rate] = None
    write_iops: Optional[Rate] = None
    read_mb_s: Optional[Rate] = None  # 10^6 bytes/s, as everywhere in iofleet
    write_mb_s: Optional[Rate] = None
    bs: Optional[BlockSize] = None  # the block size the IOPS figures were measured at
    run: Optional[Annotated[int, Field(ge=1, lt=2**63)]] = None  # (a run id: an SQLite integer)

    @model_validator(mode="after")
    def _figures_or_run(self):
        given = [f for f in FIGURES if getattr(self, f) is not None]
        if self.run is not None and (given or self.bs is not None):
            raise ValueError("give either run: N or the four figures, not both")
        if self.run is None and len(given) < len(FIGURES):
            missing = ", ".join(f for f in FIGURES if f not in given)
            raise ValueError(f"missing {missing}; give read_iops, write_iops, read_mb_s and "
                             f"write_mb_s (and bs, default 4k), or run: N to take them from a stored run")
        return self


class ModelWorkload(BaseModel):
    """One row of the model's table: block size, read share and pattern."""

    model_config = ConfigDict(extra="forbid")
    bs: BlockSize
    read_pct: Annotated[int, Field(ge=0, le=100)]
    pattern: Literal["random", "sequential"] = "random"

    @property
    def name(self) -> str:
        return f"{format_size(self.bs)}-r{self.read_pct}-{'rand' if self.pattern == 'random' else 'seq'}"


# Easy Run's four profiles (so a model and an Easy Run compare row by row),
# plus the two missing corners: 4k random writes (the write penalty at its
# plainest) and 256k sequential reads (the bandwidth ceiling).
DEFAULT_WORKLOADS = [
    {"bs": "4k", "read_pct": 100}, {"bs": "4k", "read_pct": 70}, {"bs": "4k", "read_pct": 0},
    {"bs": "8k", "read_pct": 50},
    {"bs": "256k", "read_pct": 100, "pattern": "sequential"}, {"bs": "256k", "read_pct": 0, "pattern": "sequential"},
]


class HardwareModel(BaseModel):
    """What the hardware is: the input of the theoretical model."""

    model_config = ConfigDict(extra="forbid")
    name: str = "model"
    device: DeviceSpec
    devices_per_host: Annotated[int, Field(ge=1, le=100_000)]  # bounded: the model computes in floats
    hosts: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    layout: Literal[LAYOUTS]  # type: ignore[valid-type]
    copies: Optional[Annotated[int, Field(ge=2, le=1000)]] = None  # mirror only
    k: Optional[Annotated[int, Field(ge=1, le=1000)]] = None  # erasure: data chunks
    m: Optional[Annotated[int, Field(ge=1, le=1000)]] = None  # erasure: parity chunks
    stripe_unit: Optional[BlockSize] = None  # per-device chunk; enables full-stripe writes
    nic_gbps: Optional[Rate] = None  # per host, one direction (links are full duplex)
    workloads: Annotated[list[ModelWorkload], Field(min_length=1)] = Field(
        default_factory=lambda: [ModelWorkload.model_validate(w) for w in DEFAULT_WORKLOADS])

    @model_validator(mode="after")
    def _layout_fits(self):
        lay, n, per_host = self.layout, self.devices, self.devices_per_host
        if self.copies is not None and lay != "mirror":
            raise ValueError(f"copies: only for layout mirror (layout is {lay}); remove it")
        if (self.k is not None or self.m is not None) and lay != "erasure":
            raise ValueError(f"k: k and m are only for layout erasure (layout is {lay}); remove them")
        if self.stripe_unit is not None and lay not in ("raid5", "raid6", "erasure"):
            raise ValueError(f"stripe_unit: only for raid5, raid6 or erasure (layout is {lay}); remove it")
        if lay == "mirror":
            copies = self.copies or 2
            spread, where = (self.hosts, "hosts") if self.hosts > 1 else (n, "devices")
            if copies > spread:
                raise ValueError(f"copies: {copies} copies need at least {copies} {where} (have {spread}); "
                                 f"lower copies or add {where}")
        elif lay in ("raid5", "raid6"):
            need = 3 if lay == "raid5" else 4
            if per_host < need:
                raise ValueError(f"devices_per_host: {lay} is a RAID set inside each host and needs at least "
                                 f"{need} devices per host (have {per_host}); add devices or choose another layout")
        elif lay == "erasure":
            if self.k is None or self.m is None:
                raise ValueError("k: layout erasure needs k and m, e.g. k: 4, m: 2 for 4 data + 2 parity chunks")
            spread, where = (self.hosts, "hosts") if self.hosts > 1 else (n, "devices")
            if self.k + self.m > spread:
                raise ValueError(f"k: {self.k}+{self.m} needs {self.k + self.m} {where} (one chunk on each), "
                                 f"but there are {spread}; lower k or m, or add {where}")
        return self

    @property
    def devices(self) -> int:
        return self.devices_per_host * self.hosts

    @property
    def mirror_copies(self) -> int:
        return self.copies or 2

    def data_parity(self) -> tuple[int, int] | None:
        """(data chunks, parity chunks) of a parity layout's stripe, else None."""
        if self.layout == "raid5":
            return self.devices_per_host - 1, 1
        if self.layout == "raid6":
            return self.devices_per_host - 2, 2
        if self.layout == "erasure":
            return self.k, self.m
        return None

    def layout_text(self) -> str:
        if self.layout == "mirror":
            return f"mirror, {self.mirror_copies} copies"
        if self.layout == "erasure":
            return f"erasure {self.k}+{self.m}"
        if self.layout in ("raid5", "raid6"):
            k, m = self.data_parity()
            return f"{self.layout} ({k}+{m} in each host)"
        return self.layout


def parse_model(data, source: str = "<model>") -> HardwareModel:
    if not isinstance(data, dict):
        raise PlanError([f"{source}: a model is a YAML mapping with device, devices_per_host, hosts and layout"])
    try:
        return HardwareModel.model_validate(data)
    except ValidationError as exc:
        # The plan loader's hint for unknown fields points at plan docs; a model's are in docs/model.md.
        raise PlanError([p.replace("(see `iofleet params` and docs/plans.md)", "(see docs/model.md)")
                         for p in format_validation_error(source, exc)]) from None


def load_model(path: str | Path) -> HardwareModel:
    """Read and validate a model file; raise PlanError with every problem."""
    path = Path(path)
    return parse_model(read_yaml(path, "model"), str(path))
