"""Inventory: the hosts a plan runs on, each running `fio --server`.

    hosts:
      - name: esx01                  # optional; defaults to the address
        address: 10.0.0.11:8765      # host[:port]; fio's default port is 8765
        labels: {site: a, rack: r1, fault_domain: fd1}
        targets: [/mnt/datastore1]   # directories on that host, or one block device (/dev/sdb)
        metrics: http://10.0.0.11:9100/metrics   # optional node_exporter
        nic_gbps: 25                 # optional, for the network-bound check
        ssh: {user: root, key: ~/.ssh/id_ed25519}   # optional SSH control channel
        fstype: fuse.ceph-fuse       # optional: the filesystem its fio server must see there

        network: {mtu: 9000}         # optional: what `hosts network` expects of its links

    defaults:                        # optional: keys every host's `ssh:` starts from
      ssh: {user: root, port: 22, known_hosts: ./known_hosts}
      fstype: fuse.ceph-fuse         # every host's, unless it says otherwise
      network: {mtu: 1500, min_gbps: 10, max_rtt_ms: 1}   # each key: unless the host says otherwise

Relative `key:` and `known_hosts:` paths are relative to the inventory file.

Or, instead of `hosts:`, a Kubernetes cluster's fio server pods, created
for each run (fleet/kubernetes/settings.py, docs/kubernetes.md):

    kubernetes: {storage_class: fast, pods_per_node: 2}
"""

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..errors import IofleetError, PlanError
from ..plan.load import format_validation_error, read_yaml
from ..plan.model import Targets, check_name
from ..plan.units import parse_size, shown, whole_number
from .kubernetes.cluster import FIO_PORT, Cluster, Slot
from .kubernetes.settings import KubernetesSection, check_file

DEFAULT_FIO_PORT = 8765
ADDRESS_EXAMPLES = "e.g. 10.0.0.11, 10.0.0.11:8765, [2001:db8::11]:8765 or storage01:8765"
_HOSTNAME_RE = re.compile(r"^(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")  # \Z, not `$` ("a\n")
_URL_RE = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/-]*)?\Z")
_USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}\Z")  # a POSIX login name


class InventoryError(IofleetError):
    """An inventory file is unreadable or invalid."""


def parse_address(value: Any) -> tuple[str, int]:
    """'10.0.0.1' → ('10.0.0.1', 8765); 'host:8766'; '[fd00::1]:8765'; a bare
    IPv6 address takes the default port. Raises ValueError saying why not."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"needs an address, {ADDRESS_EXAMPLES}")
    text = value.strip()
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise ValueError("write an IPv6 address as [ADDRESS] or [ADDRESS]:PORT")
        if _ip_version(host) != 6:
            raise ValueError(f"only an IPv6 address goes in brackets, {ADDRESS_EXAMPLES}")
        return host, _port(rest[1:]) if rest else DEFAULT_FIO_PORT
    if text.count(":") > 1:  # a bare IPv6 address, default port
        if _ip_version(text) != 6:
            raise ValueError("not an IPv6 address; with a port, write [ADDRESS]:PORT")
        return text, DEFAULT_FIO_PORT
    host, colon, port_text = text.partition(":")
    port = _port(port_text) if colon else DEFAULT_FIO_PORT
    if _ip_version(host) is None and (not _HOSTNAME_RE.match(host) or host.replace(".", "").isdigit()):
        raise ValueError(f"{host!r} is not an IP address or host name, {ADDRESS_EXAMPLES}")
    return host, port


def _ip_version(text: str) -> int | None:
    if not re.fullmatch(r"[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?", text):
        return None  # e.g. a scope id fio would misread ('fe80::1%a,b') or a newline
    try:
        return ipaddress.ip_address(text).version
    except ValueError:
        return None


def _port(text: str) -> int:
    port = whole_number(text)
    if port is None or not 1 <= port <= 65535:
        raise ValueError("the port must be a number from 1 to 65535")
    return port


def _check_labels(value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("labels are a mapping such as {site: a, rack: r1}")
    for k, v in value.items():
        text = v if isinstance(v, str) else str(v) if isinstance(v, int) and abs(v) < 10**64 else ""
        if not isinstance(k, str) or not _LABEL_RE.match(k) or not _LABEL_RE.match(text):
            raise ValueError(f"label {shown(k)}: {shown(v)}: use letters, digits, '.', '_' or '-'")
    return {k: str(v) for k, v in value.items()}


def _check_url(value: Any) -> str:
    if not isinstance(value, str) or not _URL_RE.match(value):
        raise ValueError("expected a node_exporter URL such as http://10.0.0.11:9100/metrics")
    return value


def _check_user(value: Any) -> str:
    if not isinstance(value, str) or not _USER_RE.match(value):
        raise ValueError("a login name such as root or iofleet: lower-case letters, digits, '_', '.' or '-'")
    return value


class SshConfig(BaseModel):
    """How iofleet logs in to a host for what fio cannot do (deploy, caches, facts)."""

    model_config = ConfigDict(extra="forbid")

    user: Annotated[str, BeforeValidator(_check_user)] = "root"
    key: Optional[Annotated[Path, BeforeValidator(check_file)]] = None  # None: ssh agent / ~/.ssh/id_*
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    known_hosts: Optional[Annotated[Path, BeforeValidator(check_file)]] = None  # None: ~/.ssh/known_hosts
    # Accept a host key that known_hosts does not list (never a changed one):
    # an explicit opt-in, and every command that relies on it says so.
    trust_unknown_host_keys: bool = False

    def resolved(self, base: Path) -> "SshConfig":
        """With `~` expanded and relative paths taken from `base` (the inventory's directory)."""
        paths = {k: base / p.expanduser() for k in ("key", "known_hosts")
                 if (p := getattr(self, k)) is not None}
        return self.model_copy(update=paths)


# A filesystem type as findmnt names it (ext4, xfs, fuse.ceph-fuse, nfs4).
FSTYPE_RE = re.compile(r"^[a-z0-9][a-z0-9._+-]{0,63}\Z")


def _check_fstype(value: Any) -> str:
    if not isinstance(value, str) or not FSTYPE_RE.match(value):
        raise ValueError("a filesystem type as findmnt -o FSTYPE names it, e.g. ext4, xfs, fuse.ceph-fuse, nfs4")
    return value


FsType = Annotated[str, BeforeValidator(_check_fstype)]


class NetworkExpect(BaseModel):
    """What the network check expects of a host's links (`iofleet hosts
    network`): the MTU every path to it must carry, and the least
    bandwidth and the most round-trip time its links may have."""

    model_config = ConfigDict(extra="forbid")

    mtu: Optional[Annotated[int, Field(ge=576, le=65535)]] = None
    min_gbps: Optional[Annotated[float, Field(gt=0, le=10_000)]] = None
    max_rtt_ms: Optional[Annotated[float, Field(gt=0, le=60_000)]] = None


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ssh: Optional[SshConfig] = None
    fstype: Optional[FsType] = None
    network: Optional[NetworkExpect] = None


class Host(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Why iofleet cannot log in to a host of this kind, whatever its `ssh:` says (None: it can).
    no_login: ClassVar[str | None] = None

    name: Optional[Annotated[str, BeforeValidator(check_name)]] = None
    address: Annotated[str, BeforeValidator(lambda v: (parse_address(v), v)[1])]
    labels: Annotated[dict[str, str], BeforeValidator(_check_labels)] = {}
    targets: Annotated[Targets, Field(min_length=1)]
    metrics: Optional[Annotated[str, BeforeValidator(_check_url)]] = None
    nic_gbps: Optional[Annotated[float, Field(gt=0, le=10_000)]] = None
    # Cache in front of this host's storage (e.g. an HCI cache tier):
    # tests then say whether their working set fits (cache test) or not.
    cache_size: Optional[Annotated[int, BeforeValidator(parse_size)]] = None
    # SSH control channel; the inventory's `defaults: {ssh: ...}` is merged in.
    # The SSH address is the host part of `address`.
    ssh: Optional[SshConfig] = None
    # The filesystem the host's fio server must see under its targets (a
    # mount made where the server does not see it is refused, not tested).
    fstype: Optional[FsType] = None
    # What the network check expects of its links; `defaults: {network: ...}` is merged in.
    network: Optional[NetworkExpect] = None

    @model_validator(mode="after")
    def _default_name(self):
        if self.name is None:
            host, port = self.endpoint
            name = host if port == DEFAULT_FIO_PORT else f"{host}-{port}"
            # A plain name (it names files and job sections); '::' leaves nothing of its own.
            self.name = re.sub(r"[^A-Za-z0-9_.-]", "-", name).strip("-_.")[:64] or "host"
        return self

    @property
    def endpoint(self) -> tuple[str, int]:
        return parse_address(self.address)

    @property
    def shown_address(self) -> str:
        """The address as a page lists it."""
        return self.address

    @property
    def data_site(self) -> str:
        """Where its kept data lives (fleet/targets/kept.py): its fio server."""
        return "{}:{}".format(*self.endpoint)

    @property
    def fio_client_arg(self) -> str:
        """fio's --client value: ip:ADDR,PORT, ip6:ADDR,PORT or NAME,PORT."""
        host, port = self.endpoint
        try:
            kind = "ip6" if ipaddress.ip_address(host).version == 6 else "ip"
            return f"{kind}:{host},{port}"
        except ValueError:
            return f"{host},{port}"

    def matches(self, selector: dict[str, str]) -> bool:
        return all(self.labels.get(k) == v for k, v in selector.items())


class Inventory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hosts: list[Host] = []
    defaults: Optional[Defaults] = None
    # Or a Kubernetes cluster: its fio server pods are the hosts (fleet/kubernetes/).
    kubernetes: Optional[KubernetesSection] = None

    @model_validator(mode="before")
    @classmethod
    def _merge_defaults(cls, data: Any) -> Any:
        """Each host's `ssh:` starts from `defaults.ssh`; its own keys win.
        A bad default is reported once, under `defaults`, not per host."""
        if not isinstance(data, dict) or not isinstance(data.get("hosts"), list):
            return data
        defaults = data.get("defaults")
        fstype = defaults.get("fstype") if isinstance(defaults, dict) else None
        if fstype is not None:
            data = data | {"hosts": [{"fstype": fstype} | h if isinstance(h, dict) else h for h in data["hosts"]]}
        network = defaults.get("network") if isinstance(defaults, dict) else None
        if isinstance(network, dict):  # each key: the host's own wins
            data = data | {"hosts": [h | {"network": network | h["network"] if isinstance(h.get("network"), dict)
                                          else h.get("network", network)} if isinstance(h, dict) else h
                                     for h in data["hosts"]]}
        default_ssh = defaults.get("ssh") if isinstance(defaults, dict) else None
        if not isinstance(default_ssh, dict):
            return data
        try:
            SshConfig.model_validate(default_ssh)
        except ValidationError:
            return data
        hosts = [h | {"ssh": default_ssh | (h.get("ssh") or {})}
                 if isinstance(h, dict) and isinstance(h.get("ssh") or {}, dict) else h
                 for h in data["hosts"]]
        return data | {"hosts": hosts}

    @model_validator(mode="after")
    def _unique(self):
        if bool(self.hosts) == bool(self.kubernetes):
            raise ValueError("an inventory gives a `hosts:` list (fio servers) or a `kubernetes:` section "
                             "(fio server pods), one of the two")
        for what, values in (("name", [h.name for h in self.hosts]),
                             ("address", [h.endpoint for h in self.hosts])):
            dupes = {v for v in values if values.count(v) > 1}
            if dupes:
                raise ValueError(f"two hosts have the same {what}: {sorted(dupes)[0]}")
        return self

    def select(self, selector: dict[str, str] | None) -> list[Host]:
        """Hosts whose labels match every key of the selector (all when None)."""
        hosts = [h for h in self.hosts if h.matches(selector or {})]
        if not hosts:
            raise InventoryError(f"no host in the inventory has the labels {selector}; "
                                 f"check the plan's `hosts:` selector")
        return hosts


def load_inventory(path: str | Path) -> Inventory:
    path = Path(path)
    try:
        data = read_yaml(path, "inventory")  # bounded: a regular file, 1 MiB, few YAML aliases
    except PlanError as exc:
        raise InventoryError(str(exc)) from None
    if not isinstance(data, dict):
        raise InventoryError(f"{path}: an inventory is a YAML mapping with a `hosts:` list")
    try:
        inventory = Inventory.model_validate(data)
    except ValidationError as exc:
        raise InventoryError("\n".join(format_validation_error(str(path), exc))) from None
    base = path.parent
    for host in inventory.hosts:
        if host.ssh is not None:
            host.ssh = host.ssh.resolved(base)
    if inventory.kubernetes is not None:  # the cluster is asked for its nodes
        kube = inventory.kubernetes
        if kube.kubeconfig is not None:
            kube = kube.model_copy(update={"kubeconfig": base / kube.kubeconfig.expanduser()})
        inventory.kubernetes = kube
        inventory.hosts = pod_hosts(kube)
    return inventory


class PodHost(Host):
    """A Kubernetes inventory's host: one fio server pod slot (node ×
    pods_per_node), named NODE-N, testing its own claim (pvc:CLAIM). Its
    address is a placeholder until the place has deployed the pod
    (places/kubernetes.py), never looked up: `endpoint` refuses until then."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    no_login: ClassVar[str] = ("it is a fio server pod, which iofleet does not log in to (a pod deleted during a "
                               "test is a lost host, its test kept partial: docs/kubernetes.md)")

    slot: Slot
    kube: KubernetesSection
    up_by: Any = None  # the place whose pods these are, while they run (places/kubernetes.py)

    @property
    def endpoint(self) -> tuple[str, int]:
        if self.up_by is None:  # never a lookup of the placeholder
            raise IofleetError(f"host {self.name}: its fio server pod is not running (internal: a check before "
                               f"the pods were created)")
        return parse_address(self.address)

    @property
    def shown_address(self) -> str:
        return self.address if self.up_by else f"a pod on node {self.slot.node}, created for each run"

    @property
    def data_site(self) -> str:
        """Its claim, in the namespace it is in (kept between runs when the plan keeps its files)."""
        return f"pvc:{self.up_by.deployment.namespace}/{self.slot.claim}"


def pod_hosts(settings: KubernetesSection) -> list[PodHost]:
    """The pod slots on the nodes the cluster has (or the section names)."""
    cluster = Cluster(settings)
    return [PodHost(name=slot.host, address=f"{slot.pod}.pending.invalid:{FIO_PORT}", labels={"node": slot.node},
                    targets=[f"pvc:{slot.claim}"], slot=slot, kube=settings)
            for slot in cluster.slots(cluster.nodes())]


def host_groups(hosts: list[Host], selectors: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """Host names of each group (a mixed plan's workload → its label
    selector); every group needs a host, and no host may be in two."""
    groups = {name: [h.name for h in hosts if h.matches(sel)] for name, sel in selectors.items()}
    problems = [f"workload {name!r}: no selected host has the labels {selectors[name]}; "
                f"label hosts in the inventory or fix the workload's `hosts:`"
                for name, members in groups.items() if not members]
    owner: dict[str, str] = {}
    for name, members in groups.items():
        for h in members:
            if h in owner:
                problems.append(f"host {h} is in two groups ({owner[h]!r} and {name!r}); "
                                f"make the workloads' `hosts:` labels exclusive")
            owner.setdefault(h, name)
    if problems:
        raise InventoryError("\n".join(problems))
    return groups
