"""A raw block device as the target: job N's region starts at N x stride
(one region per job, as one file per job in a directory), so preparation
and every test of a run meet the same regions. The safety checks are
devices.py's; nothing overrides them, and a device with data is written
only when destroy_data names it."""

from pathlib import Path

import errno
import os

from ...errors import ImportFormatError
from ...fio.command import error_line
from ...fio.jobfile import device_where, render_device_check
from ...fio.parse import parse_output
from .device_checks import RemoteDevice, check_local_device, fit_regions, local_device, needed_bytes
from .facts import seen_target, target_rotational
from .lock import lock_on_this_machine
from .base import Access, Target, kernel_note


class Device(Target):
    kind = "device"

    def __init__(self, names, access=Access()):
        super().__init__(names, access)
        self.path = self.names[0]
        self.stride = 0
        self.bytes: int | None = None  # this machine's device: its size
        self.needed: int | None = None  # how far the regions reach (a fleet host's check reads there)

    def fio_where(self):
        return device_where(self.path, self.stride)

    def probe_where(self, section):
        return device_where(self.path)  # read only: nothing is written before preparation

    def fit(self, steps, size_given, local):
        """Each job's region: sized to this machine's device when the plan
        gives no size; a fleet host's device cannot be read through fio's
        server, so there the plan's `size` is used and the check reads the end."""
        if local:
            dev = local_device(self.path)
            steps, self.stride = fit_regions(steps, self.path, dev.bytes, size_given)
            self.path, self.bytes = dev.real, dev.bytes
        else:
            steps, self.stride = fit_regions(steps, self.path, None, size_given)
            self.needed = needed_bytes(steps, self.stride)
        return steps

    def prepare(self, facts, destroy_data):
        lock = lock_on_this_machine("device", self.path, f"target {self.path}", facts)
        try:
            check_local_device(self.path, destroy_data)
        except BaseException:
            lock.release()
            raise
        self.locks = [lock]

    def check_job(self):
        return render_device_check(self.path, self.needed)

    def read_check(self, check, fio):
        check.targets[0].device = device_seen(self.path, self.needed, fio.final_output, fio.stdout + fio.stderr)

    def cache_note(self, clear, drop_why, facts=None):
        if not clear:
            return "caches kept (clear_cache: false)"
        return f"page cache of the device invalidated; {kernel_note(drop_why)}"

    def describe(self):
        if self.access.host:
            return {}  # a fleet host's device: its SSH facts say what it is
        return {"target_facts": {self.path: seen_target(Path(self.path)).to_dict()},
                "device": {"path": self.path, "bytes": self.bytes, "region_bytes": self.stride}}

    def spinning(self):
        return target_rotational(Path(self.path))

    def free_bytes(self):
        return local_device(self.path).bytes  # a device's space is all its own (read-only look)


def device_seen(path: str, needed: int | None, output: str | None, said: str) -> RemoteDevice:
    """What the read-only device check (jobfile.render_device_check) showed."""
    seen = RemoteDevice(path, needed=needed)
    try:
        parsed = parse_output(output) if output else None
    except ImportFormatError:
        parsed = None
    jobs = {j.job: j for j in parsed.jobs} if parsed else {}
    blank, end = jobs.get("blank"), jobs.get("end")
    if "file creation disallowed" in said:  # allow_file_create=0 met a missing path
        seen.exists = False
    elif blank is None:
        seen.read_error = error_line("", said)
    elif not parsed.disks:  # fio lists the disks under the files it used: none for a file or character device
        seen.block = False
    elif blank.error and blank.error != errno.EILSEQ:  # EILSEQ: verify_pattern found data
        seen.read_error = f"{errno.errorcode.get(blank.error, blank.error)}: {os.strerror(blank.error)}"
    else:
        seen.blank = not blank.error
        seen.fits = None if not needed else end is not None and end.read.io_bytes >= 4096
    return seen
