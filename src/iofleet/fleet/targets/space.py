"""Free space on the local targets: enough for the plan's data files?

A plan whose data files cannot fit is refused before anything is written,
rather than failing with ENOSPC tests into the run; a test that still runs
out of space (something else filled the target) says where and how much
the plan needs.
"""

import os
import re
from pathlib import Path

from ...errors import IofleetError
from ...fio.jobfile import DATA_DIR_NAME
from ...plan.expand import TestSpec
from ...plan.units import format_bytes
from .files import owned_data_files


class NoSpaceError(IofleetError):
    """A target has less free space than the plan's data files need."""


def data_bytes_per_target(specs: list[TestSpec], targets: list[Path]) -> dict[Path, int]:
    """Bytes of iofleet's data files on each target: fio puts job n's file
    in targets[n % len(targets)], and every test of the run reuses it,
    grown to the largest size asked of it."""
    out = {t: 0 for t in targets}
    if not targets:
        return out
    for n in range(max((s.jobs for s in specs), default=0)):
        out[targets[n % len(targets)]] += max(s.size for s in specs if s.jobs > n)
    return out


def free_bytes(path: Path) -> int:
    """Free space where iofleet writes: root may also use the blocks a
    filesystem reserves for it (ext4's 5 %), others may not."""
    st = os.statvfs(path)
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def _held(target: Path) -> int:
    """Bytes already allocated to iofleet's data files there (a killed or
    kept run's, in iofleet's record of its files): the plan's files reuse
    them. A file iofleet did not make is not counted (a run refuses it)."""
    total = 0
    for f in owned_data_files(target / DATA_DIR_NAME):
        try:
            total += f.stat().st_blocks * 512
        except OSError:
            pass
    return total


def check_space(targets: list[Path], specs: list[TestSpec]) -> None:
    """Refuse, one line per filesystem, when the data files cannot fit in
    its free space plus what iofleet's own files there already hold."""
    need = data_bytes_per_target(specs, [Path(t) for t in targets])
    by_fs: dict[int, list[Path]] = {}
    for t in need:
        try:
            if t.is_dir():  # other kinds of target (a device) have no files
                by_fs.setdefault(os.stat(t).st_dev, []).append(t)
        except OSError:
            continue
    problems = []
    for same in by_fs.values():
        needed = sum(need[t] for t in same)
        where = same[0] if len(same) == 1 else f"{', '.join(map(str, same))} (one filesystem)"
        try:  # statvfs: FUSE and network filesystems (ceph-fuse, nfs) answer it too
            free = free_bytes(same[0]) + sum(_held(t) for t in same)
        except OSError as exc:  # e.g. a FUSE mount whose client died: "Transport endpoint is not connected"
            raise IofleetError(f"cannot read the free space of {where} ({exc.strerror}); check that it is mounted "
                               f"and readable, or give another --target") from None
        if needed > free:
            problems.append(f"not enough space on {where}: the plan's data files need {format_bytes(needed)} there, "
                            f"{format_bytes(free)} is free; free space, give another --target, or lower `size` "
                            f"(`iofleet validate PLAN` shows the data files)")
    if problems:
        raise NoSpaceError("\n".join(problems))


_FILE = re.compile(r"on file (/\S+?):")


def explain_no_space(error: str, targets: list[Path], specs: list[TestSpec]) -> str:
    """A test's ENOSPC error, saying which target filled up and what the
    plan needs there; other errors are returned unchanged."""
    if "No space left on device" not in error or not targets:
        return error
    need = data_bytes_per_target(specs, [Path(t) for t in targets])
    m = _FILE.search(error)
    target = next((t for t in need if m and m.group(1).startswith(str(t).rstrip("/") + "/")), None)
    if target is None:
        target = next(iter(need)) if len(need) == 1 else None
    if target is None:
        return f"no space left on a target: {error}"
    try:
        free = format_bytes(free_bytes(target))
    except OSError:
        free = "?"
    return (f"no space left on {target}: {error}; the plan's data files need {format_bytes(need[target])} there, "
            f"{free} is free now")
