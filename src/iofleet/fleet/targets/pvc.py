"""A PersistentVolumeClaim as the target, seen from the fio server pod that
mounts it: a directory (volume_mode Filesystem) or a raw device (Block) in
the pod, with everything those kinds do. A claim the run created is its
own to write; a user's existing Block claim needs destroy_data naming it."""

from ...errors import IofleetError
from ..kubernetes.cluster import DEVICE_PATH, MOUNT_PATH
from .base import Access, Target
from .device import Device
from .directory import Directories

NO_POD = ("a PVC target ({name}) is tested from a fio server pod: give a Kubernetes inventory (--hosts INVENTORY with "
          "a `kubernetes:` section, docs/kubernetes.md)")


class Claim(Target):
    """Made as the claim's volume mode says (the place passes the inventory's
    `kubernetes:` section in the target's access)."""

    kind = "pvc"

    def __new__(cls, names, access=Access()):
        settings = access.sections.get("kubernetes")
        block = settings is not None and settings.volume_mode == "Block"
        return (ClaimDevice if block else ClaimDirectory)(names, access)


class _InPod:
    """What a claim adds to the directory or device it is in the pod."""

    def _claim_init(self, names, access):
        self.claim_names = [str(n) for n in names]
        self.settings = access.sections.get("kubernetes")

    @property
    def label(self) -> str:
        return ", ".join(self.claim_names)

    def prepare(self, facts, destroy_data):
        raise IofleetError(NO_POD.format(name=self.label))

    def cache_note(self, clear, drop_why, facts=None):
        if not clear:
            return "caches kept (clear_cache: false)"
        if isinstance(self, Device):  # invalidating a device's cache needs CAP_SYS_ADMIN, which the pod has not
            return ("the device's page cache not invalidated and the node's kernel caches kept (a pod cannot); "
                    "direct IO (direct: true, the default) bypasses them")
        return ("page cache of the volume's data invalidated by fio in the pod; the node's other kernel caches kept "
                "(a pod cannot drop them)")

    def writable(self, destroy_data: list[str]) -> list[str]:
        """destroy_data as the pod's device check reads it: a claim the run
        created is its own; a user's claim only when destroy_data names it."""
        own = self.settings is not None and self.settings.claim is None
        named = any(n in destroy_data for n in self.claim_names)
        return list(destroy_data) + ([DEVICE_PATH] if own or named else [])


class ClaimDirectory(_InPod, Directories):
    kind = ""  # registered as Claim's

    def __init__(self, names, access=Access()):
        self._claim_init(names, access)
        Directories.__init__(self, [MOUNT_PATH], access)


class ClaimDevice(_InPod, Device):
    kind = ""

    def __init__(self, names, access=Access()):
        self._claim_init(names, access)
        Device.__init__(self, [DEVICE_PATH], access)


ClaimDirectory.kind = ClaimDevice.kind = Claim.kind
