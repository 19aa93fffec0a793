"""The study the web UI started (a plan, Easy Run, a sweep, a curve or a
scenario: studies.launch): at most one per store, in a thread of the
server (so it survives the browser closing). Each of its runs' live state
is a publisher of the manager's (studies.live_state), event ids following
on from run to run, which the Run page's event stream, the status API and
/metrics read."""

import fcntl
import os
import threading
import traceback
from pathlib import Path

from ..errors import IofleetError
from ..results.store import Store
from ..studies.events import RunObserver
from ..studies.launch import Launch
from ..studies.live_state import Publisher, held_runs, read_published


class RunBusy(IofleetError):
    """A second run was asked for while one is going."""


class _Held(RunObserver):
    """The manager's hold on its study: each run gets the manager's next
    publisher, and `start` answers once the first run is stored (its id known)."""

    def __init__(self, manager: "RunManager", stored: threading.Event):
        self.manager, self.stored = manager, stored

    def publisher(self, plan, label, sweep):
        return self.manager._next_publisher(plan, label, sweep)

    def run_started(self, run_id, specs, estimate_s):
        self.stored.set()


class RunManager:
    """Starts a study in a thread, one at a time per data directory (a lock
    file, so a second `iofleet serve` on the same store is refused too)."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.lock = threading.Lock()
        self.publisher: Publisher | None = None  # of the run going, or the last one
        self.publishers: list[Publisher] = []  # the study's runs', in order
        self.launch: Launch | None = None
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._lock_file = None

    def _published(self) -> dict | None:
        """The live file of a run this server did not start, when it is newer
        than this server's own (the own run wins while it goes)."""
        if self.running:
            return None
        body = read_published(self.data_dir)
        if body is None:
            return None
        own = self.publisher.progress.run_id if self.publisher is not None else None
        theirs = body["status"].get("run_id")
        return body if own is None or (theirs is not None and theirs > own) else None

    def events_after(self, last_id: int) -> list[dict]:
        body = self._published()
        if body is not None:  # its run's snapshots say whose run it is, as status() does
            mark = {"external": True, "pid": body.get("pid")}
            return [e | {"data": e["data"] | mark} if e["type"] in ("run", "ended") else e
                    for e in body["events"] if e["id"] > last_id]
        return [e for p in self.publishers for e in p.events_after(last_id)]

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
        if self.publisher is None:
            return None
        runs = [p.progress.run_id for p in self.publishers if p.progress.run_id is not None]
        return self.publisher.snapshot() | {"study": {"kind": self.launch.study, "about": self.launch.about,
                                                       "runs": runs}}

    def start(self, launch: Launch) -> dict:
        """Start the study; its status once its first run is stored (or it failed before)."""
        with self.lock:
            if self.running:
                live = self.publisher.progress
                going = (f"run {live.run_id} ({live.plan}) is still going" if live.run_id
                         is not None else f"a run of plan {live.plan} is starting")  # not stored yet
                raise RunBusy(f"{going} on this store; stop it or wait for it to end before starting another")
            elsewhere = self.held_elsewhere()
            if elsewhere:
                raise RunBusy(elsewhere)
            self._take_store_lock()
            stored = threading.Event()
            self.launch, self.publishers = launch, []
            first = self._new_publisher(launch.name, launch.label, False)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, name="iofleet-web-run", daemon=True,
                                            args=(launch, stored))
            self._thread.start()
        stored.wait(timeout=600)  # until the first run is stored (or failed to start): its id is known
        return first.snapshot() | {"study": {"kind": launch.study, "about": launch.about}}

    def _new_publisher(self, plan: str, label: str | None, sweep: bool) -> Publisher:
        # Event ids keep growing across this server's runs: a page that reconnects misses nothing.
        self.publisher = Publisher(self.data_dir, None, plan, label, sweep=sweep, held=True,
                                   first_id=self.publisher.next_id if self.publisher else 1)
        self.publishers.append(self.publisher)
        return self.publisher

    def _next_publisher(self, plan: str, label: str | None, sweep: bool) -> Publisher:
        """The publisher of the study's next run: the first run takes the one
        made at start; a later run's closes the run before it, saying the study goes on."""
        with self.lock:
            p = self.publisher
            if p.progress.run_id is None and p.ended_as is None:
                p.progress.plan, p.progress.label, p.progress.sweep = plan, label, sweep
                return p
            p.close(p.ended_as, more=True)
            return self._new_publisher(plan, label, sweep)

    def stop(self) -> bool:
        """Ask the run to stop: fio is stopped on every host, finished tests are kept."""
        with self.lock:
            if not self.running:
                return False
            self._stop.set()
        self.publisher.stopping()
        return True

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, launch: Launch, stored: threading.Event) -> None:
        status = error = None
        try:
            with Store.open(self.data_dir) as store:
                status = launch.go(store, _Held(self, stored), self._stop)
        except IofleetError as exc:
            status, error = "failed", str(exc).splitlines()[0]
        except Exception as exc:  # a bug: keep the server up, say what happened
            traceback.print_exc()
            status, error = "failed", f"internal error: {exc!r}"
        finally:
            with self.lock:
                self._release_store_lock()
                publisher = self.publisher
            # The study's one last `ended` event, with the error the page shows; a run that
            # ended before the study failed keeps its own status.
            publisher.close(publisher.ended_as or status, error)
            stored.set()

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
