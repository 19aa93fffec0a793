"""The run the web UI started: at most one per store, in a thread of the
server (so it survives the browser closing), with its live state kept as
plain data for the Run page's event stream, the status API and /metrics."""

import fcntl
import os
import threading
import traceback
from pathlib import Path

from ..errors import IofleetError
from ..fleet.inventory import Host
from ..plan.model import Plan
from ..results.store import Store
from ..studies.live_state import held_runs, read_published
from ..studies.progress import RunProgress
from ..studies.run import RunObserver, TestOutcome, run_plan

MAX_EVENTS = 5000  # a long run's older live samples are dropped, never its test events
LIVE_KINDS = ("live", "preparing")


class RunBusy(IofleetError):
    """A second run was asked for while one is going."""


class WebObserver(RunObserver):
    """Feeds each event to the run's progress model (under the manager's
    lock: the pages read it from other threads) and appends one event per
    change, made from the model."""

    def __init__(self, manager: "RunManager", live: RunProgress):
        self.manager, self.live = manager, live

    def run_started(self, run_id, specs, estimate_s):
        with self.manager.lock:
            self.live.run_started(run_id, specs, estimate_s)
        self.manager.emit("run", self.manager.status())

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        with self.manager.lock:
            self.live.preparing(done_bytes, total_bytes, elapsed_s, hosts)
        self.manager.emit("preparing", self.live.preparing_data.to_dict())

    def test_started(self, index, spec):
        with self.manager.lock:
            self.live.test_started(index, spec)
        self.manager.emit("test", self.live.test.to_dict())

    def test_phase(self, index, spec, phase):
        with self.manager.lock:
            self.live.test_phase(index, spec, phase)
        self.manager.emit("phase", {"index": index, "phase": phase})

    def test_live(self, index, spec, live):
        with self.manager.lock:
            self.live.test_live(index, spec, live)
            data = self.live.live_dict()
        self.manager.emit("live", data)

    def test_finished(self, index, spec, result: TestOutcome):
        with self.manager.lock:
            self.live.test_finished(index, spec, result)
        self.manager.emit("result", self.live.results[-1].to_dict())

    def cleaning(self):
        with self.manager.lock:
            self.live.cleaning()
        self.manager.emit("phase", {"index": None, "phase": self.live.phase})


class RunManager:
    """Starts a plan in a thread, one at a time per data directory (a lock
    file, so a second `iofleet serve` on the same store is refused too)."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.lock = threading.Lock()
        self.live: RunProgress | None = None
        self.events: list[dict] = []  # {id, type, data}; ids keep growing across runs
        self._next_id = 1
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._lock_file = None

    def emit(self, kind: str, data: dict) -> None:
        with self.lock:
            self.events.append({"id": self._next_id, "type": kind, "data": data})
            self._next_id += 1
            if len(self.events) > MAX_EVENTS:
                keep = [e for e in self.events[:-MAX_EVENTS // 2] if e["type"] not in LIVE_KINDS]
                self.events = keep + self.events[-MAX_EVENTS // 2:]

    def _published(self) -> dict | None:
        """The live file of a run this server did not start, when it is newer
        than this server's own (the own run wins while it goes)."""
        if self.running:
            return None
        body = read_published(self.data_dir)
        if body is None:
            return None
        own = self.live.run_id if self.live is not None else None
        theirs = body["status"].get("run_id")
        return body if own is None or (theirs is not None and theirs > own) else None

    def events_after(self, last_id: int) -> list[dict]:
        body = self._published()
        if body is not None:  # its run's snapshots say whose run it is, as status() does
            mark = {"external": True, "pid": body.get("pid")}
            return [e | {"data": e["data"] | mark} if e["type"] in ("run", "ended") else e
                    for e in body["events"] if e["id"] > last_id]
        with self.lock:
            return [e for e in self.events if e["id"] > last_id]

    @property
    def running(self) -> bool:
        """This server's own run is going."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def going(self) -> bool:
        """A run is going on this store, this server's or another process's."""
        if self.running:
            return True
        body = self._published()
        return body is not None and body["status"]["state"] != "ended"

    def held_elsewhere(self) -> str | None:
        """Why Start cannot start: another process holds a run of this store
        (its run lock; read, never claimed), or None."""
        held = {run: pid for run, pid in held_runs(self.data_dir).items() if pid != os.getpid()}
        if not held:
            return None
        run, pid = max(held.items())
        body = read_published(self.data_dir)
        plan = body["status"].get("plan") if body and body["status"].get("run_id") == run else None
        return (f"run {run}{f' ({plan})' if plan else ''} is running in another iofleet process"
                f"{f' (pid {pid})' if pid else ''}: Start is possible once it has ended")

    def status(self) -> dict | None:
        body = self._published()
        if body is not None:
            return body["status"] | {"external": True, "pid": body.get("pid")}
        with self.lock:
            return None if self.live is None else self.live.snapshot()

    def start(self, plan: Plan, plan_text: str, hosts: list[Host] | None, label: str | None) -> RunProgress:
        with self.lock:
            if self.running:
                going = (f"run {self.live.run_id} ({self.live.plan}) is still going" if self.live.run_id
                         is not None else f"a run of plan {self.live.plan} is starting")  # not stored yet
                raise RunBusy(f"{going} on this store; stop it or wait for it to end before starting another")
            elsewhere = self.held_elsewhere()
            if elsewhere:
                raise RunBusy(elsewhere)
            self._take_store_lock()
            self.live = RunProgress(plan=plan.name, label=label or plan.label)
            self.events = []
            self._stop = threading.Event()
            started = threading.Event()
            self._thread = threading.Thread(target=self._run, name="iofleet-web-run", daemon=True,
                                            args=(plan, plan_text, hosts, label, started))
            self._thread.start()
        started.wait(timeout=600)  # until the run is stored (or failed to start): its id is known
        return self.live

    def stop(self) -> bool:
        """Ask the run to stop: fio is stopped on every host, finished tests are kept."""
        with self.lock:
            if not self.running:
                return False
            self._stop.set()
            self.live.stopping()
        self.emit("stopping", {"run_id": self.live.run_id})
        return True

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, plan, plan_text, hosts, label, started: threading.Event) -> None:
        live = self.live

        class Starting(WebObserver):
            def run_started(self, run_id, specs, estimate_s):
                super().run_started(run_id, specs, estimate_s)
                started.set()

        try:
            with Store.open(self.data_dir) as store:
                outcome = run_plan(plan, plan_text, store, hosts=hosts, label=label,
                                   observer=Starting(self, live), stop=self._stop)
            live.status = outcome.status
        except IofleetError as exc:
            live.status, live.error = "failed", str(exc).splitlines()[0]
        except Exception as exc:  # a bug: keep the server up, say what happened
            traceback.print_exc()
            live.status, live.error = "failed", f"internal error: {exc!r}"
        finally:
            with self.lock:
                live.ended()
                self._release_store_lock()
            self.emit("ended", live.snapshot())
            started.set()

    def _take_store_lock(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        f = open(self.data_dir / "web-run.lock", "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise RunBusy(f"another iofleet server is running a test on {self.data_dir}; "
                          f"one run at a time per results store") from None
        self._lock_file = f

    def _release_store_lock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None
