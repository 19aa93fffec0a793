"""Ingest at scale: what `iofleet run --hosts` does after fio returns —
split the fio client's json+ output by host, parse the per-second logs,
aggregate exactly, judge steady state and skew, store the test with its
series and artifacts — for 64 hosts × 24 tests × 600 per-second samples.
Writes the seconds (median of 3) and peak memory (RSS) to BENCHMARKS.md,
plus one ingest where every host also has node_exporter samples to store.

    make bench                      # or:
    .venv/bin/python bench/ingest.py [--hosts 64] [--samples 600] [--repeats 3] [--data-dir DIR]
    .venv/bin/python bench/ingest.py --profile /tmp/ingest.prof   # cProfile → its own section

The inputs are generated from the recorded real fio outputs in
tests/fixtures/fio (fio 3.33): the client/server json+ document's layout,
the json+ job entries with their latency bins (moved along fio's own
log-linear buckets to each test's latency, counts scaled to 600 s and
jittered per host, with a longer tail), and the logs' line format as fio
writes them with log_avg_msec=1000 and log_unix_epoch. Each host gets its
own throughput, latency, CPU, start skew and per-second noise.

The timed code is iofleet's own: a RunSession over a FleetPlace of 64
inventory hosts, each test through FleetPlace.run_test and the run study's
_run_test (run_on_hosts → each host's part of the client's document and
logs, parse_output, read_series, rebase_series, aggregate, measure_skew,
test_totals/judge_steady, Store.save_test). Only four things are replaced:
fio itself (its output and logs, pre-generated, are hard-linked into the
test's work directory as fio's client would write them), the relay's
sockets (fleet/fio_link/relay.py: no servers), the engine probe and hosts check (no
servers either), and the metrics sampler
(600 pre-made samples of the controller, and of every host with
--node-exporter, instead of reading /proc and scraping).
"""

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import machine, profile_table, result_line, spread, write_section  # noqa: E402
from iofleet.fleet.fio_link.relay import loopback_address  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "fio"
SECTION = "## Ingest at scale"
GOAL_S, GOAL_BYTES = 10.0, 1 << 30
GENERATOR_VERSION = 4  # bump when generate() changes: --inputs regenerates
EPOCH_MS = 1_795_235_281_000  # the clock of the recorded fixture (log_unix_epoch)
FIO_PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
# Per job, iodepth 4, 100 % random: IOPS by block size (a modest all-flash host).
BASE_IOPS = {4096: 9000, 16384: 6000, 65536: 2400, 131072: 1400}


# --- fio's latency buckets (stat.c: plat_idx_to_val, 64 per power of two) -------

def bucket_value(idx: int) -> int:
    if idx < 128:
        return idx
    error_bits = (idx >> 6) - 1
    base = 1 << (error_bits + 6)
    return int(base + ((idx % 64) + 0.5) * (1 << error_bits))


def bucket_index(value: int) -> int:
    if value < 128:
        return value
    msb = value.bit_length() - 1
    error_bits = msb - 6
    return ((error_bits + 1) << 6) + ((value >> error_bits) & 63)


assert all(bucket_index(bucket_value(i)) == i for i in range(1856))


# --- generating the inputs ------------------------------------------------------

def plan_text(samples: int) -> str:
    """examples/hcibench-24.yaml's 24 tests, 600 s each, no warm-up or preparation."""
    return f"""name: hcibench-24-bench
prepare: none
defaults: {{random_pct: 100, working_set_pct: 100, size: 20GiB, iodepth: 4, runtime: {samples}s, ramp: 0}}
workloads:
  - name: hcibench
    matrix: {{bs: [4k, 16k, 64k, 128k], read_pct: [0, 20, 70], jobs: [1, 2]}}
"""


def inventory(n: int) -> list[dict]:
    return [{"name": f"esx{i + 1:02d}", "address": f"10.0.{i // 200}.{i % 200 + 11}",
             "targets": ["/vmfs/volumes/datastore1"]} for i in range(n)]


def _templates() -> dict:
    cs = json.loads((FIXTURES / "clientserver-2hosts-json+.json").read_text())
    multi = json.loads((FIXTURES / "multi-job-json+.json").read_text())
    entry = next(e for e in cs["client_stats"] if e["jobname"] != "All clients")
    return {"doc": cs, "entry": entry, "disk": cs["disk_util"][0], "idle": entry["write"],
            "read": multi["jobs"][0]["read"], "write": multi["jobs"][0]["write"]}


def _bins(template: dict, mean_ns: float, ios: int, rng: random.Random) -> dict[int, int]:
    """The template's histogram moved to `mean_ns` along fio's buckets,
    `ios` IOs in all, each bucket jittered, plus a sparse tail."""
    src = {bucket_index(int(k)): c for k, c in template["lat_ns"]["bins"].items()}
    shift = round(64 * math.log2(mean_ns / template["lat_ns"]["mean"]))
    total = sum(src.values())
    out = {}
    for idx, c in src.items():
        n = max(1, round(c * ios / total * rng.uniform(0.85, 1.15)))
        out[max(0, min(1855, idx + shift))] = n
    top = max(out)
    for idx in sorted(rng.sample(range(top + 1, min(1856, top + 160)), 40)):  # 10 minutes: a longer tail
        out[idx] = out.get(idx, 0) + rng.randint(1, 4)
    return {bucket_value(i): c for i, c in sorted(out.items())}


def _direction(template: dict, bins: dict[int, int], bs: int, runtime_ms: int) -> dict:
    d = json.loads(json.dumps(template))
    ios = sum(bins.values())
    mean = sum(v * c for v, c in bins.items()) / ios
    var = sum(c * (v - mean) ** 2 for v, c in bins.items()) / max(1, ios - 1)
    items = list(bins.items())

    def pct(p):
        threshold, seen = p / 100 * ios, 0
        for v, c in items:
            seen += c
            if seen >= threshold:
                return v
        return items[-1][0]

    iops = ios / (runtime_ms / 1000)
    d.update(io_bytes=ios * bs, io_kbytes=ios * bs // 1024, bw_bytes=round(iops * bs), bw=round(iops * bs / 1024),
             iops=iops, runtime=runtime_ms, total_ios=ios, short_ios=0, drop_ios=0,
             bw_min=round(iops * bs / 1024 * 0.8), bw_max=round(iops * bs / 1024 * 1.2),
             bw_mean=iops * bs / 1024, bw_samples=runtime_ms // 500, iops_min=round(iops * 0.8),
             iops_max=round(iops * 1.2), iops_mean=iops, iops_samples=runtime_ms // 500)
    lat = dict(min=items[0][0], max=items[-1][0], mean=mean, stddev=math.sqrt(var), N=ios,
               percentile={f"{p:f}": pct(p) for p in FIO_PERCENTILES}, bins={str(v): c for v, c in items})
    d["lat_ns"] = lat
    # completion latency: the same IOs a bucket lower (submission is short)
    cbins = {}
    for v, c in items:
        cv = bucket_value(max(0, bucket_index(v) - 1))
        cbins[cv] = cbins.get(cv, 0) + c
    d["clat_ns"] = dict(lat, min=min(cbins), mean=mean * 0.97, percentile={k: bucket_value(max(0, bucket_index(v) - 1))
                                                                          for k, v in lat["percentile"].items()},
                        bins={str(v): c for v, c in cbins.items()})
    d["slat_ns"] = dict(min=800, max=60000, mean=mean * 0.03, stddev=900.0, N=ios)
    return d


def generate(out: Path, hosts: list[dict], specs, samples: int, seed: int = 1) -> None:
    """For each test: <test id>/fio-output.json (the json+ document of the
    fio client that iofleet runs for every host, each host named by its
    relay's loopback address: fleet/fio_link/relay.py), and the logs as fio's client
    writes them: series_{iops,bw,lat}.<job>.log.<relay address>."""
    t = _templates()
    rng = random.Random(seed)
    host_speed = [min(1.3, max(0.7, rng.gauss(1.0, 0.06))) for _ in hosts]
    host_skew_ms = [rng.randint(0, 400) for _ in hosts]
    runtime_ms = samples * 1000
    for k, spec in enumerate(specs):
        d = out / spec.id
        d.mkdir(parents=True)
        entries, disks = [], []
        totals = {"read": [0, 0, 0, 0.0], "write": [0, 0, 0, 0.0]}  # ios, bytes, bw_bytes, iops
        start = EPOCH_MS + k * (runtime_ms + 5000)
        for h, host in enumerate(hosts):
            addr = loopback_address(h)  # the relay's, as fio's client knows the host
            for job in range(spec.jobs):
                speed = host_speed[h] * rng.uniform(0.97, 1.03)
                iops = BASE_IOPS[spec.bs] * speed * (1.0 if spec.read_pct else 0.85)
                lat_ns = spec.iodepth / iops * 1e9
                shares = {"read": spec.read_pct / 100, "write": 1 - spec.read_pct / 100}
                dirs, means = {}, {}
                for name, share in shares.items():
                    if share == 0:
                        dirs[name] = json.loads(json.dumps(t["idle"]))
                        continue
                    mean = lat_ns * (0.9 if name == "read" else 1.25)
                    bins = _bins(t[name], mean, round(iops * share * samples), rng)
                    dirs[name] = _direction(t[name], bins, spec.bs, runtime_ms)
                    means[name] = (dirs[name]["iops"], dirs[name]["lat_ns"]["mean"])
                    for i, key in enumerate(("total_ios", "io_bytes", "bw_bytes", "iops")):
                        totals[name][i] += dirs[name][key]
                entry = json.loads(json.dumps(t["entry"]))
                entry.update(jobname=spec.id, groupid=0, error=0, read=dirs["read"], write=dirs["write"],
                             job_runtime=runtime_ms, usr_cpu=rng.uniform(3, 6), sys_cpu=rng.uniform(10, 20),
                             hostname=addr, port=40000 + h)
                entry["job options"] = {"ioengine": "libaio", "direct": "1", "directory": host["targets"][0],
                                        "size": str(spec.size), "bs": str(spec.bs), "rw": "randrw" if spec.read_pct
                                        else "randwrite", "iodepth": str(spec.iodepth), "numjobs": str(spec.jobs),
                                        "runtime": str(spec.runtime), "lat_percentiles": "1"}
                if spec.read_pct:
                    entry["job options"]["rwmixread"] = str(spec.read_pct)
                entries.append(entry)
                _write_logs(d, job + 1, addr, means, spec.bs, start + host_skew_ms[h], samples, rng)
            disk = dict(t["disk"], hostname=addr, port=40000 + h, name="sdb", util=rng.uniform(85, 99))
            disk.update(read_ios=int(totals["read"][0] / len(hosts)), write_ios=int(totals["write"][0] / len(hosts)))
            disks.append(disk)
        when = start // 1000 + samples
        doc = {"fio version": "fio-3.33", "timestamp": when,
               "time": time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(when)), "global options": [],
               "client_stats": entries, "disk_util": disks}
        (d / "fio-output.json").write_text(json.dumps(doc, indent=2, separators=(",", " : ")) + "\n")  # as fio


def _write_logs(d: Path, job: int, addr: str, means: dict, bs: int, start_ms: int, samples: int,
                rng: random.Random) -> None:
    """fio's iops, bw (KiB/s) and lat (ns) logs of one job, one line per
    second and direction: `time_ms, value, direction, 0, 0`."""
    lines = {"iops": [], "bw": [], "lat": []}
    order = [(0, "read"), (1, "write")]
    t = start_ms
    for i in range(samples):
        t += 1000 + (1 if rng.random() < 0.3 else 0)  # fio's intervals drift by a millisecond now and then
        for code, name in order:
            if name not in means:
                continue
            iops, lat = means[name]
            v = iops * rng.gauss(1.0, 0.03)
            lines["iops"].append(f"{t}, {round(v)}, {code}, 0, 0\n")
            lines["bw"].append(f"{t}, {round(v * bs / 1024)}, {code}, 0, 0\n")
            lines["lat"].append(f"{t}, {round(lat * rng.gauss(1.0, 0.05))}, {code}, 0, 0\n")
    for kind, text in lines.items():
        (d / f"series_{kind}.{job}.log.{addr}").write_text("".join(text))


# --- the timed ingest (a child process, so its peak RSS is its own) --------------

def ingest(inputs: Path, data: Path, hosts_n: int, samples: int, node_exporter: bool = False,
           artifacts: bool = True) -> dict:
    """Run the 24 tests through iofleet's run study with fio replaced by the
    pre-generated outputs; return the seconds and the stored run's id."""
    import threading

    import iofleet.fleet.places.fleet as fleet_place
    import iofleet.fleet.fio_link.remote as remote
    from iofleet.fleet.inventory import Host
    from iofleet.fleet.metrics.records import HostSample
    from iofleet.fleet.metrics.sampler import MetricsSampler
    from iofleet.fleet.fio_link.runner import FioRun
    from iofleet.plan.expand import expand
    from iofleet.plan.load import parse_plan_text
    from iofleet.results.store import Store
    from iofleet.results.store import artifacts as archive
    from iofleet.studies.run import RunSession

    def fake_fio(cmd, workdir, stop, on_live=None, timeout_s=None, abandon=None):
        """The fio client of every host: their logs appear in the work
        directory and its json+ document is its stdout."""
        jobfile = Path(next(a for a in cmd if a.endswith(".fio")))
        test_id = next(line[1:-1] for line in jobfile.read_text().splitlines() if line.startswith("["))
        for f in logs[test_id]:
            try:
                os.link(f, workdir / f.name)
            except OSError:  # --inputs on another file system
                os.symlink(f, workdir / f.name)
        return FioRun(returncode=0, final_output=(inputs / test_id / "fio-output.json").read_text(),
                      stdout="", stderr="", stopped=False, killed=False, wall_s=samples + 1.5)

    class NoRelay(remote.Relay):
        """The relay without its sockets (no servers here): each host's
        address on loopback as the relay gives it, every host done."""

        def open(self, timeout_s=0.0):
            self.opened_at = time.monotonic()
            for link in self.links.values():
                link.connected, link.exit, link.quit_at = True, (0, 0), self.opened_at + samples
            return {}

        def client_arg(self, name):
            return f"ip:{self.links[name].address},8765"

        def close(self):
            pass

    # Each host's logs, listed before the clock starts: fio's client writes
    # them in another process, at no cost to iofleet's (a glob per host did).
    logs: dict[str, list[Path]] = {}
    for test_dir in (d for d in inputs.iterdir() if d.is_dir()):
        logs[test_dir.name] = [test_dir / name for name in os.listdir(test_dir) if name.startswith("series_")]
    rng = random.Random(2)
    host_samples = [[HostSample(t_s=float(i + 1), cpu_pct=rng.uniform(20, 60), disk_busy_pct=rng.uniform(80, 100),
                                disk_iops=rng.uniform(8e3, 2e4), net_rx_bytes_s=rng.uniform(1e6, 1e8),
                                net_tx_bytes_s=rng.uniform(1e6, 1e8)) for i in range(samples + 1)]
                    for _ in range(8)]  # made before the clock starts: the scrapes are not what is timed

    class Sampler(MetricsSampler):
        """The controller (and with node_exporter every host) sampled once a second for the whole test."""

        def __enter__(self):
            self._start = time.monotonic()
            if not node_exporter:  # hosts without an endpoint: nothing sampled but the controller
                self._series[self.local] = list(host_samples[0])
                return self
            for i, h in enumerate(self._series):
                if h != self.local:
                    self._urls[h] = f"http://{h}:9100/metrics"
                self._scrapes[h] = samples
                self._series[h] = list(host_samples[i % len(host_samples)])
            return self

        def __exit__(self, *exc):
            self._pool.shutdown(wait=False)

    class Place(fleet_place.FleetPlace):
        def prepare(self, facts=None):  # hosts check and target locks: no servers to ask
            pass

        def cleanup(self):
            return 0

        def _engines_for(self, specs, work, stop):
            return {name: "libaio" for name in specs}

    remote.run_fio = fake_fio
    remote.Relay = NoRelay
    fleet_place.MetricsSampler = Sampler
    text = plan_text(samples)
    plan = parse_plan_text(text)
    hosts = [Host(**h) for h in inventory(hosts_n)]
    specs = expand(plan)
    with Store.open(data) as store:
        if not artifacts:  # diagnostic: what storing the raw files costs
            start_artifacts = store.start_artifacts
            store.start_artifacts = lambda run_id, seq, test_id, artifacts: start_artifacts(run_id, seq, test_id, {})
        t0, cpu0 = time.perf_counter(), time.process_time()
        with RunSession(plan, text, store, specs=specs, place=Place(hosts, clear_cache=plan.clear_cache),
                        stop=threading.Event()) as session:
            for spec in specs:
                outcome = session.run(spec)
                if outcome.status != "ok":
                    raise SystemExit(f"test {spec.id}: {outcome.status} {outcome.error}")
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        run_id = session.run_id
    if archive._archiver is not None:  # the archiver process's CPU counts too (once it has ended)
        archive._archiver.shutdown()
        cpu += resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime + resource.getrusage(
            resource.RUSAGE_CHILDREN).ru_stime
    return {"seconds": seconds, "cpu_seconds": cpu, "run_id": run_id, "tests": len(specs)}


def child_run(inputs: Path, data: Path, a, node_exporter: bool, profile: Path | None = None,
              artifacts: bool = True) -> dict:
    """One ingest in a fresh child process: its seconds, CPU seconds (all
    threads) and peak RSS (from wait4, as RUSAGE_CHILDREN would give)."""
    cmd = [sys.executable, __file__, "--child", str(inputs), "--data-dir", str(data),
           "--hosts", str(a.hosts), "--samples", str(a.samples)]
    cmd += ["--node-exporter"] if node_exporter else []
    cmd += ["--profile", str(profile)] if profile else []
    cmd += [] if artifacts else ["--no-artifacts"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"ingest child failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_bytes"] = usage.ru_maxrss * 1024  # Linux: KiB
    result["node_exporter"], result["artifacts"] = node_exporter, artifacts
    result["load"] = os.getloadavg()[0]
    return result


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# Measured with the store's previous artifact layout, kept for comparison.
BEFORE = """Before issue 19 each test's raw files were stored one gzip file each (~10,000 a run: three
logs per job and host, job files, fio's JSON), each compressed, written, fsync'ed and renamed on
16 threads that contended for the GIL with the main thread: the same command gave a median of
16.94 s (spread 14.58-19.48 s; 20.93 CPU seconds; 2026-11-24, load average 12-20 from other
work on the machine), 15.11 s on 2026-11-23 at load 2-3, and 10.86 s storing no raw files at all.
Now a test's files go into one zip archive (artifacts/run-ID/NNNN-TEST/files.zip); stores of the
old layout still read. Written on a thread, its zlib work kept taking the GIL back from the main
thread: 10.91 s (spread 10.19-11.32 s) on a quiet machine. A large archive is now written by an
archiver process of its own (results/store/artifacts.py), on the other core; its CPU is counted
above (RUSAGE_CHILDREN once it has ended)."""

PROFILE_SECTION = "## Ingest at scale: profile"
PROFILE_NOTES = """Before the fixes below, the same ingest took 40.5 s on this machine (cProfile: 90 s), the
report of its run 15.4 s. The hot spots and what was done (src/, results unchanged to the bit):

- fio/parse.py `parse_log`: a Python loop per log line (6.9 M lines, 35 s of 90 under the
  profiler). Now a log in fio's usual form (integers, same number of fields on every line) is
  checked with one regular expression and read by `numpy.fromstring`; anything else still goes
  through the line-by-line parser, which reports bad lines as before. Values are scaled there
  (`scale=`, the bw log's KiB/s → bytes/s) instead of in a second list.
- fio/merge.py `percentile_from_bins`: a `Fraction` compared with the running count at every
  bucket (10 s); now one exact integer threshold (ceil of p/100 × total, from the Fraction's
  numerator and denominator), and `percentiles` sorts a histogram once and bisects its running
  sum for all five percentiles. `merge_bins` copies the first histogram at C speed.
- fio/parse.py `_bins`: a histogram's keys and counts are checked in bulk (the loop remains for
  the error message).
- fleet/fio_link/remote.py: the inventory name of each fio-reported host was searched per job (128 jobs ×
  64 hosts, each parsing addresses, 5.5 s); now one lookup table per run (`_host_names`).
- fleet/fio_link/runner.py `read_series`: six globs per host over a directory of ~400 logs (3.9 s); now
  one listing per test, which fleet/places/ passes to each host's call.
- analysis/methodology.py `test_totals`: a Python loop over every sample, used by the run study
  (steady state) and by every per-second chart of the report (6.5 s of the ingest, 9.6 s of the
  report profile); now numpy, adding series by series in the same order (np.bincount), so every
  sum is the same float as before.
- results/store/artifacts.py: the artifacts (fio's JSON, job files and ~300 logs per test) were compressed
  at gzip level 6 and fsync'ed one by one (13 s of fsync and 6 s of zlib); now level 4 (3 % larger
  on these files, half the CPU), on 16 threads started as soon as the test's row exists, so the
  fsyncs overlap each other and the rows' inserts.
- report/charts.py `_figure`: the layout is given to the figure's constructor (plotly checks its
  template once, not twice); results/aggregate.py `shared_by_host`, used by report/html.py: a
  test's per-host figures are merged once per report, not three times.

The largest cost left is storing the raw files: ~8,500 gzip artifacts per run (three logs per
job and host, plus job files and fio's JSON), each compressed, written, fsync'ed and renamed. The
same ingest without them takes about 8 s instead of 12 (the diagnostic row of the section above):
their threads add ~4 s of system time, mostly futex calls of threads handing the GIL back and forth
(strace: 122,000 futex calls for 16 hosts), which also makes the main thread's sqlite3 statements
wait (`execute` and the lock waits in the table below). Fewer, larger artifacts (one archive of a
test's logs) would remove most of it; issue 19 did that (one zip archive a test, see the section
above), and stores each job's latency histogram as int64 pairs instead of JSON and a test's jobs in
one executemany. The CPU work left is otherwise mostly proportional to the data: reading 209 MB of logs (regular expression and
numpy), decoding 78 MB of JSON, converting samples to Python lists (the Series type) and back,
merging 3 × 2,304 histograms, and with node_exporter encoding 5.6 M host-metric floats as JSON
(the host_metrics.series column: ~2.5 s for 64 hosts, the largest single item left; storing them
packed like the fio series would need a schema change)."""


def profile_section(stats: Path, command: str, top: int = 20) -> str:
    return f"""{PROFILE_SECTION}

Command: `{command}` (cProfile of the child process, main thread; not part of `make bench`)
Measured {machine()}.

{PROFILE_NOTES}

Top {top} functions by own time after the fixes:

{profile_table(stats, top)}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--samples", type=int, default=600, help="per-second samples per series (test runtime, s)")
    ap.add_argument("--repeats", type=int, default=3, help="ingests of the fio outputs (the goal's figure)")
    ap.add_argument("--node-exporter-runs", type=int, default=1,
                    help="ingests with node_exporter samples of every host as well")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "scratch" / "bench-ingest",
                    help="results store of the last ingest, kept for bench/report.py (replaced)")
    ap.add_argument("--profile", type=Path,
                    help="cProfile one ingest into this file and write its section of BENCHMARKS.md instead")
    ap.add_argument("--no-artifacts-runs", type=int, default=1,
                    help="ingests that store no raw files (diagnostic: what the artifacts cost)")
    ap.add_argument("--node-exporter", action="store_true", help="with --profile (or --child): with node_exporter")
    ap.add_argument("--no-artifacts", dest="artifacts", action="store_false", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", type=Path, help="keep the generated inputs here and reuse them next time")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--no-write", dest="write", action="store_false",
                    help="print the figures only, leaving BENCHMARKS.md as it is")
    a = ap.parse_args()
    if a.child:
        if a.profile:
            import cProfile
            prof = cProfile.Profile()
            result = prof.runcall(ingest, a.child, a.data_dir, a.hosts, a.samples, a.node_exporter, a.artifacts)
            prof.dump_stats(a.profile)
        else:
            result = ingest(a.child, a.data_dir, a.hosts, a.samples, a.node_exporter, a.artifacts)
        print(json.dumps(result))
        return

    from iofleet.plan.expand import expand
    from iofleet.plan.load import parse_plan_text

    specs = expand(parse_plan_text(plan_text(a.samples)))
    hosts = inventory(a.hosts)
    # (node_exporter, artifacts) of each ingest; the kept store is the last one's
    plan = ([(False, True)] * a.repeats + [(False, False)] * a.no_artifacts_runs + [(True, True)] * a.node_exporter_runs
            if not a.profile else [(a.node_exporter, True)])
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-ingest-") as tmp:
        tmp = Path(tmp)
        inputs = a.inputs or tmp / "inputs"
        stamp = inputs / f"generated-{a.hosts}x{a.samples}-v{GENERATOR_VERSION}"
        t0 = time.perf_counter()
        if not stamp.exists():
            shutil.rmtree(inputs, ignore_errors=True)
            generate(inputs, hosts, specs, a.samples)
            stamp.touch()
        gen_s = time.perf_counter() - t0
        files = [f for f in inputs.rglob("*") if f.is_file()]
        log_files = [f for f in files if f.name.startswith("series_")]
        logs_bytes = sum(f.stat().st_size for f in log_files)
        json_bytes = sum(f.stat().st_size for f in files if f.name.startswith("fio-output."))
        log_lines = sum(f.read_bytes().count(b"\n") for f in log_files)
        print(f"inputs: {len(specs)} tests × {a.hosts} hosts, {len(log_files):,} log files "
              f"({logs_bytes / 1e6:.0f} MB, {log_lines:,} lines), json+ {json_bytes / 1e6:.0f} MB; "
              + (f"generated in {gen_s:.0f} s" if gen_s > 1 else f"reused from {inputs}"), flush=True)
        runs = []
        for i, (node_exporter, artifacts) in enumerate(plan):
            data = tmp / f"data{i}"
            runs.append(child_run(inputs, data, a, node_exporter, a.profile, artifacts))
            r = runs[-1]
            kind = " (node_exporter)" if node_exporter else "" if artifacts else " (no artifacts)"
            print(f"ingest {i + 1}/{len(plan)}{kind}: {r['seconds']:.2f} s "
                  f"({r['cpu_seconds']:.2f} s CPU), peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB, "
                  f"load average {r['load']:.1f}", flush=True)
            if i < len(plan) - 1:
                shutil.rmtree(data)
        store_bytes = dir_size(data)
        n_artifacts = sum(1 for f in (data / "artifacts").rglob("*") if f.is_file())
        db_bytes = (data / "results.db").stat().st_size
        if a.data_dir.exists():
            shutil.rmtree(a.data_dir)
        shutil.move(str(data), a.data_dir)
    if a.profile:
        command = (f".venv/bin/python bench/ingest.py --profile {a.profile}"
                   + (" --node-exporter" if a.node_exporter else ""))
        if a.write:
            write_section(profile_section(a.profile, command), PROFILE_SECTION)
        print(f"profile written to {a.profile}" + (" and BENCHMARKS.md" if a.write else ""))
        return
    fio_only = [r for r in runs if not r["node_exporter"] and r["artifacts"]]
    with_ne = [r for r in runs if r["node_exporter"]]
    no_art = [r for r in runs if not r["artifacts"]]
    med_s = statistics.median(r["seconds"] for r in fio_only)
    lo_s, hi_s = spread([r["seconds"] for r in fio_only])
    med_cpu = statistics.median(r["cpu_seconds"] for r in fio_only)
    med_rss = statistics.median(r["peak_rss_bytes"] for r in fio_only)
    verdict = "meets" if med_s < GOAL_S and max(r["peak_rss_bytes"] for r in runs) < GOAL_BYTES else "misses"
    series = sum(s.jobs * (3 if s.read_pct == 0 else 6) for s in specs) * a.hosts
    rows = "\n".join(
        f"| {i + 1} | {'yes' if r['node_exporter'] else 'no'} | {'yes' if r['artifacts'] else '**no**'} "
        f"| {r['seconds']:.2f} | {r['cpu_seconds']:.2f} | {r['peak_rss_bytes'] / 2**20:.0f} | {r['load']:.1f} |"
        for i, r in enumerate(runs))
    ne_line = ""
    if with_ne:
        ne_s = statistics.median(r["seconds"] for r in with_ne)
        ne_line = (f"\nWith node_exporter on every host ({a.hosts} × {a.samples} samples more per test to store, "
                   f"as JSON): {ne_s:.2f} s{' (median)' if len(with_ne) > 1 else ''}.")
    if no_art:
        na_s = statistics.median(r["seconds"] for r in no_art)
        ne_line += (f"\nDiagnostic: the same ingest storing no raw files (artifacts) takes {na_s:.2f} s; the "
                    f"difference is what writing {n_artifacts:,} zip archives costs (one a test, compressed by "
                    f"the archiver process while the test is summed up, fsync'ed and renamed).")
    text = f"""{SECTION}

Command: `make bench` (= `.venv/bin/python bench/ingest.py --hosts {a.hosts} --samples {a.samples} --repeats {a.repeats} --no-artifacts-runs {a.no_artifacts_runs} --node-exporter-runs {a.node_exporter_runs}`)
Measured {machine()}.

What `iofleet run --hosts` does after fio returns, for {len(specs)} tests (examples/hcibench-24.yaml:
4k–128k × 0/20/70 % read × 1–2 jobs, iodepth 4) of {a.samples} s on {a.hosts} hosts: split the fio client's
json+ document by host (one a test, {json_bytes / len(specs) / 1e6:.1f} MB with every job's latency bins), parse
{len(log_files):,} per-second logs ({log_lines:,} lines, {logs_bytes / 1e6:.0f} MB: {series:,} series of
{a.samples} samples), aggregate exactly, judge steady state and start skew, and store each test
with its series and artifacts (json+, job files, logs: one zip a test) in a fresh data directory on this
machine's ext4 disk. The inputs are generated from the recorded fio 3.33 outputs in
tests/fixtures/fio (see the script's docstring); the code timed is iofleet's run study, with only
fio, the relay's sockets, the engine probe and the metrics scrapes replaced. Each ingest runs in its own process:
seconds from the run's start to its last test stored, CPU seconds of all its threads, peak RSS of
the process (wait4). The goal's figure is without node_exporter (fio's outputs only); one row
stores no artifacts (diagnostic), the last adds what a fleet with node_exporter also stores.
Load average: the 1-minute load at the end of each ingest, the ingest itself included (about 1.2
CPUs): above that, other work ran on the machine meanwhile.

| ingest | node_exporter | artifacts | seconds | CPU seconds | peak RSS (MiB) | load average |
| ---: | --- | --- | ---: | ---: | ---: | ---: |
{rows}

**Median: {med_s:.2f} s (spread {lo_s:.2f}-{hi_s:.2f} s; {med_cpu:.2f} CPU seconds) and {med_rss / 2**20:.0f} MiB
peak RSS** (goal < {GOAL_S:.0f} s and < 1 GiB: {verdict} it).{ne_line}
The stored run: {store_bytes / 1e6:.0f} MB ({db_bytes / 1e6:.0f} MB database, the rest {n_artifacts:,} zip archives of raw files).

{BEFORE}

{result_line("ingest-64-s", med_s)}
"""
    if a.write:
        write_section(text, SECTION)
    print(text)


if __name__ == "__main__":
    main()
