"""device-slow: a blkio (cgroup v1) throttle on the target's disk, at
`mbps` and/or `iops`, for the fio server's processes (on this host: the fio
processes using the target); undo moves them back and removes the cgroup."""

from __future__ import annotations

import os
import re
import shlex
import stat
from pathlib import Path
from typing import Annotated

from pydantic import Field

from ....fio.jobfile import DATA_DIR_NAME
from ...fio_link.procs import fio_using
from ..fault_kind import SERVER_TREE, FaultError, FaultKind, script
from ..fault_records import FACTS, FaultRecord

BLKIO_ROOT = "/sys/fs/cgroup/blkio"

# $1 target, $2 cgroup, $3.. throttle files and values ("read_bps_device 1048576" pairs), after `--` the pids.
_TARGET_DISK = r"""
t=$1
if [ -b "$t" ]; then
  hex=$(stat -L -c '%t:%T' "$t") && mm=$(printf '%d:%d' "0x${hex%:*}" "0x${hex#*:}")
else
  mm=$(findmnt -n -o MAJ:MIN -T "$t" | head -n 1 | tr -d ' ')
fi
[ -e "/sys/dev/block/$mm" ] || { echo "the target $t is on no block device ($mm)" >&2; exit 3; }
# blkio throttles whole disks: a partition's disk
[ -e "/sys/dev/block/$mm/partition" ] && mm=$(cat "/sys/dev/block/$mm/../dev")
"""

DEVICE_SLOW = FACTS + _TARGET_DISK + r"""
cg=$2; shift 2
[ -d /sys/fs/cgroup/blkio ] || { echo "no blkio cgroup (v1) at /sys/fs/cgroup/blkio" >&2; exit 3; }
fact device "$mm"
mkdir -p "$cg"
while [ "$1" != "--" ]; do echo "$mm $2" > "$cg/blkio.throttle.$1"; shift 2; done
shift
for p in "$@"; do echo "$p" > "$cg/cgroup.procs" 2>/dev/null || true; done
"""

DEVICE_SLOW_REMOTE = SERVER_TREE + r"""
set -- "$@" $(tree "$server")
""" + DEVICE_SLOW

DEVICE_UNDO = r"""
cg=$1
[ -d "$cg" ] || exit 0
# Limits off first: IOs already queued in the cgroup's throttle go at once, not at the slow rate.
for f in "$cg"/blkio.throttle.*_device; do
  while read -r mm value; do echo "$mm 0" > "$f"; done < "$f"
done
for p in $(cat "$cg/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/blkio/cgroup.procs 2>/dev/null || true; done
i=0; while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do
  for p in $(cat "$cg/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/blkio/cgroup.procs 2>/dev/null || true; done
  sleep 0.02; i=$((i + 1)); done
[ ! -d "$cg" ] || { echo "cannot remove the cgroup $cg" >&2; exit 1; }
"""

_CGROUP = re.compile(rf"{re.escape(BLKIO_ROOT)}/iofleet-[A-Za-z0-9]+-[0-9]+")


def cgroup(fault) -> str:
    """The fault's own cgroup: the run's token and the event's index in its name."""
    return f"{BLKIO_ROOT}/iofleet-{fault.token}-{fault.index}"


def throttles(event) -> list[str]:
    """blkio throttle file names and values, in pairs, for device-slow."""
    out: list[str] = []
    if event.mbps is not None:
        b = event.mbps * 1_000_000
        out += ["read_bps_device", str(b), "write_bps_device", str(b)]
    if event.iops is not None:
        out += ["read_iops_device", str(event.iops), "write_iops_device", str(event.iops)]
    return out


def blkio_available() -> bool:
    return os.path.isdir(BLKIO_ROOT)


class DeviceSlow(FaultKind):
    name = "device-slow"
    listed = 3
    on_target = True
    fields = {"mbps": Annotated[int, Field(ge=1, le=1_000_000)], "iops": Annotated[int, Field(ge=1, le=100_000_000)]}

    def check(self, event) -> None:
        if event.mbps is None and event.iops is None:
            raise ValueError("device-slow needs `mbps` or `iops` (the device's limit)")

    def shown(self, event) -> str:
        return " (" + ", ".join(x for x in (event.mbps and f"{event.mbps} MB/s",
                                            event.iops and f"{event.iops} IOPS") if x) + ")"

    def apply(self, fault) -> str:
        fault.undo_command = script(DEVICE_UNDO, cgroup(fault))
        pairs = throttles(fault.event)
        if fault.host is None:
            pids = _fio_on(fault.target)
            if not pids:
                raise FaultError(f"local: device-slow found no fio process using {fault.target}")
            return fault.run(script(DEVICE_SLOW, fault.target, cgroup(fault), *pairs, "--", *pids), "applied")
        command = script(DEVICE_SLOW_REMOTE, fault.target, cgroup(fault), *pairs, "--")
        return fault.run(f"PORT={shlex.quote(str(fault.host.endpoint[1]))} {command}", "applied")

    def detail(self, fault, out: str) -> dict:
        return {k: v for k, _, v in (line.partition("=") for line in out.splitlines()) if k == "device"}

    def record_values(self, fault) -> list[tuple[str, str]]:
        return [("cgroup", cgroup(fault)), ("target", fault.target)]

    def left(self, r: FaultRecord) -> str:
        v = r.values
        limits = ", ".join(x for x in (v.get("mbps") and f"{v['mbps']} MB/s", v.get("iops") and f"{v['iops']} IOPS")
                           if x)
        return f"blkio throttle ({limits}) on disk {v.get('device', '?')}, cgroup {v.get('cgroup', '?')}"

    def left_undo(self, r: FaultRecord) -> str | None:
        cg = r.values.get("cgroup", "")
        return script(DEVICE_UNDO, cg) if _CGROUP.fullmatch(cg) else None

    def undone_words(self, r: FaultRecord) -> str:
        return f"cgroup {r.values['cgroup']} removed, its processes moved back"


def _fio_on(target: str) -> list[int]:
    """This host's fio processes doing IO on a target: holding files in
    iofleet's directory under it, or the device itself."""
    if not os.path.exists(target) or not stat.S_ISBLK(os.stat(target).st_mode):
        return sorted(fio_using([Path(target) / DATA_DIR_NAME]))
    device, found = os.path.realpath(target), []
    for entry in os.scandir("/proc"):
        try:
            if not entry.name.isdigit() or Path(f"/proc/{entry.name}/comm").read_text() != "fio\n":
                continue
            fds = os.listdir(f"/proc/{entry.name}/fd")
            if any(os.readlink(f"/proc/{entry.name}/fd/{fd}") == device for fd in fds):
                found.append(int(entry.name))
        except OSError:
            continue  # ended meanwhile, or not ours to read
    return sorted(found)
