"""What fio's client/server cannot do on a fleet host, done through the
SSH control channel (fleet/control/ssh.py) where the inventory gives one: drop the
kernel's caches before a test, and read the host's facts (kernel, CPUs,
memory, each target's filesystem and device) once per run.

Every host with `ssh:` is asked at once; a host without it is left out of
the answers, and its callers say what could not be done."""

import shlex
from dataclasses import replace

from ...plan.units import whole_number
from ..facts_records import SeenHost, TargetFacts
from ..inventory import Host
from ..targets import kind_of
from ..targets.device_checks import spinning
from ..targets.facts import network_client
from .ssh import Reply, run_on_all

DROP_CACHES_FILE = "/proc/sys/vm/drop_caches"
# `sync` writes back every dirty page of the host: a busy host may take a while.
DROP_TIMEOUT_S = 120.0
FACTS_TIMEOUT_S = 30.0
# What a host's cache note says when no SSH channel reaches it.
NO_SSH = "no SSH access to the host: add `ssh:` to the inventory"

# As root (run_on_all wraps it in `sudo -n sh -c` for another user); never
# the drop without the write-back before it.
DROP_COMMAND = f"sync && echo 3 > {DROP_CACHES_FILE}"

# The facts script: `key=value` lines, target N's as `tN.key=value` (the
# target's path is never printed back: it is the caller's, by N). Only
# reads: uname, /proc, findmnt, df and sysfs, as any user.
FACTS_SCRIPT = r"""
port=$1; shift
# The targets as the host's fio server sees them: a server started in a
# mount namespace of its own (`ip netns exec`, a container) may not see a
# mount that this shell sees, or see one it does not. server_view: same,
# nsenter (read in the server's namespace), unseen (not allowed), or empty
# (no server found on the port).
srv=; in_srv=
[ "$port" = - ] || srv=$(ss -Hltnp "sport = :$port" 2>/dev/null | sed -n 's/.*pid=\([0-9][0-9]*\).*/\1/p' | head -n 1)
if [ -z "$srv" ]; then
  printf 'server_view=\n'
elif [ "$(readlink "/proc/$srv/ns/mnt" 2>/dev/null)" = "$(readlink /proc/self/ns/mnt)" ]; then
  printf 'server_view=same\n'
elif nsenter -t "$srv" -m true 2>/dev/null; then
  in_srv="nsenter -t $srv -m"; printf 'server_view=nsenter\n'
else
  printf 'server_view=unseen\n'
fi
printf 'kernel=%s\n' "$(uname -r)"
printf 'hostname=%s\n' "$(uname -n)"
printf 'os=%s\n' "$( (. /etc/os-release && printf '%s' "$PRETTY_NAME") 2>/dev/null)"
printf 'cpus=%s\n' "$(getconf _NPROCESSORS_ONLN 2>/dev/null)"
printf 'memory_kib=%s\n' "$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null)"
first() { [ -r "$1" ] && head -n 1 "$1" 2>/dev/null; }
n=0
for t in "$@"; do
  p="t$n."; n=$((n + 1))
  fs=; majmin=; src=
  if $in_srv test -b "$t"; then
    hex=$($in_srv stat -L -c '%t:%T' "$t" 2>/dev/null) && majmin=$(printf '%d:%d' "0x${hex%:*}" "0x${hex#*:}")
    printf '%skind=device\n' "$p"
  elif $in_srv test -d "$t"; then
    read -r fs majmin src <<EOF
$($in_srv findmnt -n -o FSTYPE,MAJ:MIN,SOURCE -T "$t" 2>/dev/null)
EOF
    printf '%skind=directory\n%sfilesystem=%s\n%ssource=%s\n' "$p" "$p" "$fs" "$p" "$src"
    printf '%sfree_kib=%s\n' "$p" "$($in_srv df -P -k "$t" 2>/dev/null | awk 'NR == 2 {print $4}')"
  else
    printf '%skind=missing\n' "$p"; continue
  fi
  d="/sys/dev/block/$majmin"
  [ -n "$majmin" ] && [ -e "$d" ] || continue
  [ -e "$d/queue" ] || d="$d/.."  # a partition: its disk has the queue and the model
  disk=$d
  for s in "$d"/slaves/*; do  # device-mapper (LVM, dm-crypt): the first disk under it
    [ -e "$s" ] || break
    disk=$s; [ -e "$disk/device" ] || disk="$disk/.."
    break
  done
  printf '%sdevice=%s\n' "$p" "$(basename "$(readlink -f "$d")")"
  printf '%ssize_sectors=%s\n' "$p" "$(first "$d/size")"
  printf '%smodel=%s\n' "$p" "$(first "$disk/device/model")"
  printf '%sfirmware=%s\n' "$p" "$(first "$disk/device/firmware_rev" || first "$disk/device/rev")"
  printf '%sscheduler=%s\n' "$p" "$(first "$d/queue/scheduler")"
  printf '%srotational=%s\n' "$p" "$(first "$d/queue/rotational")"
done
"""


def _looked_at(targets: list[str]) -> list[str]:
    """The targets the script looks at on the host: those whose kind does
    not know their facts from the name alone (an RBD image)."""
    return [t for t in targets if kind_of(t).fixed_facts(t) is None]


def facts_command(targets: list[str], port: int | None = None) -> str:
    """The facts script for these targets as the fio server on `port` sees
    them (None: as the shell sees them), every word shell-quoted."""
    return " ".join(["sh", "-c", shlex.quote(FACTS_SCRIPT), "iofleet-facts", str(port or "-"),
                     *map(shlex.quote, _looked_at(targets))])


def active_scheduler(text: str | None) -> str | None:
    """sysfs queue/scheduler "none [mq-deadline] kyber" → "mq-deadline"
    (a queue with one choice prints it bare)."""
    if not text:
        return None
    marked = [w[1:-1] for w in text.split() if w.startswith("[") and w.endswith("]")]
    return marked[0] if marked else text.split()[0]


def _target_facts(raw: dict[str, str]) -> TargetFacts:
    """One target's `tN.` lines of the facts script (the prefix taken off)."""
    kind = raw.get("kind")
    out: dict = {"kind": kind}
    if kind == "directory":
        free = whole_number(raw.get("free_kib"))  # df: statvfs, which FUSE and network filesystems answer too
        out |= {"filesystem": raw.get("filesystem") or None, "source": raw.get("source") or None,
                "free_bytes": None if free is None else free * 1024}
        client = network_client(out["filesystem"])
        if client:  # its data is on other hosts: no device of this host is the target's (targets.facts)
            return TargetFacts.of(**out, device=None, rotational=None, network_fs=True, client=client)
    if "device" in raw:
        sectors, rotational = whole_number(raw.get("size_sectors")), raw.get("rotational")
        out |= {"device": raw["device"] or None, "bytes": None if sectors is None else sectors * 512,
                "model": raw.get("model") or None, "firmware": raw.get("firmware") or None,
                "scheduler": active_scheduler(raw.get("scheduler")),
                "rotational": spinning(raw["device"] or None, rotational)}
    return TargetFacts.of(**out)


def parse_facts(stdout: str, targets: list[str]) -> SeenHost:
    """The facts script's output (facts_command) → the host's facts, with
    each target's under `targets` by its path."""
    raw: dict[str, str] = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            raw[key] = value.strip()
    memory = whole_number(raw.get("memory_kib"))
    per_target: dict[str, TargetFacts] = {}
    n = 0  # the script's number of the next target it looked at (_looked_at's order)
    for target in targets:
        fixed = kind_of(target).fixed_facts(target)
        if fixed is not None:
            per_target[target] = fixed
            continue
        prefix, n = f"t{n}.", n + 1
        mine = {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}
        per_target[target] = _target_facts(mine) if mine else TargetFacts.of(kind=None)
    return SeenHost(server_view=raw.get("server_view") or None, hostname=raw.get("hostname") or None,
                    kernel=raw.get("kernel") or None, os=raw.get("os") or None, cpus=whole_number(raw.get("cpus")),
                    memory_bytes=None if memory is None else memory * 1024, targets=per_target)


def _why_not(reply: Reply, user: str, what: str) -> str:
    """One line: why a command did not do its part on a host."""
    if reply.error:  # ssh.py's line names the host: the caller's answer is by host already
        return reply.error.removeprefix(f"{reply.host}: ")
    said = (reply.stderr.strip() or reply.stdout.strip()).splitlines()
    detail = said[-1].strip() if said else f"exit status {reply.exit_status}"
    return f"SSH user {user} cannot {what}: {detail}"


def drop_caches(hosts: list[Host]) -> dict[str, str | None]:
    """Write dirty data back and drop the kernel's clean caches on every
    host with `ssh:`, all at once: host name → None when done, else the
    one-line reason. Hosts without `ssh:` are not in the answer."""
    replies = run_on_all(hosts, DROP_COMMAND, timeout_s=DROP_TIMEOUT_S, as_root=True)
    users = {h.name: h.ssh.user for h in hosts if h.ssh}
    out: dict[str, str | None] = {}
    for name, r in replies.items():
        out[name] = None if r.ok else _why_not(r, users[name], f"write {DROP_CACHES_FILE}")
        if out[name] and not r.error and users[name] != "root":
            out[name] += f"; log in as root, or allow {users[name]} passwordless sudo"
    return out


def host_facts(hosts: list[Host]) -> dict[str, dict]:
    """Every host with `ssh:`: its facts (parse_facts) as a run stores
    them, or {"error": why} when they could not be read; all hosts at
    once, one script each."""
    by_name = {h.name: h for h in hosts}
    replies = run_on_all(hosts, lambda h: facts_command(list(h.targets), h.endpoint[1]), timeout_s=FACTS_TIMEOUT_S)
    out = {}
    for name, r in replies.items():
        host = by_name[name]
        if r.ok:
            seen = parse_facts(r.stdout, list(host.targets))
            if r.note:  # e.g. its host key was trusted, not checked: the run says so
                seen = replace(seen, ssh_note=r.note.removeprefix(f"{name}: "))
        else:
            seen = SeenHost(error=_why_not(r, host.ssh.user, "read the host's facts"))
        out[name] = seen.to_dict()
    return out


def free_space(facts: dict[str, dict]) -> dict[str, dict[str, int | None]]:
    """Free bytes under each directory target of every host with `ssh:`
    (host → target path → bytes, None where df could not say), from df on
    the host: statvfs, which FUSE and network filesystems (ceph-fuse, nfs)
    answer too, while node_exporter may leave their mounts out (Debian's
    excludes /mnt, /media and /run) or read zeros (a FUSE mount without
    allow_other). Hosts without `ssh:`, or whose facts could not be read,
    are not in the answer. `facts`: host_facts' answer."""
    seen = {name: SeenHost.from_dict(f) for name, f in facts.items()}
    return {name: {path: t.free_bytes for path, t in s.targets.items()} for name, s in seen.items() if s and s.read}
