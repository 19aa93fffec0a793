"""The place protocol: where a run's tests run. This host's targets
(places.LocalPlace) and fio servers at once (places.FleetPlace) answer
the same calls, so a study holds a `Place` and never asks which it has.
Both judge a test by one rule (`verdict`) and keep its files by one rule
(`collect_artifacts`)."""

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ...fio.command import NO_MESSAGE, error_line
from ...fio.jobfile import LOG_PREFIX, WARMUP_LOG_PREFIX
from ...fio.records import DiskUtil, JobResult, Series
from ...fio.status import Round
from ...plan.expand import MixedStep, TestSpec, prepare_tiers
from ..metrics.records import HostCpu, HostMetrics
from ..fio_link.runner import FioRun, killed_reason
from ..targets.lock import TargetLock


@dataclass
class Measured:
    status: str  # ok | failed | interrupted | partial
    error: str | None = None
    jobs: list[JobResult] = field(default_factory=list)
    disks: list[DiskUtil] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    host_cpu: HostCpu | None = None  # the test's headline host CPU (the summary's column)
    host_metrics: list[HostMetrics] = field(default_factory=list)
    controller: HostMetrics | None = None  # the machine running iofleet, during a fleet test
    artifacts: dict[str, bytes] = field(default_factory=dict)
    engine: str = ""
    lost: list[str] = field(default_factory=list)  # fleet hosts that gave no result
    cache: dict[str, str] = field(default_factory=dict)  # host → what was done to its caches
    rounds: dict[str, list[Round]] = field(default_factory=dict)  # host → its rounds (fio/status.py)
    ended_early_s: float | None = None  # until: steady: the measured second at which it was steady
    round_spread_s: float | None = None  # a fleet: the most seconds between hosts closing the same round
    live_note: str | None = None  # a fleet: why some host's live status was not decoded


@dataclass
class Prepared:
    """What preparation wrote on each host."""

    mode: str
    passes: int
    bs: int
    working_set_per_host: dict[str, int]  # bytes of data files prepared
    written_per_host: dict[str, int]  # bytes written, all passes (hosts whose data was written)
    seconds: float
    reused: dict[str, int] = field(default_factory=dict)  # host → run whose kept data it uses (fleet/targets/kept.py)
    extended: dict[str, int] = field(default_factory=dict)  # host → run whose kept data it extended

    def to_dict(self) -> dict:
        return {"mode": self.mode, "passes": self.passes, "bs": self.bs,
                "working_set_per_host": self.working_set_per_host,
                "written_per_host": self.written_per_host, "seconds": round(self.seconds, 1)} | (
            {"reused": self.reused} if self.reused else {}) | ({"extended": self.extended} if self.extended else {})


Step = TestSpec | MixedStep


PLACES: list[type["Place"]] = []  # each place registers itself (places/__init__.py finds them)


class Place(ABC):
    """What a run asks of its place, in the order it asks: fit the tests,
    lock and check the targets, prepare the data, run each test, clean up,
    let go. Hosts are named as the run stores them ("local" on this host).
    A place is one module of places/: it says which runs it takes (`takes`)
    and makes itself from the plan (`for_plan`)."""

    locks: list[TargetLock]  # held from prepare() to release()
    not_cleaned: tuple[str, ...] = ()  # after cleanup(): hosts whose data files are left
    order: int = 50  # asked in this order; the first that takes a run gets it

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        PLACES.append(cls)

    @classmethod
    def takes(cls, hosts: list | None) -> bool:
        """Whether this place runs a plan given these hosts (the inventory's)."""
        return False

    @classmethod
    def for_plan(cls, plan, hosts: list | None, access) -> tuple["Place", list]:
        """The place for `plan` (its target kinds' `access`), and its tests in run order."""
        raise NotImplementedError

    @classmethod
    @contextmanager
    def hosts_up(cls, hosts: list) -> Iterator[list]:
        """The hosts, reachable for a check while the block runs (pods:
        created before, deleted after)."""
        yield hosts

    @classmethod
    def left_behind(cls, hosts: list) -> list[str]:
        """What killed runs left of the place's own making, a line each."""
        return []

    @classmethod
    def clean_left(cls, hosts: list) -> list[str] | None:
        """Remove what `left_behind` found, a line each; None: the place has
        nothing of its own (the hosts' files and faults are cleaned instead)."""
        return None

    @abstractmethod
    def fit(self, steps: list[Step], size_given: bool) -> list[Step]:
        """The run's tests as they will run here (a device target gives
        each job its region)."""

    @abstractmethod
    def describe(self) -> dict:
        """The place, as stored with the run's host facts."""

    @abstractmethod
    def cache_sizes(self, plan_cache: int | None) -> dict[str, tuple[int | None, str, int | None]]:
        """host → (stated cache bytes, where it was stated, RAM bytes or None)."""

    @abstractmethod
    def prepare(self, facts: dict | None = None) -> None:
        """Lock the targets for this run (`facts` say who holds them), then
        check them, before anything is written."""

    @abstractmethod
    def check_targets(self, steps: list[Step]) -> None:
        """With the targets locked, before fio writes: nothing else uses
        them and the tests' data fits; raise IofleetError if not."""

    @abstractmethod
    def prepare_data(self, steps: list[Step], mode: str, passes: int, bs: int, work: Path,
                     stop: threading.Event, progress, kept=None) -> Prepared:
        """Write every data file's working set before the first test;
        `progress(done_bytes, total_bytes, elapsed_s, hosts)`. `kept`
        (fleet/targets/kept.py): a host whose kept data is the same is not written."""

    @abstractmethod
    def record_data(self, kept, run_id: int, keep: bool) -> None:
        """The run is over: record in `kept` what each host's data now is
        (`keep`: kept, and prepared whole), or forget it."""

    @abstractmethod
    def specs_by_host(self, step: Step) -> dict[str, TestSpec]:
        """Each host's test of a step (a mixed step: its group's)."""

    @abstractmethod
    def run_test(self, step: Step, work: Path, stop: threading.Event, phase, on_live,
                 steady_now=None) -> Measured:
        """Run one test; `phase(text)`, `on_live(LiveFigures)`, and
        `steady_now(host → rounds)`: the steady-state rule that may end an
        until: steady test early."""

    @abstractmethod
    def hosts_record(self, step: Step) -> dict | None:
        """What a test stores about the hosts that ran it together (the
        run's `fleet` record, its skew added by the study), or None."""

    @abstractmethod
    def explain(self, error: str, steps: list[Step]) -> str:
        """A failed test's error, with what the place knows of its cause."""

    @abstractmethod
    def drop(self, names: list[str]) -> int:
        """Go on without hosts that were lost; return how many are left."""

    @abstractmethod
    def resume_record(self, inventory: Path | None) -> dict:
        """What `run --resume` needs to find this place again."""

    @abstractmethod
    def adopt(self, record: dict) -> None:
        """A resumed run: take over what its first session created (and
        removes at the end), from its resume record."""

    @abstractmethod
    def cleanup(self) -> int:
        """Remove iofleet's data files; return how many files (one host) or
        hosts (a fleet) were cleaned."""

    @abstractmethod
    def release(self) -> None:
        """The run is over: let go of the targets."""

def _stopped_reason(fio: FioRun) -> str:
    return "stopped by the user" if not fio.killed else "stopped and killed (fio did not exit)"


def verdict(fio: FioRun, jobs: list[JobResult], disks: list[DiskUtil], job_errors: list[JobResult], *,
             output: bool = True, parse_error: str | None = None, lost: list[str] = (),
             lost_why: str = "") -> Measured:
    """A test's status and error, by one rule here and on a fleet, where
    `fio` stands for every host's client at once, a host whose output could
    not be read gave no result, and `lost` names the hosts without one.
    `job_errors`: the jobs (warm-up or measured) that reported an error;
    `output`: fio wrote its results."""
    if parse_error:
        return Measured("failed", f"fio's output could not be read: {parse_error}", jobs, disks)
    if lost:
        return Measured("partial" if jobs else "failed", lost_why, jobs, disks, lost=list(lost))
    killed = killed_reason(fio)  # by something other than iofleet (never a fio it stopped)
    if killed:
        return Measured("failed", killed, jobs, disks)
    if fio.stopped:
        return Measured("interrupted", _stopped_reason(fio), jobs, disks)
    # Ended as planned (steady) by the same signal as a stop: fio's exit code is then not 0.
    if fio.returncode != 0 and not fio.ended_early or not output or job_errors:
        line = error_line(fio.stderr, fio.stdout)
        if job_errors and line == NO_MESSAGE:
            line = f"fio job error {job_errors[0].error} ({os.strerror(job_errors[0].error)})"
        return Measured("failed", line, jobs, disks)
    return Measured("ok", None, jobs, disks)


def collect_artifacts(work: Path, jobfiles: dict[str, str], fio: FioRun, logs: str) -> dict[str, bytes]:
    """The files a test keeps beside its figures: its job files as they
    ran (keyed by host name, "" on this host, whose file carries no host
    name), fio's output and messages (on a fleet: its client's, every host
    in it by its address), and the per-second logs in `work` (their names
    end in `logs`)."""
    out = {".".join(p for p in ("job", host, "fio") if p): text.encode() for host, text in jobfiles.items()}
    if fio.final_output:
        out["fio-output.json"] = fio.final_output.encode()
    if fio.stdout or fio.stderr:
        out["fio-messages.txt"] = (fio.stdout + fio.stderr).encode()
    for prefix in (WARMUP_LOG_PREFIX, LOG_PREFIX):
        for f in sorted(work.glob(f"{prefix}_*{logs}")):
            out[f.name] = f.read_bytes()
    return out


# fio needs a moment beyond ramp + runtime to lay out files and write its
# results; past this margin a test is stopped as hung.
TIMEOUT_MARGIN_S = 120
# fio's status documents come this often (seconds): the live figures, and
# the rounds of a local test (fio/status.py).
STATUS_INTERVAL_S = 1
# The machine running iofleet, in a fleet test's metrics (not a host name:
# host names cannot hold parentheses).
CONTROLLER = "(controller)"


def prepare_sizes(specs: list[TestSpec], passes: int) -> tuple[int, int]:
    """(bytes of data prepared, bytes written): a file in several tiers is
    written once per tier."""
    tiers = prepare_tiers(specs)
    prepared = sum(size * (n - (tiers[i + 1][0] if i + 1 < len(tiers) else 0)) for i, (n, size) in enumerate(tiers))
    return prepared, written_bytes(tiers, passes)


def written_bytes(tiers: list[tuple[int, int]], passes: int) -> int:
    return passes * sum(n * size for n, size in tiers)


def test_timeout(spec: TestSpec | MixedStep) -> float:
    return spec.ramp + spec.longest_s + TIMEOUT_MARGIN_S
