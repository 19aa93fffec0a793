"""Fault kinds register themselves (DESIGN.md): each is one module of
fleet/control/fault_kinds/, and a new kind is one new file. A toy kind
dropped in a package of kinds is read from scenario files, applied and
undone on a host (a fake host runner: the commands run in a shell here),
recorded there, and found and undone when a killed iofleet left it."""

import ast
import importlib
import inspect
import pkgutil
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

import iofleet
from iofleet.errors import PlanError
from iofleet.fleet.control import fault_kind, fault_kinds, fault_records, left_faults
from iofleet.fleet.control.fault_kind import FaultKind, kinds
from iofleet.fleet.control.faults import plan_faults
from iofleet.fleet.control.left_faults import undo_left_faults, what_is_left
from iofleet.fleet.inventory import Inventory
from iofleet.plan.scenario import FAULT_KINDS, parse_scenario

TOY = '''
"""toy-touch: a file made on the host, removed by its undo."""
from typing import Annotated

from pydantic import Field

from iofleet.fleet.control.fault_kind import FaultKind, script

TOUCH = 'touch -- "$1"'
REMOVE = 'rm -f -- "$1"'


class ToyTouch(FaultKind):
    name = "toy-touch"
    fields = {"path": Annotated[str, Field(pattern=r"^/[A-Za-z0-9/._-]+$")]}

    def check(self, event):
        if event.path is None:
            raise ValueError("toy-touch needs `path` (the file made)")

    def shown(self, event):
        return f" ({event.path})"

    def apply(self, fault):
        fault.undo_command = script(REMOVE, fault.event.path)
        return fault.run(script(TOUCH, fault.event.path), "applied")

    def left(self, r):
        return f"file {r.values.get('path', '?')} made"

    def left_undo(self, r):
        return script(REMOVE, r.values["path"]) if r.values.get("path", "").startswith("/") else None

    def undone_words(self, r):
        return f"file {r.values['path']} removed"
'''


@pytest.fixture
def toy_kind(tmp_path, monkeypatch):
    """A package holding only the toy kind's file, loaded as fault_kinds/ is."""
    name = f"toy_kinds_{secrets.token_hex(3)}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "toy_touch.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    fault_kinds.load(importlib.import_module(name))
    yield FAULT_KINDS["toy-touch"]
    del FAULT_KINDS["toy-touch"]
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


@pytest.fixture
def fake_hosts(tmp_path, monkeypatch):
    """Every command for a host runs in a shell here; records go under tmp_path."""
    def run_as_root(host, command, timeout_s):
        proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout_s)
        return proc.returncode == 0, proc.stdout, proc.stderr.strip()
    monkeypatch.setattr(fault_kind, "run_as_root", run_as_root)
    monkeypatch.setattr(left_faults, "run_as_root", run_as_root)
    monkeypatch.setattr(fault_records, "RECORDS_ROOT", str(tmp_path / "faults"))
    return Inventory.model_validate({"hosts": [{"name": "h1", "address": "10.0.0.1", "targets": ["/mnt/a"],
                                                "ssh": {}}]}).hosts


def _scenario(*events):
    return parse_scenario({"name": "s", "load": {"runtime": "20s"}, "events": list(events)}, "s.yaml")


def test_a_new_fault_kind_is_one_file(toy_kind, fake_hosts, tmp_path):
    made = tmp_path / "made"
    s = _scenario({"at": "2s", "fault": "toy-touch", "host": "h1", "path": str(made), "for": "1s"})
    assert s.events[0].describe() == f"at 2s: toy-touch on h1 ({made}) for 1s"
    # Its fields are checked as the built-in kinds' are, one line naming the file, event and field.
    with pytest.raises(PlanError) as exc:
        _scenario({"at": "2s", "fault": "toy-touch", "host": "h1"},
                  {"at": "2s", "fault": "toy-touch", "host": "h1", "path": "a b"},
                  {"at": "2s", "fault": "link-slow", "host": "h1", "mbit": 9, "path": "/x"})
    assert exc.value.problems[0] == "s.yaml: events[0]: toy-touch needs `path` (the file made)"
    assert exc.value.problems[1].startswith("s.yaml: events[1].path: String should match pattern")
    assert exc.value.problems[2] == "s.yaml: events[2]: link-slow does not take path"

    (fault,) = plan_faults(s, "s.yaml", fake_hosts, None, "tok")
    assert fault.record.endswith("/10.0.0.1-8765/tok-0")
    assert dict(fault.record_values)["path"] == str(made) and dict(fault.record_values)["kind"] == "toy-touch"
    fault.apply()
    assert made.exists() and Path(fault.record).exists()
    fault.undo()
    assert not made.exists() and not Path(fault.record).exists()

    # Left in place by an iofleet killed before its undo: told in the kind's words, undone from its record.
    fault = plan_faults(s, "s.yaml", fake_hosts, None, "tok")[0]
    fault.apply()
    lines = Path(fault.record).read_text().splitlines()
    text = "record=tok-0\n" + "".join(f".{line}\n" for line in lines if not line.startswith("controller="))
    (left,) = fault_records.parse_records(fake_hosts[0], text + ".controller=elsewhere\n")
    assert what_is_left(left) == f"file {made} made"
    out = undo_left_faults([left], yes=False)
    assert out.problems == [] and out.lines[0].startswith("h1: undid toy-touch since ")
    assert out.lines[0].endswith(f": file {made} removed") and not made.exists()
    assert not Path(fault.record).exists()


def test_a_kind_this_iofleet_does_not_have_is_told_from_its_record():
    """A record of another iofleet's kind: its values shown, its user undo (if any) the only undo."""
    r = fault_records.FaultRecord(None, "tok-0", {"kind": "disk-fire", "scenario": "s", "heat": "9"})
    assert what_is_left(r) == "disk-fire (heat=9)"
    r.values["undo"] = "extinguish"
    assert what_is_left(r) == "disk-fire done; its undo not run yet: extinguish"


def test_each_module_of_fault_kinds_is_one_kind():
    found = {}
    for module in pkgutil.iter_modules(fault_kinds.__path__):
        if module.name.startswith("_"):
            continue
        loaded = importlib.import_module(f"{fault_kinds.__name__}.{module.name}")
        own = [c for _, c in inspect.getmembers(loaded, inspect.isclass)
               if issubclass(c, FaultKind) and c.__module__ == loaded.__name__ and c.__dict__.get("name")]
        assert len(own) == 1, f"{module.name} declares {len(own)} fault kinds"
        found[own[0].name] = module.name
    assert {k.name: k.name.replace("-", "_") for k in kinds()} == found
    assert [k.name for k in kinds()] == ["host-down", "link-slow", "device-slow", "process-stop", "process-kill", "run"]


def test_nothing_outside_a_kinds_module_names_a_kind():
    """No `if fault == "host-down"` anywhere else: a kind's name is written in its own module only."""
    names = {k.name for k in kinds()} - {"run"}  # also a study's name, a store's source, a web page's
    root = Path(iofleet.__file__).parent
    said = []
    for path in root.rglob("*.py"):
        if path.parent.name == "fault_kinds":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                said.append(f"{path.relative_to(root)}:{node.lineno}: {node.value}")
    assert not said, said
