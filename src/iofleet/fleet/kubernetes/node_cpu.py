"""A node's CPU from its kubelet's resource metrics, through the
apiserver's node proxy (no agent on the node): the busy core-seconds the
kubelet last read and when, to the millisecond. The kubelet renews them
every housekeeping interval (10 s by default), so a test's node CPU covers
the whole intervals between two of its readings that lie inside the test
(metrics/sampler.py)."""

import re

from ...errors import IofleetError
from ..metrics.counters import Counters
from .cluster import Cluster

_USAGE = re.compile(r"^node_cpu_usage_seconds_total\s+([0-9.eE+]+)\s+([0-9]+)\s*$", re.M)


class NodeCpu:
    """A sampler's reader (metrics/sampler.py) of one node."""

    source = "kubelet"

    def __init__(self, cluster: Cluster, node: str):
        self.cluster, self.node = cluster, node
        capacity = cluster.call(f"read node {node}", cluster.core.read_node, node).status.capacity["cpu"]
        self.cpus = int(capacity[:-1]) / 1000 if capacity.endswith("m") else float(capacity)

    def __str__(self) -> str:
        return f"the kubelet of node {self.node} (/metrics/resource)"

    def __call__(self) -> tuple[float, Counters]:
        answer = self.cluster.call(f"read the resource metrics of node {self.node}",
                                   self.cluster.core.connect_get_node_proxy_with_path, self.node, "metrics/resource",
                                   _preload_content=False)
        m = _USAGE.search(answer.data.decode(errors="replace"))
        if m is None:
            raise IofleetError("no node_cpu_usage_seconds_total in its answer")
        read_at = int(m.group(2)) / 1000
        total = self.cpus * read_at  # core-seconds since the epoch: only differences count
        return read_at, Counters(cpu_idle=total - float(m.group(1)), cpu_total=total)
