"""The inventory's `ssh:` settings and `defaults:`, the SSH channel's pure parts
(host-key policy, sudo) and the deploy scripts (quoted, valid sh)."""

import shutil
from pathlib import Path
import subprocess

import asyncssh
import yaml
import pytest

from iofleet.fleet.control import deploy
from iofleet.fleet.inventory import Inventory, InventoryError, SshConfig, load_inventory
from iofleet.fleet.control.ssh import _as_root, _connect_error, _KnownHosts, run_on_all
from iofleet.studies.hosts import deploy_fleet

HOST = {"address": "10.0.0.1", "targets": ["/mnt/a"]}


def test_defaults_are_merged_into_each_host_and_its_own_keys_win():
    inv = Inventory.model_validate({
        "defaults": {"ssh": {"user": "ops", "key": "/k/id", "port": 2222}},
        "hosts": [HOST, {**HOST, "address": "10.0.0.2", "ssh": {"port": 22, "trust_unknown_host_keys": True}}]})
    a, b = (h.ssh for h in inv.hosts)
    assert (a.user, str(a.key), a.port, a.trust_unknown_host_keys) == ("ops", "/k/id", 2222, False)
    assert (b.user, str(b.key), b.port, b.trust_unknown_host_keys) == ("ops", "/k/id", 22, True)


def test_without_ssh_settings_hosts_have_none_and_the_defaults_are_root_port_22():
    assert Inventory.model_validate({"hosts": [HOST]}).hosts[0].ssh is None
    cfg = Inventory.model_validate({"hosts": [{**HOST, "ssh": {}}]}).hosts[0].ssh
    assert cfg == SshConfig() and (cfg.user, cfg.port, cfg.key, cfg.known_hosts) == ("root", 22, None, None)


@pytest.mark.parametrize("ssh,field", [
    ({"user": "root; rm -rf /"}, "ssh.user"), ({"user": "Root"}, "ssh.user"), ({"user": "-oProxy"}, "ssh.user"),
    ({"port": 0}, "ssh.port"), ({"port": 70000}, "ssh.port"), ({"key": "a\nb"}, "ssh.key"),
    ({"password": "x"}, "ssh.password"), ({"trust_unknown_host_keys": "maybe"}, "ssh.trust_unknown_host_keys"),
])
def test_bad_ssh_settings_name_the_field(tmp_path, ssh, field):
    p = tmp_path / "inv.yaml"
    p.write_text(yaml.safe_dump({"hosts": [{**HOST, "ssh": ssh}]}))
    with pytest.raises(InventoryError) as info:
        load_inventory(p)
    assert f"hosts[0].{field}" in str(info.value) or f"hosts.0.{field}" in str(info.value), str(info.value)


def test_a_bad_default_is_reported_once_under_defaults(tmp_path):
    p = tmp_path / "inv.yaml"
    p.write_text("defaults:\n  ssh: {user: 'a b'}\nhosts:\n"
                 "  - {address: 10.0.0.1, targets: [/mnt/a]}\n  - {address: 10.0.0.2, targets: [/mnt/a]}\n")
    with pytest.raises(InventoryError) as info:
        load_inventory(p)
    lines = str(info.value).splitlines()
    assert len(lines) == 1 and "defaults" in lines[0] and "ssh.user" in lines[0]
    p.write_text("defaults:\n  bogus: 1\nhosts:\n  - {address: 10.0.0.1, targets: [/mnt/a]}\n")
    with pytest.raises(InventoryError, match="defaults.bogus"):
        load_inventory(p)


def test_relative_key_and_known_hosts_are_taken_from_the_inventorys_directory(tmp_path):
    p = tmp_path / "inv.yaml"
    p.write_text("defaults:\n  ssh: {key: keys/id, known_hosts: kh}\nhosts:\n  - {address: 10.0.0.1, targets: [/mnt/a]}\n"
                 "  - {address: 10.0.0.2, targets: [/mnt/a], ssh: {key: /abs/id}}\n")
    a, b = (h.ssh for h in load_inventory(p).hosts)
    assert a.key == tmp_path / "keys/id" and a.known_hosts == tmp_path / "kh"
    assert b.key.as_posix() == "/abs/id" and b.known_hosts == tmp_path / "kh"


def test_as_root_uses_sudo_only_for_another_user_and_quotes_the_command():
    assert _as_root("echo 'x'", SshConfig()) == "echo 'x'"
    assert _as_root("echo 'x'; id", SshConfig(user="ops")) == "sudo -n sh -c 'echo '\"'\"'x'\"'\"'; id'"


def test_host_key_policy_listed_unknown_trusted(tmp_path):
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"10.0.0.1 {key}")
    known = _KnownHosts()
    assert known.for_host(SshConfig(known_hosts=kh), "10.0.0.1")[1] == "listed"
    assert known.for_host(SshConfig(known_hosts=kh), "10.0.0.2")[1] == "unknown"
    trusted, state = known.for_host(SshConfig(known_hosts=kh, trust_unknown_host_keys=True), "10.0.0.2")
    assert (trusted, state) == (None, "trusted")
    # trusting unknown keys never accepts a changed one: a listed host stays checked
    assert known.for_host(SshConfig(known_hosts=kh, trust_unknown_host_keys=True), "10.0.0.1")[1] == "listed"


def test_connect_errors_are_one_line_naming_the_host_and_the_fix():
    host = Inventory.model_validate({"hosts": [{**HOST, "name": "esx1", "ssh": {"user": "ops"}}]}).hosts[0]
    cases = {
        asyncssh.HostKeyNotVerifiable("no"): ("listed", "ssh-keygen -R"),
        asyncssh.PermissionDenied("no"): ("unknown", "authorized_keys"),
        ConnectionRefusedError(111, "Connection refused"): ("unknown", "start sshd"),
        TimeoutError(): ("unknown", "firewalls"),
        OSError(113, "No route to host"): ("unknown", "No route to host"),
    }
    for exc, (state, fix) in cases.items():
        line = _connect_error(host, exc, state)
        assert line.startswith("esx1: ") and fix in line and "\n" not in line, line
    line = _connect_error(host, asyncssh.HostKeyNotVerifiable("no"), "unknown")
    assert "ssh-keyscan -p 22 10.0.0.1" in line and "trust_unknown_host_keys: true" in line


def test_hosts_without_ssh_are_left_out_and_no_ssh_at_all_is_a_user_error():
    inv = Inventory.model_validate({"hosts": [HOST]})
    assert run_on_all(inv.hosts, "true") == {}
    with pytest.raises(InventoryError, match="no host has `ssh:` settings"):
        deploy_fleet(inv.hosts, "inv.yaml")


def test_deploy_scripts_quote_every_value_and_are_valid_sh():
    inv = Inventory.model_validate({"hosts": [{**HOST, "address": "[fd00::1]:8766", "ssh": {}}]})
    host = inv.hosts[0]
    assert deploy.state_dir(host) == "/var/tmp/iofleet/fd00--1-8766"
    for command in (deploy.deploy_command(host, "fio-3.33", True, True), deploy.undeploy_command(host)):
        assert command.startswith("sh -c '")
        script = subprocess.run(["sh", "-c", f"printf %s {command[6:]}"], capture_output=True, text=True).stdout
        assert "server=ip6:fd00::1,8766\n" in script and "listen='[fd00::1]:9100'\n" in script
        assert subprocess.run(["sh", "-n", "-c", script]).returncode == 0


def _bin_without_fio(tmp_path, extra: dict[str, str] | None = None):
    """A PATH with the tools the deploy script uses, but no fio (and the given scripts)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "cat", "tr", "grep", "awk", "printf", "tail", "mkdir", "rm", "sleep"):
        if path := shutil.which(tool):
            (bin_dir / tool).symlink_to(path)
    for name, body in (extra or {}).items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return str(bin_dir)


def test_deploy_script_on_a_host_without_fio_says_how_or_reports_the_failed_install(tmp_path):
    host = Inventory.model_validate({"hosts": [{**HOST, "ssh": {}}]}).hosts[0]

    def run(install: bool, path: str) -> dict:
        proc = subprocess.run(["/bin/sh", "-c", deploy.deploy_command(host, "fio-3.33", install, False)],
                              capture_output=True, text=True, env={"PATH": path}, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return deploy._fields(deploy.Reply("h", 0, proc.stdout, proc.stderr))

    fields = run(True, _bin_without_fio(tmp_path))
    assert fields == {"pm": "", "fio": "missing", "net_missing": "iperf3 ping"}
    line = deploy._fio_problem(host, fields, "fio-3.33", True)
    assert "no apt-get, dnf or zypper" in line and "install fio (fio-3.33) by hand" in line
    (tmp_path / "bin").rename(tmp_path / "old")
    path = _bin_without_fio(tmp_path, {"apt-get": "echo 'E: Unable to locate package fio' >&2; exit 100"})
    assert "--install" in deploy._fio_problem(host, run(False, path), "fio-3.33", False)
    fields = run(True, path)
    assert fields["install_failed"] == "E: Unable to locate package fio"
    assert "installing fio with apt-get failed" in deploy._fio_problem(host, fields, "fio-3.33", True)


def test_deploy_install_adds_the_network_checks_tools_with_fio_and_says_what_is_missing(tmp_path):
    """A fake apt-get (it records its arguments and "installs" by writing
    the commands) stands for the host's package manager."""
    host = Inventory.model_validate({"hosts": [{**HOST, "ssh": {}}]}).hosts[0]
    bin_dir = tmp_path / "bin"
    _bin_without_fio(tmp_path, {"apt-get": (
        f'echo "$@" >> {bin_dir}/apt.log; [ "$1" = install ] || exit 0\n'
        f'for t in fio iperf3 ping; do printf "#!/bin/sh\\necho fio-3.33\\n" > {bin_dir}/$t; '
        f'{shutil.which("chmod")} +x {bin_dir}/$t; done')})

    def fields(install: bool) -> dict:
        proc = subprocess.run(["/bin/sh", "-c", deploy.deploy_command(host, "fio-3.33", install, False)],
                              capture_output=True, text=True, env={"PATH": str(bin_dir)}, timeout=30)
        return deploy._fields(deploy.Reply("h", 0, proc.stdout, proc.stderr))

    without = fields(False)
    assert without["net_missing"] == "iperf3 ping" and without["fio"] == "missing"
    got = fields(True)
    assert got["installed"] == "apt-get" and got["installed_pkgs"] == "fio iperf3 iputils-ping", got
    assert "net_missing" not in got and got["version"] == "fio-3.33"
    assert (bin_dir / "apt.log").read_text().splitlines()[-1] == "install -y -qq fio iperf3 iputils-ping"
