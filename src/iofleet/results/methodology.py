"""What a run and each of its tests record of how they were measured
(their `methodology` in the export, docs/methodology.md), typed: a test's
steady-state verdicts, measurement window, caches and working set, early
stop; a run's preparation, cache policy, resumes and the record of the
study that made it (saturate, curve, scenario, a network check). Each `to_dict` is the
exported JSON; `from_dict` reads it back, old runs' too (records.py).

A study's record is registered under its key in the run's methodology
(`study_record`): the study's own module declares it, and the run's
methodology holds and reads whatever is registered, without naming it."""

import math
from dataclasses import dataclass, field

from .export import Figures
from .impact import Impact
from .links import Link
from .records import Record, from_optional
from .watch import WatchRecord


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def why_unjudged(rounds: list[float | None], window: int) -> str:
    """Why no window could be judged: "gaps" when every window has a gap,
    else "no IO" (the gap-free windows all average ≤ 0)."""
    for i in range(len(rounds) - window + 1):
        if all(_finite(v) for v in rounds[i:i + window]):
            return "no IO"
    return "gaps"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# ---- a test's methodology ---------------------------------------------------

@dataclass
class SteadyVerdict(Record):
    """Steady state of one metric of one test (analysis/steady.py judges it).

    `first_round`/`last_round` are 0-based indices into `rounds` of the steady
    window, or of the last window judged when not steady; None when there was
    not enough data to judge any window. `start_s`/`end_s` are the seconds
    from the start of the measured part that window covers. Excursions are in
    percent of the window's average. `rounds` holds None for a round with too
    few samples (a gap)."""

    metric: str
    steady: bool
    reason: str
    round_s: int
    window: int
    rounds: list[float | None] = field(default_factory=list)
    first_round: int | None = None
    last_round: int | None = None
    start_s: float | None = None
    end_s: float | None = None
    average: float | None = None
    data_excursion_pct: float | None = None
    slope_excursion_pct: float | None = None
    data_pct: float = 20.0
    slope_pct: float = 10.0

    def _dict(self) -> dict:
        # JSON-safe: no NaN, gaps are None.
        return {"metric": self.metric, "steady": self.steady, "reason": self.reason, "round_s": self.round_s,
                "window": self.window, "rounds": [v if _finite(v) else None for v in self.rounds],
                "first_round": self.first_round, "last_round": self.last_round, "start_s": self.start_s,
                "end_s": self.end_s, "average": self.average, "data_excursion_pct": self.data_excursion_pct,
                "slope_excursion_pct": self.slope_excursion_pct, "data_pct": self.data_pct,
                "slope_pct": self.slope_pct}

    @classmethod
    def _from(cls, d: dict) -> dict:
        return {"metric": None, "steady": False, "reason": "", "round_s": None, "window": 5} | super()._from(d) | {
            "rounds": [v if _finite(v) else None for v in d.get("rounds", [])]}

    def short(self) -> str:
        """A summary cell: "steady r4–r8" (1-based rounds), "not steady",
        "n/a (3 rounds)", "n/a (no IO)" or "n/a (gaps)"."""
        if self.steady:
            return f"steady r{self.first_round + 1}–r{self.last_round + 1}"
        if self.first_round is not None:
            return "not steady"
        if len(self.rounds) < self.window:
            return f"n/a ({count(len(self.rounds), 'round')})"
        return "n/a (gaps)" if why_unjudged(self.rounds, self.window) == "gaps" else "n/a (no IO)"


@dataclass
class EarlyStop(Record):
    """An `until: steady` test ended as soon as it was steady: when, by which rule."""

    stopped_at_s: float | None = None
    rule: str | None = None


@dataclass
class CacheVerdict(Record):
    """Whether a host's working set fits in the cache in front of the
    storage: a cache test measures that cache, a capacity test the storage
    behind it (kind None: the cache's size is not known)."""

    kind: str | None = None  # cache test | capacity test | None
    working_set_bytes: int | None = None
    cache_bytes: int | None = None
    source: str | None = None


@dataclass
class TestMethodology(Record):
    """How one test was measured and judged. `window` is the measurement
    window's figures (analysis.methodology.status_window: its span, read/
    write/all in export units, CPU); `latency_rounds` the per-round
    percentiles of the fleet and each host (charted, not judged)."""

    __test__ = False  # not a pytest test class, despite its name

    steady: dict[str, SteadyVerdict | None] = field(default_factory=dict)  # iops, lat
    rounds_source: str | None = None  # fio status | fio logs
    until: str | None = None  # time | steady
    early_stop: EarlyStop | None = None
    window: dict | None = None
    latency_rounds: dict | None = None
    prepared: bool | None = None
    cache: dict[str, str] = field(default_factory=dict)  # host → what was done to its caches
    working_set: dict[str, CacheVerdict] = field(default_factory=dict)  # per host
    measured_from_ms: int | None = None  # the first IOPS interval, as the skew windows count it
    fio_steady: dict | None = None  # older runs: fio's own steady-state check per metric
    round_spread_s: float | None = None  # a fleet: the most seconds between hosts closing the same round
    live_note: str | None = None  # a fleet: why some host's status was not known live (no early stop)

    OPTIONAL = ("fio_steady", "round_spread_s", "live_note")

    @classmethod
    def _from(cls, d: dict) -> dict:
        return super()._from(d) | {
            "steady": {k: from_optional(SteadyVerdict, v) for k, v in (d.get("steady") or {}).items()},
            "early_stop": from_optional(EarlyStop, d.get("early_stop")),
            "cache": d.get("cache") or {},
            "working_set": {h: CacheVerdict.from_dict(v) for h, v in (d.get("working_set") or {}).items()}}

    def verdict(self, metric: str = "iops") -> SteadyVerdict | None:
        return self.steady.get(metric)

    def shown_window(self) -> dict | None:
        """The measurement window whose figures the test's row shows: that
        of an `until: steady` test, stored with its read/write/all figures.
        Results stored before those figures existed hold the window's IOPS
        and MB/s only; fixed-time tests show the whole test."""
        window = self.window
        return window if window and "all" in window and self.until == "steady" else None

    def window_figures(self) -> Figures | None:
        """The measurement window's figures in export units, as stored; None without a window."""
        return Figures.of_window(self.window) if self.window else None


# ---- the fleet a test ran on -----------------------------------------------

@dataclass
class HostGroup(Record):
    """A mixed plan's host group in one test: its hosts and its test."""

    hosts: list[str] = field(default_factory=list)
    test: str | None = None


@dataclass
class FleetRecord(Record):
    """The hosts that ran a test together (null for one host), how far apart
    they measured (analysis.skew: start/end spread, overlap) and, in a mixed
    plan, each host group."""

    hosts: list[str] = field(default_factory=list)
    skew: dict | None = None
    groups: dict[str, HostGroup] | None = None

    OPTIONAL = ("groups",)

    @classmethod
    def _from(cls, d: dict) -> dict:
        groups = d.get("groups")
        return super()._from(d) | {
            "groups": None if groups is None else {g: HostGroup.from_dict(v) for g, v in groups.items()}}


# ---- a run's methodology ---------------------------------------------------

@dataclass
class PrepareRecord(Record):
    """What preparation wrote before the tests (fleet.place.Prepared)."""

    mode: str | None = None
    passes: int | None = None
    bs: int | None = None
    working_set_per_host: dict[str, int] = field(default_factory=dict)
    written_per_host: dict[str, int] = field(default_factory=dict)
    seconds: float | None = None
    reused: dict[str, int] | None = None  # host → run whose kept data it used
    extended: dict[str, int] | None = None  # host → run whose kept data it extended

    OPTIONAL = ("reused", "extended")

    def _dict(self) -> dict:
        return {"mode": self.mode, "passes": self.passes, "bs": self.bs,
                "working_set_per_host": self.working_set_per_host, "written_per_host": self.written_per_host,
                "seconds": self.seconds, "reused": self.reused or None, "extended": self.extended or None}


@dataclass
class ResumeRecord(Record):
    """One `run --resume`: when, which tests ran, which stored results they
    replaced, what preparation wrote again."""

    at: str | None = None
    tests: list[str] = field(default_factory=list)
    prepare: PrepareRecord | None = None
    replaced: dict[str, str] = field(default_factory=dict)  # test id → the status it was stored with

    @classmethod
    def _from(cls, d: dict) -> dict:
        return super()._from(d) | {"prepare": from_optional(PrepareRecord, d.get("prepare"))}


# A study's record by its key in a run's methodology, in the export's order;
# each study's record registers itself (study_record).
STUDY_RECORDS: dict[str, type[Record]] = {}


def study_record(key: str):
    """Register a study's record class under its key in a run's methodology."""
    def register(cls: type[Record]) -> type[Record]:
        STUDY_RECORDS[key] = cls
        return cls
    return register


@study_record("saturate")
@dataclass
class SaturateRecord(Record):
    """A saturate sweep's settings (studies.saturate.Sweep) and, once it
    ended, why each row and the sweep stopped."""

    bs: int | None = None
    read_pct: int | None = None
    random_pct: int | None = None
    min_gain_pct: float | None = None
    slo: str | None = None  # its text, e.g. p99<=2ms
    bisect: int | None = None
    repeats: int | None = None
    noise_pct: float | None = None
    cell: dict | None = None  # until: time (runtime, ramp) or steady (round, max_runtime, ramp)
    stopped: list[str] | None = None
    kept_for_next_run: bool | None = None

    OPTIONAL = ("stopped", "kept_for_next_run")


@study_record("curve")
@dataclass
class CurveRecord(Record):
    """A latency-vs-load run's maximum (where it came from) and how its loads were chosen."""

    max_iops: float | None = None
    jobs: int | None = None
    iodepth: int | None = None
    source: str | None = None
    rule: str | None = None
    io: dict = field(default_factory=dict)  # bs, read_pct, random_pct
    reached_share: float | None = None


@study_record("scenario")
@dataclass
class ScenarioRecord(Record):
    """A scenario run: its file, each event as applied and undone (or not),
    hosts lost or downed, the impact measured around each event, and the
    storage's own account when the scenario has a `watch:` (studies/watch.py:
    command, host, every_s, timeout_s, samples and each event's `events`)."""

    name: str | None = None
    source: str | None = None
    file: str | None = None
    events: list[dict] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    downed: list[str] = field(default_factory=list)
    clock_shift_s: float | None = None
    impact: Impact | None = None
    watch: WatchRecord | None = None

    OPTIONAL = ("watch",)

    @classmethod
    def _from(cls, d: dict) -> dict:
        return super()._from(d) | {"impact": from_optional(Impact, d.get("impact")),
                                   "watch": from_optional(WatchRecord, d.get("watch"))}


@dataclass
class NetworkRecord(Record):
    """A network check (`iofleet hosts network`): every link measured, from
    one host to another, and the problems named. In a fleet run's
    methodology: the last check of its hosts before it (`run`, `at`), which
    its diagnostics use to explain a host that lags."""

    pairs: str | None = None  # ring | all: which pairs had their bandwidth measured
    hosts: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)  # each link measured (results/links.py links_of)
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    run: int | None = None  # the check's run, in a fleet run's record
    at: str | None = None  # when the check started (ISO-8601 UTC), in a fleet run's record

    OPTIONAL = ("run", "at")

    @classmethod
    def _from(cls, d: dict) -> dict:
        links = d.get("links")
        return super()._from(d) | ({"links": [Link.from_dict(k) for k in links]} if links else {})


@dataclass
class RunMethodology(Record):
    """What a run did before and around its tests: preparation, cache
    policy, the latency percentile it reports, resumes, and the record of
    the study that made it: `records`, by its key (STUDY_RECORDS), read and
    given as an attribute of that name (methodology.saturate), written in
    the export after the percentile."""

    prepare: PrepareRecord | None = None
    clear_cache: bool | None = None
    measure: str | None = None
    percentile: str | None = None
    records: dict[str, Record] = field(default_factory=dict)  # the study's, by key
    resumes: list[ResumeRecord] | None = None
    network: NetworkRecord | None = None  # a network check's links; a fleet run's last check before it
    probe: dict | None = None  # Easy Run: its probe's run, IO (bs, read_pct, random_pct) and cells

    def __getattr__(self, name: str):
        if name in STUDY_RECORDS:
            return self.__dict__.get("records", {}).get(name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value) -> None:
        if name in STUDY_RECORDS:
            self.records[name] = value
        else:
            super().__setattr__(name, value)

    @property
    def OPTIONAL(self) -> tuple[str, ...]:  # noqa: N802 (Record's name)
        return (*STUDY_RECORDS, "resumes", "network", "probe")

    @classmethod
    def _known(cls) -> tuple[str, ...]:
        own = [name for name in super()._known() if name != "records"]
        at = own.index("percentile") + 1
        return (*own[:at], *STUDY_RECORDS, *own[at:])

    @classmethod
    def _from(cls, d: dict) -> dict:
        resumes = d.get("resumes")
        return super()._from(d) | {
            "prepare": from_optional(PrepareRecord, d.get("prepare")),
            **{key: from_optional(record, d.get(key)) for key, record in STUDY_RECORDS.items()},
            "network": from_optional(NetworkRecord, d.get("network")),
            "resumes": None if resumes is None else [ResumeRecord.from_dict(r) for r in resumes]}

    @property
    def study(self) -> str | None:
        """The key of the study's record it holds (None: a plain run)."""
        return next((key for key in STUDY_RECORDS if self.records.get(key)), None)

    @property
    def own_network(self) -> NetworkRecord | None:
        """The network check this run is (a fleet run's record of its last check is not)."""
        return self.network if self.network and self.network.run is None else None

    @property
    def tail(self) -> str:
        """The plan's `percentile`, the tail the summary shows."""
        return self.percentile or "p99"


_fields_init = RunMethodology.__init__


def _init(self, *args, records: dict | None = None, **given) -> None:
    """RunMethodology(saturate=record): a study's record given by its key."""
    studied = {key: given.pop(key) for key in list(given) if key in STUDY_RECORDS}
    _fields_init(self, *args, records={**(records or {}), **studied}, **given)


RunMethodology.__init__ = _init
