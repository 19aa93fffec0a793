"""One progress model of a run, as plain data: the run's state and phase,
the test running now (i of N), elapsed and ETA of the test and the run,
each host's live figures and the finished tests' headline figures.

It is kept up to date by the run's observer events (it is a RunObserver),
one per run, held by the run's publisher (studies.live_state); the
terminal (cli.progress), the web (web.live) and /metrics render it and
compute nothing of their own, as Locust's console and web UI render one
stats object. Times come from `clock` (monotonic seconds), so a test can feed it
events at chosen instants."""

import time
from dataclasses import dataclass, field
from typing import Callable

from ..fleet.metrics.records import HostSample
from ..fleet.fio_link.runner import LiveFigures, RoundFigures
from ..units import to_ms
from .events import RunObserver, TestOutcome, estimate_seconds


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


@dataclass
class HostFigures:
    """One host's latest live figures; None where the source gives none.
    IO figures are fio's own (this host's status; a fleet host's last
    round, decoded as its server sends it), CPU, disk and network a fleet
    host's node_exporter's (a local run knows no host CPU)."""

    iops: float | None = None
    mb_s: float | None = None
    lat_ms: float | None = None
    p99_ms: float | None = None
    cpu_pct: float | None = None
    disk_busy_pct: float | None = None
    disk_iops: float | None = None  # node_exporter's: the host's disks, iofleet's IO or not
    net_mb_s: float | None = None  # received + sent

    @classmethod
    def of_fleet_host(cls, s: HostSample | None, r: RoundFigures | None) -> "HostFigures | None":
        """A fleet host's figures: fio's of its last round, node_exporter's
        CPU, disk and network; None when neither is known yet."""
        if s is None and r is None:
            return None
        out = cls()
        if r is not None:
            out.iops, out.mb_s = r.iops, r.bw_bytes_s / 1e6
            out.lat_ms, out.p99_ms = to_ms(r.lat_mean_ns, "ns"), to_ms(r.p99_ns, "ns")
        if s is not None:
            out.cpu_pct, out.disk_busy_pct, out.disk_iops = s.cpu_pct, s.disk_busy_pct, s.disk_iops
            out.net_mb_s = None if s.net_rx_bytes_s is None else (s.net_rx_bytes_s + (s.net_tx_bytes_s or 0)) / 1e6
        return out

    def to_dict(self) -> dict:
        return {"iops": _round(self.iops, 1), "mb_s": _round(self.mb_s, 3), "lat_ms": _round(self.lat_ms, 4),
                "p99_ms": _round(self.p99_ms, 4), "cpu_pct": self.cpu_pct, "disk_busy_pct": self.disk_busy_pct,
                "disk_iops": _round(self.disk_iops, 1), "net_mb_s": _round(self.net_mb_s, 3)}


def _hosts_of(samples: dict[str, HostSample | None] | None,
              rounds: dict[str, RoundFigures | None] | None = None) -> dict[str, HostFigures | None]:
    """A fleet's hosts; None for a host with neither a round nor a metrics endpoint (yet)."""
    names = dict.fromkeys([*(samples or {}), *(rounds or {})])
    return {n: HostFigures.of_fleet_host((samples or {}).get(n), (rounds or {}).get(n)) for n in names}


@dataclass
class Totals:
    """The run's latest live totals: fio's own rates on the local host, the
    sum of the hosts' disk IOPS (node_exporter) on a fleet."""

    source: str  # "fio" | "node_exporter"
    iops: float | None = None
    mb_s: float | None = None
    lat_ms: float | None = None

    def to_dict(self) -> dict:
        return {"iops": _round(self.iops, 1), "mb_s": _round(self.mb_s, 3), "lat_ms": _round(self.lat_ms, 4),
                "source": self.source}


@dataclass
class Preparing:
    """Writing the data files before the first test."""

    done_bytes: float | None  # None on a fleet: fio's client says nothing until the end
    total_bytes: int
    elapsed_s: float
    hosts: dict[str, HostFigures | None] = field(default_factory=dict)  # a fleet's, from node_exporter

    @property
    def mb_s(self) -> float | None:
        return None if self.done_bytes is None else self.done_bytes / max(self.elapsed_s, 0.1) / 1e6

    @property
    def eta_s(self) -> float | None:
        """At the rate so far; unknown before the first byte (and on a fleet)."""
        if not self.done_bytes:
            return None
        return max(0.0, self.total_bytes - self.done_bytes) / (self.mb_s * 1e6)

    def to_dict(self) -> dict:
        eta = self.eta_s
        return {"done_bytes": self.done_bytes, "total_bytes": self.total_bytes, "elapsed_s": round(self.elapsed_s, 1),
                "mb_s": _round(self.mb_s, 3), "eta_s": None if eta is None else round(eta, 1)}


@dataclass
class CurrentTest:
    """The test running now (or the last one, once `ended` is set)."""

    index: int
    id: str
    ramp_s: float
    planned_s: float  # warm-up + the longest the measured part may last
    started: float  # clock at test_started
    fio_s: float | None = None  # seconds since fio started, at the latest live figures
    ended: float | None = None

    def elapsed_s(self, now: float) -> float:
        return (now if self.ended is None else self.ended) - self.started

    def done_s(self, now: float) -> float:
        """Planned seconds of the test behind us."""
        return min(self.elapsed_s(now), self.planned_s)

    def eta_s(self, now: float) -> float:
        return self.planned_s - self.done_s(now)

    def to_dict(self) -> dict:
        return {"index": self.index, "id": self.id, "planned_s": self.planned_s}


@dataclass
class FinishedTest:
    """A finished test's headline figures: its measurement window's when
    the test ran until steady (as the summary's row), else the whole test's."""

    index: int
    id: str
    status: str  # ok | failed | interrupted | partial
    error: str | None
    longest_s: float
    iops: float | None = None
    mb_s: float | None = None
    p99_ms: float | None = None
    window: dict | None = None  # {start_s, end_s, steady} of an until: steady test
    ended_early_s: float | None = None

    @classmethod
    def of(cls, index: int, spec, result: TestOutcome) -> "FinishedTest":
        row = cls(index, spec.id, result.status, result.error, spec.longest_s, ended_early_s=result.ended_early_s)
        a = result.aggregate.all if result.aggregate else None
        if a is not None:
            row.iops, row.mb_s, row.p99_ms = a.iops, a.bw_bytes_s / 1e6, to_ms(a.percentiles_ns.get("p99"), "ns")
        w = result.window
        if a is not None and w and "all" in w:
            row.iops, row.mb_s = w["all"]["iops"], w["all"]["bw_mb_s"]
            row.p99_ms = to_ms(w["all"]["lat_p99_us"], "us")
            row.window = {"start_s": w["start_s"], "end_s": w["end_s"], "steady": w["steady"]}
        return row

    def to_dict(self) -> dict:
        return {"index": self.index, "id": self.id, "status": self.status, "error": self.error,
                "iops": _round(self.iops, 1), "mb_s": _round(self.mb_s, 3), "p99_ms": _round(self.p99_ms, 4)}


@dataclass
class RunProgress(RunObserver):
    """The progress of one run, updated by its observer events; `stopping`
    and `ended` come from whoever holds the run (through its publisher)."""

    plan: str = ""
    label: str | None = None
    sweep: bool = False  # a sweep (saturate) stops when it has its answer: its planned tests are an upper bound
    clock: Callable[[], float] = time.monotonic
    run_id: int | None = None
    state: str = "starting"  # starting | preparing | running | stopping | ended
    status: str | None = None  # the stored run's status once ended: complete | failed | interrupted | partial
    error: str | None = None
    phase: str = ""  # what the run is doing now, in words: preparing data, warm-up, measuring, …
    tests_planned: int = 0
    tests_done: int = 0
    estimate_s: float = 0.0  # planned seconds of the whole run
    estimate_is_bound: bool = False  # a sweep, or tests that may end early (until: steady): at most that long
    done_s: float = 0.0  # planned seconds of the tests already run
    started: float | None = None
    ended_at: float | None = None
    preparing_data: Preparing | None = None
    test: CurrentTest | None = None
    hosts: dict[str, HostFigures | None] = field(default_factory=dict)  # of the test running now
    totals: Totals | None = None
    results: list[FinishedTest] = field(default_factory=list)

    def __post_init__(self):
        if self.started is None:
            self.started = self.clock()

    # ---- the run's observer events -------------------------------------

    def run_started(self, run_id, specs, estimate_s):
        self.run_id, self.tests_planned, self.estimate_s = run_id, len(specs), estimate_s
        self.estimate_is_bound = self.sweep or any(s.longest_s != s.runtime for s in specs)
        self.state = "running"

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        self.state, self.phase = "preparing", "preparing data"
        self.preparing_data = Preparing(done_bytes, total_bytes, elapsed_s, _hosts_of(hosts))

    def test_started(self, index, spec):
        self.state, self.phase = "running", "starting"
        self.test = CurrentTest(index, spec.id, spec.ramp, spec.ramp + spec.longest_s, self.clock())
        self.hosts, self.totals = {}, None

    def test_phase(self, index, spec, phase):
        self.phase = phase

    def test_live(self, index, spec, live: LiveFigures):
        if self.test is not None:
            self.test.fio_s = live.elapsed_s
        self.phase = "warm-up" if live.elapsed_s < spec.ramp else "measuring"
        if live.hosts is not None or live.rounds is not None:  # a fleet
            self.hosts = _hosts_of(live.hosts, live.rounds)
            if live.iops is not None:  # the fleet's last round every host has: fio's figures
                self.totals = Totals("fio", iops=live.iops, mb_s=live.bw_bytes_s / 1e6,
                                     lat_ms=to_ms(live.lat_mean_ns, "ns"))
            else:  # before the first round, or a fio whose status is not decoded: the disks' IOPS
                known = [h.disk_iops for h in self.hosts.values() if h and h.disk_iops is not None]
                self.totals = Totals("node_exporter", iops=sum(known) if known else None)
        else:
            mb_s = None if live.bw_bytes_s is None else live.bw_bytes_s / 1e6
            lat_ms = to_ms(live.lat_mean_ns, "ns")
            self.totals = Totals("fio", iops=live.iops, mb_s=mb_s, lat_ms=lat_ms)
            self.hosts = {"local": HostFigures(iops=live.iops, mb_s=mb_s, lat_ms=lat_ms)}

    def test_finished(self, index, spec, result: TestOutcome):
        self.results.append(FinishedTest.of(index, spec, result))
        self.tests_done += 1
        self.done_s += estimate_seconds([spec])  # as the run's estimate counts it
        if self.test is not None:
            self.test.ended = self.clock()

    def cleaning(self):
        """The tests are over; iofleet's data files are being removed."""
        self.phase = "removing data files"

    # ---- from whoever holds the run --------------------------------------

    def stopping(self):
        self.state = "stopping"

    def ended(self):
        self.state, self.ended_at = "ended", self.clock()
        if self.test is not None and self.test.ended is None:
            self.test.ended = self.ended_at

    # ---- figures at an instant -----------------------------------------

    @property
    def running_test(self) -> CurrentTest | None:
        return self.test if self.test is not None and self.test.ended is None else None

    def elapsed_s(self, now: float | None = None) -> float:
        if self.ended_at is not None:
            return self.ended_at - self.started
        return (self.clock() if now is None else now) - self.started

    def run_done_s(self, now: float | None = None) -> float:
        """Planned seconds of the run behind us: finished tests and the part of this one."""
        now = self.clock() if now is None else now
        test = self.running_test
        return self.done_s + (test.done_s(now) if test else 0.0)

    def eta_s(self, now: float | None = None) -> float | None:
        """Planned seconds left (the longest; None once the run has ended)."""
        if self.state == "ended":
            return None
        return max(0.0, self.estimate_s - self.run_done_s(now))

    def snapshot(self, now: float | None = None) -> dict:
        """The whole state as JSON-ready data (the web's status)."""
        now = self.clock() if now is None else now
        test, eta = self.running_test, self.eta_s(now)
        return {
            "run_id": self.run_id, "plan": self.plan, "label": self.label, "state": self.state,
            "status": self.status, "error": self.error, "tests_planned": self.tests_planned,
            "tests_done": self.tests_done, "test_index": test.index if test else None,
            "test_id": test.id if test else None, "phase": self.phase, "elapsed_s": round(self.elapsed_s(now), 1),
            "eta_s": None if eta is None else round(eta, 1), "estimate_s": round(self.estimate_s, 1),
            "hosts": self.hosts_dict(), "fleet": self.totals.to_dict() if self.totals else {},
            "results": [r.to_dict() for r in self.results],
        }

    def hosts_dict(self) -> dict:
        return {name: None if h is None else h.to_dict() for name, h in self.hosts.items()}

    def live_dict(self, now: float | None = None) -> dict:
        """The latest live figures of the test running now."""
        now = self.clock() if now is None else now
        test, eta = self.test, self.eta_s(now)
        return {"index": test.index, "t": round(test.fio_s or 0.0, 1), "run_t": round(self.elapsed_s(now), 1),
                "test_id": test.id, "phase": self.phase, "hosts": self.hosts_dict(),
                "fleet": self.totals.to_dict() if self.totals else {}, "eta_s": None if eta is None else round(eta, 1)}
