"""A raw block device (/dev/...), one region per job; written only when
it is blank or destroy_data names it."""

import re
from typing import Any

from . import TargetName

# A block device path: it goes to fio's `filename=` as it is, where ':'
# separates files and ',' or spaces could start other values, so neither
# they nor '.'/'..' components (which could leave /dev) are allowed; \Z,
# as `$` would let a trailing newline through.
DEVICE_RE = re.compile(r"^/dev(/[A-Za-z0-9_+@=~-][A-Za-z0-9_.+@=~-]*)+\Z")


def is_device_path(value: str) -> bool:
    """A target under /dev names a raw block device, not a directory."""
    return value == "/dev" or value.startswith("/dev/")


def check_device_path(value: Any) -> str:
    if not isinstance(value, str) or not DEVICE_RE.match(value):
        raise ValueError(
            "a device is /dev/NAME with letters, digits and _ . + @ = ~ - only "
            "(no ',', ':', spaces or '..'), e.g. /dev/sdb or /dev/disk/by-id/NAME"
        )
    return value


class DeviceName(TargetName):
    kind = "device"
    order = 1
    what, example = "a block device", "/dev/..."
    short = "device"
    alone = True
    destroyable = True
    fio_options = ("filename",)

    @classmethod
    def claims(cls, value):
        return is_device_path(value)

    @classmethod
    def check(cls, value):
        return check_device_path(value)

    @classmethod
    def check_fio(cls, key, value):
        return check_device_path(value)
