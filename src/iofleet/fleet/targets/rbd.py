"""A Ceph RBD image as the target, driven by fio's own rbd engine (librbd:
no kernel module, as a VM on Proxmox VE or OpenStack sees its disk).

iofleet reaches the cluster with Ceph's own tools (`rbd`, `ceph`), the
plan's `ceph:` settings or Ceph's defaults (CEPH_CONF or
/etc/ceph/ceph.conf, client.admin). Truth rule 5, as for devices:
- an image that does not exist is created, sized to the tests' regions,
  marked as iofleet's (image metadata IOFLEET_MARK), and removed at the
  run's end (unless keep_files);
- an existing image that is not iofleet's is refused unless destroy_data
  names it exactly (rbd:POOL/IMAGE);
- an image with watchers (open in a VM, mapped, or another fio) is always
  refused.
On a fleet each host gets its own image (IMAGE-HOST) unless the plan's
`ceph: {shared_image: true}`; the controller creates and checks them all,
and each host's fio server reaches the cluster with its own ceph.conf."""

import json
import subprocess
from functools import lru_cache

from ...errors import ImportFormatError, IofleetError
from ...fio.command import error_line
from ...fio.jobfile import Where, render_probe
from ...fio.parse import parse_output
from ...plan.target_kinds.rbd import RBD_RE, CephSettings, RbdName
from ...plan.units import format_bytes
from ..facts_records import TargetFacts
from .device_checks import fit_regions, needed_bytes
from .lock import lock_on_this_machine
from .base import Access, Target

IOFLEET_MARK = "iofleet.created"  # image metadata key: the image is iofleet's own
CLI_TIMEOUT_S = 60
MiB = 1024 * 1024


def rbd_where(pool: str, image: str, client: str, stride: int = 0) -> Where:
    """An RBD image through fio's rbd engine (librbd), job N at N x stride."""
    opts: Where = [("pool", pool), ("rbdname", image), ("clientname", client)]
    return opts + ([("offset_increment", stride)] if stride else [])


def _cli(tool: str, ceph: CephSettings, *args: str, what: str) -> str:
    cmd = [tool, *(["--conf", ceph.conf] if ceph.conf else []), "--id", ceph.client, *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise IofleetError(f"{what}: the `{tool}` command is missing; install Ceph's client tools "
                           f"(Debian: apt install ceph-common)") from None
    except subprocess.TimeoutExpired:
        raise IofleetError(f"{what}: `{tool}` had no answer from the cluster in {CLI_TIMEOUT_S} s; check the "
                           f"monitors in {ceph.conf or 'ceph.conf'} and that the cluster is up") from None
    if proc.returncode != 0:
        raise _Failed(proc.returncode, (proc.stderr.strip().splitlines() or ["no message"])[-1])
    return proc.stdout


class _Failed(IofleetError):
    def __init__(self, code: int, line: str):
        super().__init__(line)
        self.code, self.line = code, line


@lru_cache(maxsize=8)
def cluster_facts(ceph: CephSettings) -> dict:
    """The cluster's fsid, health, Ceph version and pools' room (max_avail):
    read once per cluster and client in a process."""
    what = f"Ceph cluster ({ceph.conf or 'ceph.conf'}, client.{ceph.client})"
    try:
        status = json.loads(_cli("ceph", ceph, "status", "--format", "json", what=what))
        df = json.loads(_cli("ceph", ceph, "df", "--format", "json", what=what))
        version = _cli("ceph", ceph, "version", what=what).strip()
    except _Failed as exc:
        raise IofleetError(f"{what}: {exc.line}; check the cluster and the plan's `ceph:` settings "
                           f"(conf, client)") from None
    return {"fsid": status.get("fsid"), "health": (status.get("health") or {}).get("status"),
            "version": version.removeprefix("ceph version ").split(" (")[0],
            "max_avail": {p["name"]: p["stats"]["max_avail"] for p in df.get("pools", [])}}


class RbdImage(Target):
    kind = "rbd"
    engines = ("rbd",)

    def __init__(self, names, access=Access()):
        super().__init__(names, access)
        self.ceph: CephSettings = access.section("ceph", CephSettings)  # the plan's `ceph:`
        self.pool, image = RBD_RE.match(self.names[0]).groups()
        self.image = f"{image}-{access.host}" if access.host and not self.ceph.shared_image else image
        self.spec = f"{self.pool}/{self.image}"
        self.stride = 0
        self.needed: int | None = None
        self.bytes: int | None = None
        self.created = False  # by this run: removed at its end

    @classmethod
    def fixed_facts(cls, name):
        return TargetFacts.of(kind="rbd", device=None, rotational=None, memory=None, client=RbdName.client)

    @property
    def label(self) -> str:
        return f"rbd:{self.spec}"

    def _rbd(self, *args: str) -> str:
        return _cli("rbd", self.ceph, *args, what=f"target {self.label}")

    def fio_where(self):
        return rbd_where(self.pool, self.image, self.ceph.client, self.stride)

    def probe_where(self, section):
        return rbd_where(self.pool, self.image, self.ceph.client)  # read only

    def fio_env(self):
        return {"CEPH_CONF": self.ceph.conf} if self.ceph.conf else {}

    def fit(self, steps, size_given, local):
        """One region per job, `size` each (1 GiB unless the plan says): the
        image is created that large, thin (Ceph allocates what is written)."""
        steps, self.stride = fit_regions(steps, self.label, None, True)
        self.needed = needed_bytes(steps, self.stride)
        return steps

    def _info(self) -> dict | None:
        try:
            return json.loads(self._rbd("info", "--format", "json", self.spec))
        except _Failed as exc:
            if exc.code == 2:  # ENOENT: no such image
                return None
            raise IofleetError(f"target {self.label}: {exc.line}; check the pool exists "
                               f"(`ceph osd pool ls`) and the client may read it") from None

    def _watchers(self) -> list[str]:
        status = json.loads(self._rbd("status", "--format", "json", self.spec))
        return [w.get("address", "?") for w in status.get("watchers", [])]

    def _ours(self) -> bool:
        try:
            return bool(self._rbd("image-meta", "get", self.spec, IOFLEET_MARK).strip())
        except _Failed:
            return False

    def prepare(self, facts, destroy_data):
        facts_ = cluster_facts(self.ceph)  # a cluster that does not answer stops here, one line
        lock = lock_on_this_machine("rbd", f"{facts_['fsid']}/{self.spec}", f"target {self.label}", facts)
        try:
            self._check_and_create(destroy_data)
        except BaseException:
            lock.release()
            raise
        self.locks = [lock]

    def prepare_remote(self, endpoint, facts, destroy_data):
        self.prepare(facts, destroy_data)  # the controller reaches the cluster for every host

    def _check_and_create(self, destroy_data):
        info = self._info()
        if info is not None:
            watchers = self._watchers()
            if watchers:
                raise IofleetError(f"target {self.label}: refused: the image is open elsewhere (watchers "
                                   f"{', '.join(watchers)}: a VM, a mapped client or another fio); iofleet never "
                                   f"writes to an image in use, destroy_data or not")
            if not self._ours() and self.label not in destroy_data:
                raise IofleetError(f"target {self.label}: refused: the image exists ({format_bytes(info['size'])}) "
                                   f"and was not created by iofleet, so it may hold data; if its data may be "
                                   f"destroyed, add `destroy_data: [{self.label}]` to the plan or pass "
                                   f"--destroy-data {self.label}, or name an image that does not exist")
            if info["size"] < self.needed:
                raise IofleetError(f"target {self.label} holds {format_bytes(info['size'])} but the plan's regions "
                                   f"need {format_bytes(self.needed)} (each job has its own region of `size` "
                                   f"bytes); lower size or jobs")
            self.bytes = info["size"]
            return
        size_mib = -(-self.needed // MiB)
        try:
            self._rbd("create", "--size", f"{size_mib}M", self.spec)
            self._rbd("image-meta", "set", self.spec, IOFLEET_MARK, "1")
        except _Failed as exc:
            raise IofleetError(f"target {self.label}: creating the image failed: {exc.line}; check the pool "
                               f"exists (`ceph osd pool ls`) and client.{self.ceph.client} may write "
                               f"it") from None
        self.created, self.bytes = True, size_mib * MiB

    def check_job(self):
        """Through the host's fio server: fio's rbd engine there reaches the
        cluster with the host's own ceph.conf and keyring, and reads the
        image (read only)."""
        return render_probe(self.probe_where("t0"), "rbd", False, section="t0")

    def read_check(self, check, fio):
        try:
            jobs = parse_output(fio.final_output).jobs if fio.final_output else []
        except ImportFormatError:
            jobs = []
        said = fio.stdout + fio.stderr
        if any(j.job == "t0" and not j.error for j in jobs):
            return
        if "rbd_open failed" in said and not self.created and self._info() is None:
            return  # the cluster answered; the image is created by the run
        why = "its fio has no rbd engine (fio built without librbd)" if "engine" in said and "rbd" in said \
            and "not" in said else error_line(fio.stderr, fio.stdout)
        check.problems.append(f"target {self.label}: fio's rbd engine there cannot open the image ({why}); give "
                              f"the host a ceph.conf and keyring for client.{self.ceph.client} (its fio "
                              f"server reads CEPH_CONF or /etc/ceph/ceph.conf)")

    def check_busy(self, steps):
        avail = cluster_facts(self.ceph)["max_avail"].get(self.pool)
        if avail is not None and self.needed > avail:
            raise IofleetError(f"target {self.label}: pool {self.pool} has room for {format_bytes(avail)} "
                               f"(ceph df: max_avail, replicas counted) but the tests write up to "
                               f"{format_bytes(self.needed)}; lower size or jobs, or free space in the pool")

    def before_test(self, spec):
        """librbd's client cache as the test asks (rbd_cache), set on the
        image itself, so every fio (on any host) that opens it follows."""
        if spec.rbd_cache is None:
            if self._cache_set:
                self._rbd("config", "image", "remove", self.spec, "rbd_cache")
            self._cache_set = False
        else:
            self._rbd("config", "image", "set", self.spec, "rbd_cache", "true" if spec.rbd_cache else "false")
            self._cache_set = True

    _cache_set = False

    def cleanup(self):
        """Remove the image when it is iofleet's (made by this run, or by a
        run that kept it); never an image destroy_data let the run write."""
        if not (self.created or self._ours()):
            return 0
        try:
            self._rbd("rm", "--no-progress", self.spec)
        except _Failed as exc:
            raise IofleetError(f"target {self.label}: removing the image failed: {exc.line}; remove it with "
                               f"`rbd rm {self.spec}`") from None
        return 1

    def resume_record(self):
        return {"rbd_created": self.created}

    def adopt(self, record):
        self.created = self.created or bool(record.get("rbd_created"))

    def fingerprint_where(self):
        # Hashed, never run: the cluster (its fsid) stands where the client
        # would, since the data does not depend on who wrote it.
        return rbd_where(self.pool, self.image, cluster_facts(self.ceph)["fsid"])

    def files_state(self):
        info = self._info()
        return {self.label: [info["size"], info.get("modify_timestamp", "")]} if info else {}

    def cache_note(self, clear, drop_why, facts=None):
        return ("librbd's cache lives in fio's process: empty at each test's start; the OSDs' caches are "
                "the cluster's (not dropped)")

    def describe(self):
        c = cluster_facts(self.ceph)
        return {"target_facts": {self.label: self.fixed_facts(self.label).to_dict()},
                "rbd": {"pool": self.pool, "image": self.image, "bytes": self.bytes, "region_bytes": self.stride,
                        "created": self.created, "client": self.ceph.client,
                        "cluster": {k: c[k] for k in ("fsid", "health", "version")}}}

    def free_bytes(self):
        return cluster_facts(self.ceph)["max_avail"].get(self.pool)

    def cluster_free_bytes(self):
        return self.free_bytes()  # the pool's, the same from any host
