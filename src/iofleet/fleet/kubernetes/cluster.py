"""A run's fio server pods, through the cluster's API (the Python
`kubernetes` client; never kubectl's output): its own namespace, one PVC
per pod from the StorageClass (or the user's existing claim), one fio
server pod per node slot pinned to its node; why a pod is not ready, in
one line from the cluster's own state and events; the facts of each
pod's volume; and what a killed run left behind."""

import hashlib
import json
import os
import secrets
import socket
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from ...errors import IofleetError
from .settings import KubernetesSection

MANAGED = "app.kubernetes.io/managed-by"
MANAGED_SELECTOR = f"{MANAGED}=iofleet"
CONTROLLER_HOST = "iofleet.io/controller-host"
CONTROLLER_PID = "iofleet.io/controller-pid"
STARTED = "iofleet.io/started"
KEPT = "iofleet.io/kept"  # a namespace whose claims a run kept (keep_files), by what they are
FIO_PORT = 8765
MOUNT_PATH = "/data"  # a Filesystem volume, in the pod
DEVICE_PATH = "/dev/iofleet-volume"  # a Block volume, in the pod
API_TIMEOUT_S = 15
# A container waiting for one of these will not start by waiting longer.
STUCK = {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError",
         "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}


class KubeError(IofleetError):
    """The cluster refused or could not do what a run needs."""


@dataclass
class Slot:
    """One fio server pod: its node, its host name in the run, its pod and claim."""

    node: str
    host: str
    pod: str
    claim: str


@dataclass
class Deployment:
    """What a run created (its namespace, or its pod beside an existing claim)."""

    namespace: str
    own_namespace: bool
    slots: list[Slot]
    kept_from: bool = False  # the namespace and claims a run kept, used again
    pod_ips: dict[str, str] = field(default_factory=dict)  # pod → IP
    seconds: float = 0.0  # from the first create to every pod ready
    connect: str = ""  # how the controller reaches the pods: "pod IP" or "port-forward"


def api_error(exc: Exception) -> str:
    """An API error's own message, in one line."""
    body = getattr(exc, "body", None)
    if body:
        try:
            return json.loads(body).get("message") or str(body)[:300]
        except (ValueError, AttributeError):
            return " ".join(str(body).split())[:300]
    reason = getattr(exc, "reason", None)
    return " ".join(str(reason or exc).split())[:300]


class Cluster:
    """One cluster, as the kubeconfig (and context) name it."""

    def __init__(self, settings: KubernetesSection):
        from kubernetes import client, config  # imported here: half a second, only for a Kubernetes inventory
        self.settings = settings
        path = settings.kubeconfig.expanduser() if settings.kubeconfig else None
        self._config = (str(path) if path else None, settings.context)
        try:
            api = config.new_client_from_config(config_file=self._config[0], context=settings.context)
        except (config.ConfigException, OSError, ValueError, TypeError) as exc:
            where = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
            raise KubeError(f"kubernetes: cannot use the kubeconfig {where}: {' '.join(str(exc).split())}; give "
                            f"kubernetes.kubeconfig (and context) as kubectl would use them") from None
        self.server = api.configuration.host
        self.core = client.CoreV1Api(api)
        self.storage = client.StorageV1Api(api)
        self._client = client

    def own_core(self):
        """A CoreV1Api on a client of its own: a port-forward stream swaps
        its client's request function while it opens, which would send
        other threads' calls down the websocket."""
        from kubernetes import config
        return self._client.CoreV1Api(config.new_client_from_config(config_file=self._config[0],
                                                                    context=self._config[1]))

    def call(self, what: str, fn, *args, missing_ok: bool = False, **kw):
        """One API call, bounded; its failure as one line naming what was
        asked (`missing_ok`: None when the object is not there)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError
        try:
            return fn(*args, _request_timeout=API_TIMEOUT_S, **kw)
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            raise KubeError(f"kubernetes: {what}: {api_error(exc)} (HTTP {exc.status})") from None
        except (HTTPError, OSError) as exc:
            raise KubeError(f"kubernetes: cannot reach the cluster at {self.server} ({what}): "
                            f"{' '.join(str(exc).split())[:200]}; check the kubeconfig and that the apiserver "
                            f"is up") from None

    # ---- what the run will use ---------------------------------------------
    def nodes(self) -> list[str]:
        """The nodes the pods go to: the section's, each checked, or every
        schedulable Ready node."""
        found = {n.metadata.name: n for n in self.call("list nodes", self.core.list_node).items}
        wanted = self.settings.nodes
        for name in wanted or []:
            if name not in found:
                raise KubeError(f"kubernetes.nodes: no node {name} in the cluster (nodes: "
                                f"{', '.join(sorted(found)) or 'none'})")
            why = unschedulable(found[name])
            if why:
                raise KubeError(f"kubernetes.nodes: node {name} {why}; leave it out of `nodes`")
        usable = wanted or sorted(n for n, node in found.items() if not unschedulable(node))
        if not usable:
            raise KubeError(f"kubernetes: no schedulable Ready node in the cluster at {self.server}")
        return list(usable)

    def slots(self, nodes: list[str]) -> list[Slot]:
        """One slot per node × pods_per_node, or the existing claim's one pod."""
        out = []
        # Beside a user's claim, in its namespace: a name no pod of theirs has.
        prefix = f"iofleet-fio-{secrets.token_hex(3)}-" if self.settings.claim else "fio-"
        for node in nodes:
            for i in range(self.settings.pods_per_node):
                host = f"{node}-{i}"[:64]
                pod = f"{prefix}{len(out)}"
                claim = self.settings.claim.partition("/")[2] if self.settings.claim else f"data-{pod}"
                out.append(Slot(node, host, pod, claim))
        return out[:1] if self.settings.claim else out

    def check_storage(self) -> dict:
        """The StorageClass (or the claim) the run will test, as the cluster has it."""
        s = self.settings
        if s.claim:
            namespace, _, name = s.claim.partition("/")
            pvc = self.call(f"read PVC {s.claim}", self.core.read_namespaced_persistent_volume_claim, name, namespace)
            mode = pvc.spec.volume_mode or "Filesystem"
            if mode != s.volume_mode:
                raise KubeError(f"kubernetes.volume_mode: the claim {s.claim} is {mode}; set volume_mode: {mode}")
            return {"claim": s.claim, "storage_class": pvc.spec.storage_class_name, "phase": pvc.status.phase}
        classes = self.call("list StorageClasses", self.storage.list_storage_class).items
        names = {c.metadata.name: c for c in classes}
        if s.storage_class not in names:
            raise KubeError(f"kubernetes.storage_class: no StorageClass {s.storage_class} in the cluster (found: "
                            f"{', '.join(sorted(names)) or 'none'})")
        sc = names[s.storage_class]
        return {"storage_class": sc.metadata.name, "provisioner": sc.provisioner, "parameters": sc.parameters or {},
                "binding_mode": sc.volume_binding_mode, "reclaim_policy": sc.reclaim_policy}

    # ---- the run's objects ---------------------------------------------------
    def deploy(self, slots: list[Slot]) -> Deployment:
        """Create the run's namespace, PVCs and pods and wait until every
        fio server is ready; on any failure, delete what was created and
        raise one line saying why. A namespace whose claims an earlier run
        kept for the same slots (`keep`) is used again, its claims with it."""
        s = self.settings
        started = time.monotonic()
        kept = None if s.claim else self.kept_namespace(self.keep_key(slots))
        if s.claim:
            dep = Deployment(s.claim.partition("/")[0], False, slots)
        else:
            dep = Deployment(kept or f"iofleet-{secrets.token_hex(4)}", True, slots, kept_from=bool(kept))
        try:
            if kept:  # this run's now: no longer kept (another run would not take it), its controller this one
                self.call(f"take namespace {kept}", self.core.patch_namespace, kept,
                          {"metadata": {"labels": {KEPT: None}, "annotations": self._meta(kept).annotations}})
            elif dep.own_namespace:
                self.call(f"create namespace {dep.namespace}", self.core.create_namespace,
                          self._client.V1Namespace(metadata=self._meta(dep.namespace)))
            for slot in slots if dep.own_namespace else []:
                if not (kept and self.call("read PVC", self.core.read_namespaced_persistent_volume_claim, slot.claim,
                                           kept, missing_ok=True)):
                    self.call(f"create PVC {slot.claim}", self.core.create_namespaced_persistent_volume_claim,
                              dep.namespace, self._claim(slot))
            for slot in slots:
                self.call(f"create pod {slot.pod} on {slot.node}", self.core.create_namespaced_pod, dep.namespace,
                          self._pod(slot))
            dep.pod_ips = self._wait_ready(dep, started + s.ready_timeout)
        except BaseException:
            self.delete(dep, wait_s=0, pods_only=bool(kept))
            raise
        dep.seconds = time.monotonic() - started
        return dep

    def keep_key(self, slots: list[Slot]) -> str:
        """What kept claims are: the StorageClass, their mode, size and access, the node slots."""
        s = self.settings
        what = [s.storage_class, s.volume_mode, s.size, s.access_mode, [(x.node, x.claim) for x in slots]]
        return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]

    def keep(self, dep: Deployment) -> None:
        """Its pods gone, mark the run's namespace as holding claims kept for a later run."""
        self.call(f"keep namespace {dep.namespace}", self.core.patch_namespace, dep.namespace,
                  {"metadata": {"labels": {KEPT: self.keep_key(dep.slots)}}})

    def kept_namespace(self, key: str) -> str | None:
        found = self.call("list kept namespaces", self.core.list_namespace, label_selector=f"{KEPT}={key}").items
        return next((ns.metadata.name for ns in found if ns.status.phase == "Active"), None)

    def _meta(self, name: str):
        return self._client.V1ObjectMeta(
            name=name, labels={MANAGED: "iofleet"},
            annotations={CONTROLLER_HOST: socket.gethostname(), CONTROLLER_PID: str(os.getpid()),
                         STARTED: datetime.now(timezone.utc).isoformat(timespec="seconds")})

    def _claim(self, slot: Slot):
        c, s = self._client, self.settings
        return c.V1PersistentVolumeClaim(
            metadata=self._meta(slot.claim),
            spec=c.V1PersistentVolumeClaimSpec(
                storage_class_name=s.storage_class, access_modes=[s.access_mode], volume_mode=s.volume_mode,
                resources=c.V1VolumeResourceRequirements(requests={"storage": str(s.size)})))

    def _pod(self, slot: Slot):
        c, s = self._client, self.settings
        block = s.volume_mode == "Block"
        container = c.V1Container(
            name="fio", image=s.fio_image, image_pull_policy="IfNotPresent", ports=[c.V1ContainerPort(container_port=FIO_PORT, name="fio")],
            readiness_probe=c.V1Probe(tcp_socket=c.V1TCPSocketAction(port=FIO_PORT), period_seconds=1),
            volume_mounts=None if block else [c.V1VolumeMount(name="data", mount_path=MOUNT_PATH)],
            volume_devices=[c.V1VolumeDevice(name="data", device_path=DEVICE_PATH)] if block else None,
            security_context=c.V1SecurityContext(run_as_user=0))
        # Pinned by the node's name (the scheduler still binds a WaitForFirstConsumer claim).
        affinity = c.V1Affinity(node_affinity=c.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=c.V1NodeSelector(node_selector_terms=[
                c.V1NodeSelectorTerm(match_fields=[c.V1NodeSelectorRequirement(
                    key="metadata.name", operator="In", values=[slot.node])])])))
        meta = self._meta(slot.pod)
        meta.labels |= {"iofleet.io/host": slot.host}
        # A shared process namespace makes the pause container PID 1, so fio
        # (no SIGTERM handler as PID 1) ends at once when the pod is deleted.
        return c.V1Pod(metadata=meta, spec=c.V1PodSpec(
            containers=[container], affinity=affinity, restart_policy="Never", automount_service_account_token=False,
            share_process_namespace=True,
            termination_grace_period_seconds=1, enable_service_links=False,
            volumes=[c.V1Volume(name="data", persistent_volume_claim=c.V1PersistentVolumeClaimVolumeSource(
                claim_name=slot.claim))]))

    def _wait_ready(self, dep: Deployment, deadline: float) -> dict[str, str]:
        """pod → IP once every pod's fio server answers its readiness probe;
        a pod that cannot start (image, config, a crash) ends the wait at once."""
        wanted = {s.pod for s in dep.slots}
        while True:
            pods = {p.metadata.name: p for p in self.call(
                f"list pods in {dep.namespace}", self.core.list_namespaced_pod, dep.namespace,
                label_selector=MANAGED_SELECTOR).items if p.metadata.name in wanted}
            ready = {name: p.status.pod_ip for name, p in pods.items() if pod_ready(p)}
            if len(ready) == len(wanted):
                return ready
            for slot in dep.slots:
                pod = pods.get(slot.pod)
                if pod is not None and stuck(pod):
                    raise KubeError(self.why_not_ready(dep, slot, pod))
            if time.monotonic() > deadline:
                slot = next(s for s in dep.slots if s.pod not in ready)
                raise KubeError(self.why_not_ready(dep, slot, pods.get(slot.pod)) +
                                f" ({len(ready)} of {len(wanted)} pods ready after "
                                f"{self.settings.ready_timeout} s, kubernetes.ready_timeout)")
            time.sleep(0.5)

    def why_not_ready(self, dep: Deployment, slot: Slot, pod) -> str:
        """One line from the cluster's own state: the claim, the scheduler,
        the image, the node."""
        where = f"pod {dep.namespace}/{slot.pod} on node {slot.node}"
        if pod is None:
            return f"{where} was not created"
        for st in pod.status.container_statuses or []:
            waiting = st.state.waiting if st.state else None
            if waiting and waiting.reason in STUCK:
                if "Image" in waiting.reason:
                    return (f"{where}: image {self.settings.fio_image} is not on the node and cannot be pulled "
                            f"({waiting.reason}: {(waiting.message or '').strip()[:200]}); load it there "
                            f"(`iofleet kubernetes image`, docs/kubernetes.md) or set kubernetes.image")
                return f"{where}: {waiting.reason}: {(waiting.message or '').strip()[:300]}"
            done = st.state.terminated if st.state else None
            if done:
                return f"{where}: the fio server exited ({done.reason}, code {done.exit_code}): " \
                       f"{(done.message or '').strip()[:200]}"
        node = self.call(f"read node {slot.node}", self.core.read_node, slot.node)
        why = unschedulable(node)
        if why:
            return f"{where}: node {slot.node} {why}"
        claim = self.call(f"read PVC {slot.claim}", self.core.read_namespaced_persistent_volume_claim, slot.claim,
                          dep.namespace)
        if claim.status.phase != "Bound":
            said = self.last_event(dep.namespace, slot.claim)
            scheduled = scheduler_said(self.last_event(dep.namespace, slot.pod))
            return (f"{where}: its PVC {slot.claim} is {claim.status.phase} "
                    f"({said or 'no event'}){'; the pod: ' + scheduled if scheduled else ''}; check that "
                    f"StorageClass {claim.spec.storage_class_name}'s provisioner runs or that PVs are free for it")
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.status != "True":
                return f"{where} cannot be scheduled: {scheduler_said(cond.message)}"
        return f"{where} is {pod.status.phase}: {self.last_event(dep.namespace, slot.pod) or 'no event yet'}"

    def last_event(self, namespace: str, name: str) -> str:
        events = self.call(f"list events of {name}", self.core.list_namespaced_event, namespace,
                           field_selector=f"involvedObject.name={name}").items
        events.sort(key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
        return " ".join(f"{events[-1].reason}: {events[-1].message}".split())[:300] if events else ""

    def delete(self, dep: Deployment, wait_s: float = 120, pods_only: bool = False) -> bool:
        """Delete what the run created (its namespace, or its pods only: beside
        a user's claim, or when its claims are kept); True when it is gone
        within `wait_s`."""
        from kubernetes.client.exceptions import ApiException
        if pods_only:
            dep = replace(dep, own_namespace=False)
        try:
            if dep.own_namespace:
                self.core.delete_namespace(dep.namespace, grace_period_seconds=0, _request_timeout=API_TIMEOUT_S)
            else:
                for slot in dep.slots:
                    self.core.delete_namespaced_pod(slot.pod, dep.namespace, grace_period_seconds=0,
                                                    _request_timeout=API_TIMEOUT_S)
        except ApiException as exc:
            if exc.status != 404:
                raise KubeError(f"kubernetes: could not delete {dep.namespace}: {api_error(exc)}") from None
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            if dep.own_namespace and not self.call("read namespace", self.core.read_namespace, dep.namespace,
                                                   missing_ok=True):
                return True
            if not dep.own_namespace and not any(self.call("read pod", self.core.read_namespaced_pod, s.pod,
                                                           dep.namespace, missing_ok=True) for s in dep.slots):
                return True
            time.sleep(0.5)
        return wait_s <= 0

    # ---- facts --------------------------------------------------------------
    def pod_facts(self, dep: Deployment) -> dict[str, dict]:
        """host → where its pod ran and what its volume is."""
        out = {}
        classes: dict[str, object] = {}
        for slot in dep.slots:
            pod = self.call(f"read pod {slot.pod}", self.core.read_namespaced_pod, slot.pod, dep.namespace)
            node = self.call(f"read node {pod.spec.node_name}", self.core.read_node, pod.spec.node_name)
            claim = self.call(f"read PVC {slot.claim}", self.core.read_namespaced_persistent_volume_claim,
                              slot.claim, dep.namespace)
            pv = self.call(f"read PV {claim.spec.volume_name}", self.core.read_persistent_volume,
                           claim.spec.volume_name) if claim.spec.volume_name else None
            sc_name = claim.spec.storage_class_name
            if sc_name and sc_name not in classes:
                classes[sc_name] = self.call(f"read StorageClass {sc_name}", self.storage.read_storage_class, sc_name,
                                             missing_ok=True)
            sc = classes.get(sc_name)
            info = node.status.node_info
            out[slot.host] = {
                "namespace": dep.namespace, "pod": slot.pod, "pod_ip": pod.status.pod_ip, "node": pod.spec.node_name,
                "kernel": info.kernel_version, "os": info.os_image, "kubelet": info.kubelet_version,
                "runtime": info.container_runtime_version, "image": pod.spec.containers[0].image,
                "claim": slot.claim, "storage_class": sc_name,
                "provisioner": getattr(sc, "provisioner", None), "parameters": getattr(sc, "parameters", None) or {},
                "pv": claim.spec.volume_name, "volume_mode": claim.spec.volume_mode or "Filesystem",
                "capacity": (claim.status.capacity or {}).get("storage"),
                "csi_driver": pv.spec.csi.driver if pv is not None and pv.spec.csi else None,
                "volume_source": volume_source(pv) if pv is not None else None,
            }
        return out

    def pod_state(self, namespace: str, pod: str) -> str:
        """What became of a pod, in words: deleted, or its phase and why."""
        p = self.call(f"read pod {pod}", self.core.read_namespaced_pod, pod, namespace, missing_ok=True)
        if p is None:
            return f"pod {namespace}/{pod} was deleted"
        why = [p.status.reason] if p.status.reason else []
        for st in p.status.container_statuses or []:
            done = st.state.terminated if st.state else None
            if done:
                why.append(f"fio exited: {done.reason}, code {done.exit_code}")
        if p.metadata.deletion_timestamp:
            why.append("being deleted")
        return f"pod {namespace}/{pod} is {p.status.phase}" + (f" ({'; '.join(why)})" if why else "")

    # ---- what killed runs left ----------------------------------------------
    def left_behind(self, kept: bool = False) -> list["Left"]:
        """iofleet's namespaces and pods (beside a user's claim) whose run is
        not running on this machine any more; a namespace whose claims a run
        kept (keep_files) and has no pod is kept, not left, unless `kept`."""
        out = []
        pods = self.call("list pods", self.core.list_pod_for_all_namespaces, label_selector=MANAGED_SELECTOR).items
        with_pods = {p.metadata.namespace for p in pods}
        for ns in self.call("list namespaces", self.core.list_namespace, label_selector=MANAGED_SELECTOR).items:
            if kept or not (ns.metadata.labels or {}).get(KEPT) or ns.metadata.name in with_pods:
                out.append(Left(ns.metadata.name, None, ns.metadata.annotations or {}, ns.status.phase))
        for pod in pods:
            if not pod.metadata.namespace.startswith("iofleet-"):
                out.append(Left(pod.metadata.namespace, pod.metadata.name, pod.metadata.annotations or {},
                                pod.status.phase))
        return [left for left in out if not left.running and left.phase != "Terminating"]  # (going already)

    def remove(self, left: "Left") -> None:
        dep = Deployment(left.namespace, left.pod is None,
                         [Slot("", "", left.pod, "")] if left.pod else [])
        self.delete(dep, wait_s=0)


@dataclass
class Left:
    """A namespace (or a pod beside a user's claim) a run created."""

    namespace: str
    pod: str | None
    annotations: dict
    phase: str | None

    @property
    def what(self) -> str:
        return f"namespace {self.namespace}" if self.pod is None else f"pod {self.namespace}/{self.pod}"

    @property
    def controller(self) -> str:
        return f"{self.annotations.get(CONTROLLER_HOST, '?')} pid {self.annotations.get(CONTROLLER_PID, '?')}"

    @property
    def running(self) -> bool:
        """Its controller still runs here (a run on another machine is left alone)."""
        if self.annotations.get(CONTROLLER_HOST) != socket.gethostname():
            return True
        pid = self.annotations.get(CONTROLLER_PID, "")
        if not pid.isdigit():
            return False
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return b"iofleet" in f.read()
        except OSError:
            return False


def scheduler_said(message: str | None) -> str:
    """The scheduler's reason, without its account of preemption."""
    text = (message or "").split(" preemption:")[0].split(" no new claims to deallocate")[0]
    return text.rstrip(" .,;")


def pod_ready(pod) -> bool:
    return pod.status.phase == "Running" and bool(pod.status.pod_ip) and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def stuck(pod) -> bool:
    if pod.status.phase in ("Failed", "Succeeded"):
        return True
    return any(st.state and ((st.state.waiting and st.state.waiting.reason in STUCK) or st.state.terminated)
               for st in pod.status.container_statuses or [])


def unschedulable(node) -> str | None:
    """Why no pod can go to this node, or None."""
    if node.spec.unschedulable:
        return "is cordoned (unschedulable)"
    ready = next((c for c in node.status.conditions or [] if c.type == "Ready"), None)
    if ready is None or ready.status != "True":
        return f"is not Ready ({ready.reason if ready else 'no Ready condition'})"
    taints = [t for t in node.spec.taints or [] if t.effect in ("NoSchedule", "NoExecute")]
    if taints:
        return f"has the taint {taints[0].key}:{taints[0].effect}"
    return None


def volume_source(pv) -> str:
    """What backs a PV: its CSI driver, or its in-tree kind (local, hostPath, nfs...)."""
    spec = pv.spec
    if spec.csi:
        return f"csi:{spec.csi.driver}"
    for name in ("local", "host_path", "nfs", "rbd", "cephfs", "iscsi", "fc"):
        if getattr(spec, name, None) is not None:
            return name
    return "other"
