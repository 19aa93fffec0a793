"""What test fleets leave behind: `cleanup_stale()` removes the leftovers of
crashed runs, `leftovers()` lists what of one fleet still exists.

A fleet's state file STATE_DIR/TOKEN.lock stays locked while its owning
process lives (statefile.take_token), so a fleet whose state file is missing
or unlocked is gone, and one whose state file is locked is alive in some
process and is left alone. /run is a tmpfs, like the namespaces' mount
points in /run/netns."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from .network import PREFIX, STATE_DIR, TOKEN_RE, ip, kill_namespace, link_names, netns_names, token_of
from .processes import is_running, running_processes
from .statefile import default_base_dir, try_lock

DATA_DIR_RE = re.compile(rf"^fleet-({TOKEN_RE})$")


def cleanup_stale(base_dir: Path | None = None) -> list[str]:
    """Remove what crashed earlier runs left behind: processes, namespaces,
    links and data directories named with PREFIX + a token whose owner is
    gone (its state file missing or unlocked). Fleets alive in other
    processes are left alone. Returns what was removed."""
    base = Path(base_dir) if base_dir else default_base_dir()
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    namespaces, links = netns_names(), link_names()
    tokens: set[str] = set()
    for name in namespaces + links:
        if token := token_of(name):
            tokens.add(token)
    for p in STATE_DIR.glob("*.lock"):
        if re.fullmatch(TOKEN_RE, p.stem):
            tokens.add(p.stem)
    if base.is_dir():
        for p in base.iterdir():
            if m := DATA_DIR_RE.match(p.name):
                tokens.add(m.group(1))

    removed: list[str] = []
    for tmp in STATE_DIR.glob(".*.tmp"):  # ".TOKEN.PID.tmp" of a crash mid-take_token
        pid = tmp.name.split(".")[2]
        if pid.isdigit() and not is_running(int(pid)):
            tmp.unlink(missing_ok=True)
    for token in sorted(tokens):
        state = STATE_DIR / f"{token}.lock"
        fd = try_lock(state)
        if fd is None and state.exists():
            continue  # locked: a live fleet in some process
        try:
            data_dirs = {base / f"fleet-{token}"}
            if fd is not None:
                try:
                    info = json.loads(state.read_text() or "{}")
                    if info.get("data_dir"):
                        data_dirs.add(Path(info["data_dir"]))
                except (OSError, ValueError):
                    pass
            own = [n for n in namespaces if token_of(n) == token]
            for ns in own:
                kill_namespace(ns)
            for link in links:
                if token_of(link) == token:
                    if ip("link", "del", link, check=False).returncode == 0:
                        removed.append(f"link {link}")
            for ns in own:
                if ip("netns", "del", ns, check=False).returncode == 0:
                    removed.append(f"netns {ns}")
            for d in data_dirs:
                if d.exists():
                    shutil.rmtree(d, ignore_errors=True)
                    removed.append(f"dir {d}")
            if fd is not None:
                state.unlink(missing_ok=True)
                removed.append(f"state {state}")
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def leftovers(token: str, netns_ids: set[str] = frozenset(), needles: tuple[str, ...] = ()) -> list[str]:
    """What of fleet `token` still exists: its namespaces and links, and
    processes that are in one of `netns_ids` ("net:[inode]") or whose command
    line holds the token or one of `needles`."""
    found = [f"netns {n}" for n in netns_names() if token_of(n) == token]
    found += [f"link {n}" for n in link_names() if token_of(n) == token]
    needles = (f"{PREFIX}{token}", *needles)
    for pid, (cmdline, netns) in running_processes().items():
        if netns in netns_ids or any(n in cmdline for n in needles):
            found.append(f"process {pid}: {cmdline}")
    return found
