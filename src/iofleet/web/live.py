"""The run the web UI started: at most one per store, in a thread of the
server (so it survives the browser closing). Its live state is its
publisher's (studies.live_state), which the Run page's event stream, the
status API and /metrics read."""

import fcntl
import os
import threading
import traceback
from pathlib import Path

from ..errors import IofleetError
from ..fleet.inventory import Host
from ..plan.model import Plan
from ..results.store import Store
from ..studies.events import RunObserver
from ..studies.live_state import Publisher, held_runs, read_published
from ..studies.run import run_plan


class RunBusy(IofleetError):
    """A second run was asked for while one is going."""


class _Stored(RunObserver):
    """Lets `start` answer once the run is stored (its id known)."""

    def __init__(self, stored: threading.Event):
        self.stored = stored

    def run_started(self, run_id, specs, estimate_s):
        self.stored.set()


class RunManager:
    """Starts a plan in a thread, one at a time per data directory (a lock
    file, so a second `iofleet serve` on the same store is refused too)."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.lock = threading.Lock()
        self.publisher: Publisher | None = None  # of the run going, or the last one
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
        return [] if self.publisher is None else self.publisher.events_after(last_id)

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
        return None if self.publisher is None else self.publisher.snapshot()

    def start(self, plan: Plan, plan_text: str, hosts: list[Host] | None, label: str | None) -> Publisher:
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
            # Event ids keep growing across this server's runs: a page that reconnects misses nothing.
            self.publisher = Publisher(self.data_dir, _Stored(stored), plan.name, label or plan.label, held=True,
                                       first_id=self.publisher.next_id if self.publisher else 1)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, name="iofleet-web-run", daemon=True,
                                            args=(plan, plan_text, hosts, label, self.publisher, stored))
            self._thread.start()
        stored.wait(timeout=600)  # until the run is stored (or failed to start): its id is known
        return self.publisher

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

    def _run(self, plan, plan_text, hosts, label, publisher: Publisher, stored: threading.Event) -> None:
        status = error = None
        try:
            with Store.open(self.data_dir) as store:
                status = run_plan(plan, plan_text, store, hosts=hosts, label=label, stop=self._stop,
                                  publisher=publisher).status
        except IofleetError as exc:
            status, error = "failed", str(exc).splitlines()[0]
        except Exception as exc:  # a bug: keep the server up, say what happened
            traceback.print_exc()
            status, error = "failed", f"internal error: {exc!r}"
        finally:
            with self.lock:
                self._release_store_lock()
            publisher.close(status, error)  # the run's one `ended` event, with the error the page shows
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
