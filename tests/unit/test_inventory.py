"""Inventory files: addresses, labels, targets, selection, readable errors."""

import pytest

from iofleet.fleet.inventory import Inventory, InventoryError, host_groups, load_inventory, parse_address


@pytest.mark.parametrize("text,expected", [
    ("10.0.0.11", ("10.0.0.11", 8765)), ("10.0.0.11:8766", ("10.0.0.11", 8766)),
    ("esx01.lab", ("esx01.lab", 8765)), ("[fd00::1]:9000", ("fd00::1", 9000)), ("fd00::1", ("fd00::1", 8765)),
])
def test_addresses(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["", "10.0.0.1:0", "host:99999", "a b", "x;rm", "[fd00::1]x", "h:p", "$(id)"])
def test_bad_addresses(text):
    with pytest.raises(ValueError):
        parse_address(text)


def test_fio_client_argument_and_default_names():
    inv = Inventory.model_validate({"hosts": [
        {"address": "10.0.0.11", "targets": ["/mnt/a"]},
        {"address": "[fd00::2]:8766", "targets": ["/mnt/a"]},
        {"name": "esx3", "address": "esx03.lab:8765", "targets": ["/mnt/a"], "labels": {"rack": "r1"}}]})
    assert [h.fio_client_arg for h in inv.hosts] == ["ip:10.0.0.11,8765", "ip6:fd00::2,8766", "esx03.lab,8765"]
    assert [h.name for h in inv.hosts] == ["10.0.0.11", "fd00--2-8766", "esx3"]
    assert [h.name for h in inv.select({"rack": "r1"})] == ["esx3"]
    with pytest.raises(InventoryError, match="no host"):
        inv.select({"rack": "r9"})


def test_errors_name_file_and_field(tmp_path):
    p = tmp_path / "inv.yaml"
    p.write_text("hosts:\n  - address: 10.0.0.1:70000\n    targets: [/mnt/a]\n"
                 "  - address: 10.0.0.2\n    targets: ['/x;y']\n    labels: {rack: 'a b'}\n")
    with pytest.raises(InventoryError) as info:
        load_inventory(p)
    lines = str(info.value).splitlines()
    assert any(l.startswith(f"{p}: hosts[0].address:") and "65535" in l for l in lines)
    assert any(l.startswith(f"{p}: hosts[1].targets[0]:") for l in lines)
    assert any(l.startswith(f"{p}: hosts[1].labels:") for l in lines)
    # A port of thousands of digits is refused as any other, not converted.
    p.write_text("hosts:\n  - address: 10.0.0.1:" + "9" * 5000 + "\n    targets: [/mnt/a]\n")
    with pytest.raises(InventoryError, match=r"hosts\[0\].address: .*the port must be a number from 1 to 65535"):
        load_inventory(p)


def test_duplicate_hosts_are_refused():
    with pytest.raises(Exception, match="same address"):
        Inventory.model_validate({"hosts": [{"address": "10.0.0.1", "targets": ["/a"]},
                                            {"address": "10.0.0.1:8765", "name": "b", "targets": ["/a"]}]})


def test_missing_file(tmp_path):
    with pytest.raises(InventoryError, match="no such inventory file"):
        load_inventory(tmp_path / "none.yaml")


def test_host_groups_must_be_non_empty_and_disjoint():
    inv = Inventory.model_validate({"hosts": [
        {"name": "a", "address": "10.0.0.1", "labels": {"role": "db", "rack": "r1"}, "targets": ["/d"]},
        {"name": "b", "address": "10.0.0.2", "labels": {"role": "bk", "rack": "r1"}, "targets": ["/d"]}]})
    assert host_groups(inv.hosts, {"x": {"role": "db"}, "y": {"role": "bk"}}) == {"x": ["a"], "y": ["b"]}
    with pytest.raises(InventoryError, match=r"host a is in two groups \('x' and 'y'\)"):
        host_groups(inv.hosts, {"x": {"role": "db"}, "y": {"rack": "r1"}})
    with pytest.raises(InventoryError, match="workload 'z': no selected host has the labels"):
        host_groups(inv.hosts, {"x": {"role": "db"}, "z": {"role": "web"}})
