"""/metrics of a fleet run: each host's fio figures of its last round beside
its node_exporter's, from the run's live model (web/metrics.py)."""

from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from iofleet.fleet.fio_link.runner import LiveFigures, RoundFigures
from iofleet.fleet.metrics.records import HostSample
from iofleet.web.metrics import RunCollector

from .progress_clock import started


def scrape(status: dict) -> dict[tuple, float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(SimpleNamespace(status=lambda: status)))
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_fleet_hosts_last_round_and_its_exporters_figures_are_scraped_unknowns_left_out():
    m, _, (a, _) = started()
    m.test_started(0, a)
    rounds = {"h1": RoundFigures(end_s=4.0, seconds=1.0, iops=1500.0, bw_bytes_s=6.144e6, lat_mean_ns=310_000.0,
                                 p99_ns=1_250_000.0), "h2": None}
    samples = {"h1": HostSample(3.0, 41.6, 80.0, 12_345.0, 2e6, 1e6), "h2": HostSample(3.0, 10.0, None, 7.0, None, None)}
    m.test_live(0, a, LiveFigures(elapsed_s=7.0, iops=1500.0, bw_bytes_s=6.144e6, lat_mean_ns=310_000.0,
                                  hosts=samples, rounds=rounds))
    got = scrape(m.snapshot())
    h1, h2 = (("host", "h1"),), (("host", "h2"),)
    assert got[("iofleet_host_iops", h1)] == 1500.0
    assert got[("iofleet_host_latency_p99_seconds", h1)] == 0.00125
    assert got[("iofleet_host_latency_mean_seconds", h1)] == 0.00031
    assert got[("iofleet_host_disk_iops", h1)] == 12_345.0 and got[("iofleet_host_disk_iops", h2)] == 7.0
    assert got[("iofleet_host_cpu_ratio", h2)] == 0.1
    # h2 has no round yet: no fio figure, never a 0.
    assert ("iofleet_host_iops", h2) not in got and ("iofleet_host_latency_p99_seconds", h2) not in got
    assert got[("iofleet_fleet_iops", (("source", "fio"),))] == 1500.0
