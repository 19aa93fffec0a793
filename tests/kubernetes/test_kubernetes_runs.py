"""iofleet on a real two-node cluster (conftest.py's kube_cluster): a
StorageClass's PVCs as targets, fio server pods as the fleet — Filesystem
and Block volumes, pods pinned to both nodes, a pod lost mid-test, a killed
controller's namespace found and cleaned, two StorageClasses compared, and
a pod that cannot start explained in one line."""

import json
import os
import signal
import time

import pytest
import yaml

from ..cli import iofleet, show_json, wait_for, write_plan

SHORT = {"size": "8m", "runtime": "2s", "ramp": "0s", "iodepth": 4, "engine": "libaio"}


def _inventory(tmp_path, cluster, **section) -> str:
    path = tmp_path / "k8s.yaml"
    path.write_text(yaml.safe_dump({"kubernetes": {"kubeconfig": str(cluster.kubeconfig), "size": "64Mi",
                                                   "image": cluster.fio_image, "ready_timeout": "90s"} | section}))
    return str(path)


def _iofleet_namespaces(cluster) -> list[str]:
    return [ns.metadata.name for ns in cluster.core.list_namespace(
        label_selector="app.kubernetes.io/managed-by=iofleet").items if ns.status.phase != "Terminating"]


def test_filesystem_pvcs_on_two_nodes_run_merge_and_are_deleted(tmp_path, kube_cluster, data_dir):
    kube_cluster.ensure_storage_class("iofleet-fs")
    for node in kube_cluster.nodes:
        kube_cluster.add_local_pvs("iofleet-fs", node, 1, "64Mi")
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-fs")
    # 8 s: a node's CPU counts whole spans between two kubelet readings (every 1-2 s here) inside the test.
    plan = write_plan(tmp_path / "p.yaml", name="fs", defaults=SHORT | {"runtime": "8s"},
                      workloads=[{"name": "randread", "read_pct": 100}, {"name": "randwrite", "read_pct": 0}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, timeout=600)
    run = show_json(1, data_dir)
    assert run["status"] == "complete", proc.stdout + proc.stderr
    hosts = {f"{node}-0" for node in kube_cluster.nodes}
    for test in run["tests"]:
        assert set(test["hosts"]) == hosts and all(test["hosts"][h]["all"]["ios"] > 0 for h in hosts)
        assert test["all"]["ios"] == sum(test["hosts"][h]["all"]["ios"] for h in hosts)
    # Each pod's node CPU, from its kubelet: busy while fio ran, never more than all its cores.
    for test in run["tests"]:
        cpu = test["host_metrics"]
        assert all(cpu[h]["source"] == "kubelet" and 0 < cpu[h]["cpu_avg_pct"] <= 100 for h in hosts), cpu
    pods = run["host_facts"]["kubernetes"]["pods"]
    assert {p["node"] for p in pods.values()} == set(kube_cluster.nodes)  # pinned: one per node
    for host, pod in pods.items():
        assert pod["storage_class"] == "iofleet-fs" and pod["volume_mode"] == "Filesystem"
        assert pod["pv"] and pod["volume_source"] == "local" and pod["kernel"] == os.uname().release
    assert not _iofleet_namespaces(kube_cluster)  # its namespace, pods and claims are gone


def test_block_pvcs_two_pods_per_node_through_port_forward(tmp_path, kube_cluster, data_dir):
    kube_cluster.ensure_storage_class("iofleet-block")
    for node in kube_cluster.nodes:
        kube_cluster.add_local_pvs("iofleet-block", node, 2, "64Mi", block=True)
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-block", volume_mode="Block", pods_per_node=2,
                     connect="port-forward")
    plan = write_plan(tmp_path / "p.yaml", name="block", defaults=SHORT | {"size": "16m"},
                      workloads=[{"name": "randwrite", "read_pct": 0}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, timeout=600)
    run = show_json(1, data_dir)
    assert run["status"] == "complete", proc.stdout + proc.stderr
    (test,) = run["tests"]
    assert set(test["hosts"]) == {f"{n}-{i}" for n in kube_cluster.nodes for i in (0, 1)}
    kube = run["host_facts"]["kubernetes"]
    assert kube["connect"] == "port-forward"
    assert all(p["volume_mode"] == "Block" for p in kube["pods"].values())
    assert not _iofleet_namespaces(kube_cluster)


def test_a_pod_deleted_mid_test_is_a_lost_host_and_the_rest_kept(tmp_path, kube_cluster, data_dir, spawn):
    kube_cluster.ensure_storage_class("iofleet-fs")
    for node in kube_cluster.nodes:
        kube_cluster.add_local_pvs("iofleet-fs", node, 1, "64Mi")
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-fs")
    plan = write_plan(tmp_path / "p.yaml", name="lose", prepare="none", defaults=SHORT | {"runtime": "15s"},
                      workloads=[{"name": "w"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)

    def running_pod():
        for ns in _iofleet_namespaces(kube_cluster):
            pods = kube_cluster.core.list_namespaced_pod(ns).items
            if len(pods) == 2 and all(p.status.phase == "Running" for p in pods):
                return ns, next(p for p in pods if p.spec.node_name == kube_cluster.nodes[1])
        return None

    namespace, victim = wait_for(running_pod, timeout=120, what="the run's pods")
    time.sleep(6)  # into the test
    kube_cluster.core.delete_namespaced_pod(victim.metadata.name, namespace, grace_period_seconds=0)
    out, err = proc.communicate(timeout=240)
    run = show_json(1, data_dir)
    (test,) = run["tests"]
    lost = f"{kube_cluster.nodes[1]}-0"
    assert run["status"] == "partial" and test["status"] == "partial", out + err
    assert f"lost host {lost}" in test["error"]
    assert f"Kubernetes: {lost}: pod {namespace}/{victim.metadata.name} was deleted" in test["error"], test["error"]
    assert set(test["hosts"]) == {f"{kube_cluster.nodes[0]}-0"} and test["all"]["ios"] > 0
    assert not _iofleet_namespaces(kube_cluster)


def test_a_killed_controllers_namespace_is_found_by_check_and_removed_by_clean(tmp_path, kube_cluster, data_dir,
                                                                               spawn):
    kube_cluster.ensure_storage_class("iofleet-fs")
    # One volume for the killed run, one for each check's own pod (local PVs are not recycled).
    kube_cluster.add_local_pvs("iofleet-fs", kube_cluster.nodes[0], 3, "64Mi")
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-fs", nodes=[kube_cluster.nodes[0]])
    plan = write_plan(tmp_path / "p.yaml", name="killed", prepare="none", defaults=SHORT | {"runtime": "60s"},
                      workloads=[{"name": "w"}])
    proc = spawn("run", plan, "--hosts", inv, data_dir=data_dir)
    (namespace,) = wait_for(lambda: _iofleet_namespaces(kube_cluster), timeout=120, what="the run's namespace")
    wait_for(lambda: all(p.status.phase == "Running" for p in kube_cluster.core.list_namespaced_pod(namespace).items),
             timeout=120, what="its pod")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    check = iofleet("hosts", "check", inv, data_dir=data_dir, check_rc=1, timeout=300)
    said = " ".join(check.stderr.split())
    assert f"namespace {namespace} was left by a run that no longer runs" in said, check.stdout + check.stderr
    assert f"pid {proc.pid}" in said and "`iofleet hosts clean INVENTORY` deletes it" in said
    assert "1 of 1 hosts ready." in check.stdout  # the check's own pod came and went
    clean = iofleet("hosts", "clean", inv, data_dir=data_dir, timeout=300)
    assert f"deleted namespace {namespace}" in clean.stdout, clean.stdout + clean.stderr
    wait_for(lambda: not _iofleet_namespaces(kube_cluster) and not kube_cluster.namespace_exists(namespace),
             timeout=120, what="the namespace to go")
    iofleet("hosts", "check", inv, data_dir=data_dir, timeout=300)  # nothing left: ready, exit 0


def test_two_storage_classes_compared_by_label(tmp_path, kube_cluster, data_dir):
    for sc in ("iofleet-cmp-a", "iofleet-cmp-b"):
        kube_cluster.ensure_storage_class(sc)
        kube_cluster.add_local_pvs(sc, kube_cluster.nodes[0], 1, "64Mi", block=sc.endswith("b"))
    plan = write_plan(tmp_path / "p.yaml", name="cmp", defaults=SHORT, workloads=[{"name": "randread"}])
    for sc, mode in (("iofleet-cmp-a", "Filesystem"), ("iofleet-cmp-b", "Block")):
        inv = _inventory(tmp_path, kube_cluster, storage_class=sc, volume_mode=mode, nodes=[kube_cluster.nodes[0]])
        iofleet("run", plan, "--hosts", inv, "--label", sc, data_dir=data_dir, timeout=600)
    out = json.loads(iofleet("compare", "iofleet-cmp-b", "--baseline", "iofleet-cmp-a", "--format", "json",
                             data_dir=data_dir).stdout)
    assert [c["name"] for c in out["configs"]] == ["iofleet-cmp-a", "iofleet-cmp-b"]
    (test,) = out["tests"]
    iops = next(r for r in test["rows"] if r["metric"] == "iops")
    base, other = iops["cells"]
    a, b = (show_json(run, data_dir)["tests"][0]["all"]["iops"] for run in (1, 2))
    assert base["verdict"] == "baseline" and other["pct_change"] == pytest.approx(100 * (b - a) / a)


def test_a_pvc_that_never_binds_is_explained_in_one_line(tmp_path, kube_cluster, data_dir):
    kube_cluster.ensure_storage_class("iofleet-empty")  # no PV for it: its claims stay Pending
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-empty", nodes=[kube_cluster.nodes[0]],
                     ready_timeout="8s")
    plan = write_plan(tmp_path / "p.yaml", name="pending", defaults=SHORT, workloads=[{"name": "w"}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, check_rc=2, timeout=300)
    err = proc.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert "its PVC data-fio-0 is Pending" in err and "0 of 1 pods ready after 8 s" in err, err
    assert not _iofleet_namespaces(kube_cluster)


def test_an_image_the_nodes_do_not_have_is_named(tmp_path, kube_cluster, data_dir):
    kube_cluster.ensure_storage_class("iofleet-fs")
    kube_cluster.add_local_pvs("iofleet-fs", kube_cluster.nodes[0], 1, "64Mi")
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-fs", nodes=[kube_cluster.nodes[0]],
                     image="localhost/iofleet-missing:0.0")
    plan = write_plan(tmp_path / "p.yaml", name="noimage", defaults=SHORT, workloads=[{"name": "w"}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, check_rc=2, timeout=300)
    assert "image localhost/iofleet-missing:0.0 is not on the node and cannot be pulled" in proc.stderr, proc.stderr
    assert not _iofleet_namespaces(kube_cluster)


def test_the_scaling_study_runs_every_step_on_the_same_pods(tmp_path, kube_cluster, data_dir):
    kube_cluster.ensure_storage_class("iofleet-fs")
    for node in kube_cluster.nodes:
        kube_cluster.add_local_pvs("iofleet-fs", node, 1, "64Mi")
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-fs")
    plan = write_plan(tmp_path / "p.yaml", name="scale", defaults=SHORT, workloads=[{"name": "randread"}])
    out = iofleet("scale", plan, "--hosts", inv, "--steps", "1,2", data_dir=data_dir, timeout=600).stdout
    assert "step 2/2: 2 hosts (run 2)" in out, out
    first, second = (show_json(run, data_dir)["host_facts"]["kubernetes"] for run in (1, 2))
    assert first["namespace"] == second["namespace"]  # created once for the study
    assert set(first["pods"]) == {f"{kube_cluster.nodes[0]}-0"} and len(second["pods"]) == 2
    assert not _iofleet_namespaces(kube_cluster)


def _user_claim(cluster, namespace: str, name: str, storage_class: str, block: bool = False) -> None:
    from kubernetes import client
    cluster.core.create_namespaced_persistent_volume_claim(namespace, client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name=name), spec=client.V1PersistentVolumeClaimSpec(
            storage_class_name=storage_class, access_modes=["ReadWriteOnce"],
            volume_mode="Block" if block else "Filesystem",
            resources=client.V1VolumeResourceRequirements(requests={"storage": "64Mi"}))))


def test_an_existing_claim_is_tested_in_its_namespace_and_left_there(tmp_path, kube_cluster, kube_namespace,
                                                                     data_dir):
    kube_cluster.ensure_storage_class("iofleet-fs")
    kube_cluster.add_local_pvs("iofleet-fs", kube_cluster.nodes[0], 1, "64Mi")
    _user_claim(kube_cluster, kube_namespace, "db-data", "iofleet-fs")
    inv = _inventory(tmp_path, kube_cluster, claim=f"{kube_namespace}/db-data", nodes=[kube_cluster.nodes[0]])
    plan = write_plan(tmp_path / "p.yaml", name="claim", defaults=SHORT, workloads=[{"name": "randwrite",
                                                                                     "read_pct": 0}])
    proc = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, timeout=600)
    run = show_json(1, data_dir)
    assert run["status"] == "complete", proc.stdout + proc.stderr
    (pod,) = run["host_facts"]["kubernetes"]["pods"].values()
    assert pod["namespace"] == kube_namespace and pod["claim"] == "db-data"
    assert "Removed iofleet's data files from the hosts." in proc.stdout  # from the user's claim, through its pod
    claim = kube_cluster.core.read_namespaced_persistent_volume_claim("db-data", kube_namespace)
    assert claim.status.phase == "Bound" and claim.metadata.deletion_timestamp is None  # the claim is left
    wait_for(lambda: not kube_cluster.core.list_namespaced_pod(kube_namespace).items, timeout=60,
             what="the run's pod to go")


def test_a_users_block_claim_is_written_only_when_destroy_data_names_it(tmp_path, kube_cluster, kube_namespace,
                                                                        data_dir):
    kube_cluster.ensure_storage_class("iofleet-block")
    kube_cluster.add_local_pvs("iofleet-block", kube_cluster.nodes[0], 1, "64Mi", block=True)
    _user_claim(kube_cluster, kube_namespace, "raw", "iofleet-block", block=True)
    inv = _inventory(tmp_path, kube_cluster, claim=f"{kube_namespace}/raw", volume_mode="Block",
                     nodes=[kube_cluster.nodes[0]])
    plan = write_plan(tmp_path / "p.yaml", name="raw", defaults=SHORT | {"size": "16m"},
                      workloads=[{"name": "randwrite", "read_pct": 0}])
    refused = iofleet("run", plan, "--hosts", inv, data_dir=data_dir, check_rc=None, timeout=600)
    assert refused.returncode != 0 and "destroy_data" in refused.stderr, refused.stdout + refused.stderr
    assert "no test was started" in refused.stderr or "Run 1" not in refused.stdout
    iofleet("run", plan, "--hosts", inv, "--destroy-data", "pvc:raw", data_dir=data_dir, timeout=600)
    assert show_json(1, data_dir)["status"] == "complete"  # the refused run stored nothing


def test_kept_files_keep_the_claims_and_the_next_run_uses_their_data(tmp_path, kube_cluster, data_dir):
    kube_cluster.ensure_storage_class("iofleet-keep")
    kube_cluster.add_local_pvs("iofleet-keep", kube_cluster.nodes[0], 1, "64Mi")  # one volume: the same both runs
    inv = _inventory(tmp_path, kube_cluster, storage_class="iofleet-keep", nodes=[kube_cluster.nodes[0]])
    plan = {"name": "keep", "defaults": SHORT, "workloads": [{"name": "randread"}]}
    write_plan(tmp_path / "keep.yaml", keep_files=True, **plan)
    write_plan(tmp_path / "again.yaml", **plan)
    iofleet("run", tmp_path / "keep.yaml", "--hosts", inv, data_dir=data_dir, timeout=600)
    (kept,) = _iofleet_namespaces(kube_cluster)  # its claim kept, its pod gone
    assert not kube_cluster.core.list_namespaced_pod(kept).items
    assert [c.metadata.name for c in kube_cluster.core.list_namespaced_persistent_volume_claim(kept).items] == \
        ["data-fio-0"]
    iofleet("hosts", "check", inv, data_dir=data_dir, timeout=300)  # kept is not left: ready, exit 0
    out = iofleet("run", tmp_path / "again.yaml", "--hosts", inv, data_dir=data_dir, timeout=600).stdout
    again = show_json(2, data_dir)
    assert again["status"] == "complete" and again["host_facts"]["kubernetes"]["namespace"] == kept
    assert again["methodology"]["prepare"]["reused"] == {f"{kube_cluster.nodes[0]}-0": 1}, out  # not written again
    assert not _iofleet_namespaces(kube_cluster)  # not kept this time: gone with its claim
