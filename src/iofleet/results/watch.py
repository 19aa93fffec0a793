"""The storage's own account around a scenario's faults (its `watch:`), as
a run stores it (its methodology's `scenario.watch`; studies/watch.py
samples it, analysis/watch_recovery.py reads each event's account from
the samples). Each `to_dict` is the exported JSON; `from_dict` reads it
back, old runs' too (records.py)."""

from dataclasses import dataclass, field

from .records import Record


@dataclass
class WatchSample(Record):
    """One run of the watch's command: when its answer came (s into the
    measured part, on fio's clock once stored), how long it took, its exit
    status (None: no answer), its output (stripped, cut) and its state."""

    t_s: float = 0.0
    took_s: float | None = None
    exit: int | None = None
    output: str = ""
    state: str = ""


@dataclass
class StorageAccount(Record):
    """What the storage said of one event (the event's `index`), over its
    span (`at_s` to the next event's start, `until_s`; None: the end):
    how many samples fell in it, its state before, the first other state
    and when, and when it was back to the state before (`back_after_s`:
    from the fault's end, or its start when it has none)."""

    index: int | None = None
    at_s: float = 0.0
    end_s: float | None = None
    until_s: float | None = None
    samples: int = 0
    before: str | None = None
    before_t_s: float | None = None
    changed_s: float | None = None
    changed_to: str | None = None
    back_s: float | None = None
    back_after_s: float | None = None


@dataclass
class WatchRecord(Record):
    """A scenario's watch: its command, where it ran (None: this host),
    how often, its timeout, every sample and each event's account."""

    command: str = ""
    host: str | None = None
    every_s: float = 0.0
    timeout_s: float = 0.0
    samples: list[WatchSample] = field(default_factory=list)
    events: list[StorageAccount] = field(default_factory=list)

    @classmethod
    def _from(cls, d: dict) -> dict:
        lists = {"samples": [WatchSample.from_dict(s) for s in d.get("samples") or []],
                 "events": [StorageAccount.from_dict(a) for a in d.get("events") or []]}
        return super()._from(d) | {k: v for k, v in lists.items() if v}
