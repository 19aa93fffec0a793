"""The inventory's `kubernetes:` section: which cluster, which StorageClass,
how many fio server pods on which nodes, and each pod's volume.

    kubernetes:
      kubeconfig: ~/.kube/config   # default as kubectl: $KUBECONFIG, then ~/.kube/config
      context: lab                 # default: the kubeconfig's current context
      storage_class: rook-ceph-block
      volume_mode: Filesystem      # or Block (a raw device in each pod)
      size: 10GiB                  # of each PVC
      access_mode: ReadWriteOnce
      pods_per_node: 2
      nodes: [worker1, worker2]    # default: every schedulable node
      image: localhost/iofleet-fio:3.33
      claim: apps/db-data          # test this existing PVC (NAMESPACE/NAME) instead of new ones
"""

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ...plan.units import parse_duration, parse_size

# A DNS-1123 label (namespaces, pod and node names' parts) and subdomain
# (StorageClass, PVC and node names); \Z, as `$` would let "name\n" through.
LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
SUBDOMAIN_RE = re.compile(r"^(?=.{1,253}\Z)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\Z")
# An image reference: [registry/]path[:tag][@sha256:digest].
IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*(:[0-9]{1,5})?(/[a-z0-9][a-z0-9._-]*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                      r"(@sha256:[0-9a-f]{64})?\Z")
CONTEXT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:/-]{0,252}\Z")
IMAGE_REPOSITORY = "localhost/iofleet-fio"


def _subdomain(what: str):
    def check(value: Any) -> str:
        if not isinstance(value, str) or not SUBDOMAIN_RE.match(value):
            raise ValueError(f"{what}: lower-case letters, digits, '-' and '.', as Kubernetes names it")
        return value
    return check


_QUANTITY_RE = re.compile(r"^([0-9]{1,15})(Ki|Mi|Gi|Ti|Pi)\Z")


def _size(value: Any) -> int:
    """iofleet's sizes (10g, 10GiB) and Kubernetes' binary quantities (10Gi)."""
    m = _QUANTITY_RE.match(value) if isinstance(value, str) else None
    if m:
        return int(m.group(1)) * 1024 ** ("KMGTP".index(m.group(2)[0]) + 1)
    return parse_size(value)


def _claim(value: Any) -> str:
    namespace, slash, name = value.partition("/") if isinstance(value, str) else ("", "", "")
    if not slash or not LABEL_RE.match(namespace) or not SUBDOMAIN_RE.match(name):
        raise ValueError("an existing PVC as NAMESPACE/NAME, e.g. apps/db-data")
    return value


def check_image(value: Any) -> str:
    if not isinstance(value, str) or not IMAGE_RE.match(value):
        raise ValueError("an image reference such as localhost/iofleet-fio:3.33 or registry.example/fio:3.33")
    return value


def _context(value: Any) -> str:
    if not isinstance(value, str) or not CONTEXT_RE.match(value):
        raise ValueError("a kubeconfig context name")
    return value


def check_file(value: Any) -> Any:
    if isinstance(value, str) and (not value.strip() or any(c in value for c in "\0\n\r")):
        raise ValueError("expected a file path")
    return value


@cache
def default_image() -> str:
    """The image `iofleet kubernetes image` writes: this machine's fio, tagged with its version."""
    fio = shutil.which("fio")
    version = subprocess.run([fio, "--version"], capture_output=True, text=True).stdout.strip() if fio else ""
    return f"{IMAGE_REPOSITORY}:{version.removeprefix('fio-') or 'latest'}"


class KubernetesSection(BaseModel):
    """Where the fio server pods run and what each one tests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kubeconfig: Optional[Annotated[Path, BeforeValidator(check_file)]] = None
    context: Optional[Annotated[str, BeforeValidator(_context)]] = None
    storage_class: Optional[Annotated[str, BeforeValidator(_subdomain("a StorageClass name"))]] = None
    volume_mode: Literal["Filesystem", "Block"] = "Filesystem"
    size: Annotated[int, BeforeValidator(_size), Field(ge=1 << 20)] = 10 << 30
    access_mode: Literal["ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany"] = "ReadWriteOnce"
    pods_per_node: Annotated[int, Field(ge=1, le=64)] = 1
    nodes: Optional[Annotated[list[Annotated[str, BeforeValidator(_subdomain("a node name"))]],
                              Field(min_length=1)]] = None
    image: Optional[Annotated[str, BeforeValidator(check_image)]] = None
    claim: Optional[Annotated[str, BeforeValidator(_claim)]] = None
    # How the controller reaches each pod's fio server: its pod IP when
    # that answers (auto), always the pod IP, or the apiserver's port-forward.
    connect: Literal["auto", "pod-ip", "port-forward"] = "auto"
    ready_timeout: Annotated[int, BeforeValidator(parse_duration), Field(ge=5, le=3600)] = 300

    @model_validator(mode="after")
    def _one_volume_source(self):
        if self.claim is None and self.storage_class is None:
            raise ValueError("give storage_class (iofleet creates one PVC per pod from it) or claim "
                             "(an existing PVC, NAMESPACE/NAME)")
        if self.claim is not None and self.storage_class is not None:
            raise ValueError("give storage_class or claim, not both")
        if self.claim is not None and (self.pods_per_node != 1 or (self.nodes and len(self.nodes) > 1)):
            raise ValueError("an existing claim is tested by one pod: leave pods_per_node at 1 and name at "
                             "most one node")
        return self

    @property
    def fio_image(self) -> str:
        return self.image or default_image()


# The section's reference (`iofleet params`, docs/kubernetes.md): key, default, allowed, meaning.
REFERENCE = (
    ("kubeconfig", "as kubectl", "a file path", "the cluster's kubeconfig: $KUBECONFIG, then ~/.kube/config, as kubectl "
                                                "(relative to the inventory)"),
    ("context", "current", "a context name", "the kubeconfig's context"),
    ("storage_class", "none", "a StorageClass name", "one new PVC per pod from this StorageClass (or give claim)"),
    ("volume_mode", "Filesystem", "Filesystem, Block", "each PVC's volumeMode: a directory in the pod (/data), or a "
                                                       "raw device (/dev/iofleet-volume)"),
    ("size", "10g", "1m or more (10g, 10GiB or 10Gi)", "each PVC's size (its storage request)"),
    ("access_mode", "ReadWriteOnce", "ReadWriteOnce, ReadWriteOncePod, ReadWriteMany", "each PVC's access mode"),
    ("pods_per_node", "1", "1 to 64", "fio server pods on each node, each with its own PVC"),
    ("nodes", "all", "node names", "the nodes the pods are pinned to; default: every Ready node without a NoSchedule "
                                   "taint"),
    ("image", "localhost/iofleet-fio:FIO", "an image reference", "the fio server image; default: what `iofleet "
                                                                 "kubernetes image` writes of this machine's fio"),
    ("claim", "none", "NAMESPACE/NAME", "test this existing PVC (one pod, in its namespace) instead of new ones; a "
                                        "Block claim needs destroy_data: [pvc:NAME]"),
    ("connect", "auto", "auto, pod-ip, port-forward", "how the controller reaches each fio server: its pod IP when that "
                                                      "answers, else the apiserver's port-forward"),
    ("ready_timeout", "5m", "5s to 1h", "how long the pods may take to be ready (PVCs bound, image, fio server up)"),
)
