"""The test cluster itself (cluster.py, conftest.py's kube_cluster): both
nodes Ready and reached by the apiserver at their bridge; fio server pods
pinned to each node on local PVs (a Filesystem and a Block claim each) that
fio on the host drives at their pod IPs, through exec and through the
apiserver's port-forward; the image's fio is this machine's; released
local PVs made available again; and a second cluster, with a pod on a
Block PV, removed to nothing."""

import json
import select
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from iofleet.fleet.kubernetes.image import fio_version

from .cluster import KUBE_VERSION, STATE_DIR, KubeCluster, _cgroup_mounts, _mounts_under

STORAGE_CLASS = "test-cluster-local"
FIO_PORT = 8765
JOB = """\
[global]
runtime=2
time_based=1
bs=4k
ioengine=libaio
direct=1
iodepth=4

[fs-randread]
filename=/data/fio.dat
size=16m
rw=randread

[block-randwrite]
stonewall
filename=/dev/iofleet-volume
rw=randwrite
# the pod may not flush the device's buffer cache (BLKFLSBUF needs CAP_SYS_ADMIN)
invalidate=0
"""


def _wait(what, check, timeout=60.0, state=None):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f} s" + (f"; {state()}" if state else ""))
        time.sleep(0.2)
    return result


def _pod_state(cluster, namespace):
    """Every pod's phase, conditions and container states, and the namespace's events (why a pod is not ready)."""
    core = cluster.core
    pods = [(p.metadata.name, p.spec.node_name, p.status.phase,
             [(c.type, c.status, c.reason) for c in p.status.conditions or []],
             [str(c.state) for c in p.status.container_statuses or []])
            for p in core.list_namespaced_pod(namespace).items]
    events = [f"{e.involved_object.name}: {e.reason}: {e.message}" for e in core.list_namespaced_event(namespace).items]
    pvs = [(v.metadata.name, v.status.phase) for v in core.list_persistent_volume().items]
    return f"pods {pods}; events {events[-12:]}; PVs {pvs}; logs: {cluster.log_tails(8)}"


def _claim(name, block):
    from kubernetes import client

    return client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"], storage_class_name=STORAGE_CLASS,
            volume_mode="Block" if block else "Filesystem",
            resources=client.V1VolumeResourceRequirements(requests={"storage": "64Mi"})))


def _fio_pod(name, node, image, fs_claim=None, block_claim=None):
    """fio --server pinned to `node` (a node selector: WaitForFirstConsumer
    binds the claims when the scheduler places the pod). One process
    namespace: fio as PID 1 would ignore SIGTERM (it has no handler), and
    each deletion would wait out the grace period; under pause it ends at once."""
    from kubernetes import client

    volumes, mounts, devices = [], [], []
    if fs_claim:
        volumes.append(client.V1Volume(name="fs", persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(
            claim_name=fs_claim)))
        mounts.append(client.V1VolumeMount(name="fs", mount_path="/data"))
    if block_claim:
        volumes.append(client.V1Volume(name="block", persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(
            claim_name=block_claim)))
        devices.append(client.V1VolumeDevice(name="block", device_path="/dev/iofleet-volume"))
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name), spec=client.V1PodSpec(
        node_selector={"kubernetes.io/hostname": node}, termination_grace_period_seconds=1, volumes=volumes,
        share_process_namespace=True,
        containers=[client.V1Container(
            name="fio", image=image, image_pull_policy="Never", ports=[client.V1ContainerPort(container_port=FIO_PORT)],
            readiness_probe=client.V1Probe(tcp_socket=client.V1TCPSocketAction(port=FIO_PORT), period_seconds=1),
            volume_mounts=mounts, volume_devices=devices)]))


def _ready_pods(core, namespace, names):
    pods = {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}
    if all(n in pods and pods[n].status.phase == "Running"
           and all(c.ready for c in pods[n].status.container_statuses or [False]) for n in names):
        return pods
    return None


@pytest.fixture(scope="module")
def fio_pods(kube_cluster):
    """{node: pod} of one fio server pod per node, each with a Filesystem
    claim at /data and a Block claim at /dev/iofleet-volume on local PVs;
    `fio_pods.namespace` its namespace."""
    from kubernetes import client

    core = kube_cluster.core
    namespace = "test-cluster"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    kube_cluster.wait_service_account(namespace)
    kube_cluster.ensure_storage_class(STORAGE_CLASS)
    t0 = time.monotonic()
    for node in kube_cluster.nodes:
        kube_cluster.add_local_pvs(STORAGE_CLASS, node, 1)
        kube_cluster.add_local_pvs(STORAGE_CLASS, node, 1, block=True)
        core.create_namespaced_persistent_volume_claim(namespace, _claim(f"{node}-fs", block=False))
        core.create_namespaced_persistent_volume_claim(namespace, _claim(f"{node}-block", block=True))
        core.create_namespaced_pod(namespace, _fio_pod(f"fio-{node}", node, kube_cluster.fio_image,
                                                       f"{node}-fs", f"{node}-block"))
    pods = _wait("fio pods running and ready",
                 lambda: _ready_pods(core, namespace, [f"fio-{n}" for n in kube_cluster.nodes]), 90)
    print(f"fio pods ready in {time.monotonic() - t0:.1f} s")
    yield {node: pods[f"fio-{node}"] for node in kube_cluster.nodes}
    core.delete_namespace(namespace)


def _fio_client(*servers: str, tmp_path: Path) -> list[dict]:
    """fio --client on each "host,port" with JOB; the per-job client stats."""
    job = tmp_path / "job.fio"
    job.write_text(JOB)
    argv = ["fio", "--output-format=json"]
    for server in servers:
        argv += [f"--client={server}", str(job)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "\n{" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    # the servers' own "<host> ..." lines come first
    report = json.loads(proc.stdout[proc.stdout.index("\n{"):])
    return [s for s in report["client_stats"] if s["jobname"] != "All clients"]


def test_both_nodes_are_ready_and_their_kubelets_reached_at_their_bridge(kube_cluster):
    nodes = {n.metadata.name: n for n in kube_cluster.core.list_node().items}
    assert sorted(nodes) == kube_cluster.nodes == ["kube-a", "kube-b"]
    for name, node in nodes.items():
        info = kube_cluster.node_info[name]
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        assert {(a.type, a.address) for a in node.status.addresses} == {("InternalIP", info.ip), ("Hostname", name)}
        assert node.status.daemon_endpoints.kubelet_endpoint.port == info.kubelet_port
        assert node.status.node_info.kubelet_version == KUBE_VERSION
        assert node.status.node_info.container_runtime_version.startswith("containerd://")
    print(f"cluster started in {kube_cluster.start_seconds:.1f} s ({kube_cluster.snapshotter} snapshotter)")


def test_fio_servers_in_pods_on_local_pvs_serve_fio_on_the_host(kube_cluster, fio_pods, tmp_path):
    core = kube_cluster.core
    for node, pod in fio_pods.items():
        assert pod.spec.node_name == node and pod.status.pod_ip
        for claim in (f"{node}-fs", f"{node}-block"):  # bound to a PV of that node
            pvc = core.read_namespaced_persistent_volume_claim(claim, pod.metadata.namespace)
            assert pvc.status.phase == "Bound"
            assert kube_cluster.pvs[pvc.spec.volume_name].node == node
    stats = _fio_client(*(f"ip:{p.status.pod_ip},{FIO_PORT}" for p in fio_pods.values()), tmp_path=tmp_path)
    got = {(s["hostname"], s["jobname"]): s for s in stats}
    for pod in fio_pods.values():
        assert got[(pod.status.pod_ip, "fs-randread")]["read"]["iops"] > 0
        assert got[(pod.status.pod_ip, "block-randwrite")]["write"]["iops"] > 0
        assert all(s["error"] == 0 for s in stats)


def test_the_image_runs_this_machines_fio(kube_cluster, fio_pods):
    from kubernetes.stream import stream

    local = fio_version(shutil.which("fio"))
    assert kube_cluster.fio_version == local and kube_cluster.fio_image.endswith(f":{local}")
    pod = fio_pods["kube-a"]
    out = stream(kube_cluster.core.connect_get_namespaced_pod_exec, pod.metadata.name, pod.metadata.namespace,
                 command=["/usr/bin/fio", "--version"], stdout=True, stderr=True, stdin=False, tty=False)
    assert out.strip() == f"fio-{local}"


def test_port_forward_through_the_apiserver_reaches_the_fio_server(kube_cluster, fio_pods, tmp_path):
    """The Python client's port-forward (websocket to the apiserver, on to
    the kubelet and containerd's stream server), relayed to a local port."""
    from kubernetes.stream import portforward

    pod = fio_pods["kube-b"]
    forward = portforward(kube_cluster.core.connect_get_namespaced_pod_portforward, pod.metadata.name,
                          pod.metadata.namespace, ports=str(FIO_PORT))
    remote = forward.socket(FIO_PORT)
    remote.setblocking(True)
    listener = socket.create_server(("127.0.0.1", 0))

    def relay():
        conn, _ = listener.accept()
        with conn:
            while True:
                ready, _, _ = select.select([conn, remote], [], [], 60)
                data = ready and ready[0].recv(65536)
                if not data:
                    return
                (remote if ready[0] is conn else conn).sendall(data)

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()
    try:
        stats = _fio_client(f"127.0.0.1,{listener.getsockname()[1]}", tmp_path=tmp_path)
    finally:
        listener.close()
        forward.close()
    assert {s["jobname"] for s in stats} == {"fs-randread", "block-randwrite"}
    assert all(s["read"]["iops"] + s["write"]["iops"] > 0 for s in stats)


def test_reset_pvs_makes_released_local_pvs_available_again_and_empty(kube_cluster, kube_namespace):
    core = kube_cluster.core
    kube_cluster.ensure_storage_class("test-reset")
    (name,) = kube_cluster.add_local_pvs("test-reset", "kube-b", 1)
    claim = _claim("reset", block=False)
    claim.spec.storage_class_name, claim.spec.volume_name = "test-reset", name  # bound at once, no pod needed
    core.create_namespaced_persistent_volume_claim(kube_namespace, claim)
    phase = lambda: core.read_persistent_volume(name).status.phase  # noqa: E731
    _wait("the PV bound", lambda: phase() == "Bound", 30)
    (Path(kube_cluster.pvs[name].path) / "old-data").write_text("x")
    core.delete_namespaced_persistent_volume_claim("reset", kube_namespace)
    _wait("the PV released", lambda: phase() == "Released", 30)
    assert kube_cluster.reset_pvs() == [name]
    _wait("the PV available", lambda: phase() == "Available", 30)
    assert not any(Path(kube_cluster.pvs[name].path).iterdir())


# In `make test-scale`: inside the whole suite its pod twice did not get ready (alone it passes in
# 20 s; why is not known yet: the wait now reports the pods' states, events and the kubelets' logs).
@pytest.mark.scale
def test_a_second_cluster_with_a_block_volume_pod_is_removed_to_nothing(kube_cluster):
    """Beside the session's cluster (another slot: its own bridges, pod
    CIDRs, cgroups): a pod on a Block PV (a loop device, which the kubelet
    holds with a loop device of its own) is up, then stop() leaves nothing."""
    from kubernetes import client

    second = KubeCluster()
    second.start()
    try:
        assert second.slot != kube_cluster.slot
        bridges = [n.bridge for n in second.node_info.values()]
        assert not set(bridges) & {n.bridge for n in kube_cluster.node_info.values()}
        second.ensure_storage_class(STORAGE_CLASS)
        second.add_local_pvs(STORAGE_CLASS, "kube-b", 1, block=True)
        second.core.create_namespaced_persistent_volume_claim("default", _claim("block", block=True))
        second.core.create_namespaced_pod("default", _fio_pod("fio", "kube-b", second.fio_image, block_claim="block"))
        # A bound, not a timing: with four clusters up on 2 cores it once took over a minute.
        _wait("the second cluster's pod", lambda: _ready_pods(second.core, "default", ["fio"]), 180,
              state=lambda: _pod_state(second, "default"))
        directory, slot = second.dir, second.slot
        assert _mounts_under(directory) and second.leftovers()
    finally:
        second.stop()
    print(f"second cluster: started in {second.start_seconds:.1f} s, stopped in {second.stop_seconds:.1f} s")
    assert second.leftovers() == []
    assert not directory.exists() and not _mounts_under(directory)
    assert not any(Path(f"/sys/class/net/{b}").exists() for b in bridges)
    assert not any((Path(m) / f"ikube{slot}").exists() for m in _cgroup_mounts())
    assert not (STATE_DIR / f"slot-{slot}.json").exists()
    assert not any(str(directory) in Path(f"/sys/block/{d.name}/loop/backing_file").read_text()
                   for d in Path("/sys/block").glob("loop*") if (d / "loop").exists())
    # the session's cluster is untouched
    assert all(any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
               for n in kube_cluster.core.list_node().items)
    assert client.VersionApi(kube_cluster.core.api_client).get_code().git_version == KUBE_VERSION
