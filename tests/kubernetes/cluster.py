"""A real two-node Kubernetes cluster for the tests, on this machine, torn
down to nothing: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, and two nodes, kube-a and kube-b, each its own containerd
and kubelet. No kubeadm, no systemd, no images pulled: every daemon is a
child process started by hand, the images (a static pause, this machine's
fio) are written here and imported into each node's containerd.

    cluster = KubeCluster()
    cluster.start()                  # 9-11 s on a 2-core VM (start_seconds)
    cluster.kubeconfig               # admin kubeconfig (O=system:masters)
    api = cluster.api_client()       # a kubernetes.client.ApiClient on it
    cluster.fio_image                # "localhost/iofleet-fio:3.33", on both nodes
    cluster.ensure_storage_class("local")
    cluster.add_local_pvs("local", "kube-a", 1)              # Filesystem PVs (a directory each)
    cluster.add_local_pvs("local", "kube-b", 1, block=True)  # Block PVs (a loop device each)
    cluster.stop()                   # everything removed; raises if anything is left

Built from (checked on Debian 12): Kubernetes v1.34.4 built by
tests/kubernetes/build.sh (`make kubernetes`), Debian's etcd 3.4, containerd
1.6, runc 1.1 and CNI plugins 1.1. What it took beyond the obvious: the CRI
plugin's `restrict_oom_score_adj = true` (runc otherwise fails to lower the
sandbox's oom_score_adj), image names with a registry host (`localhost/...`,
else the CRI reads them as docker.io/...), `failCgroupV1: false` (cgroup v1
here), node IPs on bridges (a kubelet refuses a loopback node IP).

Layout (slot S, 0 for the first cluster on the machine; all state, certs and
logs under DIR = a fresh /tmp/iofleet-kube-XXXX):

    pki/                 CA, serving and client certificates, the service-account key
    *.kubeconfig         admin (cluster.kubeconfig), controller-manager, scheduler
    etcd/                etcd's data (plain HTTP on loopback, free ports)
    logs/NAME.log        every daemon's output (tails printed when start fails)
    images/              pause (static, from pause.c), pause.tar and fio.tar (OCI archives)
    bin/                 the kubelets' PATH: the few tools they run, and no iptables
                         (they would add chains to this host)
    kube-a/, kube-b/     per node: containerd/ (config, root, state, socket, runc state),
                         kubelet/ (root dir, its config, kubeconfig, serving cert),
                         cni/ (the bridge conflist, host-local IPAM state), pod-logs/
    pv/                  local PVs: a directory each, or NAME.img behind a loop device

    nodes     kube-a, kube-b; node IP = the gateway of its bridge, where its kubelet
              listens (free port): the apiserver reaches it at InternalIP:daemonEndpoints
              port, verifying its serving certificate with the cluster's CA
    bridges   ikube-a, ikube-b (ikubeS-a, ikubeS-b for slot S > 0), created here with
              the gateway address; the CNI bridge plugin adds the pods' veths
    pod CIDRs 10.244.(2S+1).0/24 on kube-a, 10.244.(2S+2).0/24 on kube-b, reachable from
              the host (no masquerade, no overlay); services 10.97.0.0/24 (no kube-proxy:
              ClusterIPs do not route)
    cgroups   /ikubeS/kube-a and .../kube-b (the kubelets' cgroupRoot) in every
              cgroup v1 hierarchy

Host state. The kubelets set vm.overcommit_memory, kernel.panic and
kernel.panic_on_oops (and check three more sysctls), the bridge plugin sets
net.ipv4.ip_forward: the first cluster records their values in
/run/iofleet-kube/host.json and the last one to stop restores them; the
same for host directories the daemons create when missing
(/var/log/containers, /var/lib/cni, /run/containerd, and /var/lib/kubelet
for the kubelets' device-plugin socket, a fixed path).

Cleanup. A cluster holds /run/iofleet-kube/slot-S.lock (flock) while it
lives and records what it made in slot-S.json. `stop()` deletes every pod
(so the kubelets unmount volumes and containerd tears sandboxes down), stops
the kubelets, containerds, scheduler, controller-manager, apiserver and etcd,
then removes by force whatever is left (processes in its cgroups or naming
its directory, e.g. containerd-shim-runc-v2; mounts under its directory;
loop devices; bridges and their veths; cgroups; CNI cache entries) and the
directory, and raises if anything is left (`leftovers()`). A new cluster
first removes what a killed run left in unlocked slots (`cleanup_stale()`);
daemons die with the thread that started them (PR_SET_PDEATHSIG): call
start() from the main thread.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import datetime
import fcntl
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

KUBE_VERSION = os.environ.get("KUBE_VERSION", "v1.34.4")
KUBE_BIN = Path(os.environ.get("KUBE_CACHE", "/var/cache/iofleet/kubernetes")) / KUBE_VERSION / "bin"
KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
HOST_COMMANDS = ("etcd", "containerd", "containerd-shim-runc-v2", "runc", "ctr", "gcc", "losetup", "ip", "setpriv",
                 "mount", "umount")
CNI_BIN = Path("/usr/lib/cni")
# What the kubelets may run (their PATH is a directory of links to these).
KUBELET_TOOLS = ("mount", "umount", "losetup", "blockdev", "blkid", "findmnt", "nsenter", "du", "find", "ionice",
                 "nice", "stat", "mkfs", "fsck", "e2fsck", "mkfs.ext4", "resize2fs")
NODES = ("kube-a", "kube-b")
SERVICE_CIDR = "10.97.0.0/24"
PAUSE_IMAGE = "localhost/iofleet-pause:1"
STATE_DIR = Path("/run/iofleet-kube")
MAX_SLOTS = 8
# What the kubelets (setupKernelTunables) and the CNI bridge plugin
# (isGateway) set these sysctls to.
SYSCTLS = {"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10", "kernel/panic_on_oops": "1",
           "kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000", "net/ipv4/ip_forward": "1"}
# Made by the daemons when missing: container log links, the CNI result
# cache, the shims' sockets, the kubelets' device-plugin socket (a fixed path).
HOST_DIRS = ("/var/log/containers", "/var/lib/cni", "/run/containerd", "/var/lib/kubelet")
CNI_CACHE = Path("/var/lib/cni/results")
START_TIMEOUT = 90.0
HOUR, WEEK = datetime.timedelta(hours=1), datetime.timedelta(days=7)  # the certificates' validity around now
STOP_TIMEOUT = 5.0  # SIGTERM, then SIGKILL after this long


class KubeClusterError(RuntimeError):
    """The test cluster could not be started, used or torn down."""


def unavailable_reason() -> str | None:
    """Why the Kubernetes tests are skipped here (not root), or None. Missing
    binaries are not a reason to skip: `missing()` says what to install."""
    if os.geteuid() != 0:
        return "the Kubernetes tests need root (containerd, kubelets, bridges, mounts, loop devices, cgroups)"
    return None


def missing() -> str | None:
    """What this machine lacks for a test cluster, as an error message, or None."""
    gone = [c for c in KUBE_COMMANDS if not os.access(KUBE_BIN / c, os.X_OK)]
    gone += [c for c in HOST_COMMANDS if not shutil.which(c)]
    gone += [f"{CNI_BIN}/{p}" for p in ("bridge", "host-local", "loopback") if not (CNI_BIN / p).exists()]
    if not gone:
        return None
    return (f"the Kubernetes test cluster needs {', '.join(gone)}: run `make kubernetes` (Debian's etcd-server, "
            f"containerd, runc, containernetworking-plugins, gcc; Kubernetes {KUBE_VERSION} built into {KUBE_BIN})")


# --------------------------------------------------------------- helpers


def _run(argv: list[str], timeout: float = 60, check: bool = True) -> str:
    """Run a command; its stdout, or KubeClusterError with its output."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise KubeClusterError(f"`{' '.join(argv)}` timed out after {timeout:.0f} s") from exc
    if check and proc.returncode != 0:
        raise KubeClusterError(f"`{' '.join(argv)}` failed ({proc.returncode}): "
                               f"{(proc.stderr.strip() or proc.stdout.strip())[-1500:]}")
    return proc.stdout


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, lines: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _mounts_under(directory: Path) -> list[str]:
    """Mount points at or under `directory` in this mount namespace, deepest first."""
    prefix = str(directory)
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = _unescape(line.split()[4])
        if point == prefix or point.startswith(prefix + "/"):
            found.append(point)
    return sorted(set(found), key=lambda p: (-p.count("/"), p))


def _loop_devices(directory: Path, devices: list[str]) -> list[str]:
    """Loop devices over a file under `directory` or over one of `devices`
    (a kubelet holds a Block volume's device open with a loop device of its own)."""
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            path = backing.read_text().strip().removesuffix(" (deleted)")
            if path.startswith(f"{directory}/") or path in devices:
                found.append(f"/dev/{backing.parent.parent.name}")
    return sorted(found)


def _cgroup_mounts() -> dict[str, str]:
    """{mount point: "cgroup" or "cgroup2"} of this machine's cgroup hierarchies."""
    found = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        fstype = fields[fields.index("-") + 1]
        if fstype in ("cgroup", "cgroup2"):
            found[_unescape(fields[4])] = fstype
    return found


def _cgroup_pids(directory: Path) -> set[int]:
    pids = set()
    if directory.is_dir():
        for procs in directory.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids |= {int(p) for p in procs.read_text().split()}
    return pids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _processes_naming(directory: Path) -> dict[int, str]:
    """{pid: command line} of live processes whose command line names `directory`."""
    needle = f"{directory}/".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes()
            if needle in cmdline.replace(b"\0", b" ") + b"/" and _alive(int(entry.name)):
                found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def _listening_unix_sockets(pid: int) -> list[str]:
    """Paths of the unix sockets process `pid` has open (a shim's socket in
    /run/containerd/s, which it leaves behind when killed)."""
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                  if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
        table = Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    return [f[7] for f in (line.split() for line in table) if len(f) >= 8 and f[6] in inodes and f[7].startswith("/")]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _kill(pids, sig=signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(pids, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _quantity(size: str) -> int:
    """Bytes of a Kubernetes quantity: 64Mi, 1Gi, 100M, 4096."""
    m = re.fullmatch(r"(\d+)([KMGT]i?)?", size.strip())
    if not m:
        raise ValueError(f"not a size: {size!r} (e.g. 64Mi)")
    unit = m.group(2) or ""
    power = " KMGT".index(unit[:1] or " ")
    return int(m.group(1)) * (1024 if unit.endswith("i") else 1000) ** power


def _lock(path: Path) -> int | None:
    """An fd holding an exclusive flock on `path`, or None when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def _host_lock():
    """Serialises the clusters' changes of host state: taking and freeing
    slots, host.json. The last cluster removes STATE_DIR, lock included: a
    lock taken on a file that is gone since is taken again."""
    while True:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(STATE_DIR / "host.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(STATE_DIR / "host.lock").st_ino == os.fstat(fd).st_ino:
                break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _live_slots() -> set[int]:
    live = set()
    for lock in STATE_DIR.glob("slot-*.lock"):
        fd = _lock(lock)
        if fd is None:
            live.add(int(lock.stem.split("-")[1]))
        else:
            os.close(fd)
    return live


# --------------------------------------------------------------- certificates


class _PKI:
    """The cluster's CA and the certificates signed by it (ECDSA P-256: fast)."""

    def __init__(self, directory: Path):
        from cryptography import x509
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.dir = directory
        directory.mkdir(parents=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "iofleet-test-ca")])
        now = datetime.datetime.now(datetime.timezone.utc)
        usage = x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                              data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                              encipher_only=False, decipher_only=False)
        self._ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                    .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
                    .not_valid_before(now - HOUR).not_valid_after(now + WEEK)
                    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                    .add_extension(usage, critical=True)
                    .sign(self._key, _sha256()))
        self.ca = self._write("ca", self._ca, self._key)[0]

    def _write(self, name: str, cert, key) -> tuple[Path, Path]:
        from cryptography.hazmat.primitives import serialization

        crt, pem = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
        pem.chmod(0o600)
        return crt, pem

    def issue(self, name: str, cn: str, orgs: tuple[str, ...] = (), ips: tuple[str, ...] = (),
              dns: tuple[str, ...] = (), server: bool = False) -> tuple[Path, Path]:
        """A client (or, with `server`, serving) certificate; its (crt, key) paths."""
        from cryptography import x509
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
                            + [x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self._ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - HOUR).not_valid_after(now + WEEK)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                         else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if ips or dns:
            names = [x509.IPAddress(ipaddress.ip_address(i)) for i in ips] + [x509.DNSName(d) for d in dns]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return self._write(name, builder.sign(self._key, _sha256()), key)

    def service_account_key(self) -> tuple[Path, Path]:
        """The service-account signing key: (public, private) PEM paths."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        pub, priv = self.dir / "sa.pub", self.dir / "sa.key"
        pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo))
        priv.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
        priv.chmod(0o600)
        return pub, priv


def _sha256():
    from cryptography.hazmat.primitives import hashes

    return hashes.SHA256()


def _kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str) -> Path:
    """A kubeconfig with the certificates inline (JSON is YAML)."""
    import base64

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "iofleet-test",
        "clusters": [{"name": "iofleet-test", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": "iofleet-test", "context": {"cluster": "iofleet-test", "user": user}}],
    }, indent=1))
    path.chmod(0o600)
    return path


# --------------------------------------------------------------- the cluster


@dataclass
class Node:
    name: str  # kube-a
    ip: str  # its bridge's gateway: the node's InternalIP, where its kubelet listens
    subnet: str  # its pods' CIDR, e.g. 10.244.1.0/24
    bridge: str  # ikube-a
    dir: Path
    kubelet_port: int
    healthz_port: int
    cgroup_root: str  # /ikube0/kube-a

    @property
    def containerd_socket(self) -> Path:
        return self.dir / "containerd" / "containerd.sock"

    @property
    def cni_network(self) -> str:
        return f"iofleet-{self.bridge}"


@dataclass
class LocalPV:
    name: str
    storage_class: str
    node: str
    size: str
    block: bool
    path: str  # the directory, or the loop device
    backing: Path | None = None  # a Block PV's image file


@dataclass
class _Daemon:
    name: str
    proc: subprocess.Popen
    log: Path


class KubeCluster:
    """A two-node cluster (see the module's docstring). Start with `start()`
    (or `with KubeCluster() as cluster:`); `stop()` removes everything, is
    idempotent, safe after a failed start, and also runs at exit."""

    def __init__(self, base_dir: Path | str | None = None, keep_logs: Path | str | None = None):
        """`base_dir`: where its directory is made (default: the temp dir).
        `keep_logs`: a directory that stop() copies the logs into (default:
        $IOFLEET_KUBE_KEEP_LOGS, if set), for a look after the directory is gone."""
        self._base_dir = Path(base_dir) if base_dir else Path(tempfile.gettempdir())
        keep_logs = keep_logs or os.environ.get("IOFLEET_KUBE_KEEP_LOGS")
        self.keep_logs = Path(keep_logs) if keep_logs else None
        self.dir: Path | None = None
        self.slot: int | None = None
        self.nodes: list[str] = []  # ["kube-a", "kube-b"]
        self.node_info: dict[str, Node] = {}  # by name: IP, pod CIDR, bridge, ports, directory
        self.kubeconfig: Path | None = None
        self.server: str | None = None  # https://127.0.0.1:PORT
        self.fio_image: str | None = None
        self.fio_version: str | None = None
        self.fio_image_digest: str | None = None
        self.pause_image = PAUSE_IMAGE
        self.snapshotter = "overlayfs"
        self.start_seconds: float | None = None
        self.stop_seconds: float | None = None
        self.stop_phases: dict[str, float] = {}  # seconds into stop() at the end of each phase
        self.forced_removals: list[str] = []  # what stop() had to remove by force (the daemons' leftovers)
        self.pvs: dict[str, LocalPV] = {}
        self._daemons: dict[str, _Daemon] = {}
        self._slot_fd: int | None = None
        self._loops: list[str] = []
        self._pki: _PKI | None = None
        self._api = None
        self._lock = threading.Lock()
        self._stopped = False

    # ----------------------------------------------------------- public

    @property
    def log_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def cgroup_parent(self) -> str:
        return f"ikube{self.slot}"  # not iofleet-*: the device-slow tests count those blkio groups

    def api_client(self):
        """A new kubernetes.client.ApiClient with the admin kubeconfig."""
        import kubernetes

        return kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))

    @property
    def core(self):
        """A CoreV1Api on a shared admin client."""
        import kubernetes

        if self._api is None:
            self._api = self.api_client()
        return kubernetes.client.CoreV1Api(self._api)

    def __enter__(self) -> KubeCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        if (reason := unavailable_reason() or missing()):
            raise KubeClusterError(reason)
        t0 = time.monotonic()
        atexit.register(self.stop)
        try:
            cleanup_stale()
            self._take_slot()
            self._prepare_host()
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                images = pool.submit(self._write_images)
                self._write_certificates()
                self._start_control_plane()
                for node in self.node_info.values():
                    self._start_containerd(node)
                for node in self.node_info.values():
                    self._wait(f"containerd of {node.name}", node.containerd_socket.exists, 20)
                archives = images.result()
                imports = [pool.submit(self._import, node, archive) for node in self.node_info.values()
                           for archive in archives]
                self._wait_apiserver()
                self._start_controllers()
                for node in self.node_info.values():
                    self._start_kubelet(node)
                for f in imports:
                    f.result()
            self._wait_nodes_ready()
        except BaseException:
            self._print_log_tails()
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0

    def log_tails(self, lines: int = 12) -> str:
        if self.dir is None or not self.log_dir.is_dir():
            return ""
        return "\n".join(f"--- {log} (last {lines} lines)\n{_tail(log, lines)}"
                         for log in sorted(self.log_dir.glob("*.log")))

    def namespace_exists(self, name: str) -> bool:
        """True while namespace `name` exists (also while it is Terminating)."""
        return _exists(self.core.read_namespace, name)

    def wait_service_account(self, namespace: str, timeout: float = 30) -> None:
        """Wait for the `default` service account of `namespace` (the
        controller-manager creates it; pods are refused until it exists)."""
        import kubernetes

        def present():
            try:
                self.core.read_namespaced_service_account("default", namespace)
                return True
            except kubernetes.client.ApiException as exc:
                if exc.status != 404:
                    raise
                return False
        self._wait(f"service account default in namespace {namespace}", present, timeout)

    # ----------------------------------------------------------- local PVs

    def ensure_storage_class(self, name: str) -> None:
        """A StorageClass for local PVs: no provisioner, WaitForFirstConsumer
        (the scheduler picks a node with a free PV), Retain (see reset_pvs)."""
        import kubernetes
        from kubernetes import client

        body = client.V1StorageClass(metadata=client.V1ObjectMeta(name=name),
                                     provisioner="kubernetes.io/no-provisioner",
                                     volume_binding_mode="WaitForFirstConsumer", reclaim_policy="Retain")
        try:
            client.StorageV1Api(self.core.api_client).create_storage_class(body)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:
                raise

    def add_local_pvs(self, storage_class: str, node: str, count: int, size: str = "64Mi",
                      block: bool = False) -> list[str]:
        """Create `count` local PVs of `size` on `node` in `storage_class`:
        Filesystem ones backed by a directory, Block ones by a loop device
        over a sparse file. Their names (unique in this cluster)."""
        if node not in self.nodes:
            raise KubeClusterError(f"no node {node!r} (nodes: {', '.join(self.nodes)})")
        names = []
        for _ in range(count):
            with self._lock:
                n = len(self.pvs) + 1
                name = f"{storage_class}-{node}-{'block' if block else 'fs'}-{n}"
                pv = LocalPV(name, storage_class, node, size, block, "")
                self.pvs[name] = pv
            if block:
                pv.backing = self.dir / "pv" / f"{name}.img"
                with open(pv.backing, "wb") as f:
                    f.truncate(_quantity(size))
                pv.path = _run(["losetup", "--find", "--show", str(pv.backing)]).strip()
                with self._lock:
                    self._loops.append(pv.path)
                    self._save_slot_state()
            else:
                pv.path = str(self.dir / "pv" / name)
                os.makedirs(pv.path)
            self._create_pv(pv)
            names.append(name)
        return names

    def reset_pvs(self) -> list[str]:
        """Delete this cluster's Released or Failed PVs (local PVs are not
        recycled: their claims are gone) and create them again, empty (a
        Filesystem PV's directory is emptied; a Block PV keeps its device).
        Their names."""
        import kubernetes

        renewed = []
        for pv in list(self.pvs.values()):
            try:
                phase = self.core.read_persistent_volume(pv.name).status.phase
            except kubernetes.client.ApiException as exc:
                if exc.status != 404:
                    raise
                phase = "Gone"
            if phase not in ("Released", "Failed", "Gone"):
                continue
            if phase != "Gone":
                self.core.delete_persistent_volume(pv.name)
                self._wait(f"PV {pv.name} deleted", lambda n=pv.name: not self._exists_pv(n), 30)
            if not pv.block:
                shutil.rmtree(pv.path)
                os.makedirs(pv.path)
            self._create_pv(pv)
            renewed.append(pv.name)
        return renewed

    def _exists_pv(self, name: str) -> bool:
        return _exists(self.core.read_persistent_volume, name)

    def _create_pv(self, pv: LocalPV) -> None:
        from kubernetes import client

        selector = client.V1NodeSelector(node_selector_terms=[client.V1NodeSelectorTerm(match_expressions=[
            client.V1NodeSelectorRequirement(key="kubernetes.io/hostname", operator="In", values=[pv.node])])])
        self.core.create_persistent_volume(client.V1PersistentVolume(
            metadata=client.V1ObjectMeta(name=pv.name, labels={"iofleet.io/test-node": pv.node}),
            spec=client.V1PersistentVolumeSpec(
                capacity={"storage": pv.size}, access_modes=["ReadWriteOnce"],
                volume_mode="Block" if pv.block else "Filesystem", storage_class_name=pv.storage_class,
                persistent_volume_reclaim_policy="Retain", local=client.V1LocalVolumeSource(path=pv.path),
                node_affinity=client.V1VolumeNodeAffinity(required=selector))))

    # ----------------------------------------------------------- start

    def _take_slot(self) -> None:
        with _host_lock():
            if not (STATE_DIR / "host.json").exists():  # the first cluster: record the host as it is
                record = {"sysctls": {k: Path(f"/proc/sys/{k}").read_text().strip() for k in SYSCTLS},
                          "missing_dirs": [d for d in HOST_DIRS if not os.path.exists(d)]}
                (STATE_DIR / "host.json").write_text(json.dumps(record))
            self._take_free_slot()

    def _take_free_slot(self) -> None:
        for slot in range(MAX_SLOTS):
            fd = _lock(STATE_DIR / f"slot-{slot}.lock")
            if fd is None:
                continue
            names = [self._bridge_name(slot, n) for n in NODES]
            routed = [_run(["ip", "-4", "route", "show", self._subnet(slot, i)]).strip() for i in range(len(NODES))]
            if any(Path(f"/sys/class/net/{b}").exists() for b in names) or any(routed):
                os.close(fd)  # used by something that is not a cluster of ours
                continue
            self.slot, self._slot_fd = slot, fd
            self.dir = Path(tempfile.mkdtemp(prefix="iofleet-kube-", dir=self._base_dir))
            self._save_slot_state()
            return
        raise KubeClusterError(f"no free cluster slot in {STATE_DIR} (at most {MAX_SLOTS} clusters, "
                               "bridges ikube*-a/b and routes of 10.244.0.0/16 free)")

    @staticmethod
    def _bridge_name(slot: int, node: str) -> str:
        return f"ikube{slot or ''}-{node.removeprefix('kube-')}"

    @staticmethod
    def _subnet(slot: int, index: int) -> str:
        return f"10.244.{2 * slot + index + 1}.0/24"

    def _save_slot_state(self) -> None:
        state = self._state()
        path = STATE_DIR / f"slot-{self.slot}.json"
        path.with_suffix(".tmp").write_text(json.dumps(state))
        path.with_suffix(".tmp").replace(path)

    def _prepare_host(self) -> None:
        for sub in ("logs", "images", "bin", "pv", "tmp"):
            (self.dir / sub).mkdir()
        for tool in KUBELET_TOOLS:
            if (path := shutil.which(tool)):
                (self.dir / "bin" / tool).symlink_to(path)
        ports = iter(_free_ports(2 * len(NODES)))
        for i, name in enumerate(NODES):
            subnet = ipaddress.ip_network(self._subnet(self.slot, i))
            node = Node(name=name, ip=str(subnet.network_address + 1), subnet=str(subnet),
                        bridge=self._bridge_name(self.slot, name), dir=self.dir / name, kubelet_port=next(ports),
                        healthz_port=next(ports), cgroup_root=f"/{self.cgroup_parent}/{name}")
            self.node_info[name] = node
            self.nodes.append(name)
            for sub in ("containerd", "kubelet", "cni/net.d", "cni/ipam", "pod-logs", "volume-plugins"):
                (node.dir / sub).mkdir(parents=True)
            _run(["ip", "link", "add", node.bridge, "type", "bridge"])
            _run(["ip", "addr", "add", f"{node.ip}/{subnet.prefixlen}", "dev", node.bridge])
            _run(["ip", "link", "set", node.bridge, "up"])
            self._make_cgroup(node.cgroup_root)
        self.snapshotter = "overlayfs" if self._overlay_works() else "native"

    def _make_cgroup(self, path: str) -> None:
        """`path` in every cgroup v1 hierarchy (a kubelet requires its
        cgroupRoot to exist); cpuset's cpus and mems copied from the root."""
        for mount, fstype in _cgroup_mounts().items():
            if fstype != "cgroup":
                continue
            current = Path(mount)
            for part in path.strip("/").split("/"):
                parent, current = current, current / part
                current.mkdir(exist_ok=True)
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    if (current / knob).exists() and not (current / knob).read_text().strip():
                        (current / knob).write_text((parent / knob).read_text())

    def _overlay_works(self) -> bool:
        probe = self.dir / "tmp" / "overlay-probe"
        dirs = [probe / d for d in ("lower", "upper", "work", "merged")]
        for d in dirs:
            d.mkdir(parents=True)
        ok = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                             f"lowerdir={dirs[0]},upperdir={dirs[1]},workdir={dirs[2]}", str(dirs[3])],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", str(dirs[3])], capture_output=True)
        shutil.rmtree(probe, ignore_errors=True)
        return ok

    def _write_images(self) -> list[Path]:
        """The pause image (pause.c, static) and this machine's fio, as OCI archives."""
        from iofleet.fleet.kubernetes.image import ImageLayer, write_fio_image, write_oci_archive

        images = self.dir / "images"
        _run(["gcc", "-static", "-O2", "-o", str(images / "pause"), str(Path(__file__).with_name("pause.c"))])
        layer = ImageLayer()
        layer.add_file("pause", mode=0o755, source=str(images / "pause"))
        write_oci_archive(images / "pause.tar", PAUSE_IMAGE, layer, ["/pause"])
        fio = write_fio_image(images / "fio.tar")
        self.fio_image, self.fio_version, self.fio_image_digest = fio.name, fio.fio_version, fio.digest
        return [images / "pause.tar", fio.path]

    def _write_certificates(self) -> None:
        pki = self._pki = _PKI(self.dir / "pki")
        self._apiserver_port, self._kcm_port, self._scheduler_port, self._etcd_port, self._etcd_peer_port = \
            _free_ports(5)
        self.server = f"https://127.0.0.1:{self._apiserver_port}"
        service_ip = str(ipaddress.ip_network(SERVICE_CIDR).network_address + 1)
        pki.issue("apiserver", "kube-apiserver", ips=("127.0.0.1", service_ip), server=True,
                  dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                       "kubernetes.default.svc.cluster.local"))
        pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", orgs=("system:masters",))
        self.sa_pub, self.sa_key = pki.service_account_key()
        for name, cn, orgs in (("admin", "iofleet-test-admin", ("system:masters",)),
                               ("controller-manager", "system:kube-controller-manager", ()),
                               ("scheduler", "system:kube-scheduler", ())):
            crt, key = pki.issue(name, cn, orgs=orgs)
            _kubeconfig(self.dir / f"{name}.kubeconfig", self.server, pki.ca, crt, key, cn)
        self.kubeconfig = self.dir / "admin.kubeconfig"
        for node in self.node_info.values():
            crt, key = pki.issue(f"{node.name}-client", f"system:node:{node.name}", orgs=("system:nodes",))
            _kubeconfig(node.dir / "kubelet" / "kubeconfig", self.server, pki.ca, crt, key, f"system:node:{node.name}")
            pki.issue(f"{node.name}-serving", node.name, ips=(node.ip,), dns=(node.name,), server=True)

    def _spawn(self, name: str, argv: list[str], path: str | None = None) -> None:
        """Start a daemon, its output to logs/NAME.log. setpriv's
        PR_SET_PDEATHSIG kills it when the thread that started it (the
        test's main thread) dies: no preexec_fn, unsafe beside threads."""
        log = self.log_dir / f"{name}.log"
        env = dict(os.environ, TMPDIR=str(self.dir / "tmp"), PATH=path or os.environ.get("PATH", "/usr/bin:/bin"))
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [shutil.which("setpriv"), "--pdeathsig", "KILL", "--", shutil.which(argv[0]), *argv[1:]],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._daemons[name] = _Daemon(name, proc, log)

    def _start_control_plane(self) -> None:
        d, pki, bin_ = self.dir, self.dir / "pki", KUBE_BIN
        etcd_url, peer_url = f"http://127.0.0.1:{self._etcd_port}", f"http://127.0.0.1:{self._etcd_peer_port}"
        self._spawn("etcd", ["etcd", "--name", "default", "--data-dir", str(d / "etcd"), "--logger", "zap",
                             "--log-outputs", "stderr", "--listen-client-urls", etcd_url,
                             "--advertise-client-urls", etcd_url, "--listen-peer-urls", peer_url,
                             "--initial-advertise-peer-urls", peer_url, "--initial-cluster", f"default={peer_url}",
                             "--initial-cluster-state", "new", "--snapshot-count", "10000"])
        first = next(iter(self.node_info.values()))
        self._spawn("kube-apiserver", [
            str(bin_ / "kube-apiserver"), f"--etcd-servers={etcd_url}", "--storage-backend=etcd3",
            "--bind-address=127.0.0.1", f"--secure-port={self._apiserver_port}",
            f"--advertise-address={first.ip}",  # the kubernetes Service's endpoint (a loopback one is refused)
            f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
            f"--client-ca-file={pki}/ca.crt", "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki}/sa.pub", f"--service-account-signing-key-file={pki}/sa.key",
            f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
            f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
            f"--kubelet-certificate-authority={pki}/ca.crt",
            "--kubelet-preferred-address-types=InternalIP,Hostname", "--allow-privileged=true",
            f"--cert-dir={d}/pki/apiserver-generated", "--profiling=false"])

    def _start_controllers(self) -> None:
        """The controller-manager and the scheduler, once the apiserver is
        ready (they exit when RBAC's roles are not there yet)."""
        d, pki, bin_ = self.dir, self.dir / "pki", KUBE_BIN
        self._spawn("kube-controller-manager", [
            str(bin_ / "kube-controller-manager"), f"--kubeconfig={d}/controller-manager.kubeconfig",
            f"--authentication-kubeconfig={d}/controller-manager.kubeconfig",
            f"--authorization-kubeconfig={d}/controller-manager.kubeconfig",
            "--bind-address=127.0.0.1", f"--secure-port={self._kcm_port}", "--leader-elect=false",
            f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
            "--use-service-account-credentials=true", f"--cluster-signing-cert-file={pki}/ca.crt",
            f"--cluster-signing-key-file={pki}/ca.key", f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--cert-dir={d}/pki/controller-manager-generated", "--profiling=false"])
        self._spawn("kube-scheduler", [
            str(bin_ / "kube-scheduler"), f"--kubeconfig={d}/scheduler.kubeconfig",
            f"--authentication-kubeconfig={d}/scheduler.kubeconfig",
            f"--authorization-kubeconfig={d}/scheduler.kubeconfig", "--bind-address=127.0.0.1",
            f"--secure-port={self._scheduler_port}", "--leader-elect=false",
            f"--cert-dir={d}/pki/scheduler-generated", "--profiling=false"])

    def _start_containerd(self, node: Node) -> None:
        c = node.dir / "containerd"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        (c / "config.toml").write_text(f"""\
version = 2
root = "{c}/root"
state = "{c}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{node.containerd_socket}"
[ttrpc]
  address = "{node.containerd_socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{c}/opt"
[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
[{cri}.containerd]
  snapshotter = "{self.snapshotter}"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  Root = "{c}/runc"
  SystemdCgroup = false
[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{node.dir}/cni/net.d"
  max_conf_num = 1
""")
        (node.dir / "cni" / "net.d" / "10-bridge.conflist").write_text(json.dumps({
            "cniVersion": "0.4.0", "name": node.cni_network,
            "plugins": [{"type": "bridge", "bridge": node.bridge, "isGateway": True, "ipMasq": False,
                         "hairpinMode": True,
                         "ipam": {"type": "host-local", "dataDir": str(node.dir / "cni" / "ipam"),
                                  "ranges": [[{"subnet": node.subnet, "gateway": node.ip}]],
                                  "routes": [{"dst": "0.0.0.0/0"}]}}]}, indent=1))
        self._spawn(f"{node.name}-containerd", ["containerd", "--config", str(c / "config.toml")])

    def _import(self, node: Node, archive: Path) -> None:
        deadline = time.monotonic() + 30
        while True:  # the socket exists a moment before the CRI plugin is ready
            try:
                _run(["ctr", "--address", str(node.containerd_socket), "-n", "k8s.io", "images", "import",
                      "--snapshotter", self.snapshotter, str(archive)], timeout=120)
                return
            except KubeClusterError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def _start_kubelet(self, node: Node) -> None:
        k, pki = node.dir / "kubelet", self.dir / "pki"
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": node.ip, "port": node.kubelet_port, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": node.healthz_port,
            "tlsCertFile": str(pki / f"{node.name}-serving.crt"),
            "tlsPrivateKeyFile": str(pki / f"{node.name}-serving.key"),
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": str(pki / "ca.crt")}},
            "authorization": {"mode": "AlwaysAllow"},
            "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
            "cgroupDriver": "cgroupfs", "cgroupRoot": node.cgroup_root, "failCgroupV1": False, "failSwapOn": False,
            "makeIPTablesUtilChains": False, "podLogsDir": str(node.dir / "pod-logs"),
            "volumePluginDir": str(node.dir / "volume-plugins"),
            # A busy test disk must not evict the pods, nor image GC delete the imported images.
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
                             "imagefs.available": "1%", "imagefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "maxPods": 30, "serializeImagePulls": False, "nodeStatusUpdateFrequency": "4s",
            "syncFrequency": "10s", "fileCheckFrequency": "10s",
        }
        (k / "config.json").write_text(json.dumps(config, indent=1))
        argv = [str(KUBE_BIN / "kubelet"), f"--config={k}/config.json", f"--kubeconfig={k}/kubeconfig",
                f"--hostname-override={node.name}", f"--node-ip={node.ip}", f"--root-dir={k}/root",
                f"--cert-dir={k}/pki", "--v=1",
                # Its CPU readings (the resource metrics iofleet reads node CPU from) every second, not
                # every 10 s, so that a test of a few seconds holds two of them.
                "--housekeeping-interval=1s"]
        self._spawn(f"{node.name}-kubelet", argv, path=str(self.dir / "bin"))

    def _check_daemons(self) -> None:
        for d in self._daemons.values():
            if d.proc.poll() is not None:
                raise KubeClusterError(f"{d.name} exited ({d.proc.returncode}); its log {d.log}:\n{_tail(d.log, 25)}")

    def _wait(self, what: str, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self._check_daemons()
            try:
                if ready():
                    return
            except Exception as exc:  # noqa: BLE001 -- not up yet
                last = exc
            else:
                last = None
            if time.monotonic() > deadline:
                raise KubeClusterError(f"{what}: not ready after {timeout:.0f} s"
                                       + (f" ({type(last).__name__}: {last})" if last else "")
                                       + f"; logs in {self.log_dir}")
            time.sleep(0.2)

    def _wait_apiserver(self) -> None:
        context = ssl.create_default_context(cafile=str(self._pki.ca))
        context.load_cert_chain(self.dir / "pki" / "admin.crt", self.dir / "pki" / "admin.key")

        def ready() -> bool:
            with urllib.request.urlopen(f"{self.server}/readyz", context=context, timeout=5) as r:
                return r.read() == b"ok"
        self._wait("kube-apiserver /readyz", ready, 60)

    def _wait_nodes_ready(self) -> None:
        def ready() -> bool:
            nodes = {n.metadata.name: n for n in self.core.list_node().items}
            return all(name in nodes and any(c.type == "Ready" and c.status == "True"
                                             for c in nodes[name].status.conditions or [])
                       and not any(t.key == "node.kubernetes.io/not-ready" for t in nodes[name].spec.taints or [])
                       for name in self.nodes)
        self._wait("nodes Ready", ready, START_TIMEOUT)
        self.wait_service_account("default")

    def _print_log_tails(self) -> None:
        if (tails := self.log_tails()):
            print(f"KubeCluster failed to start; its logs ({self.log_dir}):\n{tails}", file=sys.stderr)

    # ----------------------------------------------------------- stop

    def stop(self) -> None:
        """Delete the pods, stop every daemon, remove everything it made;
        raise KubeClusterError if anything is left."""
        with self._lock:
            if self._stopped or self.dir is None:
                self._stopped = True
                return
            self._stopped = True
        t0 = time.monotonic()
        problems = []
        try:
            self._delete_pods()
        except Exception as exc:  # noqa: BLE001 -- the forced removal below still runs
            problems.append(f"deleting the pods: {type(exc).__name__}: {exc}")
        self.stop_phases["pods deleted"] = time.monotonic() - t0
        for group in ([f"{n}-kubelet" for n in self.nodes], [f"{n}-containerd" for n in self.nodes],
                      ["kube-scheduler", "kube-controller-manager"], ["kube-apiserver"], ["etcd"]):
            problems += _terminate([d.proc for name in group if (d := self._daemons.get(name))])
        if self._api is not None:
            self._api.close()
            self._api = None
        self.stop_phases["daemons stopped"] = time.monotonic() - t0
        if self.keep_logs and self.log_dir.is_dir():
            with contextlib.suppress(OSError):
                shutil.copytree(self.log_dir, self.keep_logs / self.dir.name, dirs_exist_ok=True)
        problems += _remove(self._state(), self.forced_removals)
        with contextlib.suppress(OSError):
            (STATE_DIR / f"slot-{self.slot}.json").unlink()
        if self._slot_fd is not None:
            os.close(self._slot_fd)
            self._slot_fd = None
        problems += _restore_host_if_last()
        self.stop_seconds = self.stop_phases["removed"] = time.monotonic() - t0
        if (left := self.leftovers()):
            problems += left
        if problems:
            raise KubeClusterError("the test cluster was not removed cleanly: " + "; ".join(problems))

    def _state(self) -> dict:
        """What this cluster made, as slot-S.json records it for cleanup_stale()."""
        bridges = [self._bridge_name(self.slot, n) for n in NODES] if self.slot is not None else []
        return {"dir": str(self.dir), "pid": os.getpid(),
                "cgroup_parent": self.cgroup_parent if self.slot is not None else None,
                "bridges": bridges, "cni_networks": [f"iofleet-{b}" for b in bridges], "loops": list(self._loops)}

    def _delete_pods(self) -> None:
        """Delete every pod and wait until the kubelets have torn them down
        (volumes unmounted, sandboxes and their network removed)."""
        api = self._daemons.get("kube-apiserver")
        kubelets = [self._daemons.get(f"{n}-kubelet") for n in self.nodes]
        if not api or api.proc.poll() is not None or not all(k and k.proc.poll() is None for k in kubelets):
            return
        core = self.core
        t0 = time.monotonic()
        pods = core.list_pod_for_all_namespaces(_request_timeout=10).items
        for pod in pods:
            with contextlib.suppress(Exception):
                core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=1,
                                           _request_timeout=10)
        deadline = time.monotonic() + 60
        while core.list_pod_for_all_namespaces(_request_timeout=10).items:
            if time.monotonic() > deadline:
                raise KubeClusterError("pods still there 60 s after their deletion")
            time.sleep(0.2)
        self.stop_phases["pods gone"] = time.monotonic() - t0
        # The kubelets remove the dead containers and sandboxes a moment later;
        # wait for the shims to go (then containerd has cleaned up after them).
        deadline = time.monotonic() + 20
        while any("containerd-shim" in cmd for cmd in _processes_naming(self.dir).values()) \
                and time.monotonic() < deadline:
            time.sleep(0.2)

    def leftovers(self) -> list[str]:
        """What of this cluster is still on the machine (nothing after stop())."""
        return _leftovers(self._state()) if self.dir is not None else []


def _exists(read, name: str) -> bool:
    """Whether the API object `read(name)` reads is there (404: not)."""
    import kubernetes

    try:
        read(name)
        return True
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return False
        raise


def _terminate(procs: list[subprocess.Popen], timeout: float = STOP_TIMEOUT) -> list[str]:
    """SIGTERM to all, SIGKILL to those still there after `timeout`."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + timeout
    problems = []
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                problems.append(f"process {proc.pid} ({' '.join(proc.args[4:5])}) survives SIGKILL")
    return problems


def _remove(state: dict, forced: list[str] | None = None) -> list[str]:
    """Remove by force what a cluster (live or dead) left: processes, mounts,
    loop devices, bridges, cgroups, CNI cache entries, its directory.
    Problems it could not fix, as messages; what it found, into `forced`
    (except the directory, the cgroups and the bridges, always there)."""
    problems = []
    forced = [] if forced is None else forced
    directory = Path(state["dir"])
    cgroups = [Path(m) / state["cgroup_parent"] for m in _cgroup_mounts()] if state.get("cgroup_parent") else []
    # Containers (in the kubelets' cgroups), then the shims and daemons (their command lines name the directory).
    for _ in range(50):
        pids = {p for p in set().union(*(_cgroup_pids(c) for c in cgroups)) if _alive(p)}
        pids |= set(_processes_naming(directory))
        if not pids:
            break
        sockets = [s for pid in pids for s in _listening_unix_sockets(pid) if s.startswith("/run/containerd/s/")]
        forced += [f"process {p} ({_comm(p)})" for p in pids]
        _kill(pids)
        _wait_gone(pids, 2)
        for s in sockets:
            with contextlib.suppress(OSError):
                os.unlink(s)
    else:
        problems.append(f"processes survive SIGKILL: {sorted(pids)}")
    sandboxes = []
    with contextlib.suppress(OSError):
        for node_dir in directory.iterdir():
            sandboxes += [p.name for p in (node_dir / "containerd/state/io.containerd.grpc.v1.cri/sandboxes").glob("*")]
    # Loop devices before mounts: a kubelet's loop device over a Block
    # volume's device is known by its path, under a mount of the kubelet's.
    ours = [d for d in state.get("loops", []) if _is_loop_of(d, directory)]
    for dev in [d for d in _loop_devices(directory, ours) if d not in ours] + ours:  # the kubelets' first
        forced.append(f"loop device {dev}")
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    for mountpoint in _mounts_under(directory):
        forced.append(f"mount {mountpoint}")
        if subprocess.run(["umount", mountpoint], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", mountpoint], capture_output=True)
    if (still := _mounts_under(directory)):
        problems.append(f"mounts left: {still}")
    for bridge in state.get("bridges", []):
        ports = Path(f"/sys/class/net/{bridge}/brif")
        for port in (list(ports.iterdir()) if ports.is_dir() else []):
            forced.append(f"bridge port {port.name}")
            subprocess.run(["ip", "link", "del", port.name], capture_output=True)
        if Path(f"/sys/class/net/{bridge}").exists():
            subprocess.run(["ip", "link", "del", bridge], capture_output=True)
    for cgroup in cgroups:
        if cgroup.is_dir():
            for sub in sorted((p for p in cgroup.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    sub.rmdir()
            with contextlib.suppress(OSError):
                cgroup.rmdir()
    if CNI_CACHE.is_dir():
        networks = tuple(f"{n}-" for n in state.get("cni_networks", []))
        for entry in CNI_CACHE.iterdir():
            if entry.name.startswith(networks) or any(s in entry.name for s in sandboxes):
                forced.append(f"CNI cache {entry.name}")
                entry.unlink(missing_ok=True)
    containers = Path("/var/log/containers")
    if containers.is_dir():
        for link in containers.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(f"{directory}/"):
                    forced.append(f"log link {link}")
                    link.unlink()
    if directory.exists() and not _mounts_under(directory):
        shutil.rmtree(directory, ignore_errors=True)
    return problems


def _is_loop_of(dev: str, directory: Path) -> bool:
    """True if loop device `dev` is still attached to a file under `directory`."""
    with contextlib.suppress(OSError):
        backing = Path(f"/sys/block/{Path(dev).name}/loop/backing_file").read_text().strip()
        return backing.startswith(f"{directory}/")
    return False


def _leftovers(state: dict) -> list[str]:
    directory = Path(state["dir"])
    left = [f"process {pid}: {cmd[:120]}" for pid, cmd in _processes_naming(directory).items()]
    cgroups = [Path(m) / state["cgroup_parent"] for m in _cgroup_mounts()] if state.get("cgroup_parent") else []
    left += [f"cgroup {c}" for c in cgroups if c.exists()]
    left += [f"mount {m}" for m in _mounts_under(directory)]
    ours = [d for d in state.get("loops", []) if _is_loop_of(d, directory)]
    left += [f"loop device {d}" for d in _loop_devices(directory, ours)]
    left += [f"bridge {b}" for b in state.get("bridges", []) if Path(f"/sys/class/net/{b}").exists()]
    if CNI_CACHE.is_dir():
        networks = tuple(f"{n}-" for n in state.get("cni_networks", []))
        left += [f"CNI cache {e}" for e in CNI_CACHE.iterdir() if e.name.startswith(networks)]
    if Path("/var/log/containers").is_dir():
        left += [f"log link {link}" for link in Path("/var/log/containers").iterdir()
                 if link.is_symlink() and os.readlink(link).startswith(f"{directory}/")]
    if directory.exists():
        left.append(f"directory {directory}")
    return left


def _restore_host_if_last() -> list[str]:
    """When no cluster is left on the machine: the sysctls and host
    directories as the first cluster found them."""
    problems = []
    with _host_lock():
        if _live_slots():
            return []
        record_path = STATE_DIR / "host.json"
        record = json.loads(record_path.read_text()) if record_path.exists() else {"sysctls": {}, "missing_dirs": []}
        for key, value in record["sysctls"].items():
            path = Path(f"/proc/sys/{key}")
            if path.read_text().strip() == SYSCTLS.get(key) != value:  # (not if someone else changed it since)
                try:
                    path.write_text(value)
                except OSError as exc:
                    problems.append(f"cannot restore {key}={value}: {exc}")
        for d in record["missing_dirs"]:
            if os.path.isdir(d):  # sockets and empty directories: what nothing else put there since
                for sub in sorted(Path(d).rglob("*"), key=lambda p: -len(p.parts)):
                    with contextlib.suppress(OSError):
                        if sub.is_socket():
                            sub.unlink()
                        elif sub.is_dir() and not sub.is_symlink():
                            sub.rmdir()
                with contextlib.suppress(OSError):
                    os.rmdir(d)
        if not any(STATE_DIR.glob("slot-*.json")):  # (else a dead cluster's, for cleanup_stale)
            for path in STATE_DIR.iterdir():  # the slots' lock files, host.json, host.lock (held)
                path.unlink(missing_ok=True)
            STATE_DIR.rmdir()
    return problems


def cleanup_stale() -> list[str]:
    """Remove what killed runs left: every slot whose lock nobody holds but
    whose state file is there. What was removed, as messages."""
    if not STATE_DIR.is_dir():
        return []
    stale = []
    with _host_lock():
        for state_file in sorted(STATE_DIR.glob("slot-*.json")):
            fd = _lock(state_file.with_suffix(".lock"))
            if fd is not None:  # else a live cluster
                stale.append((state_file, fd))
    removed = []
    for state_file, fd in stale:  # each slot locked: not taken meanwhile
        try:
            with contextlib.suppress(OSError, ValueError):
                state = json.loads(state_file.read_text())
                removed += _leftovers(state)
                _remove(state)
            state_file.unlink(missing_ok=True)
        finally:
            os.close(fd)
    _restore_host_if_last()
    return removed
