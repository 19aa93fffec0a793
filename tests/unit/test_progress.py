from iofleet.cli.progress import MAX_HOST_LINES, host_lines
from iofleet.fleet.metrics.records import HostSample
from iofleet.studies.progress import HostFigures


def test_each_host_gets_a_live_line_and_hosts_without_metrics_say_so():
    text = host_lines({"h1": HostFigures.of_fleet_host(HostSample(3.0, 41.6, 80.0, 12_345.0, 2e6, 1e6), None),
                       "h2": None, "h3": HostFigures.of_fleet_host(HostSample(3.0, None, None, None, None, None), None)})
    h1, h2, h3 = text.splitlines()
    assert "h1" in h1 and "disk    12,345 IOPS" in h1 and "CPU  42%" in h1 and "net 3.0 MB/s" in h1
    assert "h2" in h2 and "no metrics endpoint" in h2
    assert "IOPS" in h3 and h3.count("n/a") == 3


def test_a_large_fleet_is_cut_short():
    hosts = {f"h{i}": None for i in range(40)}
    lines = host_lines(hosts).splitlines()
    assert len(lines) == MAX_HOST_LINES + 1 and lines[-1].strip() == f"… and {40 - MAX_HOST_LINES} more hosts"
