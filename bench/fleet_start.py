"""Fleet start-up at scale: `iofleet run --hosts` on 64 real fio servers
(network namespaces on this machine), measuring how long it takes until a
fio job runs on every host, and the controller's CPU (iofleet plus the fio
client it starts) while the test runs. Writes its section of BENCHMARKS.md.

    make bench                      # or, as root:
    .venv/bin/python bench/fleet_start.py [--hosts 64] [--runtime 10] [--repeats 3]
"""

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.overhead import write_section  # noqa: E402
from tests.fleet.network import FleetError  # noqa: E402
from tests.fleet.testfleet import TestFleet  # noqa: E402

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


def fio_tree() -> dict[int, int]:
    """pid → parent pid of every live fio process, from one pass over /proc
    (a look per host would take longer than a poll at 64 hosts)."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                text = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            if text[text.index("(") + 1:text.rindex(")")] == "fio":
                fields = text[text.rindex(")") + 2:].split()
                if fields[0] not in "ZX":
                    out[int(entry.name)] = int(fields[1])
    return out


def client_steps(pid: int, tree: dict[int, int]) -> dict[int, str]:
    """iofleet's fio clients (its children) → their step, from their job
    files' names: check, probe-ENGINE, prepare, layout, job (the test), cleanup."""
    out = {}
    for child in (c for c, parent in tree.items() if parent == pid):
        try:
            args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        jobs = [Path(a.decode()).name for a in args if a.endswith(b".fio")]
        if jobs:
            out[child] = jobs[0].split(".")[0]
    return out


def jobs_below(tree: dict[int, int], listeners: dict) -> set:
    """The listeners (pid → name) with a fio job process three levels below
    them (listener → connection → backend → job), by name."""
    running = set()
    for pid in tree:
        depth, cur = 0, pid
        while cur in tree and cur not in listeners and depth < 5:
            cur, depth = tree[cur], depth + 1
        if cur in listeners and depth >= 3:
            running.add(listeners[cur])
    return running


def hosts_running(fleet: TestFleet, tree: dict[int, int]) -> set[str]:
    """Hosts where a fio job process runs below the host's `fio --server` listener."""
    return jobs_below(tree, {h.server_pid: h.name for h in fleet.hosts})


def one_run(fleet: TestFleet, inv: Path, plan: Path, data: Path) -> dict:
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "iofleet", "run", str(plan), "--hosts", str(inv),
                             "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    steps: dict[str, list[float]] = {}  # step → [first, last] seen, s from the start
    test_clients: set[int] = set()
    all_running_at = cpu_at_running = cpu_at_end = end_at = None
    seen: set[str] = set()  # hosts seen running the test
    while proc.poll() is None:
        now = time.monotonic()
        tree = fio_tree()
        for pid, step in client_steps(proc.pid, tree).items():
            steps.setdefault(step, [now - t0, now - t0])[1] = now - t0
            if step == "job":
                test_clients.add(pid)
        if test_clients and all_running_at is None:
            seen |= hosts_running(fleet, tree)
            if len(seen) == len(fleet.hosts):
                all_running_at, cpu_at_running = now, tree_cpu_s(proc.pid)
        elif all_running_at is not None and end_at is None and not test_clients & set(tree):
            end_at, cpu_at_end = now, tree_cpu_s(proc.pid)
        time.sleep(0.02)
    if proc.returncode != 0 or None in (all_running_at, end_at):
        missing = sorted({h.name for h in fleet.hosts} - seen)
        raise SystemExit(f"run failed (rc {proc.returncode}; never seen running: {missing or 'none'}): "
                         f"{proc.stderr.read().decode()[-2000:]}")
    return {"from_iofleet_s": all_running_at - t0, "from_client_s": all_running_at - t0 - steps["job"][0],
            "controller_cpu_pct": 100 * (cpu_at_end - cpu_at_running) / max(end_at - all_running_at, 0.1),
            "run_s": time.monotonic() - t0, "steps": steps}


def relay_cpu(inv: Path, data: Path, runtime: int) -> dict:
    """One test on every host, each server sending its status every second
    (`round: 1s`, the most often a plan can ask), run in this process: the
    CPU of the test's relay thread (forwarding every byte and decoding every
    status frame) over the time it was open, in % of one core."""
    from iofleet.fleet.fio_link import relay
    from iofleet.fleet.inventory import load_inventory
    from iofleet.plan import parse_plan
    from iofleet.results.store import Store
    from iofleet.studies.run import run_plan

    closed, close = [], relay.Relay.close

    def measured_close(self):
        close(self)
        running = float("nan")  # a relay that passed fewer than two status frames (the check, the clean-up)
        if len(self.status_cpu) == 2:
            (t0, cpu0), (t1, cpu1) = self.status_cpu
            running = 100 * (cpu1 - cpu0) / (t1 - t0)
        closed.append((self.cpu_s or 0.0, time.monotonic() - self.opened_at, running))

    plan = parse_plan({"name": "relay-cpu", "prepare": "none", "defaults": {
        "size": "16m", "runtime": f"{runtime}s", "ramp": "0s", "round": "1s", "engine": "psync", "iodepth": 1},
        "workloads": [{"name": "randread", "read_pct": 100}]})
    relay.Relay.close = measured_close
    try:
        with Store.open(data) as store:
            outcome = run_plan(plan, "", store, hosts=load_inventory(inv).hosts)
    finally:
        relay.Relay.close = close
    if not outcome.ok:
        raise SystemExit(f"relay CPU run failed: {outcome.tests[0].error if outcome.tests else outcome.status}")
    cpu_s, open_s, running_pct = max(closed, key=lambda c: c[1])  # the test's relay: open the longest
    return {"cpu_pct": running_pct, "open_pct": 100 * cpu_s / open_s, "cpu_s": cpu_s, "open_s": open_s}


def stored_jobfiles(data: Path) -> dict[str, str]:
    """host → the job file iofleet's test ran there, from the last run's stored archive."""
    archive = max(data.glob("artifacts/run-*/*/files.zip"), key=lambda p: int(p.parent.parent.name.split("-")[1]))
    with zipfile.ZipFile(archive) as z:
        return {n.split(".")[1]: z.read(n).decode() for n in z.namelist() if n.startswith("job.")}


def fio_alone(fleet: TestFleet, jobfiles: dict[str, str], work: Path) -> float:
    """The floor: iofleet's own test job files run by ONE bare fio client for
    every host, on data laid out by an untimed 1-s round first; seconds from
    its start until every host runs a job (the same look as one_run's)."""
    work.mkdir()
    files = {}
    for host, text in jobfiles.items():
        files[host] = work / f"alone.{host}.fio"
        (work / f"layout.{host}.fio").write_text(re.sub(r"(?m)^runtime=\S+$", "runtime=1", text))

    def client(prefix: str) -> list[str]:
        return ["fio", "--output-format=json", *[a for h in fleet.hosts for a in
                (f"--client={h.fio_client_arg}", str(work / f"{prefix}.{h.name}.fio"))]]

    subprocess.run(client("layout"), cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for host, text in jobfiles.items():
        files[host].write_text(text)
    t0 = time.monotonic()
    proc = subprocess.Popen(client("alone"), cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[str] = set()
    while proc.poll() is None and len(seen) < len(fleet.hosts):
        seen |= hosts_running(fleet, fio_tree())
        time.sleep(0.02)
    at = time.monotonic() - t0
    proc.wait()
    if len(seen) < len(fleet.hosts):
        raise SystemExit(f"fio alone: never seen running: {sorted({h.name for h in fleet.hosts} - seen)}")
    return at


def _span(run: dict, step: str) -> float:
    first, last = run["steps"].get(step, (0.0, 0.0))
    return last - first


def _step_cell(run: dict, step: str) -> str:
    span = run["steps"].get(step)
    return f"{span[0]:.1f}–{span[1]:.1f}" if span else "–"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--relay-only", action="store_true", help="measure the relay's CPU only; print, write nothing")
    a = ap.parse_args()
    runs, cold, relays = [], [], []  # runs on kept data, runs from zero, relay CPU runs
    if a.relay_only:
        with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp, TestFleet(a.hosts) as fleet:
            inv = fleet.write_inventory(Path(tmp) / "inv.yaml")
            for i in range(a.repeats):
                print(relay_cpu(inv, Path(tmp) / f"relay{i}", a.runtime), flush=True)
        return
    try:
        with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp, TestFleet(a.hosts) as fleet:
            tmp = Path(tmp)
            inv = fleet.write_inventory(tmp / "inv.yaml")
            plan = tmp / "plan.yaml"
            plan.write_text(yaml.safe_dump({"name": "fleet-start", "defaults": {
                "size": "16m", "runtime": f"{a.runtime}s", "ramp": "0s", "engine": "psync", "iodepth": 1},
                "keep_files": True,  # the second run of each repeat uses the data the first prepared
                "workloads": [{"name": "randread", "read_pct": 100}]}))
            for i in range(a.repeats):
                for h in fleet.hosts:  # from zero: the first run prepares the data, and keeps it
                    for f in h.target.iterdir():
                        shutil.rmtree(f) if f.is_dir() else f.unlink()
                cold.append(one_run(fleet, inv, plan, tmp / f"data{i}"))
                runs.append(one_run(fleet, inv, plan, tmp / f"data{i}"))  # the data kept: not prepared again
                runs[-1]["alone_s"] = fio_alone(fleet, stored_jobfiles(tmp / f"data{i}"), tmp / f"alone{i}")
                relays.append(relay_cpu(inv, tmp / f"relay{i}", a.runtime))
                print(f"run {i + 1}: from zero {cold[-1]}, data kept {runs[-1]}, relay {relays[-1]}",
                      file=sys.stderr, flush=True)
    except FleetError as exc:  # its teardown: the figures are measured
        if len(runs) < a.repeats:
            raise
        print(f"warning: {exc}", file=sys.stderr)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "steps"}
    start = [r["from_iofleet_s"] for r in runs]
    zero = [r["from_iofleet_s"] for r in cold]
    cmd = f".venv/bin/python bench/fleet_start.py --hosts {a.hosts} --runtime {a.runtime} --repeats {a.repeats}"
    facts = f"{platform.node()} ({os.cpu_count()} cores, {platform.release()})"
    rows = "\n".join(f"| {i + 1} | {c['from_iofleet_s']:.2f} | {_step_cell(c, 'prepare')} | {r['from_iofleet_s']:.2f} | "
                     f"{_step_cell(r, 'prepare')} | {r['from_client_s']:.2f} | {_step_cell(r, 'check')} | {_step_cell(r, 'job')} | "
                     f"{r['controller_cpu_pct']:.1f} | {r['run_s']:.1f} | {r['alone_s']:.2f} |"
                     for i, (c, r) in enumerate(zip(cold, runs)))
    text = f"""{SECTION}

Command: `make bench` (= `{cmd}`, as root)
Measured {datetime.now(timezone.utc):%Y-%m-%d} on {facts}.

`iofleet run --hosts` with a {a.hosts}-host inventory: real `fio --server`s, each in its own
network namespace on this machine (so hosts and controller share its 2 cores), one
4k random-read job per host for {a.runtime} s on a 16 MiB file, no metrics endpoints, `keep_files:
true`. Each repeat runs the plan twice: **from zero** (no data on the hosts: the run prepares it, 2
passes over 16 MiB a host, 2 GiB written to this machine's one disk, and keeps it), then **data
kept** (the same plan again: the data the first run prepared and kept is used as it is, not written
again). "All running": every host has been seen with a fio job process of the test (three levels
below its `fio --server` listener). The steps: when iofleet's fio clients of each step were seen (s
from `iofleet run` start; check = the shared host check with the engine probe). Controller CPU:
iofleet and its fio client while all hosts run, in % of one core.

| repeat | from zero: all running (s) | its preparation | data kept: all running (s) | its preparation | from the test's fio client (s) | check | test client | controller CPU (%) | whole run (s) | fio alone (s) |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{rows}

Result: fleet-start-{a.hosts}-s = {med['from_iofleet_s']:.2f}

**The relay at {a.hosts} hosts.** After each repeat, one more {a.runtime}-s test on every host, run
inside the bench's own process, with `round: 1s`: every server sends each job's status frame
(about 184 KB with fio 3.33) every second, and the relay decodes each one as it passes (live figures,
early stop) while forwarding every byte between fio's client and the {a.hosts} servers. Its thread's
CPU while the hosts run (from the first status frame to the last), per repeat:
{", ".join(f"{r['cpu_pct']:.1f} %" for r in relays)}; over the whole time it was open (start-up and the
results at the end too), CPU s / open s: {", ".join(f"{r['cpu_s']:.2f}/{r['open_s']:.1f}" for r in relays)}
({", ".join(f"{r['open_pct']:.1f} %" for r in relays)}).

Result: relay-cpu-{a.hosts}-pct = {statistics.median(r['cpu_pct'] for r in relays):.2f}

Median {statistics.median(r['cpu_pct'] for r in relays):.2f} % of one core (spread
{min(r['cpu_pct'] for r in relays):.2f}–{max(r['cpu_pct'] for r in relays):.2f} %); goal < 10 %.

**Median: all {a.hosts} hosts run the test {med['from_iofleet_s']:.2f} s after `iofleet run` starts on
data kept from an earlier run (spread {min(start):.2f}–{max(start):.2f} s over {a.repeats} runs),
{med['from_client_s']:.2f} s after its fio client starts; from zero, with the 2 GiB to prepare first:
{statistics.median(zero):.2f} s (spread {min(zero):.2f}–{max(zero):.2f} s). The controller uses
{med['controller_cpu_pct']:.1f} % of one core while the hosts run.**

"fio alone" is the floor of the test's own round: the job files iofleet's test ran, given to a bare
fio client for all {a.hosts} hosts right after each run (their data laid out by an untimed 1-s
round first), timed the same way until every host runs a job: median {med['alone_s']:.2f} s, against
{med['from_client_s']:.2f} s for iofleet's test round from its fio client, which goes through
iofleet's relay (fleet/fio_link/relay.py: the way to end one lost host without losing the others' results).
Before the test round come python's start and the host check (median
{statistics.median(_span(r, 'check') for r in runs):.1f} s, one fio client for every host).

Where the time went before (perf and strace of fio 3.33's client and server): every fio process
calibrates its clock (~65 ms of CPU spinning) and, with fio's default clock, then tests the TSC
(~65 ms more). A `fio --server` listener started without `--clocksource` never sets its clock up, so
every connection did both again (measured: 0.1 s of CPU per connection, 0.004 s with the clock
named). `iofleet server`, `hosts deploy` and the test fleet start each server with the clock fio
itself picks on that host named (`fio --debug=time` says which; fio/command.py server_clock). The
host check and the engine probe are one round; each later round (preparation, test, clean-up) is
one fio client for every host through the relay, where it was a fio client per host (64 processes
on 2 cores: the test round alone took 6.4 s from its first client). Issue 19's figure was 25.0 s,
of which the host check alone was 9.1 s; with the shared check but one client per host: 14.8 s.
"""
    write_section(text, SECTION)
    print(text)


if __name__ == "__main__":
    main()
