"""A PersistentVolumeClaim (pvc:NAME), tested by the fio server pod that
mounts it (a Kubernetes inventory's hosts: fleet/kubernetes/). In the pod
it is a directory (volume_mode Filesystem) or a raw device (Block); an
existing Block claim is written only when destroy_data names it."""

import re
from typing import Any

from . import TargetName

PVC_RE = re.compile(r"^pvc:(?=.{1,253}\Z)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\Z")


class ClaimName(TargetName):
    kind = "pvc"
    order = 3
    what, example = "a PersistentVolumeClaim", "pvc:NAME"
    short = "PVC"
    client = "kubernetes"  # its IO is the pod's, on whatever node Kubernetes put it
    alone = True
    destroyable = True

    @classmethod
    def claims(cls, value):
        return value.startswith("pvc:")

    @classmethod
    def check(cls, value: Any) -> str:
        if not isinstance(value, str) or not PVC_RE.match(value):
            raise ValueError("a claim is pvc:NAME, NAME as Kubernetes writes it (lower-case letters, digits, "
                             "'-' and '.')")
        return value
