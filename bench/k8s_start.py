"""Kubernetes start-up: `iofleet run --hosts` with a `kubernetes:` inventory
on the tests' real two-node cluster (tests/kubernetes/cluster.py), 8 fio
server pods (2 nodes × pods_per_node 4), each with its own new PVC on a
local Filesystem PV; timed from the command's start until every pod runs a
fio job doing IO (PVCs created and bound, pods scheduled and started, fio
servers reached and checked, the test's job started). The image is already
on both nodes. Writes its section of BENCHMARKS.md.

    make bench                      # or, as root:
    .venv/bin/python bench/k8s_start.py [--repeats 5] [--benchmarks FILE]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.common import BENCHMARKS, command_line, machine, progress, write_section  # noqa: E402
from bench.fleet_start import client_steps, fio_tree, jobs_below  # noqa: E402
from tests.fleet.processes import sigterm_as_interrupt  # noqa: E402
from tests.kubernetes.cluster import (  # noqa: E402
    KubeCluster, KubeClusterError, _live_slots, _processes_naming, missing, unavailable_reason)

SECTION = "## Kubernetes start-up (8 pods)"
GOAL_S = 15.0
STORAGE_CLASS = "bench-k8s-start"
PODS_PER_NODE = 4
MANAGED = "app.kubernetes.io/managed-by=iofleet"
SETTLE_S = 5.0  # quiet time before each repeat, after the last one's pods are gone


def _parent_comm(pid: int) -> str:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        return Path(f"/proc/{ppid}/comm").read_text().strip()
    except (OSError, ValueError):
        return ""


class PodWatch:
    """The pods' fio processes, seen as processes on this machine.

    Which pod a fio process belongs to: its cgroup (every pod's containers
    are in /ikubeS/NODE/kubepods/QOS/podUID/CONTAINER, the kubelet's
    cgroupfs layout under the cluster's cgroupRoot), so the pod UID and node
    come from the cluster's own bookkeeping, not from guessing by process
    order; only this cluster's slot counts (another cluster on the machine
    has another cgroup parent). A pod's `fio --server` listener: the fio
    process of that pod whose parent is its containerd-shim-runc-v2 (with
    shareProcessNamespace the pod's PID 1 is the pause process, and fio is
    not PID 1 of anything; runc's init execs fio and leaves it to the shim,
    the container's subreaper). Every other fio process of the pod is a
    descendant of it: connection → backend → job, as fleet_start.py's
    `hosts_running` counts them; a job process three levels below the
    listener is a job doing IO. Listeners that were there before the run
    (the previous repeat's pods, being torn down) do not count."""

    def __init__(self, cluster: KubeCluster):
        self.prefix = f"/{cluster.cgroup_parent}/"
        self.pods: dict[int, tuple[str, str] | None] = {}  # listener pid → (node, pod UID), None: not ours
        self.old: set[int] = set()

    def _pod_of(self, pid: int) -> tuple[str, str] | None:
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            path = line.split(":", 2)[2]
            if path.startswith(self.prefix):
                parts = path[len(self.prefix):].split("/")
                pod = next((p[3:] for p in parts if p.startswith("pod")), None)
                return (parts[0], pod) if pod else None
        return None

    def listeners(self, tree: dict[int, int]) -> dict[int, tuple[str, str]]:
        """listener pid → (node, pod UID) of this cluster's pods."""
        out = {}
        for pid, parent in tree.items():
            if parent in tree:
                continue  # a descendant of some fio
            if pid not in self.pods:  # looked at once per process
                self.pods[pid] = self._pod_of(pid) if _parent_comm(pid).startswith("containerd-shim") else None
            if self.pods[pid] is not None and pid not in self.old:
                out[pid] = self.pods[pid]
        return out

    def forget_current(self) -> None:
        self.old |= set(self.listeners(fio_tree()))

    def running(self, tree: dict[int, int], listeners: dict[int, tuple[str, str]]) -> set[tuple[str, str]]:
        """Pods with a fio job process (≥ 3 levels below their listener)."""
        return jobs_below(tree, listeners)


def one_run(watch: PodWatch, inv: Path, plan: Path, data: Path, pods: int) -> dict:
    watch.forget_current()
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "iofleet", "run", str(plan), "--hosts", str(inv),
                             "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    at: dict[str, float] = {}  # first listener, all listeners, first IO, all IO: s from the start
    steps: dict[str, list[float]] = {}  # iofleet's fio clients: step → [first, last] seen
    seen_listening: set[tuple[str, str]] = set()
    seen_running: set[tuple[str, str]] = set()
    while proc.poll() is None:
        now = time.monotonic() - t0
        tree = fio_tree()
        clients = client_steps(proc.pid, tree)
        for step in clients.values():
            steps.setdefault(step, [now, now])[1] = now
        if "all_io" not in at:
            listeners = watch.listeners(tree)
            seen_listening |= set(listeners.values())
            if seen_listening:
                at.setdefault("first_server", now)
            if len(seen_listening) >= pods:
                at.setdefault("all_servers", now)
            if "job" in clients.values():  # the test's client: the host check's engine probe runs jobs too
                seen_running |= watch.running(tree, listeners)
            if seen_running:
                at.setdefault("first_io", now)
            if len(seen_running) >= pods:
                at["all_io"] = now
        time.sleep(0.02)
    run_s = time.monotonic() - t0
    err = proc.stderr.read().decode()
    if proc.returncode != 0 or "all_io" not in at:
        nodes = sorted(n for n, _ in seen_running)
        raise SystemExit(f"run failed (rc {proc.returncode}; pods seen running a job: {len(seen_running)} of {pods}, "
                         f"on {nodes}): {err[-2000:]}")
    run = json.loads(subprocess.run([sys.executable, "-m", "iofleet", "results", "show", "1", "--format", "json",
                                     "--data-dir", str(data)], capture_output=True, text=True, check=True).stdout)
    (test,) = run["tests"]
    if run["status"] != "complete" or test["status"] != "ok":
        raise SystemExit(f"run {run['status']}, test {test['status']}: {test.get('error')}")
    kube = run["host_facts"]["kubernetes"]
    per_node = {}
    for n, _ in seen_running:
        per_node[n] = per_node.get(n, 0) + 1
    check_at = steps.get("check", steps["job"])[0]
    return at | {"deploy_s": kube["start_s"], "rest_s": at["all_io"] - kube["start_s"], "run_s": run_s,
                 # the rest, in three: python's start and the cluster's client, then the pods' facts (to the
                 # host check's client); the host check; the test's fio client until every pod runs its job
                 "pre_s": check_at - kube["start_s"], "check_s": steps["job"][0] - check_at,
                 "test_s": at["all_io"] - steps["job"][0],
                 "steps": steps, "per_node": per_node, "connect": kube["connect"], "iops": test["all"]["iops"],
                 "pods_in_facts": len(kube["pods"])}


def wait_released(cluster: KubeCluster, timeout: float = 120) -> None:
    """Until the run's namespace is gone and no PV of ours is bound (iofleet
    waits for its namespace; the PV controller then releases the claims)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [ns.metadata.name for ns in cluster.core.list_namespace(label_selector=MANAGED).items]
        bound = [pv.metadata.name for pv in cluster.core.list_persistent_volume().items
                 if pv.spec.storage_class_name == STORAGE_CLASS and pv.status.phase == "Bound"]
        if not left and not bound:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"after the run: namespaces {left}, PVs still bound {bound}")
        time.sleep(0.5)


def wait_shims_gone(cluster: KubeCluster, timeout: float = 60) -> None:
    """Until the kubelets have torn the last run's pods down (their sandboxes'
    containerd shims gone): a repeat does not start while the previous one's
    containers, mounts and veths are still being removed."""
    deadline = time.monotonic() + timeout
    while any("containerd-shim" in cmd for cmd in _processes_naming(cluster.dir).values()):
        if time.monotonic() > deadline:
            raise SystemExit(f"the last run's pods' shims still there {timeout:.0f} s after it")
        time.sleep(0.5)


def _cell(run: dict, step: str) -> str:
    span = run["steps"].get(step)
    return f"{span[0]:.1f}–{span[1]:.1f}" if span else "–"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=5, help="the test's runtime, s")
    ap.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="file to write the section to")
    a = ap.parse_args()
    if (reason := unavailable_reason() or missing()):
        sys.exit(reason)
    pods = len(("kube-a", "kube-b")) * PODS_PER_NODE
    runs, others = [], set()
    with tempfile.TemporaryDirectory(prefix="iofleet-bench-") as tmp, sigterm_as_interrupt():
        tmp = Path(tmp)
        cluster = KubeCluster()
        try:
            cluster.start()  # from the main thread: its daemons die with the thread that started them
            progress(f"cluster up in {cluster.start_seconds:.1f} s (slot {cluster.slot}, image {cluster.fio_image})")
            cluster.ensure_storage_class(STORAGE_CLASS)
            for node in cluster.nodes:
                cluster.add_local_pvs(STORAGE_CLASS, node, PODS_PER_NODE, "64Mi")
            inv = tmp / "k8s.yaml"
            inv.write_text(yaml.safe_dump({"kubernetes": {
                "kubeconfig": str(cluster.kubeconfig), "storage_class": STORAGE_CLASS, "volume_mode": "Filesystem",
                "size": "64Mi", "pods_per_node": PODS_PER_NODE, "nodes": list(cluster.nodes),
                "image": cluster.fio_image, "ready_timeout": "120s"}}))
            plan = tmp / "plan.yaml"
            plan.write_text(yaml.safe_dump({"name": "k8s-start", "prepare": "none", "defaults": {
                "bs": "4k", "size": "16m", "runtime": f"{a.runtime}s", "ramp": "0s", "engine": "libaio"},
                "workloads": [{"name": "randread", "read_pct": 100, "random_pct": 100}]}, sort_keys=False))
            watch = PodWatch(cluster)
            for i in range(a.repeats):
                if i:
                    wait_released(cluster)
                    cluster.reset_pvs()  # local PVs are not recycled: the 8 made Available again, empty
                    wait_shims_gone(cluster)
                time.sleep(SETTLE_S)
                others |= _live_slots() - {cluster.slot}
                run = one_run(watch, inv, plan, tmp / f"data{i}", pods)
                runs.append(run)
                progress(f"repeat {i + 1}/{a.repeats}: all {pods} pods doing IO at {run['all_io']:.2f} s "
                         f"(first pod {run['first_io']:.2f} s; deploy {run['deploy_s']:.1f} s, rest "
                         f"{run['rest_s']:.2f} s; fio servers started {run['first_server']:.2f}–"
                         f"{run['all_servers']:.2f} s; steps {run['steps']}; whole run {run['run_s']:.1f} s)")
        finally:
            try:
                cluster.stop()
            except KubeClusterError as exc:  # the figures are measured
                if len(runs) < a.repeats:
                    raise
                print(f"warning: {exc}", file=sys.stderr)
    med = {k: statistics.median(r[k] for r in runs) for k in
           ("all_io", "first_io", "deploy_s", "rest_s", "pre_s", "check_s", "test_s", "first_server", "all_servers",
            "run_s")}
    alls = [r["all_io"] for r in runs]
    firsts = [r["first_io"] for r in runs]
    met = med["all_io"] <= GOAL_S
    cmd = command_line("bench/k8s_start.py", ["--repeats", str(a.repeats), "--runtime", str(a.runtime)])
    rows = "\n".join(
        f"| {i + 1} | {r['all_io']:.2f} | {r['first_io']:.2f} | {r['deploy_s']:.1f} | {r['rest_s']:.2f} | "
        f"{r['pre_s']:.2f} | {r['check_s']:.2f} | {r['test_s']:.2f} | {r['first_server']:.2f}–{r['all_servers']:.2f} | "
        f"{_cell(r, 'check')} | {_cell(r, 'job')} | {r['run_s']:.1f} |" for i, r in enumerate(runs))
    busy = (f"\n\nAnother test cluster (slot {', '.join(map(str, sorted(others)))}) was up on this machine at the "
            f"start of some of the repeats, sharing its 2 cores." if others else "")
    text = f"""{SECTION}

Command: `make bench` (= `{cmd}`, as root)
Measured {machine()}.

`iofleet run PLAN --hosts INVENTORY` with a `kubernetes:` inventory on the tests' real two-node
cluster (tests/kubernetes/cluster.py: etcd, apiserver, controller-manager, scheduler, and kube-a
and kube-b, each its own containerd and kubelet, all on this machine's 2 cores): StorageClass
`{STORAGE_CLASS}` of local Filesystem PVs (WaitForFirstConsumer; {pods} PVs there beforehand,
made Available again between repeats, each repeat started {SETTLE_S:.0f} s after the last one's pods
were torn down), `pods_per_node: {PODS_PER_NODE}` on both nodes = {pods}
fio server pods, the fio image ({cluster.fio_image}) already on both nodes. iofleet creates the
namespace, {pods} PVCs and {pods} pods, waits until every PVC is bound and every pod's fio server
answers, reaches the pods at their IPs ({runs[0]['connect']}), checks them, and runs one test: 4k
random read, libaio, 16 MiB file per pod, `prepare: none`, ramp 0 s, runtime {a.runtime} s; then
deletes it all. Timed from the command's start until **every one of the {pods} pods runs a fio job
of the test**: seen as processes on this machine, a fio job three levels below the pod's `fio
--server` listener (the pod's fio process whose parent is its containerd shim; the pod from the
process's cgroup), counted once the test's fio client runs (the host check's engine probe runs
short fio jobs on the pods before it). With `prepare: none` each pod's fio lays out its 16 MiB
file when the test starts (fio's backend does, before it forks the job), so that is in the span.

The parts: **deploy** = iofleet's own time for the pods (namespace, claims, pods, until every pod
is ready: `host_facts.kubernetes.start_s` of the run) and **the rest** = all doing IO − deploy, in
three: to the check = python's start, the cluster's client and the storage check before the deploy,
and the pods' facts after it, until the host check's fio client starts (its first sight − deploy);
the host check (one fio client for every pod, with the engine probe) until the test's fio client
starts; and from the test's fio client until every pod runs its job. Also when the pods' fio
servers started (the first and the last pod's listener seen) and when iofleet's fio clients of
each step were seen (check, test), all in s from the start.{busy}

| repeat | all {pods} pods doing IO (s) | first pod doing IO (s) | deploy (s) | the rest (s) | rest: to the check (s) | rest: host check (s) | rest: test client → all doing IO (s) | fio servers started (s) | check client (s) | test client (s) | whole run (s) |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{rows}

Result: k8s-start-{pods}-s = {med['all_io']:.1f}

**Median: all {pods} pods do IO {med['all_io']:.1f} s after `iofleet run` starts (spread
{min(alls):.1f}–{max(alls):.1f} s over {a.repeats} runs); the first pod {med['first_io']:.1f} s
(spread {min(firsts):.1f}–{max(firsts):.1f} s). Of that, deploy {med['deploy_s']:.1f} s and the
rest {med['rest_s']:.1f} s (medians: {med['pre_s']:.1f} s to the check, {med['check_s']:.1f} s host check,
{med['test_s']:.1f} s from the test's fio client until every pod runs its job). Goal ≤ {GOAL_S:.0f} s: {'met' if met else 'not met'}.**
"""
    write_section(text, SECTION, a.benchmarks)
    print(text)


if __name__ == "__main__":
    main()
