"""A fleet run's host facts (read through SSH: fleet/control/host.py) in words:
one line per host, and what differs between the hosts of one run (a
straggler on another kernel or device model is explained by it)."""

from ..fleet.facts_records import RecordedHost, SeenHost, TargetFacts
from ..plan.target_kinds import kind_named
from ..plan.units import format_bytes


def recorded_hosts(host_facts: dict) -> list[RecordedHost]:
    """The fleet hosts of a run's host_facts, as the run recorded them."""
    hosts = (host_facts or {}).get("hosts")
    return [r for h in hosts if (r := RecordedHost.from_dict(h))] if isinstance(hosts, list) else []


def recorded_facts(host_facts: dict) -> dict[str, SeenHost | None]:
    """Each fleet host of a run's host_facts → its facts (with `error`
    when they could not be read), or None without SSH."""
    return {h.name: h.facts for h in recorded_hosts(host_facts)}


def local_targets(host_facts: dict) -> dict[str, TargetFacts]:
    """This machine's targets in a run's host_facts (a local run's), by path."""
    stored = (host_facts or {}).get("target_facts")
    return {path: TargetFacts.from_dict(t) for path, t in stored.items()} if isinstance(stored, dict) else {}


def readable(recorded: dict[str, SeenHost | None]) -> dict[str, SeenHost]:
    """The hosts whose facts were read."""
    return {h: f for h, f in recorded.items() if f and f.read}


def _joined(targets: list[TargetFacts], fact: str, shown=str) -> str | None:
    values = sorted({shown(v) for t in targets if (v := getattr(t, fact)) is not None})
    return " + ".join(values) if values else None


def comparable(facts: SeenHost) -> dict[str, str]:
    """The facts that should agree between hosts of one run, as text;
    a host's targets' values joined (one target each is the usual case)."""
    targets = list(facts.targets.values())
    memory = facts.memory_bytes
    out = {"kernel": facts.kernel, "CPUs": None if facts.cpus is None else str(facts.cpus),
           "memory": None if memory is None else format_bytes(memory),
           "filesystem": _joined(targets, "filesystem"), "device model": _joined(targets, "model"),
           "firmware": _joined(targets, "firmware"), "scheduler": _joined(targets, "scheduler"),
           "disk": _joined(targets, "rotational", lambda r: "spinning" if r else "flash")}
    return {k: v for k, v in out.items() if v is not None}


def differences(per_host: dict[str, SeenHost]) -> dict[str, dict[str, list[str]]]:
    """fact → {value: hosts} for each fact on which the hosts disagree."""
    values: dict[str, dict[str, list[str]]] = {}
    for host, facts in per_host.items():
        for name, value in comparable(facts).items():
            values.setdefault(name, {}).setdefault(value, []).append(host)
    return {name: seen for name, seen in values.items() if len(seen) > 1}


def how_hosts_differ(hosts: list[str], per_host: dict[str, SeenHost]) -> str | None:
    """What sets `hosts` (e.g. stragglers) apart from the run's other hosts:
    "kernel 6.8.0 (others 6.1.0); device model X (others Y)"; None when
    nothing known does."""
    parts = []
    for name, seen in differences(per_host).items():
        theirs = {v for v, names in seen.items() if set(names) & set(hosts)}
        others = {v for v, names in seen.items() if set(names) - set(hosts)}
        if theirs and others and not theirs & others:
            parts.append(f"{name} {' / '.join(sorted(theirs))} (others {' / '.join(sorted(others))})")
    return "; ".join(parts) or None


def host_line(facts: SeenHost) -> str:
    """A host in one line: "kernel 6.1.0, 2 CPUs, 23.5 GiB RAM; target ext4
    on vda (flash, scheduler mq-deadline, model X, firmware Y)" (not its
    targets' paths: hosts alike read alike)."""
    if not facts.read:
        return f"facts not read ({facts.error})"
    head = ", ".join(x for x in (
        f"kernel {facts.kernel}" if facts.kernel else None,
        f"{facts.cpus} CPUs" if facts.cpus else None,
        f"{format_bytes(facts.memory_bytes)} RAM" if facts.memory_bytes else None) if x)
    parts = [head] if head else []
    targets = [_target_text(t) for t in facts.targets.values()]
    if len(set(targets)) == 1:
        parts.append(f"{len(targets)} targets: {targets[0]}" if len(targets) > 1 else f"target {targets[0]}")
    elif targets:
        parts.append(f"targets {', '.join(targets)}")
    if facts.ssh_note:  # e.g. its host key was trusted, not checked
        parts.append(facts.ssh_note)
    return "; ".join(parts) or "no facts"


def _target_text(t: TargetFacts) -> str:
    if t.kind == "missing":
        return "missing"
    kind = kind_named(t.kind)
    if kind and kind.client:  # no path on the host: reached through its client (an RBD image)
        return f"{kind.what} ({kind.client})"
    disk = {True: "spinning", False: "flash"}.get(t.rotational)
    about = [x for x in (disk, t.scheduler and f"scheduler {t.scheduler}",
                         t.model and f"model {t.model}", t.firmware and f"firmware {t.firmware}")
             if x]
    fs, where = t.filesystem, t.device or t.source
    on = (f"{fs} on {where}" if where and where != fs else fs) if fs else where or "not seen"
    return on + (f" ({', '.join(about)})" if about else "")
