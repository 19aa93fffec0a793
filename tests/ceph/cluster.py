"""A tiny real Ceph cluster for the tests, from the distribution's packages,
every daemon started by hand (Ceph's "Manual Deployment", as vstart.sh does
it): no systemd, no cephadm, no containers.

    with CephCluster(base_dir, fleet.gateway, fleet.subnet) as cluster:
        cluster.conf, cluster.keyring   # its ceph.conf and client.admin keyring
        cluster.env                     # {"CEPH_CONF": ...}, for fio's rbd engine
        cluster.ceph("osd", "tree", json_out=True)
        cluster.rbd("create", "--size", "64M", f"{cluster.rbd_pool}/img")
        cluster.mount_fuse(path)                 # CephFS in the root namespaces
        cluster.mount_fuse(path, pid=server_pid) # ... in that process's mount+net namespaces
        cluster.mount_fuse(path, netns="ns")     # ... in a new mount namespace nobody sees
        cluster.kill_osd(1); cluster.start_osd(1)   # faults
        cluster.stop_osd(2); cluster.cont_osd(2)

Layout of one cluster (token T, 5 hex digits), all under base_dir/ceph-T on
a real disk (never /etc/ceph, /var/lib/ceph, /var/log/ceph or /var/run/ceph):

    ceph.conf                    the cluster's only configuration
    ceph.client.admin.keyring    the admin key, named by absolute path in ceph.conf
    monmap, mon.keyring          what the mon is made from (its map, the initial keys)
    mon.a/ mgr.x/ mds.a/ osd.N/  daemon data directories, each with its keyring
    osd.N.img                    6 GiB sparse file behind a loop device;
                                 osd.N/block -> /dev/loopK (BlueStore)
    run/, crash/                 admin sockets and pid files; crash reports
    log/                         NAME.log (daemons), cluster.log (the mon's
                                 cluster log), NAME.out (daemon and ceph-fuse output)

    daemons: 1 mon (a), 1 mgr (x), 3 BlueStore OSDs (0..2), 1 MDS (a), one
             host, so CRUSH spreads replicas over OSDs (osd_crush_chooseleaf_type 0)
    pools:   rbd (replicated, size 3, min_size 2, 16 PGs, `rbd pool init`);
             cephfs_metadata and cephfs_data (8 PGs each) of the file system "cephfs"

Addressing. Every daemon binds public_addr (the mon on 3300 (v2) and 6789
(v1), or free ports when another cluster holds those on the address; the
others in 6800-7300), picked from public_network. The tests use a
TestFleet's bridge address (`fleet.gateway`, which lives in the root
namespace): reachable from the root namespace and from every fleet host, so
local runs and fio servers in network namespaces reach the same cluster.
Clients find it through CEPH_CONF (librados' search for ceph.conf honours
it); the conf names the admin keyring by absolute path.

Daemons and ceph-fuse run in the foreground (`-f`) as children of the test
process: their pids are known exactly, and PR_SET_PDEATHSIG kills them if
the test process dies. Start-up (until HEALTH_OK, all PGs active+clean, the
MDS active) takes 10-20 s on a 2-core VM, `startup_seconds`.

Cleanup. As with the test fleets (tests/fleet/testfleet.py), a cluster first
creates and locks a state file /run/iofleet-testceph/T.lock (its directory
and root-namespace mounts are recorded there), and only then creates files,
loop devices, processes and mounts. `close()` removes everything and raises
if anything is left. `cleanup_stale()` removes what a crashed run left:
processes whose command line points into its directory (every daemon and
ceph-fuse gets `-c DIR/ceph.conf`), their mounts, the loop devices over its
files, the directory; clusters alive in other processes (state file locked)
are left alone.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..fleet.processes import comm, die_with_parent, is_running, running_processes
from ..fleet.statefile import default_base_dir, filesystem_type, take_token, try_lock
from ..fleet.testhost import accepts

STATE_DIR = Path("/run/iofleet-testceph")
TOKEN_RE = r"[0-9a-f]{5}"
DIR_RE = re.compile(rf"^ceph-({TOKEN_RE})$")

BINARIES = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph", "rbd",
            "ceph-authtool", "monmaptool", "losetup", "nsenter", "umount")
N_OSDS = 3
OSD_SIZE = 6 * 2**30
MON_PORTS = (3300, 6789)  # msgr v2, v1: taken when free on public_addr
FUSE_TYPE = "fuse.ceph-fuse"
CLI_TIMEOUT = 60.0
# SIGTERM, then SIGKILL after this long: the MDS takes ~8 s to end on SIGTERM
# (it waits on the mon), ceph-fuse hangs while an OSD it writes to is
# stopped, and a test cluster needs no clean shutdown
STOP_TIMEOUT = 3.0


class CephError(RuntimeError):
    """The test cluster could not be set up, used or torn down."""


def unavailable_reason() -> str | None:
    """Why a test cluster cannot run here (for pytest.skip), or None."""
    if os.geteuid() != 0:
        return "Ceph tests need root (loop devices, ceph-fuse mounts, namespaces)"
    missing = [b for b in BINARIES if not shutil.which(b)]
    if missing:
        return f"Ceph tests need {', '.join(missing)} (`make system` installs the Ceph packages)"
    for dev in ("/dev/loop-control", "/dev/fuse"):
        if not os.path.exists(dev):
            return f"Ceph tests need {dev} (OSDs sit on loop devices, CephFS is mounted with ceph-fuse)"
    return None


# --------------------------------------------------------------- helpers


def _run(argv: list[str], timeout: float = CLI_TIMEOUT, input: str | None = None) -> str:
    """Run a command; its stdout, or CephError with its stderr."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise CephError(f"`{' '.join(argv)}` timed out after {timeout:.0f} s") from exc
    if proc.returncode != 0:
        err = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        raise CephError(f"`{' '.join(argv)}` failed ({proc.returncode}): {err}")
    return proc.stdout


def _unescape(path: str) -> str:
    """A path as /proc/PID/mountinfo writes it (octal escapes for space, tab, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def fuse_mounts(pid: int | str = "self") -> list[str]:
    """Mount points of ceph-fuse mounts in the mount namespace of `pid`."""
    try:
        text = Path(f"/proc/{pid}/mountinfo").read_text()
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == FUSE_TYPE:
            found.append(_unescape(fields[4]))
    return found


def _umount_in(ns_pid: int | str, mountpoint: str) -> None:
    """Lazily unmount `mountpoint` in the mount namespace of `ns_pid`, if mounted there."""
    if mountpoint in fuse_mounts(ns_pid):
        target = os.getpid() if ns_pid == "self" else ns_pid
        _run(["nsenter", "-t", str(target), "-m", "umount", "-l", mountpoint], timeout=30)


def loop_devices(under: Path) -> list[str]:
    """Loop devices whose backing file is in directory `under` (from sysfs:
    no losetup parsing; the file may already be deleted)."""
    prefix = f"{under}/"
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if backing.read_text().strip().startswith(prefix):
                found.append(f"/dev/{backing.parent.parent.name}")
    return sorted(found)


def _processes_under(directory: Path) -> dict[int, str]:
    """{pid: command line} of processes whose command line points into `directory`."""
    needle = f"{directory}/"
    return {pid: cmd for pid, (cmd, _) in running_processes().items() if needle in cmd}


def _stop(procs: list[subprocess.Popen], timeout: float = STOP_TIMEOUT) -> list[str]:
    """SIGTERM (and SIGCONT, for stopped ones), then SIGKILL what is left
    after `timeout`; reap all. Returns those that survive SIGKILL."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
            p.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + timeout
    for p in live:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
    stuck = []
    for p in live:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            stuck.append(f"process {p.pid} ({' '.join(p.args)}) survives SIGKILL")
    return stuck


def _free_port(addr: str, preferred: int) -> int:
    """`preferred` if nothing listens on addr:preferred, else a free port the
    kernel picks (another cluster may use the address, e.g. on loopback)."""
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind((addr, port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise CephError(f"no free port on {addr}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


# --------------------------------------------------------------- stale runs


def cleanup_stale(base_dir: Path | None = None) -> list[str]:
    """Remove what crashed runs left behind: for every cluster whose state
    file is missing or unlocked, its ceph-fuse mounts, its processes (kill
    -9), its loop devices and its directory. Returns what was removed."""
    base = Path(base_dir) if base_dir else default_base_dir()
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    tokens = {p.stem for p in STATE_DIR.glob("*.lock") if re.fullmatch(TOKEN_RE, p.stem)}
    if base.is_dir():
        tokens |= {m.group(1) for p in base.iterdir() if (m := DIR_RE.match(p.name))}
    for tmp in STATE_DIR.glob(".*.tmp"):  # ".TOKEN.PID.tmp" of a crash in _take_token
        pid = tmp.name.split(".")[2]
        if pid.isdigit() and not is_running(int(pid)):
            tmp.unlink(missing_ok=True)

    removed: list[str] = []
    for token in sorted(tokens):
        state = STATE_DIR / f"{token}.lock"
        fd = try_lock(state)
        if fd is None and state.exists():
            continue  # locked: a live cluster in some process
        try:
            info: dict = {}
            if fd is not None:
                with contextlib.suppress(OSError, ValueError):
                    info = json.loads(state.read_text() or "{}")
            dirs = {base / f"ceph-{token}"} | ({Path(info["dir"])} if info.get("dir") else set())
            for d in dirs:
                removed += _remove_run(d, info.get("root_mounts", []))
            if fd is not None:
                state.unlink(missing_ok=True)
                removed.append(f"state {state}")
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def _remove_run(directory: Path, root_mounts: list[str]) -> list[str]:
    removed = []
    procs = _processes_under(directory)
    for pid in procs:
        if comm(pid) == "ceph-fuse":
            with contextlib.suppress(CephError, OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
                _umount_in(pid, argv[-1].decode())  # its mount point is its last argument
    for pid in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        removed.append(f"process {pid}: {procs[pid]}")
    deadline = time.monotonic() + 10
    while any(is_running(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    for mountpoint in root_mounts:  # a killed ceph-fuse leaves its mount behind
        with contextlib.suppress(CephError):
            if mountpoint in fuse_mounts():
                _umount_in("self", mountpoint)
                removed.append(f"mount {mountpoint}")
    for dev in loop_devices(directory):
        with contextlib.suppress(CephError):
            _run(["losetup", "-d", dev])
            removed.append(f"loop {dev}")
    if directory.exists():
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(f"dir {directory}")
    return removed


# --------------------------------------------------------------- the cluster


@dataclass
class FuseMount:
    """CephFS mounted by a ceph-fuse running in the foreground (pid `pid`).
    `ns_pid` is a process whose mount namespace holds the mount ("self" for
    the root namespaces); `close()` unmounts there and ends ceph-fuse."""

    mountpoint: Path
    where: str              # what mount_fuse was asked for, for messages
    proc: subprocess.Popen
    ns_pid: int | str
    log: Path
    _cluster: CephCluster = field(repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def visible_to(self, pid: int | str) -> bool:
        """True if this mount is in the mount namespace of process `pid`."""
        return str(self.mountpoint) in fuse_mounts(pid)

    def close(self) -> None:
        self._cluster._unmount(self)

    def __enter__(self) -> FuseMount:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class CephCluster:
    """A 1 mon, 1 mgr, 3 OSD, 1 MDS Ceph cluster on public_addr (see the
    module's docstring for its layout).

    A context manager: `with CephCluster(base, addr, net) as c: ...`;
    `close()` removes everything (mounts, daemons, loop devices, files), is
    idempotent and safe after a failed start."""

    def __init__(self, base_dir: Path | str | None, public_addr: str, public_network: str,
                 startup_timeout: float = 240.0):
        self.base_dir = Path(base_dir) if base_dir else default_base_dir()
        self.public_addr = public_addr
        self.public_network = public_network
        self.startup_timeout = startup_timeout
        self.token = ""
        self.dir: Path | None = None
        self.fsid = ""
        self.rbd_pool = "rbd"
        self.fs_name = "cephfs"
        self.startup_seconds: float | None = None
        self.mon_ports: tuple[int, ...] = ()  # v2, v1
        self.mon_addrs = ""  # [v2:ADDR:PORT,v1:ADDR:PORT], as mon_host has them
        self.mounts: list[FuseMount] = []
        self._daemons: dict[str, subprocess.Popen] = {}  # "osd.0" -> its process
        self._root_mounts: list[str] = []
        self._fuse_logs = itertools.count()
        self._state_fd: int | None = None
        self._closed = False

    # ---- paths and environment

    @property
    def conf(self) -> Path:
        return self.dir / "ceph.conf"

    @property
    def keyring(self) -> Path:
        return self.dir / "ceph.client.admin.keyring"

    @property
    def log_dir(self) -> Path:
        return self.dir / "log"

    @property
    def env(self) -> dict[str, str]:
        """What a client (fio's rbd engine, a fio server) needs in its environment."""
        return {"CEPH_CONF": str(self.conf)}

    # ---- the CLI

    def ceph(self, *args: str, json_out: bool = False, timeout: float = CLI_TIMEOUT, input: str | None = None):
        """`ceph -c CONF ARGS...`: its stdout, or its JSON output parsed."""
        argv = ["ceph", "-c", str(self.conf), "--connect-timeout", str(int(timeout)), *args]
        if json_out:
            argv.append("--format=json")
        out = _run(argv, timeout=timeout + 5, input=input)
        return json.loads(out) if json_out else out

    def rbd(self, *args: str, timeout: float = CLI_TIMEOUT) -> str:
        """`rbd -c CONF ARGS...`: its stdout."""
        return _run(["rbd", "-c", str(self.conf), *args], timeout=timeout)

    def status(self) -> dict:
        """`ceph status` as JSON."""
        return self.ceph("status", json_out=True)

    # ---- daemons

    @property
    def mon_pid(self) -> int:
        return self._daemons["mon.a"].pid

    @property
    def mgr_pid(self) -> int:
        return self._daemons["mgr.x"].pid

    @property
    def mds_pid(self) -> int:
        return self._daemons["mds.a"].pid

    @property
    def osd_pids(self) -> list[int]:
        """pids of the OSD processes, by OSD id (the last started for each)."""
        return [self._daemons[f"osd.{i}"].pid for i in range(N_OSDS)]

    def kill_osd(self, i: int) -> None:
        """kill -9 OSD i (a crashed OSD) and reap it; `start_osd(i)` brings it back."""
        proc = self._daemons[f"osd.{i}"]
        proc.kill()
        proc.wait(timeout=10)

    def stop_osd(self, i: int) -> None:
        """kill -STOP OSD i (a hung OSD); `cont_osd(i)` resumes it."""
        self._daemons[f"osd.{i}"].send_signal(signal.SIGSTOP)

    def cont_osd(self, i: int) -> None:
        self._daemons[f"osd.{i}"].send_signal(signal.SIGCONT)

    def start_osd(self, i: int) -> None:
        """Start OSD i's daemon (again, after kill_osd) on its existing data."""
        old = self._daemons.get(f"osd.{i}")
        if old is not None and old.poll() is None:
            raise CephError(f"osd.{i} is still running (pid {old.pid})")
        self._spawn(f"osd.{i}", ["ceph-osd", "-f", "-c", str(self.conf), "-i", str(i)])

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        with open(self.log_dir / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=die_with_parent)
        self._daemons[name] = proc
        return proc

    def _check_daemons(self) -> None:
        for name, proc in self._daemons.items():
            if proc.poll() is not None:
                raise CephError(f"{name} exited with {proc.returncode}; see {self.log_dir}/{name}.log "
                                f"and {name}.out:\n{_tail(self.log_dir / f'{name}.log')}\n"
                                f"{_tail(self.log_dir / f'{name}.out')}")

    # ---- CephFS mounts

    def mount_fuse(self, mountpoint: Path | str, pid: int | None = None, netns: str | None = None,
                   timeout: float = 60.0) -> FuseMount:
        """Mount the CephFS on `mountpoint` with ceph-fuse:
        - pid: inside that process's mount AND network namespaces (`nsenter
          -t PID -m -n`), e.g. where a fleet host's fio server sees it (a
          restarted server, `ip netns exec` again, has a new one: mount again);
        - netns only: `ip netns exec NETNS ceph-fuse`, which gives ceph-fuse
          a new mount namespace of its own: nobody else sees the mount (a
          process in that netns writes into the directory underneath), and
          the namespace ends with ceph-fuse;
        - neither: in the root namespaces (copied into mount namespaces
          created later, such as a later netns mount's).
        Waits until the mount is there; unmounted by its close() or the cluster's."""
        mountpoint = Path(mountpoint)
        mountpoint.mkdir(parents=True, exist_ok=True)
        argv = ["ceph-fuse", "-f", "-c", str(self.conf), "--id", "admin", str(mountpoint)]
        if pid is not None:
            prefix, where = ["nsenter", "-t", str(pid), "-m", "-n", "--"], f"namespaces of pid {pid}"
        elif netns is not None:
            prefix, where = ["ip", "netns", "exec", netns], f"netns {netns} (own mount namespace)"
        else:
            prefix, where = [], "root namespaces"
        if pid is None and netns is None:  # stays after a crash: cleanup_stale needs to know
            self._root_mounts.append(str(mountpoint))
            self._write_state()
        log = self.log_dir / f"ceph-fuse-{next(self._fuse_logs)}.out"
        with open(log, "ab") as out:
            # nsenter (no pid namespace) and `ip netns exec` exec in place: proc.pid is ceph-fuse's
            proc = subprocess.Popen([*prefix, *argv], stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent)
        ns_pid = pid if pid is not None else (proc.pid if netns is not None else "self")
        mount = FuseMount(mountpoint, where, proc, ns_pid, log, self)
        self.mounts.append(mount)
        deadline = time.monotonic() + timeout
        while not mount.visible_to(proc.pid):
            if proc.poll() is not None or time.monotonic() > deadline:
                state = f"exited with {proc.returncode}" if proc.poll() is not None else f"not mounted after {timeout:.0f} s"
                self._unmount(mount)
                raise CephError(f"ceph-fuse on {mountpoint} ({where}) {state}; see {log}:\n{_tail(log)}")
            time.sleep(0.05)
        return mount

    def _unmount(self, mount: FuseMount) -> None:
        if mount not in self.mounts:
            return
        problems = self._detach(mount) + _stop([mount.proc])
        self.mounts.remove(mount)
        if problems:
            raise CephError(f"unmounting {mount.mountpoint} ({mount.where}): {'; '.join(problems)}")

    @staticmethod
    def _detach(mount: FuseMount) -> list[str]:
        """Lazily unmount in the namespace holding the mount (the one it was
        made in, or ceph-fuse's own if that process is gone), before ceph-fuse
        ends: a killed ceph-fuse would leave a dead mount there. Copies of a
        root-namespace mount in namespaces created later stay until those end."""
        problems = []
        for ns_pid in dict.fromkeys([mount.ns_pid, mount.proc.pid]):
            if ns_pid == "self" or is_running(ns_pid):
                try:
                    _umount_in(ns_pid, str(mount.mountpoint))
                except CephError as exc:
                    problems.append(str(exc))
        return problems

    # ---- set-up

    def __enter__(self) -> CephCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        reason = unavailable_reason()
        if reason:
            raise CephError(reason)
        t0 = time.monotonic()
        cleanup_stale(self.base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        fstype = filesystem_type(self.base_dir)
        if fstype in ("tmpfs", "ramfs"):
            raise CephError(f"{self.base_dir} is on {fstype}; OSD files need a real disk "
                            "(set IOFLEET_FLEET_DIR or base_dir)")
        self._take_token()
        self.dir = self.base_dir / f"ceph-{self.token}"
        self._write_state()
        try:
            self._bootstrap(t0)
        except CephError as exc:
            raise CephError(f"{exc}\n{self.diagnose()}") from exc
        self.startup_seconds = time.monotonic() - t0
        print(f"Ceph test cluster {self.token} up in {self.startup_seconds:.1f} s "
              f"(mon {self.public_addr}, conf {self.conf})")

    def _bootstrap(self, t0: float) -> None:
        for d in ("run", "log", "crash"):
            (self.dir / d).mkdir(parents=True)
        self.fsid = str(uuid.uuid4())
        self.mon_ports = tuple(_free_port(self.public_addr, p) for p in MON_PORTS)
        self.mon_addrs = "[v2:{0}:{1},v1:{0}:{2}]".format(self.public_addr, *self.mon_ports)
        self._write_conf()
        self._start_mon()
        # the mgr and the MDS wait for the mon by themselves
        self._spawn("mgr.x", ["ceph-mgr", "-f", "-c", str(self.conf), "-i", "x"])
        self._spawn("mds.a", ["ceph-mds", "-f", "-c", str(self.conf), "-i", "a"])
        with concurrent.futures.ThreadPoolExecutor(N_OSDS + 1) as pool:
            configured = pool.submit(self._configure)  # needs only the mon
            osds = {pool.submit(self._make_osd, i): i for i in range(N_OSDS)}
            for made in concurrent.futures.as_completed(osds):
                made.result()
                # from this thread: PR_SET_PDEATHSIG fires when the thread that
                # started a daemon ends, and the pool's threads end right here
                self.start_osd(osds[made])
            configured.result()
        self._wait_healthy(t0)

    def _take_token(self) -> None:
        taken = take_token(STATE_DIR, lambda t: (self.base_dir / f"ceph-{t}").exists())
        if taken is None:
            raise CephError("could not pick a free test-cluster token")
        self.token, self._state_fd = taken

    def _write_state(self) -> None:
        info = {"pid": os.getpid(), "dir": str(self.dir), "root_mounts": self._root_mounts}
        os.ftruncate(self._state_fd, 0)
        os.pwrite(self._state_fd, json.dumps(info).encode(), 0)

    def _write_conf(self) -> None:
        d = self.dir
        daemon = f"keyring = {d}/$name/keyring\npid_file = $run_dir/$name.pid\n"
        self.conf.write_text(f"""\
[global]
fsid = {self.fsid}
mon_host = {self.mon_addrs}
public_network = {self.public_network}
ms_bind_ipv6 = false
keyring = {self.keyring}
run_dir = {d}/run
crash_dir = {d}/crash
log_file = {d}/log/$name.log
mon_cluster_log_file = {d}/log/cluster.log
mon_data = {d}/$name
mgr_data = {d}/$name
osd_data = {d}/$name
mds_data = {d}/$name
# an OSD killed by a scenario test makes its peers' pings count as slow (OSD_SLOW_PING_TIME_*), a warning
# that would stay for 15 minutes, past the session's other tests: warn only past 100 s
mon_warn_on_slow_ping_time = 100000
# every client here is new: no HEALTH_WARN for allowing old ones' insecure reclaim
auth_allow_insecure_global_id_reclaim = false
# one host: replicas go to distinct OSDs, and OSDs may report their peers down
osd_crush_chooseleaf_type = 0
mon_osd_reporter_subtree_level = osd
osd_pool_default_size = 3
osd_pool_default_min_size = 2
osd_pool_default_pg_autoscale_mode = off
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
# commit map changes (pool and OSD creation, boots) without batching them for 1 s
paxos_propose_interval = 0.1
# the disk is the test machine's, shared with everything else: warn only
# when it is nearly full, not below 30 % free as in production
mon_data_avail_warn = 10
# no restful, iostat or nfs modules (the always-on ones are enough)
mgr_initial_modules =

[mon]
{daemon}
[mgr]
{daemon}
[osd]
{daemon}osd_memory_target = {2**30}
# a new device: fsck right after mkfs only costs start-up time
bluestore_fsck_on_mkfs = false

[mds]
{daemon}mds_cache_memory_limit = {256 * 2**20}
""")

    def _authtool(self, *args: str) -> str:
        return _run(["ceph-authtool", *args])

    def _start_mon(self) -> None:
        d = self.dir
        full = ["--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *",
                "--cap", "mgr", "allow *"]
        self._authtool("--create-keyring", str(self.keyring), "--gen-key", "-n", "client.admin", *full)
        # the mon's initial keyring seeds its auth database: admin, mgr and MDS keys go in with it
        seed = d / "mon.keyring"
        self._authtool("--create-keyring", str(seed), "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
        self._authtool(str(seed), "--import-keyring", str(self.keyring))
        for name, caps in (("mgr.x", ["--cap", "mon", "allow profile mgr", "--cap", "osd", "allow *",
                                      "--cap", "mds", "allow *"]),
                           ("mds.a", ["--cap", "mon", "allow profile mds", "--cap", "osd", "allow rwx",
                                      "--cap", "mds", "allow", "--cap", "mgr", "allow profile mds"])):
            (d / name).mkdir()
            self._authtool("--create-keyring", str(d / name / "keyring"), "--gen-key", "-n", name, *caps)
            self._authtool(str(seed), "--import-keyring", str(d / name / "keyring"))
        monmap = d / "monmap"
        _run(["monmaptool", "--create", "--fsid", self.fsid, "--addv", "a", self.mon_addrs, str(monmap)])
        _run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(monmap),
              "--keyring", str(seed)])
        self._spawn("mon.a", ["ceph-mon", "-f", "-c", str(self.conf), "-i", "a"])
        # every later step talks to the mon: fail here, not after a CLI's connect timeout
        deadline = time.monotonic() + 30
        while not accepts(self.public_addr, self.mon_ports[0]):
            self._check_daemons()
            if time.monotonic() > deadline:
                raise CephError(f"mon.a not listening on {self.public_addr}:{self.mon_ports[0]} after 30 s")
            time.sleep(0.05)

    def _make_osd(self, i: int) -> None:
        """Sparse file -> loop device -> `ceph osd new` -> mkfs (not started)."""
        image = self.dir / f"osd.{i}.img"
        with open(image, "wb") as f:
            f.truncate(OSD_SIZE)
        # direct IO: the loop device does not cache the OSD's data a second time
        loop = _run(["losetup", "--find", "--show", "--direct-io=on", str(image)]).strip()
        osd_dir = self.dir / f"osd.{i}"
        osd_dir.mkdir()
        (osd_dir / "block").symlink_to(loop)
        key = self._authtool("--gen-print-key").strip()
        # `ceph-osd --mkfs --key` would not write the keyring file the daemon reads
        self._authtool("--create-keyring", str(osd_dir / "keyring"), "-n", f"osd.{i}", "--add-key", key)
        osd_uuid = str(uuid.uuid4())
        self.ceph("osd", "new", osd_uuid, str(i), "-i", "-", input=json.dumps({"cephx_secret": key}))
        _run(["ceph-osd", "-c", str(self.conf), "-i", str(i), "--mkfs", "--osd-uuid", osd_uuid],
             timeout=180)

    def _configure(self) -> None:
        # no SMART scraping of loop devices, no device_health_metrics pool (a
        # mgr module's option: not read from ceph.conf; --force, as the mon
        # knows module options only once the mgr has reported them)
        self.ceph("config", "set", "mgr", "mgr/devicehealth/enable_monitoring", "false", "--force")
        self.ceph("osd", "pool", "create", self.rbd_pool, "16", "16", "replicated")
        self.ceph("osd", "pool", "create", "cephfs_metadata", "8")
        self.ceph("osd", "pool", "create", "cephfs_data", "8")
        self.ceph("fs", "new", self.fs_name, "cephfs_metadata", "cephfs_data")
        # one MDS: no standby to wait or warn for
        self.ceph("fs", "set", self.fs_name, "standby_count_wanted", "0")

    def _wait_healthy(self, t0: float) -> None:
        """`rbd pool init` once every OSD is up and every PG active+clean
        (it needs active PGs), then wait for HEALTH_OK with the MDS
        up:active. CephError as soon as a daemon dies (a hung `rbd` would
        hide it) or when the start-up timeout passes."""
        pool_ready = False
        while True:
            self._check_daemons()
            try:
                st = self.status()
            except CephError:
                st = None  # a busy mon: ask again
            if st is not None and not pool_ready and self._osds_and_pgs_ready(st):
                self.rbd("pool", "init", self.rbd_pool)
                pool_ready = True
                continue
            if st is not None and pool_ready and self._healthy(st):
                return
            if time.monotonic() - t0 > self.startup_timeout:
                raise CephError(f"test cluster not healthy after {self.startup_timeout:.0f} s")
            time.sleep(1)

    @staticmethod
    def _osds_and_pgs_ready(st: dict) -> bool:
        osdmap, pgmap = st["osdmap"], st["pgmap"]
        clean = sum(s["count"] for s in pgmap["pgs_by_state"] if s["state_name"] == "active+clean")
        return (osdmap["num_osds"] == osdmap["num_up_osds"] == osdmap["num_in_osds"] == N_OSDS
                and pgmap["num_pgs"] > 0 and clean == pgmap["num_pgs"])

    @classmethod
    def _healthy(cls, st: dict) -> bool:
        ranks = st["fsmap"].get("by_rank", [])
        return (st["health"]["status"] == "HEALTH_OK" and cls._osds_and_pgs_ready(st)
                and len(ranks) == 1 and ranks[0]["status"] == "up:active")

    def diagnose(self) -> str:
        """`ceph -s` and the tails of the daemons' logs, for error messages."""
        try:
            status = self.ceph("-s", timeout=15)
        except CephError as exc:
            status = str(exc)
        parts = [f"ceph -s:\n{status.rstrip()}", f"logs in {self.log_dir}:"]
        for log in sorted(self.log_dir.glob("*.log")) + sorted(self.log_dir.glob("*.out")):
            if tail := _tail(log, 8):
                parts.append(f"--- {log.name}\n{tail}")
        return "\n".join(parts)

    # ---- tear-down

    def leftovers(self) -> list[str]:
        """Processes, mounts, loop devices and files of this cluster that still exist."""
        if self.dir is None:
            return []
        found = [f"process {pid}: {cmd}" for pid, cmd in _processes_under(self.dir).items()]
        found += [f"mount {m} (root namespaces)" for m in self._root_mounts if m in fuse_mounts()]
        found += [f"loop device {dev}" for dev in loop_devices(self.dir)]
        if self.dir.exists():
            found.append(f"dir {self.dir}")
        return found

    def close(self) -> None:
        """Remove everything this cluster created; CephError if something
        could not be removed (after trying everything)."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        for mount in self.mounts:
            problems += self._detach(mount)
        # ceph-fuse and daemons together: each ends within STOP_TIMEOUT
        problems += _stop([m.proc for m in self.mounts] + list(self._daemons.values()))
        self.mounts.clear()
        if self.dir is not None:
            for dev in loop_devices(self.dir):
                try:
                    _run(["losetup", "-d", dev])
                except CephError as exc:
                    problems.append(str(exc))
            shutil.rmtree(self.dir, ignore_errors=True)
        problems += self.leftovers()
        if self._state_fd is not None:
            if not problems:  # else leave it, unlocked, for cleanup_stale
                (STATE_DIR / f"{self.token}.lock").unlink(missing_ok=True)
            os.close(self._state_fd)
            self._state_fd = None
        if problems:
            raise CephError("test cluster teardown incomplete: " + "; ".join(problems))
