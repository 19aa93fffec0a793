"""Target kinds (see base.py): `target_for` picks a host's kind from how
its targets are written; nothing else tells the kinds apart."""

from ...plan.model import is_device_path, is_rbd_target
from .base import Access, Target
from .device import Device
from .directory import Directories
from .rbd import RbdImage

__all__ = ["Access", "Target", "target_for"]


def target_for(names: list[str], access: Access = Access()) -> Target:
    """One host's targets as one Target (the plan model allows a device or
    an image only alone)."""
    first = str(names[0]) if names else ""
    kind = RbdImage if is_rbd_target(first) else Device if is_device_path(first) else Directories
    return kind([str(n) for n in names], access)
