"""The local host: its facts and iofleet's directories on its targets."""

import contextlib
import json
import os
import platform
import socket
import stat
import subprocess
from pathlib import Path

from ..errors import FioError, IofleetError
from ..fio.command import error_line, fio_binary
from ..fio.jobfile import DATA_DIR_NAME, DATA_FILE_FORMAT, PROBE_FILE, render_probe
from ..plan.params import AUTO_ENGINES
from .targets.device_checks import memory_backing, spinning
from .targets.lock import LOCK_NAME, TargetLock, holder_facts, lock_at
from .fio_link.workdir import work_dir


def host_facts() -> dict:
    """What a result needs to say about where it came from."""
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "memory_bytes": mem,
    }


def _mount_of(number: str, mountinfo: str) -> tuple[str | None, str | None]:
    """(filesystem type, source) of the mount with device number
    "major:minor" in /proc/self/mountinfo text; the last one listed is the
    one on top. (None, None) when none has it (btrfs shows other numbers)."""
    found: tuple[str | None, str | None] = (None, None)
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " in line and len(fields) > 2 and fields[2] == number:
            after = line.split(" - ", 1)[1].split()
            found = (after[0] if after else None, after[1] if len(after) > 1 else None)
    return found


def _disk_dir(sys_dev: Path) -> Path:
    """The sysfs folder of the disk under a block device: a partition's
    disk, the first device under a device-mapper or md device (as the
    fleet's facts script does)."""
    disk = sys_dev if (sys_dev / "queue").exists() else sys_dev.parent
    slaves = sorted((disk / "slaves").glob("*")) if (disk / "slaves").is_dir() else []
    if slaves:
        lower = slaves[0].resolve()
        return lower if (lower / "queue").exists() else lower.parent
    return disk


# Filesystems whose data is on other hosts, reached through a client on this
# one (any FUSE filesystem "fuse.NAME" too, but not fuseblk: it has a disk).
NETWORK_FILESYSTEMS = frozenset({"ceph", "nfs", "nfs4", "cifs", "smb3", "glusterfs", "9p", "lustre", "gpfs",
                                 "beegfs", "afs", "virtiofs", "orangefs"})
# FUSE filesystems over this host's own disks (no network behind them).
LOCAL_FUSE = frozenset({"mergerfs", "bindfs", "gocryptfs", "encfs", "unionfs", "fuse-overlayfs", "securefs"})
RBD_CLIENT = "librbd"  # an RBD image target (rbd:POOL/IMAGE) is driven through fio's rbd engine


def network_client(filesystem: str | None) -> str | None:
    """The client that carries a target's IO to other hosts, by its
    filesystem type: "ceph-fuse" for fuse.ceph-fuse, "kernel nfs4" for
    nfs4; None for a local filesystem (or an unknown one)."""
    if not filesystem:
        return None
    if filesystem == "fuse" or filesystem.startswith("fuse."):  # "fuse": one without a subtype
        name = filesystem.removeprefix("fuse").removeprefix(".")
        return None if name in LOCAL_FUSE else name or "fuse"
    return f"kernel {filesystem}" if filesystem in NETWORK_FILESYSTEMS else None


def target_facts(target: Path | str, mountinfo: str | None = None, _depth: int = 0) -> dict:
    """A local target as control.parse_facts shows a fleet host's:
    filesystem, source, device (the kernel's name), rotational (spinning,
    devices.spinning's rule), and `memory`: what makes it RAM (tmpfs,
    ramfs, zram, a RAM disk, a loop device over a file in RAM), or None.
    `network_fs` and `client`: a directory on a network or FUSE filesystem
    (ceph-fuse, nfs4, ...) has no device on this host (device None, and
    no device rule judges it); an RBD image (rbd:POOL/IMAGE) neither."""
    if str(target).startswith("rbd:"):
        return {"kind": "rbd", "device": None, "rotational": None, "memory": None, "client": RBD_CLIENT}
    if mountinfo is None:
        mountinfo = _read_text("/proc/self/mountinfo")
    try:
        st = os.stat(target)
    except OSError:
        return {"kind": "missing", "memory": None}
    block = stat.S_ISBLK(st.st_mode)
    dev = st.st_rdev if block else st.st_dev
    number = f"{os.major(dev)}:{os.minor(dev)}"
    out: dict = {"kind": "device" if block else "directory"}
    if not block:
        out["filesystem"], out["source"] = _mount_of(number, mountinfo)
        client = network_client(out["filesystem"])
        if client:  # its data is on other hosts: no device of this host is the target's
            return out | {"device": None, "rotational": None, "memory": None, "network_fs": True, "client": client}
    sys_dev = Path(f"/sys/dev/block/{number}")
    name = rotational = None
    if sys_dev.exists():
        sys_dev = sys_dev.resolve()
        disk = _disk_dir(sys_dev)
        name = (sys_dev if (sys_dev / "queue").exists() else sys_dev.parent).name
        rotational = spinning(disk.name, _read_text(str(disk / "queue" / "rotational")))
    out |= {"device": name, "rotational": rotational, "memory": memory_backing(out.get("filesystem"), name)}
    backing = _read_text(f"/sys/block/{name}/loop/backing_file").strip() if name else ""
    if out["memory"] is None and backing and _depth < 4:  # a loop device is as fast as what holds its file
        under = target_facts(Path(backing), mountinfo, _depth + 1).get("memory")
        out["memory"] = under and f"{name}, a loop device over a file on {under}"
    return out


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def target_rotational(target: Path) -> bool | None:
    """Whether the disk under a directory (or a device target itself)
    spins; None where it cannot be seen (tmpfs, overlay, network
    filesystems) or told (devices.spinning)."""
    return target_facts(target).get("rotational")


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_kernel_caches() -> str | None:
    """Write dirty data back, then drop this host's clean page cache,
    dentries and inodes (root only). None when done, else why not."""
    if os.geteuid() != 0:
        return "not root"
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError as exc:
        return f"cannot write {DROP_CACHES} ({exc.strerror})"
    return None


RECORD_NAME = ".iofleet-files"
# What fio creates in iofleet's directory (jobfile's DATA_FILE_FORMAT and
# PROBE_FILE): a file of these names is iofleet's only when recorded.
_PROBE_NAME = Path(PROBE_FILE).name


def _fio_file(name: str) -> bool:
    return name.startswith("iofleet-data.") or name == _PROBE_NAME


def data_file_name(job: int) -> str:
    """Job n's data file (fio's $jobnum, $filenum 0: one file per job)."""
    return Path(DATA_FILE_FORMAT.replace("$jobnum", str(job)).replace("$filenum", "0")).name


def _read_record(dir_fd: int) -> set[str]:
    try:
        fd = os.open(RECORD_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return set()
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # (a FIFO would never end)
            return set()
        try:
            names = json.loads(f.read(1 << 20)).get("files", [])
        except (ValueError, AttributeError):
            return set()
    return {n for n in names if isinstance(n, str) and _fio_file(n) and "/" not in n}


def owned_data_files(own: Path) -> list[Path]:
    """iofleet's data files in its directory `own`: recorded as made by
    iofleet and still regular files (a killed or kept run's)."""
    try:
        fd = os.open(own, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        names = _read_record(fd)
    except OSError:
        return []
    finally:
        os.close(fd)
    return [own / n for n in sorted(names) if n != _PROBE_NAME and _regular(own / n)]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class _Dir:
    """iofleet's directory under one target, open (no symlink followed)
    and locked for this run."""

    def __init__(self, target: Path, own: Path, fd: int, lock: TargetLock):
        self.target, self.own, self.fd, self.lock = target, own, fd, lock
        self.files = _read_record(fd)

    def write_record(self) -> None:
        """Replace the record whole (rename), or remove it when empty."""
        if not self.files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(RECORD_NAME, dir_fd=self.fd)
            return
        tmp = RECORD_NAME + ".new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=self.fd)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=self.fd)
        with os.fdopen(fd, "w") as f:
            json.dump({"about": "files made by iofleet runs; iofleet removes only these", "files":
                       sorted(self.files)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, RECORD_NAME, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def stray(self) -> str | None:
        """A file of fio's names that iofleet did not make (or a recorded
        name that is no longer a plain file): fio would write through it."""
        for name in sorted(os.listdir(self.fd)):
            if not _fio_file(name):
                continue
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            if name not in self.files:
                return (f"{self.own / name} was not made by iofleet (it is not in {self.own / RECORD_NAME}, "
                        f"iofleet's record of its files there); move it out of {self.own}, then run again")
            if not stat.S_ISREG(st.st_mode):
                return (f"{self.own / name} is not a regular file (a symbolic link?): iofleet's file there was "
                        f"replaced; move it out of {self.own}, then run again")
        return None

    def remove_files(self) -> list[Path]:
        """Unlink the recorded files by name in the open directory: a
        symbolic link is never followed, and only regular files go."""
        removed = []
        for name in sorted(self.files):
            try:
                if stat.S_ISREG(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=self.fd)
                    if name != _PROBE_NAME:
                        removed.append(self.own / name)
                self.files.discard(name)
            except FileNotFoundError:
                self.files.discard(name)
            except OSError:
                pass
        return removed


class TargetDirs:
    """iofleet's own directory under each target: refused when it is a
    symbolic link or not a directory, created when missing, locked for the
    run (fleet/targets/lock.py), and on cleanup only the files iofleet recorded as
    its own are removed (truth rule 5)."""

    def __init__(self, targets: list[Path]):
        self.targets = [Path(t) for t in targets]
        self.created: list[Path] = []
        self._open: list[_Dir] = []

    @property
    def locks(self) -> list[TargetLock]:
        return [d.lock for d in self._open]

    def prepare(self, facts: dict | None = None) -> None:
        """Lock every target, and check it, before anything is written; on
        a refusal nothing is left held, and no directory made."""
        try:
            for target in self.targets:
                self._open.append(self._open_dir(target, facts or holder_facts()))
            for d in self._open:
                d.files.add(_PROBE_NAME)  # the engine probe's file: fio makes and removes it
                try:
                    d.write_record()
                except OSError as exc:
                    raise IofleetError(f"target {d.target}: cannot write {d.own / RECORD_NAME} "
                                       f"({exc.strerror})") from None
        except BaseException:
            self.release()
            for own in self.created:
                with contextlib.suppress(OSError):
                    os.rmdir(own)
            self.created = []
            raise

    def _open_dir(self, target: Path, facts: dict) -> _Dir:
        if not target.is_dir():
            raise IofleetError(f"target {target} is not a directory; create it or give another --target")
        own = target / DATA_DIR_NAME
        for _ in range(10):  # the last run's cleanup may remove the directory as it is opened: again
            d = self._try_open_dir(target, own, facts)
            if d is not None:
                return d
        raise IofleetError(f"target {target}: {own} keeps being removed and made again; run again")

    def _try_open_dir(self, target: Path, own: Path, facts: dict) -> _Dir | None:
        try:
            st = os.lstat(own)
        except FileNotFoundError:
            try:
                own.mkdir()
                self.created.append(own)
            except FileExistsError:
                pass  # another run made it just now: its lock decides
            except OSError as exc:
                raise IofleetError(f"target {target}: cannot create {own} ({exc.strerror})") from None
            try:
                st = os.lstat(own)
            except FileNotFoundError:
                return None
        if stat.S_ISLNK(st.st_mode):
            raise IofleetError(f"target {target}: {own} is a symbolic link (to {os.readlink(own)}), and iofleet "
                               f"writes only in a directory of its own; remove the link (`rm {own}`), then run again")
        if not stat.S_ISDIR(st.st_mode):
            raise IofleetError(f"target {target}: {own} is not a directory, and iofleet writes only in a directory "
                               f"of its own; move it away, then run again")
        if not os.access(own, os.W_OK):
            raise IofleetError(f"target {target}: {own} is not writable; fix its permissions")
        try:
            fd = os.open(own, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IofleetError(f"target {target}: cannot open {own} ({exc.strerror})") from None
        try:
            lock = lock_at(fd, LOCK_NAME, f"target {target}", facts)
        except BaseException:
            replaced = not _still_at(own, fd)
            os.close(fd)
            if replaced:
                return None
            raise
        if not _still_at(own, fd):  # removed (or swapped) since lstat: not the directory checked
            lock.release()
            os.close(fd)
            return None
        try:
            d = _Dir(target, own, fd, lock)
            problem = d.stray()
        except OSError as exc:
            problem = (f"cannot read {own} or iofleet's record of its files there ({exc.strerror}); fix it, then "
                       f"run again")
        if problem:
            lock.release()
            os.close(fd)
            raise IofleetError(f"target {target}: {problem}")
        return d

    def claim(self, jobs: int) -> None:
        """Record jobs 0..jobs-1's data files as iofleet's before fio makes
        them (a run killed after this leaves files the next run knows)."""
        names = {data_file_name(n) for n in range(jobs)}
        for d in self._open:
            if not names <= d.files:
                d.files |= names
                d.write_record()

    def cleanup(self) -> list[Path]:
        """Remove iofleet's recorded files (and the directories this run
        made, when empty); return the data files removed."""
        removed = []
        for d in self._open:
            removed += d.remove_files()
            with contextlib.suppress(OSError):
                d.write_record()
            if d.own in self.created:
                d.lock.release()  # its file goes first: the directory can then go
                try:
                    os.rmdir(d.own)
                except OSError:
                    pass  # something else lives there now: leave it
        return removed

    def release(self) -> None:
        """End of the run (its files removed or kept): the record keeps
        only the files that are there, for a later run; the locks go."""
        for d in self._open:
            d.files = {n for n in d.files if n != _PROBE_NAME and _exists(d.fd, n)}
            with contextlib.suppress(OSError):
                d.write_record()
            d.lock.release()
            os.close(d.fd)
        self._open = []


def _still_at(path: Path, fd: int) -> bool:
    """The directory open as `fd` is still the one at `path` (not a link)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except OSError:
        return False


def resolve_engine(target, engine: str, direct: bool) -> str:
    """The engine to use on a target (fleet/targets): the one asked for,
    checked, or for `auto` the first of io_uring, libaio, psync that works
    there; a target driven by its own engines (an RBD image) only those."""
    candidates = engine_candidates(target, engine)
    errors = []
    with work_dir("iofleet-probe-") as tmp:
        job = Path(tmp) / "probe.fio"
        for candidate in candidates:
            job.write_text(render_probe(target.probe_where("probe"), candidate, direct))
            try:
                proc = subprocess.run(
                    [fio_binary(), "--output-format=terse", "--eta=never", str(job)],
                    capture_output=True, text=True, timeout=60, cwd=tmp, env=os.environ | target.fio_env(),
                )
            except subprocess.TimeoutExpired:
                errors.append(f"{candidate}: probe timed out")
                continue
            if proc.returncode == 0:
                return candidate
            errors.append(f"{candidate}: {error_line(proc.stderr, proc.stdout)}")
    hint = " (the filesystem may not support O_DIRECT: try `direct: false`)" if direct else ""
    raise FioError(f"target {target.label}: no IO engine works{hint}: " + "; ".join(errors))


def engine_candidates(target, engine: str) -> tuple[str, ...]:
    """The engines to try, in order, for a plan's `engine` on a target."""
    own = target.engines
    if own:
        if engine not in ("auto", *own):
            raise FioError(f"target {target.label} is driven by fio's {' or '.join(own)} engine only, not "
                           f"engine: {engine}; leave engine out (auto) or set it to {own[0]}")
        return own
    if engine in ("rbd",):
        raise FioError(f"engine: {engine} drives an RBD image only; give a target rbd:POOL/IMAGE or leave "
                       f"engine out (auto)")
    return AUTO_ENGINES if engine == "auto" else (engine,)

