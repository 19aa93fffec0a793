"""A run's live state, published where any front door can read it: every
run (a CLI `iofleet run`, `saturate`, `easy-run` or the web's own) writes its
progress snapshot and its recent events to <data dir>/live/run-PID.json (one
file a process: runs going at once on one store, on other targets, keep
theirs apart), so the web UI shows a run it did not start: the going one,
else the newest. A file is replaced atomically, at
most about once a second for live figures (at once for a test's start and
end), and holds the writer's pid: whether that process still holds the
run is asked of the store's run lock, read-only."""

import contextlib
import json
import os
import time
from pathlib import Path

from ..results.store.locks import RunLocks
from ..results.store.schema import LOCKS_DIR
from .progress import RunProgress
from .run import RunObserver

LIVE_DIR = "live"
EVERY_S = 1.0  # live figures are written at most this often
KEEP_LIVE = 600  # the newest live samples kept in the file (test events are all kept)
LIVE_KINDS = ("live", "preparing")


def live_path(data_dir: Path, pid: int | None = None) -> Path:
    """The live file of a process (this one by default)."""
    return Path(data_dir) / LIVE_DIR / f"run-{pid or os.getpid()}.json"


class Publisher(RunObserver):
    """Forwards every event to the run's own observer and keeps a
    RunProgress of its own, written to the live file."""

    def __init__(self, data_dir: Path, inner: RunObserver | None, plan: str, label: str | None,
                 sweep: bool = False, clock=time.monotonic):
        self.path, self.inner = live_path(data_dir), inner or RunObserver()
        self.live = RunProgress(plan=plan, label=label, sweep=sweep, clock=clock)
        self.events: list[dict] = []
        self._next_id, self._written, self.clock = 1, 0.0, clock
        self.failed = False  # a data directory we cannot write: the run goes on unpublished

    def _emit(self, kind: str, data: dict, now: bool = True) -> None:
        self.events.append({"id": self._next_id, "type": kind, "data": data})
        self._next_id += 1
        if now or self.clock() - self._written >= EVERY_S:
            self.write()

    def write(self) -> None:
        if self.failed:
            return
        lives = [e for e in self.events if e["type"] in LIVE_KINDS]
        if len(lives) > KEEP_LIVE:  # a long run: its oldest live samples go, never its test events
            old = {e["id"] for e in lives[:-KEEP_LIVE]}
            self.events = [e for e in self.events if e["id"] not in old]
        body = {"pid": os.getpid(), "written_at": time.time(), "status": self.live.snapshot(), "events": self.events}
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
        self.live.run_started(run_id, specs, estimate_s)
        self._emit("run", self.live.snapshot())
        self.inner.run_started(run_id, specs, estimate_s)

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        self.live.preparing(done_bytes, total_bytes, elapsed_s, hosts)
        self._emit("preparing", self.live.preparing_data.to_dict(), now=False)
        self.inner.preparing(done_bytes, total_bytes, elapsed_s, hosts)

    def test_started(self, index, spec):
        self.live.test_started(index, spec)
        self._emit("test", self.live.test.to_dict())
        self.inner.test_started(index, spec)

    def test_phase(self, index, spec, phase):
        self.live.test_phase(index, spec, phase)
        self._emit("phase", {"index": index, "phase": phase}, now=False)
        self.inner.test_phase(index, spec, phase)

    def test_live(self, index, spec, live):
        self.live.test_live(index, spec, live)
        self._emit("live", self.live.live_dict(), now=False)
        self.inner.test_live(index, spec, live)

    def test_finished(self, index, spec, result):
        self.live.test_finished(index, spec, result)
        self._emit("result", self.live.results[-1].to_dict())
        self.inner.test_finished(index, spec, result)

    def cleaning(self):
        self.live.cleaning()
        self._emit("phase", {"index": None, "phase": self.live.phase})
        self.inner.cleaning()

    def warning(self, text):
        self._emit("warning", {"text": text})
        forward = getattr(self.inner, "warning", None)  # an observer made before warnings existed has none
        if forward is not None:
            forward(text)

    def ended(self, status: str) -> None:
        """The run's status is known (written before the run lock is let go,
        so a reader never sees a running run that nobody holds)."""
        self.live.status = status
        if self.live.state != "ended":
            self.live.ended()
            self._emit("ended", self.live.snapshot())


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
