"""The target protocol: one host's storage under test, as fio's ioengines
each own their ops. A kind (directories, a block device, an RBD image) is
one module with one class answering these calls; places (fleet/places/), the
host check and kept data call them and never ask which kind they hold.

A target is what one host tests: one or more directories (fio spreads the
jobs' files over them), or one device, or one image. The calls come in a
run's order: fit the tests, lock and check (prepare), check nothing else
uses it, prepare data, run each test, clean up, let go."""

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from ...plan.expand import TestSpec
from ..facts_records import TargetFacts
from .lock import lock_fleet_target


@dataclass(frozen=True)
class Access:
    """How a target is reached beyond its name: the plan's sections of the
    target kinds (RBD's `ceph:`), and the fleet host it belongs to (each
    host then gets its own image)."""

    sections: Mapping[str, BaseModel] = field(default_factory=dict, hash=False)
    host: str | None = None  # the fleet host this target belongs to (None: this machine)

    def section(self, name: str, model: type[BaseModel]) -> BaseModel:
        """A kind's plan section, or its defaults when the plan has none."""
        return self.sections.get(name) or model()


KINDS: dict[str, type["Target"]] = {}  # kind → its class: each registers itself (targets/__init__.py)


class Target(ABC):
    """One host's storage under test. `names` are the targets as the plan or
    inventory wrote them; `engines`: the only engines that can drive it
    (None: any of the plan's). `kind` is its plan-stage declaration's
    (plan/target_kinds/), which says how a plan writes one."""

    kind: str = ""
    engines: tuple[str, ...] | None = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.kind:
            KINDS[cls.kind] = cls

    @classmethod
    def fixed_facts(cls, name: str) -> TargetFacts | None:
        """Facts known from the name alone, on any host (an RBD image: no
        device of the host); None: the host is looked at."""
        return None
    # iofleet's own data files live there (kept data, extended at their end
    # too; layout of a partial working set, clean-up by file name, free space).
    holds_files: bool = False

    def __init__(self, names: list[str], access: Access = Access()):
        self.names = [str(n) for n in names]
        self.access = access
        self.locks: list = []  # held from prepare() to release()

    @property
    def label(self) -> str:
        return ", ".join(self.names)

    # ---- job files -----------------------------------------------------
    @abstractmethod
    def fio_where(self) -> list[tuple[str, object]]:
        """The job-file options that say where the IO goes."""

    @abstractmethod
    def probe_where(self, section: str) -> list[tuple[str, object]]:
        """Where an engine probe does its IO, leaving nothing behind (a
        device or image is only read before preparation)."""

    def fio_env(self) -> dict[str, str]:
        """Environment a local fio needs to reach the target."""
        return {}

    def layout_job(self, spec: TestSpec) -> str | None:
        """A job file that lays out the whole data files before a test whose
        working set is a part of them, or None (no files to lay out)."""
        return None

    # ---- sizing and safety ----------------------------------------------
    def fit(self, steps: list, size_given: bool, local: bool) -> list:
        """The tests as they will run on this target (`local`: this machine
        can look at it directly)."""
        return steps

    @abstractmethod
    def prepare(self, facts: dict, destroy_data: list[str]) -> None:
        """On this machine: lock the target for this run, check it is safe
        to write (raise IofleetError, one line, naming the fix), create what
        the run needs; nothing is written to data the user owns."""

    def prepare_remote(self, endpoint: tuple[str, int], facts: dict, destroy_data: list[str]) -> None:
        """On a fleet host: lock what the controller can lock, check and
        create what it can before the host check (an image in the cluster).
        By default each target is locked on this machine by the host's fio
        server and its path; the host's own files and devices are checked
        through its fio server (check.py)."""
        self.locks = []
        try:
            for name in self.names:
                self.locks.append(lock_fleet_target(*endpoint, name, facts))
        except BaseException:
            self.release()
            raise

    def check_busy(self, steps: list) -> None:
        """With the target locked: nothing else uses it and the data fits."""

    def explain(self, error: str, steps: list) -> str:
        """A clearer account of fio's error where the target knows one."""
        return error

    def claim(self, jobs: int) -> None:
        """Record the files of `jobs` jobs as iofleet's before fio makes them."""

    def before_test(self, spec: TestSpec) -> None:
        """Set what the target holds per test (an image's client cache)."""

    # ---- the host check (check.py), through a fleet host's fio server ----
    @abstractmethod
    def check_job(self) -> str:
        """The job file of a host's own check: read-only, or removed after."""

    @abstractmethod
    def read_check(self, check, fio) -> None:
        """Fill `check` (check.HostCheck: its targets' problems) from what
        the check job's fio run (runner.FioRun) said."""

    # ---- the end ---------------------------------------------------------
    def cleanup(self) -> int:
        """Remove what iofleet created there; how many places it cleaned."""
        return 0

    def release(self) -> None:
        """Let go of the locks."""
        for lock in self.locks:
            lock.release()
        self.locks = []

    def resume_record(self) -> dict:
        return {}

    def adopt(self, record: dict) -> None:
        """Take over what the interrupted run recorded it created."""

    # ---- kept data -------------------------------------------------------
    def fingerprint_where(self) -> list[tuple[str, object]] | None:
        """What a preparation's fingerprint names of the target (fleet/targets/kept.py);
        None: its data is never reused."""
        return None

    def files_state(self) -> dict[str, list[int]] | None:
        """This machine's view of the prepared data (path → [size, mtime_ns]),
        or None where only the record can tell."""
        return None

    # ---- caches and facts ---------------------------------------------------
    @abstractmethod
    def cache_note(self, clear: bool, drop_why: str | None, facts: dict | None = None) -> str:
        """What was done to the caches in front of the target before a test
        (`drop_why`: why the kernel's were kept, None: dropped; `facts`: a
        fleet host's target facts read through SSH, by target)."""

    def describe(self) -> dict:
        """What this machine can tell about the target, stored with the run
        (a fleet host's files and devices: its SSH facts tell instead)."""
        return {}

    def free_bytes(self) -> int | None:
        """Room for data on this machine's view of the target."""
        return None

    def cluster_free_bytes(self) -> int | None:
        """Room for data as a cluster tells it to this machine, for a fleet
        host's target too (None: only the host can tell)."""
        return None

    def spinning(self) -> bool | None:
        """Whether what holds the data spins (None: cannot be told)."""
        return None


def kernel_note(drop_why: str | None) -> str:
    return "kernel caches dropped" if drop_why is None else f"kernel caches kept ({drop_why})"


def paths(names: list[str]) -> list[Path]:
    return [Path(n) for n in names]


def any_spinning(rotational: list[bool | None]) -> bool | None:
    """Any target on a spinning disk: True; all on flash: False; else not known."""
    return True if any(rotational) else False if rotational and all(r is False for r in rotational) else None
