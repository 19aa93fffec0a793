"""The run the web UI started: at most one per store, in a thread of the
server (so it survives the browser closing), with its live state kept as
plain data for the Run page's event stream, the status API and /metrics."""

import fcntl
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IofleetError
from ..fleet.inventory import Host
from ..plan.model import Plan
from ..results.store import Store
from ..studies.run import RunObserver, TestOutcome, run_plan

MAX_EVENTS = 5000  # a long run's older live samples are dropped, never its test events
LIVE_KINDS = ("live", "preparing")


class RunBusy(IofleetError):
    """A second run was asked for while one is going."""


@dataclass
class LiveRun:
    """What the page shows of a run in progress (and of the last one, once ended)."""

    run_id: int | None = None
    plan_name: str = ""
    label: str | None = None
    state: str = "starting"  # starting | preparing | running | stopping | ended
    status: str | None = None  # the stored run's status once ended: complete | failed | interrupted | partial
    error: str | None = None
    tests_planned: int = 0
    tests_done: int = 0
    test_index: int | None = None
    test_id: str | None = None
    phase: str = ""
    estimate_s: float = 0.0
    done_s: float = 0.0  # planned seconds of the tests already run
    test_s: float = 0.0  # planned seconds of the current test
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    test_started: float = field(default_factory=time.monotonic)
    hosts: dict = field(default_factory=dict)  # host → latest {iops, mb_s, lat_ms, cpu_pct}
    fleet: dict = field(default_factory=dict)  # the run's latest totals {iops, mb_s, lat_ms}
    results: list = field(default_factory=list)  # finished tests: {index, id, status, iops, mb_s, p99_ms, error}

    def snapshot(self) -> dict:
        now = time.monotonic()
        in_test = min(now - self.test_started, self.test_s) if self.test_index is not None else 0.0
        elapsed = (self.ended or now) - self.started
        left = None if self.state == "ended" else max(0.0, self.estimate_s - self.done_s - in_test)
        return {
            "run_id": self.run_id, "plan": self.plan_name, "label": self.label, "state": self.state,
            "status": self.status, "error": self.error, "tests_planned": self.tests_planned,
            "tests_done": self.tests_done, "test_index": self.test_index, "test_id": self.test_id,
            "phase": self.phase, "elapsed_s": round(elapsed, 1), "eta_s": None if left is None else round(left, 1),
            "estimate_s": round(self.estimate_s, 1), "hosts": self.hosts, "fleet": self.fleet,
            "results": self.results,
        }


def _ms(ns) -> float | None:
    return None if ns is None else round(ns / 1e6, 4)


class WebObserver(RunObserver):
    """Keeps a LiveRun up to date and appends one event per change."""

    def __init__(self, manager: "RunManager", live: LiveRun):
        self.manager, self.live = manager, live

    def run_started(self, run_id, specs, estimate_s):
        with self.manager.lock:
            self.live.run_id, self.live.tests_planned, self.live.estimate_s = run_id, len(specs), estimate_s
            self.live.state = "running"
        self.manager.emit("run", self.live.snapshot())

    def preparing(self, done_bytes, total_bytes, elapsed_s, hosts):
        with self.manager.lock:
            self.live.state, self.live.phase = "preparing", "preparing data"
        self.manager.emit("preparing", {"done_bytes": done_bytes, "total_bytes": total_bytes,
                                        "elapsed_s": round(elapsed_s, 1)})

    def test_started(self, index, spec):
        with self.manager.lock:
            live = self.live
            live.state, live.test_index, live.test_id, live.phase = "running", index, spec.id, "starting"
            live.test_s, live.test_started = spec.ramp + spec.longest_s, time.monotonic()
            live.hosts, live.fleet = {}, {}
        self.manager.emit("test", {"index": index, "id": spec.id, "planned_s": spec.ramp + spec.longest_s})

    def test_phase(self, index, spec, phase):
        self.live.phase = phase
        self.manager.emit("phase", {"index": index, "phase": phase})

    def test_live(self, index, spec, live):
        t = round(live.elapsed_s, 1)  # since fio started
        phase = "warm-up" if t < spec.ramp else "measuring"
        if live.hosts is not None:  # a fleet: fio's client gives no live figures, node_exporter does
            hosts = {name: None if s is None else {
                "iops": s.disk_iops, "cpu_pct": s.cpu_pct, "disk_busy_pct": s.disk_busy_pct,
                "net_mb_s": None if s.net_rx_bytes_s is None else round(
                    (s.net_rx_bytes_s + (s.net_tx_bytes_s or 0)) / 1e6, 3),
                "mb_s": None, "lat_ms": None} for name, s in live.hosts.items()}
            known = [h["iops"] for h in hosts.values() if h and h["iops"] is not None]
            fleet = {"iops": sum(known) if known else None, "mb_s": None, "lat_ms": None, "source": "node_exporter"}
        else:
            fleet = {"iops": None if live.iops is None else round(live.iops, 1),
                     "mb_s": None if live.bw_bytes_s is None else round(live.bw_bytes_s / 1e6, 3),
                     "lat_ms": _ms(live.lat_mean_ns), "source": "fio"}
            hosts = {"local": {k: v for k, v in fleet.items() if k != "source"} | {"cpu_pct": None}}
        with self.manager.lock:
            self.live.hosts, self.live.fleet, self.live.phase = hosts, fleet, phase
        self.manager.emit("live", {"index": index, "t": t, "run_t": round(time.monotonic() - self.live.started, 1),
                                   "test_id": spec.id, "phase": phase, "hosts": hosts, "fleet": fleet,
                                   "eta_s": self.live.snapshot()["eta_s"]})

    def test_finished(self, index, spec, result: TestOutcome):
        a = result.aggregate.all if result.aggregate else None
        row = {"index": index, "id": spec.id, "status": result.status, "error": result.error,
               "iops": None if a is None else round(a.iops, 1),
               "mb_s": None if a is None else round(a.bw_bytes_s / 1e6, 3),
               "p99_ms": None if a is None else _ms(a.percentiles_ns.get("p99"))}
        with self.manager.lock:
            self.live.results.append(row)
            self.live.tests_done += 1
            self.live.done_s += spec.ramp + spec.longest_s + 2
            self.live.test_index = None
        self.manager.emit("result", row)


class RunManager:
    """Starts a plan in a thread, one at a time per data directory (a lock
    file, so a second `iofleet serve` on the same store is refused too)."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.lock = threading.Lock()
        self.live: LiveRun | None = None
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

    def events_after(self, last_id: int) -> list[dict]:
        with self.lock:
            return [e for e in self.events if e["id"] > last_id]

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def status(self) -> dict | None:
        with self.lock:
            return None if self.live is None else self.live.snapshot()

    def start(self, plan: Plan, plan_text: str, hosts: list[Host] | None, label: str | None) -> LiveRun:
        with self.lock:
            if self.running:
                going = (f"run {self.live.run_id} ({self.live.plan_name}) is still going" if self.live.run_id
                         is not None else f"a run of plan {self.live.plan_name} is starting")  # not stored yet
                raise RunBusy(f"{going} on this store; stop it or wait for it to end before starting another")
            self._take_store_lock()
            self.live = LiveRun(plan_name=plan.name, label=label or plan.label)
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
            self.live.state = "stopping"
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
                live.state, live.test_index, live.ended = "ended", None, time.monotonic()
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
