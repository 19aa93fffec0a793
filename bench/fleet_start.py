"""Fleet start-up at scale: `iofleet run --hosts` on 32 real fio servers
(network namespaces on this machine), measuring how long it takes until a
fio job runs on every host, and the controller's CPU (iofleet plus the fio
client it starts) while the test runs. Writes its section of BENCHMARKS.md.

    make bench                      # or, as root:
    .venv/bin/python bench/fleet_start.py [--hosts 32] [--runtime 10] [--repeats 3]
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.overhead import write_section  # noqa: E402
from tests.fleet.netns import TestFleet  # noqa: E402

SECTION = "## Fleet start-up at scale"
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process, its reaped children, and its live descendants."""
    fields = _stat(pid)
    if not fields:
        return 0.0
    total = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICKS + sum(tree_cpu_s(c) for c in _children(pid))


def fio_client(pid: int) -> int | None:
    """pid of iofleet's fio client for the test itself (not a check or probe)."""
    for c in _children(pid):
        try:
            args = Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.startswith(b"--client") for a in args) and any(Path(a.decode()).name.startswith("job.")
                                                                 for a in args if a.endswith(b".fio")):
            return c
    return None


def job_running(fleet: TestFleet, name: str) -> bool:
    """A fio job process runs on the host: three levels below its listener
    (listener → connection → backend → job)."""
    listener = fleet.host(name).server_pid
    for pid in fleet.fio_processes(name):
        depth, cur = 0, pid
        while cur and cur != listener and depth < 5:
            fields = _stat(cur)
            cur, depth = (int(fields[1]) if fields else 0), depth + 1
        if cur == listener and depth >= 3:
            return True
    return False


def one_run(fleet: TestFleet, inv: Path, plan: Path, data: Path) -> dict:
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "iofleet", "run", str(plan), "--hosts", str(inv),
                             "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = client_at = all_running_at = cpu_at_running = None
    cpu_at_end = end_at = None
    while proc.poll() is None:
        now = time.monotonic()
        if client is None:
            client = fio_client(proc.pid)
            client_at = now if client else None
        elif all_running_at is None:
            if all(job_running(fleet, h.name) for h in fleet.hosts):
                all_running_at, cpu_at_running = now, tree_cpu_s(proc.pid)
        elif end_at is None and _stat(client) is None or (end_at is None and _stat(client)[1] == "Z"):
            end_at, cpu_at_end = now, tree_cpu_s(proc.pid)
        time.sleep(0.02)
    if proc.returncode != 0 or None in (all_running_at, end_at):
        raise SystemExit(f"run failed (rc {proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
    return {"from_iofleet_s": all_running_at - t0, "from_client_s": all_running_at - client_at,
            "controller_cpu_pct": 100 * (cpu_at_end - cpu_at_running) / (end_at - all_running_at),
            "run_s": time.monotonic() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp, TestFleet(a.hosts) as fleet:
        tmp = Path(tmp)
        inv = fleet.write_inventory(tmp / "inv.yaml")
        plan = tmp / "plan.yaml"
        plan.write_text(yaml.safe_dump({"name": "fleet-start", "defaults": {
            "size": "16m", "runtime": f"{a.runtime}s", "ramp": "0s", "engine": "psync", "iodepth": 1},
            "workloads": [{"name": "randread", "read_pct": 100}]}))
        runs = [one_run(fleet, inv, plan, tmp / f"data{i}") for i in range(a.repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    cmd = f".venv/bin/python bench/fleet_start.py --hosts {a.hosts} --runtime {a.runtime} --repeats {a.repeats}"
    facts = f"{platform.node()} ({os.cpu_count()} cores, {platform.release()})"
    rows = "\n".join(f"| {i + 1} | {r['from_client_s']:.2f} | {r['from_iofleet_s']:.2f} | "
                     f"{r['controller_cpu_pct']:.1f} | {r['run_s']:.1f} |" for i, r in enumerate(runs))
    text = f"""{SECTION}

Command: `make bench` (= `{cmd}`, as root)
Measured {datetime.now(timezone.utc):%Y-%m-%d} on {facts}.

`iofleet run --hosts` with a {a.hosts}-host inventory: real `fio --server`s, each in its own
network namespace on this machine (so hosts and controller share its 2 cores), one
4k random-read job per host for {a.runtime} s, no metrics endpoints. "All running": every host has a
fio job process (three levels below its `fio --server` listener). Controller CPU: iofleet and its fio clients (one per host), while all hosts run, in % of one core.

| run | all running, from the test's fio client start (s) | from `iofleet run` start (s) | controller CPU (%) | whole run (s) |
| ---: | ---: | ---: | ---: | ---: |
{rows}

**Median: all {a.hosts} hosts run the test {med['from_client_s']:.2f} s after fio's client starts
({med['from_iofleet_s']:.2f} s after `iofleet run` starts, which first checks every host and probes
the IO engine); the controller uses {med['controller_cpu_pct']:.1f} % of one core meanwhile.**
"""
    write_section(text, SECTION)
    print(text)


if __name__ == "__main__":
    main()
