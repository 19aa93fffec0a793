"""Kubernetes as the place of a run: the fleet is the run's fio server
pods, one per node slot, each testing its own PVC. The pods are created
when the run locks its targets (prepare) and deleted when it lets them go
(release); between the two it is a fleet like any other (fleet.py)."""

import socket
from contextlib import contextmanager
from dataclasses import replace

from ..kubernetes.cluster import FIO_PORT, STARTED, Cluster, Deployment, KubeError
from ..inventory import PodHost
from ..kubernetes.node_cpu import NodeCpu
from ..kubernetes.portforward import PortForward
from ..targets import Access
from .fleet import FleetPlace

REACH_TIMEOUT_S = 2.0


class KubernetesPlace(FleetPlace):
    """fio server pods, reached at their pod IPs or through the apiserver."""

    order = 5

    @classmethod
    def takes(cls, hosts):
        return bool(hosts) and all(isinstance(h, PodHost) for h in hosts)

    def __init__(self, hosts: list[PodHost], groups=None, clear_cache=True, destroy_data=(), access=Access()):
        self.kube = hosts[0].kube
        access = replace(access, sections={**access.sections, "kubernetes": self.kube})
        super().__init__(hosts, groups, clear_cache, destroy_data, access)
        self.cluster: Cluster | None = None
        self.deployment: Deployment | None = None
        self.forwards: list[PortForward] = []
        self._own: list[PodHost] = []  # the hosts whose pods this place created (and deletes)
        self.pods: dict[str, dict] = {}  # host → its pod's and volume's facts
        self._node_cpu: dict[str, NodeCpu] = {}  # node → its kubelet's CPU reader
        self.keep_volumes = False  # keep_files: the claims outlive the run (and a later one uses them again)

    @classmethod
    def for_plan(cls, plan, hosts, access):
        place, steps = super().for_plan(plan, hosts, access)
        place.keep_volumes = plan.keep_files
        return place, steps

    @classmethod
    @contextmanager
    def hosts_up(cls, hosts):
        if hosts[0].up_by is not None:  # up already (a study's)
            yield hosts
            return
        place = cls(hosts)
        place.up(hosts)
        place.keep_volumes = place.deployment.kept_from  # claims a run kept are left as they were found
        try:
            yield hosts
        finally:
            place.release()

    @classmethod
    def left_behind(cls, hosts):
        return [f"{left.what} was left by a run that no longer runs ({left.controller}, started "
                f"{left.annotations.get(STARTED, '?')}); `iofleet hosts clean INVENTORY` deletes it"
                for left in Cluster(hosts[0].kube).left_behind()]

    @classmethod
    def clean_left(cls, hosts):
        cluster = Cluster(hosts[0].kube)
        out = []
        for left in cluster.left_behind(kept=True):  # kept claims too, as kept data files on a host
            cluster.remove(left)
            out.append(f"deleted {left.what} (left by {left.controller}), with its pods and claims")
        return out

    def prepare(self, facts: dict | None = None) -> None:
        """Create the pods and their claims (unless a study has them up:
        `hosts_up`), reach each fio server, then lock and check them as any
        fleet's hosts."""
        outer = self.hosts[0].up_by
        if outer is None:
            self.up(self.hosts)
        else:
            self.cluster, self.deployment = outer.cluster, outer.deployment
        try:
            names = {h.name for h in self.hosts}
            self.pods = {h: f for h, f in self.cluster.pod_facts(self.deployment).items() if h in names}
            self.destroy_data = self.targets[self.hosts[0].name].writable(self.destroy_data)
            super().prepare(facts)
        except BaseException:
            self.release()
            raise

    def up(self, hosts: list[PodHost]) -> Deployment:
        """Deploy the hosts' pods and point each host at its fio server."""
        self.cluster = Cluster(self.kube)
        self.cluster.check_storage()
        deployment = self.cluster.deploy([h.slot for h in hosts])
        self.deployment, self._own = deployment, hosts
        # fio names a server's files after the address it is reached at: claims kept from run to run are
        # reached at the same one, a port-forward's 127.0.0.1, so their data files are found again.
        kept = self.keep_volumes or deployment.kept_from
        for h in hosts:
            h.up_by = self
            ip = deployment.pod_ips[h.slot.pod]
            if not kept and self.kube.connect != "port-forward" and (self.kube.connect == "pod-ip" or reachable(ip)):
                h.address = f"[{ip}]:{FIO_PORT}" if ":" in ip else f"{ip}:{FIO_PORT}"
            else:
                forward = PortForward(self.cluster, deployment.namespace, h.slot.pod)
                self.forwards.append(forward)
                h.address = f"127.0.0.1:{forward.port}"
        deployment.connect = "port-forward" if self.forwards else "pod IP"
        return deployment

    def metrics_sources(self, hosts):
        """Each pod's node's CPU, from its kubelet (one reader per node)."""
        for node in {h.slot.node for h in hosts} - set(self._node_cpu):
            self._node_cpu[node] = NodeCpu(self.cluster, node)
        return {h.name: self._node_cpu[h.slot.node] for h in hosts}

    def run_test(self, step, work, stop, phase, on_live, steady_now=None):
        """A fleet's test; a lost pod's error says what became of it (deleted, evicted, killed)."""
        m = super().run_test(step, work, stop, phase, on_live, steady_now)
        by_name = {h.name: h for h in self._started}
        said = []
        for name in m.lost:
            try:
                said.append(f"{name}: {self.cluster.pod_state(self.deployment.namespace, by_name[name].slot.pod)}")
            except KubeError as exc:
                said.append(f"{name}: {exc}")
        if said and m.error:
            m.error += "; Kubernetes: " + "; ".join(said)
        return m

    def describe(self) -> dict:
        out = super().describe()
        dep = self.deployment
        if dep is not None:
            out["kubernetes"] = {"server": self.cluster.server, "namespace": dep.namespace,
                                 "start_s": round(dep.seconds, 1), "pods": self.pods,
                                 "connect": dep.connect}
        return out

    def cleanup(self) -> int:
        """A run's own claims go with its namespace (release: no file to
        remove first); a user's claim is cleaned as a fleet host's directory is.
        (Not called when the plan keeps its files: its claims are kept then.)"""
        if self.kube.claim is None:
            return 0
        # The pod's fio server names the claim by its path there.
        self.hosts = [h.model_copy(update={"targets": self.targets[h.name].names}) for h in self.hosts]
        self._started = [h.model_copy(update={"targets": self.targets[h.name].names}) for h in self._started]
        return super().cleanup()

    def release(self) -> None:
        super().release()
        for forward in self.forwards:
            forward.close()
        self.forwards = []
        if self._own:  # what this place deployed (not a study's pods it ran on)
            dep, hosts, self._own = self.deployment, self._own, []
            for h in hosts:
                h.up_by = None
            try:
                keep = self.keep_volumes and dep.own_namespace
                self.cluster.delete(dep, pods_only=keep)
                if keep:
                    self.cluster.keep(dep)
            except KubeError:
                pass  # left for `hosts check` to find and `hosts clean` to remove


def reachable(ip: str) -> bool:
    """Whether this machine reaches the pod's fio port directly."""
    try:
        with socket.create_connection((ip, FIO_PORT), timeout=REACH_TIMEOUT_S):
            return True
    except OSError:
        return False
