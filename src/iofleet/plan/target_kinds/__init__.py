"""Target kinds as a plan sees them: each module here declares one kind
(a `TargetName` subclass) — how its targets are written and checked, whether
it is tested alone, whether destroy_data may name it, the fio engines that
only it can drive, its parameter-table rows and its own plan section (RBD's
`ceph:`), and how an imported fio job file names it.

Its behaviour (preparation, locks, job-file lines, checks, facts) is the
fleet stage's: fleet/targets/ has one module per kind, of the same `kind`.
Both halves are found by listing their package: a new kind is one file
here and one there, no other file edited."""

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ...kinds import import_modules
from ..names import NAME_RE
from ..param import Param


class TargetName:
    """One kind of target as a plan writes it. `claims` decides; the
    fallback kind (directories) takes whatever no other kind claims."""

    kind: str = ""
    order: int = 50  # in lists and messages (directories first)
    fallback: bool = False
    what: str = ""  # what one is, e.g. "an RBD image"
    example: str = ""  # how a plan writes one, e.g. "rbd:POOL/IMAGE"
    short: str = ""  # e.g. "RBD image", in "a device or RBD image target"
    # What carries its IO when its name is no path on the host ("librbd" for
    # an RBD image: no device of the host is its); None: a path on the host.
    client: str | None = None
    alone: bool = False  # one per host, nothing beside it (one region per job)
    destroyable: bool = False  # destroy_data may name it
    engines: tuple[str, ...] = ()  # fio engines that drive this kind only
    rows: tuple[Param, ...] = ()  # its parameter-table rows (per test)
    section: str | None = None  # its own plan section, e.g. "ceph"
    settings: type[BaseModel] | None = None  # that section's model
    fio_options: tuple[str, ...] = ()  # the job-file options its targets are written with

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.kind:
            _KINDS[cls.kind] = cls

    @classmethod
    def claims(cls, value: str) -> bool:
        return False

    @classmethod
    def check(cls, value: str) -> str:
        """The target as given, or ValueError saying how to write one."""
        return value

    @classmethod
    def check_fio(cls, key: str, value: Any) -> str:
        """One of its `fio_options` as a job file writes it (a plain name by
        default), or ValueError: nothing else reaches a job file."""
        if isinstance(value, str) and NAME_RE.match(value):
            return value
        raise ValueError(f"{key}: not a plain name")

    @classmethod
    def check_settings(cls, settings: dict) -> None:
        """The plan-section settings an imported job implies, or ValueError."""

    @classmethod
    def from_fio(cls, options: Mapping[str, str]) -> tuple[str, dict] | None:
        """An imported fio job's target of this kind and the plan section's
        settings it implies, from the job's options; None: not this kind's."""
        return None

    @classmethod
    def imported(cls, target: str, settings: dict) -> str:
        """The importer's note on a target of this kind it carried over."""
        return f"a {cls.short} target {target}"


_KINDS: dict[str, type[TargetName]] = {}


import_modules(__name__, __path__)
# By `order`; claims are tried in it, the fallback last.
TARGET_NAMES: tuple[type[TargetName], ...] = tuple(sorted(_KINDS.values(), key=lambda k: (k.order, k.kind)))
KIND_ROWS: tuple[Param, ...] = tuple(row for k in TARGET_NAMES for row in k.rows)
KIND_ENGINES: tuple[str, ...] = tuple(e for k in TARGET_NAMES for e in k.engines)
KIND_FIO_OPTIONS: frozenset[str] = frozenset(o for k in TARGET_NAMES for o in k.fio_options)
SECTIONS: dict[str, type[BaseModel]] = {k.section: k.settings for k in TARGET_NAMES if k.section and k.settings}


def name_kind(value: str) -> type[TargetName]:
    """The kind that claims a target as written."""
    for k in TARGET_NAMES:
        if not k.fallback and k.claims(value):
            return k
    return next(k for k in TARGET_NAMES if k.fallback)


def kind_named(kind: str | None) -> type[TargetName] | None:
    """A kind by its name, as stored facts say it ("rbd"), or None."""
    return _KINDS.get(kind) if kind else None


def fio_option_kind(key: str) -> type[TargetName]:
    """The kind whose targets are written with fio option `key`."""
    return next(k for k in TARGET_NAMES if key in k.fio_options)


def engine_kind(engine: str) -> type[TargetName] | None:
    """The kind that alone is driven by `engine` (rbd: RBD images), or None."""
    return next((k for k in TARGET_NAMES if engine in k.engines), None)


def check_target(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected {_either([f'{k.what} ({k.example})' if k.example else k.what for k in TARGET_NAMES])}")
    return name_kind(value).check(value)


def check_alone(targets: list[str]) -> list[str]:
    """A list of targets mixing a device or an RBD image with others is
    refused: each is one region per job, which fio cannot spread over
    several targets the way it spreads job files over directories."""
    if len(targets) > 1 and any(name_kind(t).alone for t in targets):
        alone = [k for k in TARGET_NAMES if k.alone]
        raise ValueError(f"a {_either([k.short for k in alone])} target is tested alone (one per host, nothing "
                         f"beside it); run one plan per {_either([k.short.split()[-1] for k in alone])}, or "
                         f"give directories only")
    return targets


def _either(words: list[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return " or ".join(filter(None, [", ".join(words[:-1]), words[-1]]))


def check_destroyable(value: Any) -> str:
    """destroy_data names devices or RBD images, exactly (checked as the
    first such kind checks its own, when none claims it)."""
    kinds = [k for k in TARGET_NAMES if k.destroyable]
    claimed = next((k for k in kinds if isinstance(value, str) and k.claims(value)), kinds[0])
    return claimed.check(value)
