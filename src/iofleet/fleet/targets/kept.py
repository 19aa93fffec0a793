"""Data a run kept on its targets (`keep_files: true`), and what prepared
it: a later run whose preparation would write exactly the same uses the
data as the last run's tests left it instead of writing it again
(`reuse_data: false` writes it again). Where the target's files can grow
at their end (a directory), data kept by the same preparation of smaller
files is extended instead: only each file's missing end is written
(`tail_tiers`), as when Easy Run's profiles use fewer, larger files than
its probe.

One JSON file in the results directory (KEPT_NAME), one entry per host
and its targets (the key): the fio server's endpoint, or "local". An
entry names the run that prepared the data, a fingerprint of that
preparation and, on this machine, each data file's size, mtime and ctime
(any write since, by any program, changes them: the data is not used; a
program that puts the mtime back cannot put the ctime back). A fleet
host's files are known only through fio: `hosts check`'s read of job 0's
data file says they are still there (check.HostCheck.leftovers).

Runs on other targets update the file at the same time: each change is
made under a lock (flock) and written whole (rename), so none is lost and
no reader sees half a file.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ...fio.jobfile import DATA_DIR_NAME, render_prepare
from .files import owned_data_files

KEPT_NAME = "kept-data.json"
LOCAL = "local"


def fingerprint(tiers: list[tuple[int, int]], target, mode: str, passes: int, bs: int) -> str | None:
    """What a preparation writes where: the hash of its job file, rendered
    with one engine and buffered IO (the bytes on the targets do not depend
    on them). None where the target's data is never reused (a device)."""
    where = target.fingerprint_where()
    if where is None:
        return None
    text = render_prepare(tiers, where, "psync", False, mode, passes, bs)
    return hashlib.sha256(text.encode()).hexdigest()


def layout_print(target, mode: str, passes: int, bs: int) -> str | None:
    """What a preparation writes where, whatever its files' sizes: kept
    data of the same layout may be extended (tail_tiers); None where the
    target's files cannot grow at their end (only a directory's can)."""
    return fingerprint([(1, 1)], target, mode, passes, bs) if target.holds_files else None


def prepared_state(tiers: list[tuple[int, int]], target, mode: str, passes: int, bs: int) -> dict:
    """What a kept-data entry records of a preparation: its fingerprint
    and, where the files can be extended, its layout and tiers; empty where
    the target's data is never reused."""
    print_ = fingerprint(tiers, target, mode, passes, bs)
    if print_ is None:
        return {}
    layout = layout_print(target, mode, passes, bs)
    return {"fingerprint": print_} | ({"layout": layout, "tiers": tiers} if layout else {})


def file_sizes(tiers: list[tuple[int, int]]) -> list[int]:
    """Each data file's bytes after a preparation of these tiers (file N
    is in every tier of more than N files, and gets the largest)."""
    return [max(size for files, size in tiers if files > n) for n in range(max((f for f, _ in tiers), default=0))]


def tail_tiers(have: list[tuple[int, int]], want: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The tiers that, appended at the files' ends, turn the data of the
    `have` preparation into `want`'s ([]: nothing to write); None when
    appending cannot (a file would have to shrink, or a later file grow
    more than an earlier one: a tier always covers files 0..N-1)."""
    old, new = file_sizes(have), file_sizes(want)
    tails = [size - (old[n] if n < len(old) else 0) for n, size in enumerate(new)]
    if any(t < 0 for t in tails) or any(a < b for a, b in zip(tails, tails[1:])):
        return None
    out = []
    for n in range(len(tails), 0, -1):  # the widest first; each appends after the one before
        step = tails[n - 1] - (tails[n] if n < len(tails) else 0)
        if step:
            out.append((n, step))
    return out


@dataclass
class Found:
    """Kept data a preparation can use: as it is (`tails` empty) or
    extended by appending `tails` (render_prepare's append)."""

    entry: dict
    tails: list[tuple[int, int]]


def data_key(endpoint: str, targets: list) -> str:
    """An entry's key: the host (address:port, or "local") and its targets, in order."""
    return json.dumps([endpoint, [str(t) for t in targets]])


def host_key(host) -> str:
    """A fleet host's key: where its data lives (its fio server, a pod's claim) and its targets."""
    return data_key(host.data_site, host.targets)


def files_state(targets: list[Path]) -> dict[str, list[int]]:
    """iofleet's data files on this machine's targets: path → [size, mtime_ns, ctime_ns]."""
    out = {}
    for target in targets:
        for f in owned_data_files(Path(target) / DATA_DIR_NAME):
            with contextlib.suppress(OSError):
                st = os.stat(f, follow_symlinks=False)
                out[str(f)] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def kept_entry(prepared: dict, run_id: int, files: dict | None = None) -> dict:
    """The entry a run stores at its end for a host whose data it prepared
    (`prepared` without a run) or used as kept; its layout and tiers when
    it can be extended."""
    extend = {k: prepared[k] for k in ("layout", "tiers") if prepared.get(k)}
    entry = extend | {"fingerprint": prepared["fingerprint"], "run": prepared.get("run") or run_id,
             "prepared_at": prepared.get("prepared_at") or _now(), "kept_by": run_id, "kept_at": _now()}
    return entry | ({"files": files} if files is not None else {})


class KeptData:
    """The kept-data file of one results directory; `reuse`: whether a
    run may use what it records (the plan's reuse_data)."""

    def __init__(self, data_dir: Path, reuse: bool = True):
        self.path = Path(data_dir) / KEPT_NAME
        self.reuse = reuse

    def entries(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}  # none yet, or unreadable: nothing is reused
        entries = data.get("entries") if isinstance(data, dict) else None
        return {k: v for k, v in entries.items() if isinstance(v, dict)} if isinstance(entries, dict) else {}

    def find(self, key: str, print_: str | None, files: dict | None = None, layout: str | None = None,
             tiers: list[tuple[int, int]] | None = None) -> Found | None:
        """What this run may use of `key`'s kept data: the same preparation
        (fingerprint) or, given its `layout` and `tiers`, the same layout
        with files it can extend; on this machine only when the files are
        as the entry recorded them, untouched."""
        if not self.reuse or print_ is None:
            return None
        entry = self.entries().get(key)
        if not entry or not isinstance(entry.get("run"), int):
            return None
        if files is not None and (not files or entry.get("files") != files):
            return None
        if entry.get("fingerprint") == print_:
            return Found(entry, [])
        kept_tiers = entry.get("tiers")
        if layout is None or tiers is None or entry.get("layout") != layout or not isinstance(kept_tiers, list):
            return None
        tails = tail_tiers([tuple(t) for t in kept_tiers], tiers)
        return Found(entry, tails) if tails is not None else None

    def update(self, put: dict[str, dict] | None = None, forget=()) -> None:
        """Remove the entries of `forget`, then store `put`'s."""
        put, forget = put or {}, set(forget) - set(put or {})
        if not put and not forget & self.entries().keys():
            return  # (a key is only ever changed by the run holding its targets' locks)
        with self._locked():
            entries = self.entries()
            if not forget & entries.keys() and not put:
                return
            for key in forget:
                entries.pop(key, None)
            entries.update(put)
            self._write(entries)

    @contextlib.contextmanager
    def _locked(self):
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, entries: dict) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{KEPT_NAME}.")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"about": "data iofleet runs kept on their targets, and what prepared it",
                           "entries": entries}, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
