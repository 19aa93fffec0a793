"""The inventory's `kubernetes:` section: each key checked, refused in one
line naming the field, and a cluster that cannot be reached named with
its kubeconfig (no cluster needed here; tests/kubernetes/ runs a real one)."""

import pytest
import yaml
from typer.testing import CliRunner

from iofleet.cli.main import app
from iofleet.fleet.inventory import InventoryError, load_inventory
from iofleet.fleet.kubernetes.cluster import KubeError
from iofleet.fleet.kubernetes.settings import KubernetesSection, default_image
from iofleet.plan.target_kinds import check_target


def _write(tmp_path, data) -> str:
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("section, field, said", [
    ({"storage_class": "Fast_SSD"}, "kubernetes.storage_class", "a StorageClass name"),
    ({"storage_class": "fast", "volume_mode": "block"}, "kubernetes.volume_mode", "Filesystem"),
    ({"storage_class": "fast", "pods_per_node": 0}, "kubernetes.pods_per_node", "greater than or equal to 1"),
    ({"storage_class": "fast", "size": "lots"}, "kubernetes.size", "is not a size"),
    ({"storage_class": "fast", "size": "4k"}, "kubernetes.size", "greater than or equal to 1048576"),
    ({"storage_class": "fast", "nodes": ["node 1"]}, "kubernetes.nodes[0]", "a node name"),
    ({"storage_class": "fast", "image": "fio;rm -rf /"}, "kubernetes.image", "an image reference"),
    ({"claim": "just-a-name"}, "kubernetes.claim", "NAMESPACE/NAME"),
    ({"storage_class": "fast", "claim": "apps/db"}, "kubernetes", "not both"),
    ({"claim": "apps/db", "pods_per_node": 2}, "kubernetes", "one pod"),
    ({}, "kubernetes", "give storage_class"),
    ({"storage_class": "fast", "replicas": 3}, "kubernetes.replicas", "unknown field"),
])
def test_a_bad_key_is_refused_in_one_line_naming_it(tmp_path, section, field, said):
    path = _write(tmp_path, {"kubernetes": section})
    with pytest.raises(InventoryError) as err:
        load_inventory(path)
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: {field}:") and said in lines[0], lines


def test_hosts_and_kubernetes_together_are_refused(tmp_path):
    path = _write(tmp_path, {"hosts": [{"address": "127.0.0.1", "targets": ["/tmp"]}],
                             "kubernetes": {"storage_class": "fast"}})
    with pytest.raises(InventoryError, match="a `hosts:` list .* or a `kubernetes:` section"):
        load_inventory(path)


def test_defaults_are_those_the_docs_give():
    s = KubernetesSection(storage_class="fast")
    assert (s.volume_mode, s.size, s.access_mode, s.pods_per_node, s.nodes, s.connect, s.ready_timeout) == (
        "Filesystem", 10 << 30, "ReadWriteOnce", 1, None, "auto", 300)
    assert s.fio_image == default_image() and default_image().startswith("localhost/iofleet-fio:3.")


def test_an_unreadable_kubeconfig_is_one_line_naming_it(tmp_path):
    kubeconfig = tmp_path / "nope.yaml"
    path = _write(tmp_path, {"kubernetes": {"storage_class": "fast", "kubeconfig": str(kubeconfig)}})
    with pytest.raises(KubeError) as err:
        load_inventory(path)
    assert str(kubeconfig) in str(err.value) and "\n" not in str(err.value)


def test_an_unreachable_apiserver_is_one_line_naming_it(tmp_path):
    # A kubeconfig whose server is a closed port on loopback.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "x"}}]}))
    path = _write(tmp_path, {"kubernetes": {"storage_class": "fast", "kubeconfig": "kubeconfig"}})
    said = CliRunner().invoke(app, ["hosts", "check", path])
    assert said.exit_code == 2, said.output
    assert said.stderr.startswith("error: kubernetes: cannot reach the cluster at https://127.0.0.1:9 (list nodes)")
    assert said.stderr.count("\n") == 1 and "Traceback" not in said.output


def test_a_claim_target_is_checked_like_any_target():
    assert check_target("pvc:data-fio-0") == "pvc:data-fio-0"
    with pytest.raises(ValueError, match="pvc:NAME"):
        check_target("pvc:Data_0")


def test_the_docs_table_is_the_sections_reference():
    from pathlib import Path

    from iofleet.fleet.kubernetes.settings import REFERENCE
    doc = (Path(__file__).parents[2] / "docs" / "kubernetes.md").read_text()
    table = doc.split("<!-- kubernetes reference: iofleet.fleet.kubernetes.settings.REFERENCE -->")[1]
    rows = [line for line in table.split("<!-- end of kubernetes reference -->")[0].splitlines()
            if line.startswith("| `")]
    assert rows == [f"| `{key}` | {default} | {allowed} | {meaning} |" for key, default, allowed, meaning in REFERENCE]
    assert [key for key, *_ in REFERENCE] == list(KubernetesSection.model_fields)
