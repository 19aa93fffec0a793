"""The sampler: every host read once a second in a background thread
while a test runs, and each host's figures over the measured part."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ...errors import IofleetError

from .counters import Counters, sample
from .node_exporter import fetch_metrics, parse_exporter
from .proc_stats import read_local
from .records import HostCpu, HostMetrics, HostSample, top_names


def _avg(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class MetricsSampler:
    """Samples hosts once every `interval` seconds in a background thread
    while a test runs.

    sources: host name -> node_exporter /metrics URL, a reader (a callable
    returning (the wall-clock time its counters were read, Counters): the
    kubelet's summary, read every second but renewed as the kubelet reads,
    e.g. every 10 s), or None (no metrics).
    local: the name under which this host is sampled from /proc, or None.
    All exporters are scraped at once (each with its own `timeout`), so one
    slow host never delays the others.
    """

    def __init__(self, sources: dict[str, str | None], local: str | None = None,
                 interval: float = 1.0, timeout: float = 0.8):
        self.sources, self.local = dict(sources), local
        self.interval, self.timeout = interval, timeout
        self._urls = {h: u for h, u in self.sources.items() if u and h != local}
        hosts = [*self.sources, *([local] if local and local not in self.sources else [])]
        self._series: dict[str, list[HostSample]] = {h: [] for h in hosts}
        self._spans: dict[str, list[float]] = {h: [] for h in hosts}  # each sample's own interval, s
        self._last: dict[str, tuple[float, Counters]] = {}  # previous reading
        self._scrapes: dict[str, int] = {}  # per host: scrapes done,
        self._failures: dict[str, int] = {}  # of which failed,
        self._problem: dict[str, str] = {}  # and why the last failure did
        self._busy: set[str] = set()  # hosts with a scrape in flight
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=min(32, len(self._urls)) or 1,
                                        thread_name_prefix="metrics")
        self._thread = threading.Thread(target=self._loop, name="metrics-sampler", daemon=True)

    def __enter__(self) -> "MetricsSampler":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            self._closed = True  # a scrape still in flight is dropped
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        tick = self._start
        while True:
            with self._lock:
                due = [h for h in self._urls if h not in self._busy]
                self._busy.update(due)
            for host in due:  # a host still busy with the last scrape skips this one
                self._pool.submit(self._scrape, host)
            if self.local:
                t0 = time.monotonic()
                counters = read_local()
                self._record(self.local, (t0 + time.monotonic()) / 2, counters)
            # ticks on a fixed grid, so a slow interval does not shift the next ones
            tick += self.interval * max(1, int((time.monotonic() - tick) // self.interval) + 1)
            if self._stop.wait(max(0.0, tick - time.monotonic())):
                return

    def _scrape(self, host: str) -> None:
        url, problem = self._urls[host], None
        t0 = time.monotonic()
        try:
            if callable(url):  # its counters carry the time they were read: a sample spans exactly two readings
                read_at, counters = url()
                self._record(host, time.monotonic() - (time.time() - read_at), counters)
            else:
                counters = parse_exporter(fetch_metrics(url, self.timeout))
                if counters == Counters():
                    problem = "no node_exporter counters in its answer"
                else:  # the exporter read its counters somewhere during the request
                    self._record(host, (t0 + time.monotonic()) / 2, counters)
        except (OSError, ValueError, IofleetError) as exc:  # ValueError: a page the parser refuses
            problem = str(exc)
        with self._lock:
            self._scrapes[host] = self._scrapes.get(host, 0) + 1
            self._busy.discard(host)
            if problem:
                self._failures[host] = self._failures.get(host, 0) + 1
                self._problem[host] = f"metrics endpoint {url}: {problem}"

    def _record(self, host: str, stamp: float, counters: Counters) -> None:
        with self._lock:
            if self._closed:
                return
            prev = self._last.get(host)
            self._last[host] = (stamp, counters)
            if prev and stamp - prev[0] > 1e-3:
                s = sample(prev[1], counters, stamp - prev[0], stamp - self._start)
                if s:
                    self._series[host].append(s)
                    self._spans[host].append(stamp - prev[0])
            elif prev:  # the same reading again (a kubelet renews its own every few seconds)
                self._last[host] = prev

    def latest(self) -> dict[str, HostSample]:
        """The most recent sample of each host that has one (live progress)."""
        with self._lock:
            return {h: s[-1] for h, s in self._series.items() if s}

    def summary(self, skip_s: float = 0.0, until_s: float | None = None) -> dict[str, HostMetrics]:
        """Each host's figures over the intervals inside (skip_s, until_s]
        (the ramp left out); `series` keeps every sample."""
        with self._lock:
            series = {h: list(s) for h, s in self._series.items()}
            spans = {h: list(s) for h, s in self._spans.items()}
            scrapes, failures, problem = dict(self._scrapes), dict(self._failures), dict(self._problem)
        out = {}
        for host, all_samples in series.items():
            # A sample covers (t_s - its span, t_s]: count it only when that
            # interval lies inside the measured part (10 % slack for scrape timing).
            slack = 0.1 * self.interval
            window = [s for s, span in zip(all_samples, spans[host])
                      if s.t_s - max(span, self.interval) >= skip_s - slack
                      and (until_s is None or s.t_s <= until_s + slack)]

            def values(attr: str) -> list[float]:
                return [v for s in window if (v := getattr(s, attr)) is not None]

            cpu, busy = values("cpu_pct"), values("disk_busy_pct")
            host_cpu = HostCpu(len(cpu), _avg(cpu), max(cpu, default=None))
            split = [s for s in window if s.cpu_fio_pct is not None]
            if split:  # the local host: the same samples, by who used the CPU
                names: dict[str, float] = {}
                for s in split:
                    for name, pct in (s.cpu_storage_by_name or {}).items():
                        names[name] = names.get(name, 0.0) + pct / len(split)
                host_cpu.fio_avg_pct = _avg([s.cpu_fio_pct for s in split])
                host_cpu.storage_avg_pct = _avg([s.cpu_storage_pct for s in split])
                host_cpu.other_avg_pct = _avg([s.cpu_other_pct for s in split])
                host_cpu.storage_by_name = top_names(names)
            error = problem.get(host)
            if error and failures[host] < scrapes[host]:
                error += f" ({failures[host]} of {scrapes[host]} scrapes failed)"
            url = self._urls.get(host)
            source = ("local" if host == self.local else getattr(url, "source", "node_exporter") if url
                      else "none")
            out[host] = HostMetrics(
                host=host, source=source, samples=len(window),
                cpu=host_cpu,
                disk_busy_avg_pct=_avg(busy), disk_busy_max_pct=max(busy, default=None),
                disk_iops_avg=_avg(values("disk_iops")),
                net_rx_avg_bytes_s=_avg(values("net_rx_bytes_s")),
                net_tx_avg_bytes_s=_avg(values("net_tx_bytes_s")),
                series=all_samples, error=error)
        return out
