"""The metrics sampler against real node_exporters, one per test host (each
in its own network namespace), with the controller sampled from /proc."""

import os
import time

from iofleet.fleet.metrics.node_exporter import free_bytes
from iofleet.fleet.metrics.sampler import MetricsSampler

from .testhost import http_get


def test_sampler_reads_each_hosts_node_exporter(make_fleet):
    fleet = make_fleet(2, metrics=True)
    sources = {h.name: h.metrics for h in fleet.hosts}
    with MetricsSampler(sources, local="controller") as m:
        time.sleep(3.2)
        live = m.latest()
    assert set(live) == {"h1", "h2", "controller"}
    result = m.summary()

    for h in fleet.hosts:
        r = result[h.name]
        assert r.source == "node_exporter" and r.error is None, r.error
        assert r.samples >= 2 and len(r.series) == r.samples
        assert [round(s.t_s) for s in r.series][:2] == [1, 2]  # once a second
        for s in r.series:
            assert 0 <= s.cpu_pct <= 100
            # /proc/diskstats is not per namespace: the machine's disks
            assert s.disk_busy_pct is not None and s.disk_iops is not None
        assert 0 <= r.cpu.avg_pct <= r.cpu.max_pct <= 100 and r.cpu.samples == r.samples
        # network counters are the namespace's own eth0, which carries the
        # scrapes themselves: a request in, a ~60 KB page out each second
        assert 0 < r.net_rx_avg_bytes_s < r.net_tx_avg_bytes_s
        assert r.net_tx_avg_bytes_s > 20_000

    ctl = result["controller"]
    assert ctl.source == "local" and ctl.samples >= 2 and 0 <= ctl.cpu.avg_pct <= 100


def test_free_bytes_of_a_hosts_target_from_its_exporter(make_fleet):
    fleet = make_fleet(1, metrics=True)
    h = fleet.hosts[0]
    free = free_bytes(http_get(h.metrics), str(h.target))
    # mounts are shared with the namespaces, so the exporter sees the same filesystem
    st = os.statvfs(h.target)
    assert free is not None and abs(free - st.f_bavail * st.f_frsize) < 64 * 2**20
