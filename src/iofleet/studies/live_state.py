"""A run's live state, owned by one publisher and read by every front
door, as Locust's console and web UI read one `runner.stats`: the run's
progress model (studies.progress) and its recent events. The session
feeds it the run's observer events; the terminal draws its model, the
web's Run page and /metrics read its snapshot and events.

It is also published where a front door in another process can read it:
every run (a CLI `iofleet run`, `saturate`, `easy-run` or the web's own)
writes its progress snapshot and its recent events to <data dir>/live/run-PID.json (one
file a process: runs going at once on one store, on other targets, keep
theirs apart), so the web UI shows a run it did not start: the going one,
else the newest. A file is replaced atomically, at
most about once a second for live figures (at once for a test's start and
end), and holds the writer's pid: whether that process still holds the
run is asked of the store's run lock, read-only."""

import contextlib
import copy
import json
import os
import threading
import time
from pathlib import Path

from ..results.store.locks import RunLocks
from ..results.store.schema import LOCKS_DIR
from .events import RunObserver
from .progress import RunProgress

LIVE_DIR = "live"
EVERY_S = 1.0  # live figures are written at most this often
LIVE_KINDS = ("live", "preparing")  # the many samples of live figures, dropped first
KEEP_LIVE = 600  # the newest live samples kept in the file (test events are all kept)
KEEP_EVENTS = 5000  # events kept for the web's event stream: beyond, the older live samples go


def live_path(data_dir: Path, pid: int | None = None) -> Path:
    """The live file of a process (this one by default)."""
    return Path(data_dir) / LIVE_DIR / f"run-{pid or os.getpid()}.json"


class Publisher(RunObserver):
    """The one owner of a run's live model. Each observer event updates the
    run's RunProgress and is kept as an event {id, type, data} made from the
    model, then goes on to the observers that follow the run (`follow`),
    which read that same model. Thread-safe: the web reads it while its run
    goes in another thread.

    `held`: a front door holds the run (the web's run manager) and says when
    it is over, with the error its page shows (`close`); else the run is over
    when its session knows its status (`ended`). `first_id`: the id of the
    first event (the web's ids keep growing across its runs)."""

    def __init__(self, data_dir: Path, observer: RunObserver | None, plan: str, label: str | None,
                 sweep: bool = False, clock=time.monotonic, *, held: bool = False, first_id: int = 1):
        self.path, self.held = live_path(data_dir), held
        self.progress = RunProgress(plan=plan, label=label, sweep=sweep, clock=clock)
        self.events: list[dict] = []
        self.followers: list[RunObserver] = []
        self.next_id, self._written, self.clock = first_id, 0.0, clock
        self.lock = threading.Lock()
        self.failed = False  # a data directory we cannot write: the run goes on unpublished
        self.ended_as: str | None = None  # the run's status, once its session knows it
        if observer is not None:
            self.follow(observer)

    def follow(self, observer: RunObserver) -> None:
        """`observer` gets the run's events from here on, after the model has them."""
        self.followers.append(observer)
        watch = getattr(observer, "watch", None)  # an observer made before an event existed has none
        if watch is not None:
            watch(self.progress)

    def _tell(self, name: str, *args) -> None:
        for observer in self.followers:
            method = getattr(observer, name, None)
            if method is not None:
                method(*args)

    # ---- what front doors read -------------------------------------------

    def snapshot(self) -> dict:
        with self.lock:
            return self.progress.snapshot()

    def events_after(self, last_id: int) -> list[dict]:
        with self.lock:
            return [e for e in self.events if e["id"] > last_id]

    # ---- the model's changes, kept as events and published ----------------

    def _publish(self, kind: str, change, data, now: bool = True) -> None:
        """Apply `change` to the model and keep the event `data()` makes from
        it; the file is written at once, or for live figures at most every EVERY_S."""
        with self.lock:
            change()
            self._keep(kind, data())
        if now or self.clock() - self._written >= EVERY_S:
            self.write()

    def _keep(self, kind: str, data: dict) -> None:
        self.events.append({"id": self.next_id, "type": kind, "data": data})
        self.next_id += 1
        if len(self.events) > KEEP_EVENTS:  # a long run: its older live samples go, never its test events
            keep = [e for e in self.events[:-KEEP_EVENTS // 2] if e["type"] not in LIVE_KINDS]
            self.events = keep + self.events[-KEEP_EVENTS // 2:]

    def write(self, ended: dict | None = None) -> None:
        """Replace the live file (once the run is stored: before, another
        process has nothing to show). `ended`: the snapshot of a held run
        whose session is over, said ended ahead of its holder (`ended`)."""
        with self.lock:
            if self.failed or self.progress.run_id is None:
                return
            status, events = ended or self.progress.snapshot(), self.events
            lives = [e for e in events if e["type"] in LIVE_KINDS]
            if len(lives) > KEEP_LIVE:  # a long run: the file keeps its newest live samples, all its test events
                old = {e["id"] for e in lives[:-KEEP_LIVE]}
                events = [e for e in events if e["id"] not in old]
            if ended is not None:
                events = [*events, {"id": self.next_id, "type": "ended", "data": ended}]
            body = {"pid": os.getpid(), "written_at": time.time(), "status": status, "events": events}
            try:
                self.path.parent.mkdir(exist_ok=True)
                tmp = self.path.with_name(f".{self.path.name}.tmp")
                tmp.write_text(json.dumps(body))
                os.replace(tmp, self.path)  # a reader sees the old file or the new, never half of one
            except OSError:
                self.failed = True
            self._written = self.clock()

    # ---- the run's observer events ----------------------------------------

    def run_started(self, run_id, specs, estimate_s):
        for path in self.path.parent.glob("run-*.json"):  # the files of runs over: only the newest is shown
            body = _read(path)
            if path != self.path and (body is None or body["status"]["state"] == "ended"):
                path.unlink(missing_ok=True)
        p = self.progress
        self._publish("run", lambda: p.run_started(run_id, specs, estimate_s), p.snapshot)
        self._tell("run_started", run_id, specs, estimate_s)

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        p = self.progress
        self._publish("preparing", lambda: p.preparing(done_bytes, total_bytes, elapsed_s, hosts),
                      lambda: p.preparing_data.to_dict(), now=False)
        self._tell("preparing", done_bytes, total_bytes, elapsed_s, hosts)

    def test_started(self, index, spec):
        p = self.progress
        self._publish("test", lambda: p.test_started(index, spec), lambda: p.test.to_dict())
        self._tell("test_started", index, spec)

    def test_phase(self, index, spec, phase):
        p = self.progress
        self._publish("phase", lambda: p.test_phase(index, spec, phase), lambda: {"index": index, "phase": phase},
                      now=False)
        self._tell("test_phase", index, spec, phase)

    def test_live(self, index, spec, live):
        p = self.progress
        self._publish("live", lambda: p.test_live(index, spec, live), p.live_dict, now=False)
        self._tell("test_live", index, spec, live)

    def test_finished(self, index, spec, result):
        p = self.progress
        self._publish("result", lambda: p.test_finished(index, spec, result), lambda: p.results[-1].to_dict())
        self._tell("test_finished", index, spec, result)

    def cleaning(self):
        p = self.progress
        self._publish("phase", p.cleaning, lambda: {"index": None, "phase": p.phase})
        self._tell("cleaning")

    def warning(self, text):
        self._publish("warning", lambda: None, lambda: {"text": text})
        self._tell("warning", text)

    # ---- the run's end, and what its holder says ---------------------------

    def ended(self, status: str) -> None:
        """The session knows the run's status (said before the run lock is
        let go, so a reader never sees a running run that nobody holds). A
        held run's file says so now; its model ends when its holder closes it."""
        self.ended_as = status
        if not self.held:
            self.close(status)
            return
        with self.lock:
            view = copy.deepcopy(self.progress)
        view.status = status
        view.ended()
        self.write(ended=view.snapshot())

    def close(self, status: str | None, error: str | None = None, more: bool = False) -> None:
        """The run is over: its status (and the error that ended it), one
        `ended` event; `more`: the study it is part of goes on with another run."""
        p = self.progress
        with self.lock:
            p.status, p.error = status, error or p.error
            if p.state != "ended":
                p.ended()
                self._keep("ended", p.snapshot() | ({"more": True} if more else {}))
        self.write()

    def stopping(self) -> None:
        """The holder asked the run to stop."""
        p = self.progress
        with self.lock:
            if p.state == "ended":  # asked as it ended: it is over, not stopping
                return
        self._publish("stopping", p.stopping, lambda: {"run_id": p.run_id})


def held_runs(data_dir: Path) -> dict[int, int]:
    """Run id → pid of every run of the store held by a live process
    (pid 0 when unreadable). Read-only: never claims a lock."""
    locks, held = RunLocks(Path(data_dir)), {}
    folder = Path(data_dir) / LOCKS_DIR
    for path in folder.glob("run-*.lock") if folder.is_dir() else ():
        with contextlib.suppress(ValueError):
            run_id = int(path.stem.removeprefix("run-"))
            pid = locks.holder(run_id)
            if pid is not None:
                held[run_id] = pid
    return held


def read_published(data_dir: Path) -> dict | None:
    """The live file ({pid, written_at, status, events}) of the run going on
    the store (the newest such), else of the newest run, or None (none yet,
    or unreadable)."""
    folder = Path(data_dir) / LIVE_DIR
    bodies = [b for b in map(_read, folder.glob("run-*.json") if folder.is_dir() else ()) if b is not None]
    return max(bodies, key=lambda b: (b["status"].get("state") != "ended", b.get("written_at") or 0), default=None)


def _read(path: Path) -> dict | None:
    """One live file. A run still marked going that no process holds any
    more is shown as ended: its process died (the store's run is stale)."""
    try:
        body = json.loads(path.read_text())
        status = body["status"]
        run_id = status.get("run_id")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if status.get("state") != "ended" and (run_id is None or RunLocks(path.parent.parent).holder(run_id) is None):
        status.update(state="ended", eta_s=None, test_index=None, test_id=None,
                      error=status.get("error") or (f"the process running it (pid {body.get('pid')}) ended early"
                                                    + (f"; `iofleet run --resume {run_id}` finishes it"
                                                       if run_id is not None else "")))
    return body
