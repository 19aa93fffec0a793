"""A fleet run's host facts (read through SSH: fleet/control/host.py) in words:
one line per host, and what differs between the hosts of one run (a
straggler on another kernel or device model is explained by it)."""

from ..plan.target_kinds import kind_named
from ..plan.units import format_bytes


def recorded_facts(host_facts: dict) -> dict[str, dict | None]:
    """Each fleet host of a run's host_facts → its facts ({"error": why}
    when they could not be read), or None without SSH."""
    hosts = (host_facts or {}).get("hosts") or []
    return {h["name"]: h["facts"] if isinstance(h.get("facts"), dict) else None
            for h in hosts if isinstance(h, dict) and "name" in h}


def readable(recorded: dict[str, dict | None]) -> dict[str, dict]:
    """The hosts whose facts were read."""
    return {h: f for h, f in recorded.items() if f and "error" not in f}


def _joined(targets: list[dict], key: str, shown=str) -> str | None:
    values = sorted({shown(t[key]) for t in targets if t.get(key) is not None})
    return " + ".join(values) if values else None


def comparable(facts: dict) -> dict[str, str]:
    """The facts that should agree between hosts of one run, as text;
    a host's targets' values joined (one target each is the usual case)."""
    targets = list((facts.get("targets") or {}).values())
    memory = facts.get("memory_bytes")
    out = {"kernel": facts.get("kernel"), "CPUs": None if facts.get("cpus") is None else str(facts["cpus"]),
           "memory": None if memory is None else format_bytes(memory),
           "filesystem": _joined(targets, "filesystem"), "device model": _joined(targets, "model"),
           "firmware": _joined(targets, "firmware"), "scheduler": _joined(targets, "scheduler"),
           "disk": _joined(targets, "rotational", lambda r: "spinning" if r else "flash")}
    return {k: v for k, v in out.items() if v is not None}


def differences(per_host: dict[str, dict]) -> dict[str, dict[str, list[str]]]:
    """fact → {value: hosts} for each fact on which the hosts disagree."""
    values: dict[str, dict[str, list[str]]] = {}
    for host, facts in per_host.items():
        for name, value in comparable(facts).items():
            values.setdefault(name, {}).setdefault(value, []).append(host)
    return {name: seen for name, seen in values.items() if len(seen) > 1}


def how_hosts_differ(hosts: list[str], per_host: dict[str, dict]) -> str | None:
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


def host_line(facts: dict) -> str:
    """A host in one line: "kernel 6.1.0, 2 CPUs, 23.5 GiB RAM; target ext4
    on vda (flash, scheduler mq-deadline, model X, firmware Y)" (not its
    targets' paths: hosts alike read alike)."""
    if "error" in facts:
        return f"facts not read ({facts['error']})"
    head = ", ".join(x for x in (
        f"kernel {facts['kernel']}" if facts.get("kernel") else None,
        f"{facts['cpus']} CPUs" if facts.get("cpus") else None,
        f"{format_bytes(facts['memory_bytes'])} RAM" if facts.get("memory_bytes") else None) if x)
    parts = [head] if head else []
    targets = [_target_text(t) for t in (facts.get("targets") or {}).values()]
    if len(set(targets)) == 1:
        parts.append(f"{len(targets)} targets: {targets[0]}" if len(targets) > 1 else f"target {targets[0]}")
    elif targets:
        parts.append(f"targets {', '.join(targets)}")
    if facts.get("ssh_note"):  # e.g. its host key was trusted, not checked
        parts.append(facts["ssh_note"])
    return "; ".join(parts) or "no facts"


def _target_text(t: dict) -> str:
    if t.get("kind") == "missing":
        return "missing"
    kind = kind_named(t.get("kind"))
    if kind and kind.client:  # no path on the host: reached through its client (an RBD image)
        return f"{kind.what} ({kind.client})"
    disk = {True: "spinning", False: "flash"}.get(t.get("rotational"))
    about = [x for x in (disk, t.get("scheduler") and f"scheduler {t['scheduler']}",
                         t.get("model") and f"model {t['model']}", t.get("firmware") and f"firmware {t['firmware']}")
             if x]
    fs, where = t.get("filesystem"), t.get("device") or t.get("source")
    on = (f"{fs} on {where}" if where and where != fs else fs) if fs else where or "not seen"
    return on + (f" ({', '.join(about)})" if about else "")
