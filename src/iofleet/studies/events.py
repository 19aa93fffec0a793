"""What a run tells whoever follows it, and what a study gives back: the
observer events (a test started, live figures, a result, …) and the
outcomes of a run and of its tests. A module of its own, below the run
study, its publisher and its progress model, which all import it."""

from dataclasses import dataclass, field

from ..fleet.fio_link.runner import LiveFigures
from ..plan.expand import MixedStep, TestSpec
from ..results.model import Aggregate


class RunObserver:
    """Progress callbacks; every method is optional. A run's publisher
    (studies.live_state) gets them first, updates the run's one progress
    model, then passes each on to the observers that follow the run."""

    # The run's one progress model (studies.progress.RunProgress) to read, given
    # before run_started: a front door draws it and keeps no model of its own.
    def watch(self, progress) -> None: ...

    def run_started(self, run_id: int, specs: list[TestSpec | MixedStep], estimate_s: float) -> None: ...
    def preparing(self, done_bytes: float | None, total_bytes: int, elapsed_s: float, hosts: dict | None) -> None: ...
    def test_started(self, index: int, spec: TestSpec) -> None: ...
    def test_phase(self, index: int, spec: TestSpec, phase: str) -> None: ...
    def test_live(self, index: int, spec: TestSpec, live: LiveFigures) -> None: ...
    def test_finished(self, index: int, spec: TestSpec, result: "TestOutcome") -> None: ...
    def cleaning(self) -> None: ...  # the tests are over; iofleet's data files are being removed
    def warning(self, text: str) -> None: ...  # a problem with the set-up (a target in RAM), said at the start

    # A front door that holds the study (the web's run manager) makes each of
    # its runs' publishers (studies.live_state), so one page follows a study
    # of several runs; None: the run publishes its own.
    def publisher(self, plan: str, label: str | None, sweep: bool): return None


@dataclass
class TestOutcome:
    __test__ = False
    spec: TestSpec
    status: str  # ok | failed | interrupted | partial
    error: str | None
    aggregate: Aggregate | None
    test_pk: int | None = None
    lost: list[str] = field(default_factory=list)
    # until: steady — the measurement window's figures (analysis.methodology.status_window)
    # and, when the test ended as soon as it was steady, that second.
    window: dict | None = None
    ended_early_s: float | None = None


@dataclass
class RunOutcome:
    run_id: int
    status: str  # complete | failed | interrupted | partial
    tests: list[TestOutcome] = field(default_factory=list)  # run by this session
    tests_planned: int = 0
    cleaned: int = 0  # data files removed (local) or hosts cleaned (fleet)
    not_cleaned: list[str] = field(default_factory=list)  # fleet hosts whose data files are left (lost ones)
    kept: dict[int, str] = field(default_factory=dict)  # a resume: seq → status of the finished tests kept

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    @property
    def tests_ok(self) -> int:
        """Tests of the run stored ok, kept ones included."""
        return sum(t.status == "ok" for t in self.tests) + sum(s == "ok" for s in self.kept.values())


def estimate_seconds(specs: list[TestSpec]) -> float:
    """Planned duration (the longest): warm-up + runtime of every test, plus ~2 s of fio start-up."""
    return float(sum(s.ramp + s.longest_s + 2 for s in specs))
