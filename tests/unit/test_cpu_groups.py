"""The local host's CPU split by who used it (fleet.metrics: fio, storage
daemons, other): recorded /proc samples of a hyperconverged second
(tests/fixtures/proc, README there), this host's own /proc, the sampler's
windows, fleets, the store and the export."""

import os
import re
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from iofleet.fleet.metrics.counters import STORAGE_NAMES, Counters, cpu_group, sample
from iofleet.fleet.metrics.node_exporter import free_bytes, parse_exporter
from iofleet.fleet.metrics.proc_stats import proc_stat_entry, read_local, read_procs
from iofleet.fleet.metrics.records import HostCpu, HostMetrics, mean_cpu
from iofleet.fleet.metrics.sampler import MetricsSampler
from iofleet.results.store import Store
from iofleet.results.store import schema as store_mod

from .store_records import new_run, save

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROC = FIXTURES / "proc"
PAGE1 = (FIXTURES / "node_exporter" / "metrics-1.txt").read_text()
PAGE2 = (FIXTURES / "node_exporter" / "metrics-2.txt").read_text()


def recorded(n: int) -> Counters:
    """A recorded snapshot: /proc/stat's cpu line, then every /proc/PID/stat."""
    first, *lines = (PROC / f"ceph-fuse-{n}.txt").read_bytes().splitlines()
    ticks = [int(x) for x in first.split()[1:9]]
    procs = {}
    for line in lines:
        key, comm, used = proc_stat_entry(line)
        procs[key] = (comm, used)
    return Counters(cpu_idle=ticks[3] + ticks[4], cpu_total=sum(ticks), procs=procs)


def by_comm(n: int) -> dict[str, int]:
    """utime + stime summed by comm, read with a plain regex (not the code under test)."""
    out: dict[str, int] = {}
    for line in (PROC / f"ceph-fuse-{n}.txt").read_text().splitlines()[1:]:
        comm, rest = re.fullmatch(r"\d+ \((.*)\) (.*)", line).groups()
        fields = rest.split()
        out[comm] = out.get(comm, 0) + int(fields[11]) + int(fields[12])
    return out


# ------------------------------------------------------------ recorded samples


def test_every_process_of_a_recorded_sample_is_read():
    a = recorded(1)
    lines = (PROC / "ceph-fuse-1.txt").read_text().splitlines()[1:]
    assert len(a.procs) == len(lines) == 78
    names = sorted(comm for comm, _ in a.procs.values())
    assert names.count("fio") == 3  # fio's main process and its two jobs
    assert {"ceph-osd", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-fuse"} <= set(names)
    assert {cpu_group(n) for n in ("ceph-osd", "ceph-fuse", "fio", "bash", "kworker/u8:2-writeback")} == \
        {"storage", "fio", "other"}


def test_the_split_of_a_recorded_hyperconverged_second():
    """Real: fio writing 4k on ceph-fuse at 2 × 16 outstanding IOs, with
    the Ceph daemons on the same 2-core host."""
    a, b = recorded(1), recorded(2)
    total = b.cpu_total - a.cpu_total
    d1, d2 = by_comm(1), by_comm(2)
    spent = {c: d2[c] - d1.get(c, 0) for c in d2}
    s = sample(a, b, dt=1.0, t_s=1.0)
    assert s.cpu_pct == pytest.approx(66.0)
    assert s.cpu_fio_pct == pytest.approx(100 * spent["fio"] / total) == pytest.approx(2.5)
    storage = sum(v for c, v in spent.items() if c in STORAGE_NAMES)
    assert s.cpu_storage_pct == pytest.approx(100 * storage / total) == pytest.approx(57.5)
    assert s.cpu_storage_by_name == pytest.approx({"ceph-osd": 40.0, "ceph-fuse": 17.0, "ceph-mon": 0.5})
    assert s.cpu_fio_pct + s.cpu_storage_pct + s.cpu_other_pct == pytest.approx(s.cpu_pct)


def test_a_process_new_in_the_interval_counts_whole_and_a_reused_pid_is_another_process():
    """Derived from the recording: ceph-osd's entry at the interval's
    start removed (a new process), then given another start time (its pid
    reused by another process, whose CPU so far is all in the interval)."""
    a, b = recorded(1), recorded(2)
    (osd,) = [k for k, (comm, _) in a.procs.items() if comm == "ceph-osd"]
    whole = b.procs[osd][1]
    assert whole > 1000  # the OSD's CPU since it started: far more than one second's
    del a.procs[osd]
    s = sample(a, b, dt=1.0, t_s=1.0)
    assert s.cpu_storage_pct == pytest.approx(s.cpu_pct - s.cpu_fio_pct)  # scaled down to the busy CPU
    assert s.cpu_other_pct == 0
    a = recorded(1)
    a.procs[(osd[0], osd[1] - 5)] = a.procs.pop(osd)
    assert sample(a, b, dt=1.0, t_s=1.0).cpu_storage_by_name["ceph-osd"] > 40.0


def test_no_split_without_per_process_figures():
    """node_exporter pages have no per-process CPU: the split is None, never 0."""
    s = sample(parse_exporter(PAGE1), parse_exporter(PAGE2), dt=1.0, t_s=1.0)
    assert s.cpu_pct is not None
    assert (s.cpu_fio_pct, s.cpu_storage_pct, s.cpu_other_pct, s.cpu_storage_by_name) == (None, None, None, None)


# ------------------------------------------------------------ this host's /proc


def test_this_hosts_processes_and_a_name_with_spaces_and_parentheses(tmp_path):
    odd = tmp_path / "x) (y z"
    odd.symlink_to("/bin/sleep")  # the kernel's comm is the name it was started by
    proc = subprocess.Popen([str(odd), "30"])
    try:
        deadline = time.monotonic() + 5
        while True:
            found = {pid: comm for (pid, _), (comm, _) in read_procs().items()}
            if found.get(proc.pid) == "x) (y z" or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert found[proc.pid] == "x) (y z"
        assert found[os.getpid()] != "" and found[1]
    finally:
        proc.kill()
        proc.wait()
    a = read_local()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # keep a CPU busy
        pass
    s = sample(a, read_local(), dt=0.3, t_s=0.3)
    assert s.cpu_fio_pct is not None and s.cpu_other_pct > 0  # this test itself is "other"
    assert s.cpu_fio_pct + s.cpu_storage_pct + s.cpu_other_pct == pytest.approx(s.cpu_pct)


# ------------------------------------------------------------ the sampler's window


def counters(i: int, idle: float, fio: int, osd: int, fuse: int) -> Counters:
    procs = {(10, 1): ("fio", fio), (20, 1): ("ceph-osd", osd)}
    if fuse is not None:
        procs[(30, 1)] = ("ceph-fuse", fuse)
    return Counters(cpu_idle=idle, cpu_total=100.0 * i, procs=procs)


def test_the_split_is_averaged_over_the_window_like_the_cpu():
    m = MetricsSampler({}, local="ctl")  # never started: readings fed by hand
    m._start = 100.0
    # per 1 s interval (100 ticks): busy %, fio, ceph-osd, ceph-fuse ticks (None: not running yet)
    steps = [(None, 0, 0, None), (90, 80, 5, None), (60, 10, 30, 10), (80, 10, 50, 10), (40, 10, 10, 0)]
    idle = fio = osd = fuse = 0
    for i, (busy, f, o, u) in enumerate(steps):
        idle += 0 if busy is None else 100 - busy
        fio, osd = fio + f, osd + o
        fuse = None if u is None else (fuse or 0) + u
        m._record("ctl", 100.0 + i, counters(i, idle, fio, osd, fuse))
    whole = m.summary()["ctl"].cpu
    assert (whole.avg_pct, whole.fio_avg_pct, whole.storage_avg_pct) == pytest.approx((67.5, 27.5, 28.75))
    assert whole.other_avg_pct == pytest.approx(67.5 - 27.5 - 28.75)
    assert whole.storage_by_name == pytest.approx({"ceph-osd": 23.75, "ceph-fuse": 5.0})
    assert list(whole.storage_by_name) == ["ceph-osd", "ceph-fuse"]  # busiest first
    window = m.summary(skip_s=1.0, until_s=3.0)["ctl"].cpu  # the intervals ending at 2 and 3 s
    assert (window.samples, window.avg_pct, window.fio_avg_pct, window.storage_avg_pct) == \
        pytest.approx((2, 70.0, 10.0, 50.0))
    assert m.summary(skip_s=5.0)["ctl"].cpu == HostCpu(0, None, None)  # no samples: nothing split either


def test_a_remote_host_has_no_split_and_a_fleets_split_needs_every_host():
    split = HostCpu(10, 80.0, 95.0, 20.0, 50.0, 10.0, {"ceph-osd": 40.0, "ceph-fuse": 10.0})
    other = HostCpu(10, 60.0, 70.0, 30.0, 10.0, 20.0, {"ceph-osd": 10.0, "glusterfsd": 0.0})
    remote = HostCpu(10, 50.0, 60.0)
    both = mean_cpu([split, other])
    assert (both.avg_pct, both.fio_avg_pct, both.storage_avg_pct, both.other_avg_pct) == (70.0, 25.0, 30.0, 15.0)
    assert both.storage_by_name == {"ceph-osd": 25.0, "ceph-fuse": 5.0, "glusterfsd": 0.0}
    mixed = mean_cpu([split, remote, None])
    assert mixed.avg_pct == 65.0 and not mixed.split
    assert (mixed.fio_avg_pct, mixed.storage_avg_pct, mixed.other_avg_pct, mixed.storage_by_name) == \
        (None, None, None, None)


# ------------------------------------------------------------ stored and exported


def metrics(host: str, cpu: HostCpu, source: str = "local") -> HostMetrics:
    return HostMetrics(host, source, cpu.samples, cpu, 19.0622044856315, 24.8, 4968.3, 0.0, 11.7, [])


SPLIT = HostCpu(6, 91.29805092990559, 96.95431472081218, 6.198068296727996, 52.76809456249831, 32.33188807067929,
                {"ceph-osd": 29.404907951330895, "ceph-fuse": 22.605183568900404})


def test_the_split_is_stored_exactly_and_exported(tmp_path):
    with Store.open(tmp_path / "data") as st:
        run_id = new_run(st)
        save(st, run_id, 0, host_cpu=SPLIT, host_metrics=[metrics("local", SPLIT)])
        save(st, run_id, 1, host_cpu=HostCpu(6, 50.0, 60.0), host_metrics=[metrics("h1", HostCpu(6, 50.0, 60.0),
                                                                                   "node_exporter")])
        run = st.get_run(run_id)
    split, remote = run.tests
    assert split.host_cpu == SPLIT and split.host_metrics[0].cpu == SPLIT
    assert remote.host_cpu == HostCpu(6, 50.0, 60.0) and remote.host_metrics[0].cpu.storage_by_name is None
    doc = run.to_dict()["tests"]
    assert doc[0]["host_cpu_storage_avg_pct"] == SPLIT.storage_avg_pct
    assert doc[0]["host_cpu_storage_by_name"] == SPLIT.storage_by_name
    m = doc[0]["host_metrics"]["local"]
    assert (m["cpu_fio_avg_pct"], m["cpu_storage_avg_pct"], m["cpu_other_avg_pct"]) == \
        (SPLIT.fio_avg_pct, SPLIT.storage_avg_pct, SPLIT.other_avg_pct)
    assert m["cpu_storage_by_name"] == SPLIT.storage_by_name
    unknown = doc[1]["host_metrics"]["h1"]
    assert [unknown[k] for k in ("cpu_fio_avg_pct", "cpu_storage_avg_pct", "cpu_other_avg_pct",
                                 "cpu_storage_by_name")] == [None] * 4
    assert doc[1]["host_cpu_fio_avg_pct"] is None and doc[1]["host_cpu_avg_pct"] == 50.0


def test_a_run_stored_before_the_split_loads_without_it(tmp_path, monkeypatch):
    """A store written at schema version 5 (before the split), then opened
    by this iofleet: migrated, and its figures read back with no split."""
    data = tmp_path / "data"
    with monkeypatch.context() as old:
        old.setattr(store_mod, "MIGRATIONS", store_mod.MIGRATIONS[:5])
        old.setattr(store_mod, "SCHEMA_VERSION", 5)
        with Store.open(data) as st:
            run_id = new_run(st)
    conn = sqlite3.connect(data / "results.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
    with conn:
        pk = conn.execute(
            "INSERT INTO tests (run_id, seq, test_id, workload, repeat, params, status, host_cpu_samples,"
            " host_cpu_avg_pct, host_cpu_max_pct) VALUES (?, 0, 't', 'w', 1, '{}', 'ok', 6, 41.5, 97.5)",
            (run_id,)).lastrowid
        conn.execute("INSERT INTO host_metrics (test_pk, role, host, source, samples, cpu_avg_pct, cpu_max_pct,"
                     " series) VALUES (?, 'host', 'local', 'local', 6, 41.5, 97.5, '{}')", (pk,))
    conn.close()
    with Store.open(data) as st:
        (t,) = st.get_run(run_id).tests
    assert t.host_cpu == HostCpu(6, 41.5, 97.5) and not t.host_cpu.split
    assert t.host_metrics[0].cpu == HostCpu(6, 41.5, 97.5)


# ------------------------------------------------------------ free space of FUSE targets

# Recorded: node_exporter 1.5.0 run as Debian's `prometheus` user on this VM,
# with a ceph-fuse mount on /srv/cephfs without allow_other (its user cannot
# read it: the kernel answers its statfs with zeros, not an error).
FUSE_DENIED = """\
node_filesystem_avail_bytes{device="/dev/vda",fstype="ext4",mountpoint="/"} 8.276355072e+10
node_filesystem_avail_bytes{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} 0
node_filesystem_device_error{device="/dev/vda",fstype="ext4",mountpoint="/"} 0
node_filesystem_device_error{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} 0
node_filesystem_free_bytes{device="/dev/vda",fstype="ext4",mountpoint="/"} 2.555234304e+11
node_filesystem_free_bytes{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} 0
node_filesystem_size_bytes{device="/dev/vda",fstype="ext4",mountpoint="/"} 2.70553174016e+11
node_filesystem_size_bytes{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} 0
"""


def test_free_space_of_a_fuse_mount_the_exporter_cannot_read_is_not_known():
    assert free_bytes(FUSE_DENIED, "/srv/cephfs/diag") is None  # not 0 B, and not the root filesystem's
    assert free_bytes(FUSE_DENIED, "/srv/other") == 82763550720
    # Derived: the mount readable (a size and free space), then its statfs failing.
    readable = FUSE_DENIED.replace('mountpoint="/srv/cephfs"} 0', 'mountpoint="/srv/cephfs"} 3594518528')
    assert free_bytes(readable.replace('error{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} '
                                       '3594518528', 'error{device="ceph-fuse",fstype="fuse.ceph-fuse",'
                                                     'mountpoint="/srv/cephfs"} 0'), "/srv/cephfs/d") == 3594518528
    failing = readable.replace('error{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} 3594518528',
                               'error{device="ceph-fuse",fstype="fuse.ceph-fuse",mountpoint="/srv/cephfs"} 1')
    assert free_bytes(failing, "/srv/cephfs/d") is None
