"""GET /metrics: the run this server is running (or ran last) for Prometheus.

Made from the run's live model (its publisher's snapshot, through the
RunManager's status) at each scrape by a custom collector on a
registry of this app's own (never the process-wide default registry: several
apps may live in one process, and nothing here is kept between scrapes).
Figures the run does not know yet are left out, never given as 0: a host
whose live figures are unknown has no sample, a local run has no CPU sample.
With `iofleet serve --token`, scrape with `Authorization: Bearer TOKEN`.
"""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, InfoMetricFamily

from .. import __version__

router = APIRouter()

STATES = ("starting", "preparing", "running", "stopping", "ended")
STATUSES = ("complete", "failed", "interrupted", "partial")
# (key in the status's host figures, metric name suffix, help, factor to the base unit)
# IO figures are fio's own: a local run's status, a fleet host's last status round.
HOST_FIGURES = (
    ("iops", "iops", "live IO operations per second (fio's)", 1.0),
    ("mb_s", "throughput_bytes_per_second", "live throughput in bytes per second (fio's)", 1e6),
    ("lat_ms", "latency_mean_seconds", "live mean total latency in seconds (fio's)", 1e-3),
    ("p99_ms", "latency_p99_seconds", "99th percentile total latency of a fleet host's last round (fio's)", 1e-3),
    ("cpu_pct", "cpu_ratio", "CPU busy, 0 to 1", 1e-2),
    ("disk_busy_pct", "disk_busy_ratio", "disk busy (node_exporter), 0 to 1", 1e-2),
    ("disk_iops", "disk_iops", "the host's disks' IO operations per second (node_exporter)", 1.0),
    ("net_mb_s", "network_bytes_per_second", "network traffic received + sent (node_exporter)", 1e6),
)
FLEET_FIGURES = HOST_FIGURES[:3]


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class RunCollector:
    """Prometheus collector over one RunManager's status."""

    def __init__(self, manager):
        self.manager = manager

    def collect(self):
        build = InfoMetricFamily("iofleet_build", "iofleet version serving these metrics")
        build.add_metric([], {"version": __version__})
        yield build
        status = self.manager.status()
        active = status is not None and status.get("state") != "ended"
        yield GaugeMetricFamily("iofleet_run_active", "1 while a run is going on this server, else 0",
                                value=1 if active else 0)
        if status is None:
            return
        run = "" if status["run_id"] is None else str(status["run_id"])
        yield from self._run(status, run)
        yield from self._live(status, run) if active else ()

    @staticmethod
    def _run(status: dict, run: str):
        if status["run_id"] is not None:
            yield GaugeMetricFamily("iofleet_run_id", "id of the current (or last) run in the results store",
                                    value=status["run_id"])
        state = GaugeMetricFamily("iofleet_run_state", "state of the current (or last) run: 1 for the one it is in",
                                  labels=["run", "state"])
        for name in STATES:
            state.add_metric([run, name], 1 if status["state"] == name else 0)
        yield state
        yield GaugeMetricFamily("iofleet_run_tests_planned", "tests in the current (or last) run",
                                value=status["tests_planned"])
        yield GaugeMetricFamily("iofleet_run_tests_done", "tests of the current (or last) run that have ended",
                                value=status["tests_done"])
        if status["state"] == "ended" and status.get("status"):
            last = GaugeMetricFamily("iofleet_run_status", "how the last run ended: 1 for its status",
                                     labels=["run", "status"])
            for name in dict.fromkeys((*STATUSES, status["status"])):
                last.add_metric([run, name], 1 if status["status"] == name else 0)
            yield last

    @staticmethod
    def _live(status: dict, run: str):
        if _number(status.get("elapsed_s")) is not None:
            yield GaugeMetricFamily("iofleet_run_elapsed_seconds", "seconds since the run started",
                                    value=status["elapsed_s"])
        if _number(status.get("eta_s")) is not None:
            yield GaugeMetricFamily("iofleet_run_eta_seconds", "estimated seconds until the run ends",
                                    value=status["eta_s"])
        if status.get("test_id") is not None:
            test = InfoMetricFamily("iofleet_run_test", "the test running now", labels=["run", "plan", "test"])
            test.add_metric([run, status["plan"], status["test_id"]], {"index": str(status["test_index"])})
            yield test
        hosts = status.get("hosts") or {}
        for key, suffix, text, factor in HOST_FIGURES:
            family = GaugeMetricFamily(f"iofleet_host_{suffix}", f"per host: {text}", labels=["host"])
            for host, figures in sorted(hosts.items()):
                value = _number((figures or {}).get(key))
                if value is not None:
                    family.add_metric([host], value * factor)
            if family.samples:
                yield family
        fleet = status.get("fleet") or {}
        for key, suffix, text, factor in FLEET_FIGURES:
            value = _number(fleet.get(key))
            if value is not None:
                family = GaugeMetricFamily(f"iofleet_fleet_{suffix}", f"all hosts: {text}", labels=["source"])
                family.add_metric([fleet.get("source") or ""], value * factor)
                yield family


def registry_of(request: Request) -> CollectorRegistry:
    """This app's registry (made on its first scrape; two first scrapes at once make two, harmlessly)."""
    registry = getattr(request.app.state, "metrics_registry", None)
    if registry is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(RunCollector(request.app.state.runs))
        request.app.state.metrics_registry = registry
    return registry


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """Prometheus text format (or OpenMetrics when the scraper asks for it)."""
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encoder(registry_of(request)), media_type=None, headers={"Content-Type": content_type})

