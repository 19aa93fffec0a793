"""The test hosts themselves: real `fio --server` in network namespaces,
driven by a real `fio --client`. These pin down the fixture and the fio
client/server behaviour the fleet runner relies on."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from .network import STATE_DIR
from .prerequisites import unavailable_reason
from .processes import comm, is_running
from .stale import cleanup_stale, leftovers
from .testfleet import TestFleet
from .testhost import accepts, http_get

ROOT = Path(__file__).resolve().parents[2]


def write_job(path: Path, target: Path, runtime: int = 1) -> Path:
    """A 1 s time-based random read of a 4 MiB file in `target` (a path on
    the server: the client sends the job file's text to the server)."""
    path.write_text(textwrap.dedent(f"""\
        [global]
        directory={target}
        ioengine=psync
        rw=randread
        bs=4k
        size=4m
        time_based=1
        runtime={runtime}

        [randread]
        """))
    return path


def run_client(fleet: TestFleet, names, jobdir: Path, runtime: int = 1, timeout: float = 60,
               popen: bool = False):
    """`fio --client=ip:ADDR,8765 JOB ...` for the named hosts."""
    jobs = {n: write_job(jobdir / f"{n}.fio", fleet.host(n).target, runtime) for n in names}
    cmd = ["fio", "--output-format=json+", *fleet.client_args(jobs)]
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def host_results(stdout: str) -> dict[str, dict]:
    """{hostname: job result} from a client run's json+ (without fio's
    'All clients' sum, which it adds when there is more than one client)."""
    doc = json.loads(stdout[stdout.index("{"):])
    return {c["hostname"]: c for c in doc["client_stats"] if c["jobname"] != "All clients"}


def test_four_hosts_run_a_real_fio_client_job(fleet4, tmp_path):
    assert [h.name for h in fleet4.hosts] == ["h1", "h2", "h3", "h4"]
    assert len({h.address for h in fleet4.hosts}) == 4
    for h in fleet4.hosts:
        assert h.port == 8765 and h.metrics is None and h.target.is_dir()
        # the listener only, once the readiness probe's connection handler has gone
        assert fleet4.wait_fio_gone(h.name) == {}

    proc = run_client(fleet4, ["h1", "h2", "h3", "h4"], tmp_path)

    assert proc.returncode == 0, proc.stderr
    results = host_results(proc.stdout)
    # fio names each client's results by the address it connected to
    assert sorted(results) == sorted(h.address for h in fleet4.hosts)
    for r in results.values():
        assert r["error"] == 0 and r["port"] == 8765
        assert r["read"]["io_bytes"] > 0 and r["read"]["clat_ns"]["bins"]  # json+ histograms
    for h in fleet4.hosts:  # the job ran in the host's own target directory;
        # a fio server prefixes data file names with the client's name for it
        assert [(p.name, p.stat().st_size) for p in h.target.iterdir()] == \
            [(f"{h.address}.randread.0.0", 4 * 2**20)]
    assert fleet4.wait_fio_gone() == {}


def test_inventory_describes_the_hosts(make_fleet, tmp_path):
    fleet = make_fleet(2, metrics=True)
    path = fleet.write_inventory(tmp_path / "inventory.yaml")
    doc = yaml.safe_load(path.read_text())
    assert doc == {"hosts": [
        {"name": h.name, "address": f"{h.address}:8765", "targets": [str(h.target)],
         "metrics": f"http://{h.address}:9100/metrics"} for h in fleet.hosts]}
    try:
        from iofleet.fleet.inventory import load_inventory
    except ImportError:  # the inventory model is not there yet
        return
    inventory = load_inventory(path)
    assert [h.fio_client_arg for h in inventory.hosts] == [h.fio_client_arg for h in fleet.hosts]


def test_iofleet_server_serves_fio_clients(make_fleet, tmp_path):
    """What `iofleet server --bind ADDR:PORT` runs (serve_fio), on a test host
    beside its own fio server: it execs fio, which a real client can use."""
    fleet = make_fleet(1)
    h = fleet.host("h1")
    server = fleet.spawn("h1", [sys.executable, "-c", "from iofleet.cli.server import serve_fio; "
                                f"serve_fio({h.address + ':8766'!r})"], label="iofleet-server")
    deadline = time.monotonic() + 10
    while not accepts(h.address, 8766):
        assert server.poll() is None, fleet.server_log("h1", "iofleet-server")
        assert time.monotonic() < deadline, "iofleet server did not listen on port 8766"
        time.sleep(0.05)
    assert comm(server.pid) == "fio"  # the same process, now fio itself
    job = write_job(tmp_path / "job.fio", h.target)
    proc = subprocess.run(["fio", "--output-format=json+", f"--client=ip:{h.address},8766", str(job)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert list(host_results(proc.stdout)) == [h.address]
    log = fleet.server_log("h1", "iofleet-server")
    assert f"exec {shutil.which('fio')} --server=ip:{h.address},8766" in log


def test_a_killed_host_fails_fast_and_the_others_still_run(fleet4, tmp_path):
    fleet4.kill_server("h2")
    assert fleet4.namespace_pids("h2") == []

    t0 = time.monotonic()
    alone = run_client(fleet4, ["h2"], tmp_path, timeout=30)
    assert time.monotonic() - t0 < 5
    assert alone.returncode != 0
    assert f"failed to connect to {fleet4.host('h2').address}:8765" in alone.stderr

    # With other hosts, fio reports the refused one on stderr, runs the rest
    # and exits 0: a fleet runner must count the hosts that answered.
    proc = run_client(fleet4, ["h1", "h2", "h3", "h4"], tmp_path)
    assert proc.returncode == 0
    assert "Connection refused" in proc.stderr
    assert sorted(host_results(proc.stdout)) == sorted(fleet4.host(n).address for n in ("h1", "h3", "h4"))


def test_a_host_dying_mid_run_does_not_hang_the_client(fleet4, tmp_path):
    client = run_client(fleet4, ["h1", "h2"], tmp_path, runtime=2, popen=True)
    deadline = time.monotonic() + 10
    while len(fleet4.fio_processes("h2")) < 3:  # connection, backend, job
        assert time.monotonic() < deadline and client.poll() is None, "the job did not start on h2"
        time.sleep(0.05)
    fleet4.kill_server("h2")
    try:
        out, err = client.communicate(timeout=20)
    finally:
        client.kill()
    # fio exits with 1 when the job's runtime is over, says nothing about the
    # lost host on stderr, and its JSON simply lacks that host
    assert client.returncode == 1
    assert sorted(host_results(out)) == [fleet4.host("h1").address]
    assert fleet4.wait_fio_gone("h1") == {}


def test_teardown_removes_everything_even_when_the_test_fails(tmp_path):
    if reason := unavailable_reason():
        pytest.skip(reason)
    with pytest.raises(RuntimeError, match="mid-way"):
        with TestFleet(3) as fleet:
            client = run_client(fleet, ["h1", "h2", "h3"], tmp_path, runtime=30, popen=True)
            deadline = time.monotonic() + 10
            while not all(fleet.fio_processes(h.name) for h in fleet.hosts):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            pids = [p for h in fleet.hosts for p in fleet.namespace_pids(h.name)]
            token, data_dir, names = fleet.token, fleet.data_dir, [h.namespace for h in fleet.hosts]
            raise RuntimeError("the test failed mid-way, with fio jobs running")
    try:
        assert client.wait(timeout=10) != 0  # the client notices its servers are gone
    finally:
        client.kill()
    assert fleet.leftovers() == []
    assert leftovers(token) == []
    ns_list = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(n in ns_list for n in names)
    assert f"ioft{token}" not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert not [l for l in ps.splitlines() if any(f"ip:{h.address}," in l for h in fleet.hosts)]
    # (killed orphans may stay zombies for a moment, until init reaps them)
    assert not [p for p in pids if is_running(p)]
    assert not data_dir.exists() and not (STATE_DIR / f"{token}.lock").exists()


CRASHING_RUN = """
import os, signal, subprocess, sys, time
sys.path.insert(0, {root!r})
from tests.fleet.testfleet import TestFleet
fleet = TestFleet(2).__enter__()
for h in fleet.hosts:
    job = fleet.data_dir / f"{{h.name}}.fio"
    job.write_text(f"[j]\\ndirectory={{h.target}}\\nrw=randread\\nsize=4m\\ntime_based=1\\nruntime=60\\n")
    subprocess.Popen(["fio", f"--client={{h.fio_client_arg}}", str(job)],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
while not all(fleet.fio_processes(h.name) for h in fleet.hosts):
    time.sleep(0.05)
print(fleet.token, fleet.data_dir, flush=True)
os.kill(os.getpid(), signal.SIGKILL)   # crash: no teardown at all
"""


def test_cleanup_stale_removes_a_crashed_run_and_spares_a_live_one(fleet4):
    crashed = subprocess.run([sys.executable, "-c", CRASHING_RUN.format(root=str(ROOT))],
                             capture_output=True, text=True, timeout=60)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    token, data_dir = crashed.stdout.split()
    try:
        assert leftovers(token), "the crashed run should have left namespaces behind"
        assert Path(data_dir).is_dir()
        cleanup_stale()
        assert leftovers(token) == []
        assert not Path(data_dir).exists()
    finally:  # leave nothing behind even when an assertion failed
        cleanup_stale()
    # fleet4 belongs to a live process (this one): untouched
    assert all(accepts(h.address, h.port) for h in fleet4.hosts)
    assert run_client(fleet4, ["h1"], Path(fleet4.data_dir)).returncode == 0


def test_node_exporter_answers_on_each_host(make_fleet):
    fleet = make_fleet(2, metrics=True)
    for h in fleet.hosts:
        assert h.metrics == f"http://{h.address}:9100/metrics"
        text = http_get(h.metrics)
        # node_exporter reads /proc, which network namespaces share: the CPU
        # counters are the whole machine's, the same on every test host.
        # Network counters (/proc/net, /sys/class/net) are per namespace:
        # each host sees only its own eth0 (node_exporter leaves out lo).
        cpu = [l for l in text.splitlines() if l.startswith("node_cpu_seconds_total{")]
        assert cpu and any('mode="idle"' in l for l in cpu)
        assert len({l.split('cpu="')[1].split('"')[0] for l in cpu}) == os.cpu_count()
        devices = {l.split('device="')[1].split('"')[0] for l in text.splitlines()
                   if l.startswith("node_network_receive_bytes_total{")}
        assert devices == {"eth0"}


def test_two_fleets_at_once_get_separate_subnets(make_fleet, tmp_path):
    a, b = make_fleet(1), make_fleet(1)
    assert a.subnet != b.subnet and a.bridge != b.bridge
    clients = []
    for fleet in (a, b):  # both at once
        (tmp_path / fleet.token).mkdir()
        clients.append(run_client(fleet, ["h1"], tmp_path / fleet.token, popen=True))
    for fleet, client in zip((a, b), clients):
        out, err = client.communicate(timeout=60)
        assert client.returncode == 0, err
        assert list(host_results(out)) == [fleet.host("h1").address]


@pytest.mark.scale
def test_32_hosts_run_one_client_job(make_fleet, tmp_path, capsys):
    t0 = time.monotonic()
    fleet = make_fleet(32)
    started = time.monotonic() - t0

    t1 = time.monotonic()
    proc = run_client(fleet, [h.name for h in fleet.hosts], tmp_path, timeout=120)
    client_seconds = time.monotonic() - t1

    assert proc.returncode == 0, proc.stderr
    assert sorted(host_results(proc.stdout)) == sorted(h.address for h in fleet.hosts)
    with capsys.disabled():
        print(f"\n32 test hosts up in {started:.2f} s; fio client with a 1 s job on all 32: "
              f"{client_seconds:.2f} s from start to all 32 results")
