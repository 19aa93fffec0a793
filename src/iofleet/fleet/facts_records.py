"""Host and target facts as records: what a target is, seen on this machine
(targets/facts.py) or through SSH (control/host.py), and what a host is.

A run stores them in its host_facts dict (results.model.Run): each record
writes its own JSON (`to_dict`, the keys and order a run has always
stored) and reads every stored shape back (`from_dict`: older runs, facts
not looked at, a host whose facts could not be read)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

# A target's facts in the order they are written; a look writes only those
# it took (an SSH look has no `memory`, a missing target only its kind).
TARGET_FACTS = ("kind", "filesystem", "source", "free_bytes", "device", "bytes", "model", "firmware", "scheduler",
                "rotational", "memory", "network_fs", "client")


@dataclass(frozen=True)
class TargetFacts:
    """One target as its host shows it. `kind`: directory, device, missing,
    or a kind known from the name alone (rbd); None: not seen. `looked_at`:
    the facts the look took, written in TARGET_FACTS order."""

    kind: str | None = None
    filesystem: str | None = None
    source: str | None = None  # the mount's source (/dev/vda1, tmpfs, ceph-fuse)
    free_bytes: int | None = None  # df under a directory, through SSH
    device: str | None = None  # the kernel's name of the block device (vda); None: none on this host
    bytes: int | None = None  # the device's size, through SSH
    model: str | None = None
    firmware: str | None = None
    scheduler: str | None = None  # the active one (mq-deadline)
    rotational: bool | None = None  # spinning; None: cannot be told (devices.spinning)
    memory: str | None = None  # what makes it RAM (tmpfs, zram0, ...), None: not RAM
    network_fs: bool | None = None  # its data is on other hosts
    client: str | None = None  # what carries its IO there (ceph-fuse, kernel nfs4, librbd)
    looked_at: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, **facts) -> TargetFacts:
        """The facts a look took, each written."""
        return cls(**facts, looked_at=tuple(k for k in TARGET_FACTS if k in facts))

    @classmethod
    def from_dict(cls, d: dict | None) -> TargetFacts:
        """As stored; anything but a dict: nothing known."""
        return cls.of(**{k: d[k] for k in TARGET_FACTS if k in d}) if isinstance(d, dict) else cls()

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.looked_at}

    def with_facts(self, **facts) -> TargetFacts:
        """These facts added (or changed) to the look's."""
        return TargetFacts.of(**(self.to_dict() | facts))


@dataclass(frozen=True)
class MachineFacts:
    """What a host is: this machine (fleet.local) or a fleet host."""

    hostname: str | None = None
    kernel: str | None = None
    os: str | None = None
    cpus: int | None = None
    memory_bytes: int | None = None

    @classmethod
    def from_dict(cls, d: dict | None) -> MachineFacts:
        d = d if isinstance(d, dict) else {}
        return cls(**{f.name: d.get(f.name) for f in fields(MachineFacts)})

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(MachineFacts)}


@dataclass(frozen=True)
class SeenHost(MachineFacts):
    """A fleet host's facts read through SSH (control.host.parse_facts),
    its targets by path; `error`: why they could not be read (then nothing
    else is known). `server_view`: how its fio server sees the targets
    (same, nsenter, unseen; None: no server found on the port)."""

    server_view: str | None = None
    targets: dict[str, TargetFacts] = field(default_factory=dict)
    ssh_note: str | None = None  # e.g. its host key was trusted, not checked
    error: str | None = None

    @classmethod
    def from_dict(cls, d: dict | None) -> SeenHost | None:
        """As stored; None when there is nothing (a host without SSH)."""
        if not isinstance(d, dict):
            return None
        if "error" in d:
            return cls(error=d["error"])
        targets = d.get("targets") if isinstance(d.get("targets"), dict) else {}
        return cls(**MachineFacts.from_dict(d).to_dict(), server_view=d.get("server_view"),
                   targets={path: TargetFacts.from_dict(t) for path, t in targets.items()},
                   ssh_note=d.get("ssh_note"))

    @property
    def read(self) -> bool:
        """Whether the facts could be read."""
        return self.error is None

    def to_dict(self) -> dict:
        if self.error is not None:
            return {"error": self.error}
        return ({"server_view": self.server_view} | super().to_dict()
                | {"targets": {path: t.to_dict() for path, t in self.targets.items()}}
                | ({"ssh_note": self.ssh_note} if self.ssh_note is not None else {}))


@dataclass(frozen=True)
class RecordedHost:
    """A fleet host as a run records it (places.fleet describe): where it
    is, its targets, what its target kind says of them (`described`, the
    kind's own keys: target_facts, rbd, ...) and its SSH facts, if read."""

    name: str
    address: str | None = None
    labels: dict = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)
    nic_gbps: float | None = None
    described: dict = field(default_factory=dict)
    facts: SeenHost | None = None  # None: no SSH

    @classmethod
    def from_dict(cls, d: dict | None) -> RecordedHost | None:
        """As stored; None for anything without a name (an import's bare host)."""
        if not isinstance(d, dict) or "name" not in d:
            return None
        own = {"name", "address", "labels", "targets", "nic_gbps", "facts"}
        return cls(d["name"], d.get("address"), d.get("labels") or {}, list(d.get("targets") or []),
                   d.get("nic_gbps"), {k: v for k, v in d.items() if k not in own}, SeenHost.from_dict(d.get("facts")))

    def to_dict(self) -> dict:
        return ({"name": self.name, "address": self.address, "labels": self.labels, "targets": self.targets,
                 "nic_gbps": self.nic_gbps} | self.described
                | ({"facts": self.facts.to_dict()} if self.facts is not None else {}))
