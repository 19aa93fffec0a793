"""The SSH side of a test fleet (ssh=True): a client key authorized on every
host, a host key per host and the known_hosts listing them, Debian's sshd
on each host's ADDR:22 (root login by key only), and the directories
`iofleet hosts deploy` leaves on a host."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .network import FleetError
from .testhost import TestHost

SSHD = "/usr/sbin/sshd"
SSH_PORT = 22
DEPLOY_ROOT = Path("/var/tmp/iofleet")  # where `iofleet hosts deploy` keeps a host's pid files (fleet/control/deploy.py)
FAULTS_ROOT = Path("/run/iofleet/faults")  # where a scenario records a host's faults (fleet/control/fault_records.py)
# `ip netns exec` mounts a fresh /sys for the namespace, without the cgroup
# mounts: sshd (and so a scenario's device-slow fault) sees the machine's
# blkio (v1) hierarchy again at /sys/fs/cgroup/blkio, as on a real host.
_WITH_BLKIO = ["sh", "-c", "[ -d /sys/fs/cgroup/blkio ] || { mount -t tmpfs cgroup /sys/fs/cgroup && "
               "mkdir /sys/fs/cgroup/blkio && mount -t cgroup -o blkio blkio /sys/fs/cgroup/blkio; } "
               "2>/dev/null; exec \"$0\" \"$@\""]


def make_key(path: Path, comment: str) -> Path:
    """A new ed25519 key pair at `path` (no passphrase); the private key's path."""
    proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                           "-f", str(path)], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise FleetError(f"ssh-keygen failed: {proc.stderr.strip()}")
    return path


def make_ssh_keys(ssh_dir: Path, hosts: list[TestHost], comment: str) -> tuple[Path, Path]:
    """The client key (authorized on every host), a host key per host and
    the known_hosts file listing them, as `ssh-keyscan` and a check would:
    (client key, known_hosts)."""
    ssh_dir.mkdir(mode=0o700)
    key = make_key(ssh_dir / "id_ed25519", comment)
    (ssh_dir / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
    lines = []
    for h in hosts:
        host_key = make_key(ssh_dir / f"{h.name}_host_ed25519_key", comment)
        kind, blob = Path(f"{host_key}.pub").read_text().split()[:2]
        lines.append(f"{h.address} {kind} {blob}\n")
    known_hosts = ssh_dir / "known_hosts"
    known_hosts.write_text("".join(lines))
    # sshd refuses to start without its privilege separation directory
    # (Debian's service unit creates it; namespaces share the filesystem).
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    return key, known_hosts


def sshd_argv(host: TestHost, ssh_dir: Path) -> list[str]:
    """Write the host's sshd_config into ssh_dir; the command line that runs its sshd."""
    d = ssh_dir
    config = d / f"{host.name}-sshd_config"
    config.write_text("\n".join([
        f"ListenAddress {host.address}:{SSH_PORT}",
        f"HostKey {d / f'{host.name}_host_ed25519_key'}",
        f"PidFile {d / f'{host.name}-sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}",  # not /root/.ssh: nothing of the machine's
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "UsePAM no",
        "StrictModes no",   # the scratch directory's modes are the project's, not ~/.ssh's
        "PrintMotd no",
        "MaxStartups 200",  # a control channel opens many sessions at once
        # bash sources ~/.bashrc for commands run by sshd unless SHLVL says it is nested:
        # this machine's root .bashrc (pyenv init) would add ~0.2 s of CPU to each command.
        "SetEnv SHLVL=1",
        "",
    ]))
    return [*_WITH_BLKIO, SSHD, "-D", "-e", "-f", str(config)]


def deploy_dirs(hosts: list[TestHost]) -> list[Path]:
    """The `hosts deploy` directories of these hosts that exist."""
    return [d for h in hosts if (d := DEPLOY_ROOT / f"{h.address}-{h.port}").exists()]


def fault_dirs(hosts: list[TestHost]) -> list[Path]:
    """The directories of these hosts' fault records that exist: a test that
    fails with a fault in place leaves one, which a later fleet on the same
    addresses would take for a fault of its own."""
    return [d for h in hosts if (d := FAULTS_ROOT / f"{h.address}-{h.port}").exists()]
