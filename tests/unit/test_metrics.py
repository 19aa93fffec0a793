"""Host metrics: node_exporter pages (real recorded ones), /proc on this
host, and the sampler's windows and failures."""

import contextlib
import http.server
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from iofleet.fleet.metrics.counters import Counters, sample, whole_disks
from iofleet.fleet.metrics.node_exporter import fetch_metrics, free_bytes, parse_exporter
from iofleet.fleet.metrics.proc_stats import read_local
from iofleet.fleet.metrics.records import HostCpu
from iofleet.fleet.metrics.sampler import MetricsSampler

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "node_exporter"
PAGE1 = (FIXTURES / "metrics-1.txt").read_text()
PAGE2 = (FIXTURES / "metrics-2.txt").read_text()


def raw(text: str, name: str) -> dict[str, float]:
    """{label text: value} of one metric, read with a plain regex (not the
    code under test)."""
    return {labels: float(value) for labels, value in
            re.findall(rf"^{name}\{{(.*)\}} (\S+)$", text, re.M)}


# ------------------------------------------------------------ node_exporter pages


def test_cpu_busy_from_the_recorded_pages_matches_a_direct_calculation():
    a, b = raw(PAGE1, "node_cpu_seconds_total"), raw(PAGE2, "node_cpu_seconds_total")
    assert len(a) == 16  # 2 CPUs x 8 modes
    total = sum(b[k] - a[k] for k in a)
    idle = sum(b[k] - a[k] for k in a if 'mode="idle"' in k or 'mode="iowait"' in k)
    expected = 100 * (1 - idle / total)

    s = sample(parse_exporter(PAGE1), parse_exporter(PAGE2), dt=1.0, t_s=1.0)

    assert s.cpu_pct == pytest.approx(expected, abs=1e-9)
    assert 5 < s.cpu_pct < 60  # dd was writing: neither idle nor saturated


def test_disk_and_network_rates_from_the_recorded_pages():
    dt = 1.016  # the recording's curls were this far apart
    io_time = {k: raw(PAGE2, "node_disk_io_time_seconds_total")[k] - v
               for k, v in raw(PAGE1, "node_disk_io_time_seconds_total").items()}
    ios = sum(raw(PAGE2, m)['device="vda"'] - raw(PAGE1, m)['device="vda"']
              for m in ("node_disk_reads_completed_total", "node_disk_writes_completed_total"))

    a, b = parse_exporter(PAGE1), parse_exporter(PAGE2)
    s = sample(a, b, dt=dt, t_s=2.0)

    assert set(io_time) == {'device="vda"', 'device="zram0"'}
    assert set(a.disk_io_time_s) == {"vda"}  # zram is memory, not a disk
    assert s.disk_busy_pct == pytest.approx(100 * io_time['device="vda"'] / dt)
    assert ios > 10_000  # the dd writes
    assert s.disk_iops == pytest.approx(ios / dt)
    # the exporter lists eth0, ifb0, ifb1 and no lo; nothing moved on them
    assert set(a.net_rx_bytes) == set(a.net_tx_bytes) == {"eth0", "ifb0", "ifb1"}
    assert a.net_rx_bytes["eth0"] == raw(PAGE1, "node_network_receive_bytes_total")['device="eth0"']
    assert s.net_rx_bytes_s == 0 and s.net_tx_bytes_s == 0
    assert s.t_s == 2.0


def test_only_the_needed_lines_reach_the_parser_but_nothing_needed_is_lost():
    full = {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(PAGE1) for s in f.samples}
    c = parse_exporter(PAGE1)
    cpu = [v for (name, _), v in full.items() if name == "node_cpu_seconds_total"]
    assert c.cpu_total == pytest.approx(sum(cpu))
    assert c.disk_ios["vda"] == full[("node_disk_reads_completed_total", (("device", "vda"),))] \
        + full[("node_disk_writes_completed_total", (("device", "vda"),))]


EXPORTER_DISKS = """\
# TYPE node_disk_io_time_seconds_total counter
{io}
# TYPE node_disk_reads_completed_total counter
{reads}
# TYPE node_disk_writes_completed_total counter
{writes}
"""

DEVICES = ["sda", "sda1", "sda2", "nvme0n1", "nvme0n1p1", "nvme0n10", "mmcblk0", "mmcblk0p2",
           "loop0", "ram0", "zram0", "sr0", "dm-0", "md127", "sdb1", "vdb"]


def disk_page(scale: float) -> str:
    """Every device did 1 s of IO time and 100 reads + 10 writes, times `scale`."""
    def lines(name, value):
        return "\n".join(f'{name}{{device="{d}"}} {value * scale}' for d in DEVICES)
    return EXPORTER_DISKS.format(io=lines("node_disk_io_time_seconds_total", 1.0),
                                 reads=lines("node_disk_reads_completed_total", 100),
                                 writes=lines("node_disk_writes_completed_total", 10))


def test_partitions_loop_ram_and_optical_devices_are_not_disks():
    assert whole_disks(DEVICES) == {"sda", "nvme0n1", "nvme0n10", "mmcblk0", "dm-0", "md127",
                                     "sdb1", "vdb"}  # sdb1 of an unlisted sdb: nothing to double count
    c = parse_exporter(disk_page(1))
    assert set(c.disk_io_time_s) == whole_disks(DEVICES)
    # dm-0 and md127 sit on counted disks: their IO would count twice
    assert set(c.disk_ios) == {"sda", "nvme0n1", "nvme0n10", "mmcblk0", "sdb1", "vdb"}
    s = sample(c, parse_exporter(disk_page(2)), dt=2.0, t_s=2.0)
    assert s.disk_iops == 6 * 110 / 2.0
    assert s.disk_busy_pct == 50.0
    assert s.cpu_pct is s.net_rx_bytes_s is s.net_tx_bytes_s is None  # absent, not 0


def test_missing_metrics_are_none_not_zero():
    assert parse_exporter("") == Counters()
    assert parse_exporter("# just a comment\nfoo_total 3\n") == Counters()
    cpu_only = '\n'.join(line for line in PAGE1.splitlines() if line.startswith("node_cpu_"))
    cpu_only2 = '\n'.join(line for line in PAGE2.splitlines() if line.startswith("node_cpu_"))
    s = sample(parse_exporter(cpu_only), parse_exporter(cpu_only2), dt=1.0, t_s=1.0)
    assert s.cpu_pct > 0
    assert s.disk_busy_pct is s.disk_iops is s.net_rx_bytes_s is s.net_tx_bytes_s is None
    # reads without writes: no IOPS, but the busy time is still there
    no_writes = "\n".join(line for line in disk_page(1).splitlines() if "writes" not in line)
    c = parse_exporter(no_writes)
    assert c.disk_ios == {} and "sda" in c.disk_io_time_s
    # idle mode missing: busy % cannot be told
    assert parse_exporter('node_cpu_seconds_total{cpu="0",mode="user"} 5\n').cpu_total is None


def test_a_counter_going_backwards_gives_no_sample():
    a, b = parse_exporter(PAGE1), parse_exporter(PAGE2)
    assert sample(b, a, dt=1.0, t_s=1.0) is None  # every counter went back (reboot)
    only_net = Counters(net_rx_bytes={"eth0": 10.0}, net_tx_bytes={"eth0": 10.0})
    assert sample(only_net, Counters(net_rx_bytes={"eth0": 5.0}, net_tx_bytes={"eth0": 20.0}),
                  1.0, 1.0) is None
    # a device that comes or goes is not a reset: the devices in both count
    s = sample(only_net, Counters(net_rx_bytes={"eth0": 30.0, "eth1": 1.0}, net_tx_bytes={}), 2.0, 1.0)
    assert s.net_rx_bytes_s == 10.0 and s.net_tx_bytes_s is None


# ------------------------------------------------------------ free space

FILESYSTEMS = """\
# TYPE node_filesystem_avail_bytes gauge
node_filesystem_avail_bytes{device="/dev/sda2",fstype="ext4",mountpoint="/"} 1000
node_filesystem_avail_bytes{device="/dev/sdb1",fstype="xfs",mountpoint="/mnt/a"} 2000
node_filesystem_avail_bytes{device="/dev/sdc1",fstype="xfs",mountpoint="/mnt/ab"} 3000
node_filesystem_avail_bytes{device="/dev/sdd1",fstype="xfs",mountpoint="/mnt/a/b"} 4e+12
node_filesystem_size_bytes{device="/dev/sdd1",fstype="xfs",mountpoint="/mnt/a/b"} 9e+12
"""


def test_free_bytes_takes_the_longest_mountpoint_component_wise():
    assert free_bytes(FILESYSTEMS, "/mnt/a/data") == 2000
    assert free_bytes(FILESYSTEMS, "/mnt/a") == 2000
    assert free_bytes(FILESYSTEMS, "/mnt/a/") == 2000
    assert free_bytes(FILESYSTEMS, "/mnt/ab/x") == 3000
    assert free_bytes(FILESYSTEMS, "/mnt/abc") == 1000  # not /mnt/ab
    assert free_bytes(FILESYSTEMS, "/mnt/a/b/c/d") == 4 * 10**12
    assert free_bytes(FILESYSTEMS, "/mnt/a/bc") == 2000
    assert free_bytes(FILESYSTEMS, "/var/tmp") == 1000
    assert free_bytes(FILESYSTEMS, "relative/path") is None
    assert free_bytes(FILESYSTEMS.replace('mountpoint="/"', 'mountpoint="/boot"'), "/var") is None
    assert free_bytes("", "/") is None


def test_free_bytes_from_the_recorded_page():
    avail = int(raw(PAGE1, "node_filesystem_avail_bytes")['device="/dev/vda",fstype="ext4",mountpoint="/"'])
    assert avail > 0
    assert free_bytes(PAGE1, "/var/tmp/iofleet") == avail
    assert free_bytes(PAGE1, "/") == avail


# ------------------------------------------------------------ this host's /proc


def test_local_counters_from_proc_are_sane():
    a = read_local()
    assert 0 < a.cpu_idle <= a.cpu_total
    assert "lo" not in a.net_rx_bytes
    with open("/proc/diskstats") as f:
        names = [line.split()[2] for line in f]
    assert set(a.disk_io_time_s) == whole_disks(names)
    assert not any(d.startswith(("loop", "ram", "zram")) for d in a.disk_io_time_s)
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # keep a CPU busy
        pass
    s = sample(a, read_local(), dt=0.3, t_s=0.3)
    assert 0 < s.cpu_pct <= 100
    if a.disk_io_time_s:
        assert 0 <= s.disk_busy_pct <= 100 and s.disk_iops >= 0
    assert s.net_rx_bytes_s is None or s.net_rx_bytes_s >= 0


def test_local_sampler_and_latest():
    with MetricsSampler({}, local="ctl", interval=0.1) as m:
        deadline = time.monotonic() + 5
        while "ctl" not in m.latest():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        first = m.latest()["ctl"]
        time.sleep(0.35)
        later = m.latest()["ctl"]
    assert later.t_s > first.t_s
    assert 0 <= first.cpu_pct <= 100
    (ctl,) = m.summary().values()
    assert ctl.host == "ctl" and ctl.source == "local" and ctl.error is None
    assert ctl.samples == len(ctl.series) >= 3
    assert ctl.cpu.samples == ctl.samples and 0 <= ctl.cpu.avg_pct <= ctl.cpu.max_pct <= 100
    # a fixed grid: samples 0.1 s apart, not drifting
    assert [round(s.t_s, 1) for s in ctl.series][:3] == [0.1, 0.2, 0.3]


# ------------------------------------------------------------ summary windows


def cpu(h) -> tuple:
    return h.cpu.samples, h.cpu.avg_pct, h.cpu.max_pct


def test_summary_keeps_the_series_whole_and_figures_to_the_window():
    m = MetricsSampler({}, local="ctl")  # never started: readings fed by hand
    m._start = 100.0
    idle = 0.0
    for i, busy in enumerate([None, 90, 10, 20, 30, 40]):  # % busy in each 1 s interval
        idle += 0 if busy is None else 100 - busy
        m._record("ctl", 100.0 + i, Counters(cpu_idle=idle, cpu_total=100.0 * i,
                                             disk_io_time_s={"sda": i * 0.5}))
    series = m._series["ctl"]
    assert [(s.t_s, round(s.cpu_pct, 6)) for s in series] == \
        [(1.0, 90), (2.0, 10), (3.0, 20), (4.0, 30), (5.0, 40)]

    ramp_out = m.summary(skip_s=1.0)["ctl"]  # the 1 s ramp's sample left out
    assert ramp_out.samples == 4 and cpu(ramp_out) == pytest.approx((4, 25.0, 40.0))
    assert ramp_out.disk_busy_avg_pct == ramp_out.disk_busy_max_pct == 50.0
    assert ramp_out.disk_iops_avg is None and ramp_out.net_rx_avg_bytes_s is None
    assert len(ramp_out.series) == 5  # the whole run, for plots

    # Only intervals wholly inside (1.5, 4.0]: those ending at 3 and 4 s.
    window = m.summary(skip_s=1.5, until_s=4.0)["ctl"]
    assert window.samples == 2 and cpu(window) == pytest.approx((2, 25.0, 30.0))
    assert m.summary(skip_s=5.0)["ctl"].cpu == HostCpu(0, None, None)
    assert cpu(m.summary()["ctl"]) == pytest.approx((5, 38.0, 90.0))


def test_a_reader_whose_readings_come_seconds_apart_counts_only_whole_spans_in_the_window():
    """A kubelet renews its CPU reading every few seconds: a sample spans
    two readings, and counts only when all of it lies in the window; the
    same reading read again makes no sample."""
    m = MetricsSampler({}, local="node")
    m._start = 100.0
    cores = 2.0
    for t, busy_s in ((100.0, 0.0), (103.0, 3.0), (103.0, 3.0), (106.0, 4.5), (109.0, 9.0)):
        m._record("node", t, Counters(cpu_idle=cores * t - busy_s, cpu_total=cores * t))
    assert [(s.t_s, round(s.cpu_pct, 6)) for s in m._series["node"]] == [(3.0, 50.0), (6.0, 25.0), (9.0, 75.0)]
    # Measured from 2 s on: the sample spanning (0, 3] started before it.
    assert cpu(m.summary(skip_s=2.0)["node"]) == pytest.approx((2, 50.0, 75.0))
    assert cpu(m.summary(skip_s=2.0, until_s=8.0)["node"]) == pytest.approx((1, 25.0, 25.0))


# ------------------------------------------------------------ exporters over HTTP


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def exporter(pages: list[str | None], delay: float = 0.0):
    """A stand-in exporter on localhost answering with `pages` in turn
    (None: HTTP 500), then 500s."""
    pages = list(pages)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(delay)
            page = pages.pop(0) if pages else None
            body = (page or "broken").encode()
            self.send_response(200 if page else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreachable_exporter_gets_an_error_and_no_fake_zeros():
    url = f"http://127.0.0.1:{closed_port()}/metrics"
    with MetricsSampler({"h1": url, "h2": None}, interval=0.1) as m:
        time.sleep(0.35)
        assert m.latest() == {}
    h1, h2 = m.summary()["h1"], m.summary()["h2"]
    assert h1.source == "node_exporter" and h1.samples == 0 and h1.series == []
    assert h1.error == f"metrics endpoint {url}: connection refused"
    assert h1.cpu == HostCpu(0, None, None)
    assert h1.disk_busy_avg_pct is h1.disk_iops_avg is h1.net_rx_avg_bytes_s is None
    assert h2.source == "none" and h2.samples == 0 and h2.error is None and h2.cpu.avg_pct is None


def test_exporter_restart_and_later_failures():
    # pages 1, 2, then 1 again (counters back: no sample), 2, then HTTP 500s
    with exporter([PAGE1, PAGE2, PAGE1, PAGE2]) as url:
        with MetricsSampler({"h1": url}, interval=0.1) as m:
            time.sleep(0.75)
    h1 = m.summary()["h1"]
    assert h1.samples == 2
    assert all(5 < s.cpu_pct < 60 and s.disk_iops > 0 for s in h1.series)
    assert re.fullmatch(rf"metrics endpoint {url}: HTTP 500 Internal Server Error "
                        r"\(\d+ of \d+ scrapes failed\)", h1.error)


def test_a_slow_exporter_delays_no_other_host_and_exit_is_prompt():
    pages = [f'node_cpu_seconds_total{{cpu="0",mode="idle"}} {i}\n'
             f'node_cpu_seconds_total{{cpu="0",mode="user"}} {3 * i}\n' for i in range(50)]
    with exporter(pages) as fast, exporter([PAGE1] * 5, delay=3.0) as slow:
        m = MetricsSampler({"fast": fast, "slow": slow}, interval=0.1, timeout=0.2)
        with m:
            time.sleep(0.8)
            t0 = time.monotonic()
        assert time.monotonic() - t0 < 0.5
    fast_, slow_ = m.summary()["fast"], m.summary()["slow"]
    assert fast_.samples >= 4 and fast_.error is None
    assert fast_.cpu.avg_pct == pytest.approx(75.0)
    assert slow_.samples == 0 and slow_.error == f"metrics endpoint {slow}: timed out"


def test_an_answer_without_node_exporter_counters_is_an_error():
    with exporter(["# nothing here\nup 1\n"] * 50) as url:
        with MetricsSampler({"h1": url}, interval=0.1) as m:
            time.sleep(0.25)
    assert m.summary()["h1"].error == f"metrics endpoint {url}: no node_exporter counters in its answer"


def test_fetch_metrics_returns_the_page_or_says_why_not():
    with exporter([PAGE1, None]) as url:
        assert fetch_metrics(url) == PAGE1
        with pytest.raises(OSError, match=r"^HTTP 500 Internal Server Error$"):
            fetch_metrics(url)
    with pytest.raises(OSError, match=r"^connection refused$"):
        fetch_metrics(f"http://127.0.0.1:{closed_port()}/metrics")
    with pytest.raises(OSError, match="unknown url type"):
        fetch_metrics("127.0.0.1:9100/metrics")
