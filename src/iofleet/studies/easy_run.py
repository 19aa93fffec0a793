"""The Easy Run study: look at the hosts, build the plan (plan.easy), run it."""

import shutil
import threading
from pathlib import Path

import yaml

from ..errors import IofleetError
from ..fleet.devices import local_device
from ..fleet.inventory import Host
from ..fleet.local import host_facts, target_rotational
from ..fleet.metrics import exporter_facts, fetch_metrics, free_bytes
from ..plan import parse_plan
from ..plan.easy import Durations, HostFacts, easy_plan
from ..plan.model import is_device_path
from ..results.store import Store
from .run import RunObserver, RunOutcome, run_plan


def local_facts(targets: list[Path]) -> HostFacts:
    facts = host_facts()
    free, rotational = [], []
    for t in targets:
        if is_device_path(str(t)):
            free.append(local_device(str(t)).bytes)  # a device's space is all its own (read-only look)
        elif not t.is_dir():
            raise IofleetError(f"target {t} is not a directory; create it or give another --target")
        else:
            free.append(shutil.disk_usage(t).free)
        rotational.append(target_rotational(t))
    spinning = True if any(rotational) else False if rotational and all(r is False for r in rotational) else None
    return HostFacts("local", facts["cpus"], facts["memory_bytes"], min(free), spinning)


def remote_facts(host: Host) -> HostFacts:
    """From the host's node_exporter, where it has one (CPU count, memory,
    free space under its targets); the device type is not visible there."""
    if not host.metrics:
        return HostFacts(host.name)
    try:
        text = fetch_metrics(host.metrics)
    except OSError:
        return HostFacts(host.name)
    facts = exporter_facts(text)
    free = [free_bytes(text, t) for t in host.targets if not is_device_path(t)]  # a device's size is not there
    known = [f for f in free if f is not None]
    return HostFacts(host.name, facts["cpus"], facts["memory_bytes"], min(known) if known else None)


def easy_run(
    store: Store,
    *,
    targets: list[Path] | None = None,
    hosts: list[Host] | None = None,
    durations: Durations,
    working_set: int | None = None,
    label: str | None = None,
    observer: RunObserver | None = None,
    stop: threading.Event | None = None,
    on_plan=None,
    destroy_data: list[str] | None = None,
) -> RunOutcome:
    """Choose the plan from what the hosts are, then run it like any plan.
    `on_plan(plan_text, reasons)` is called before the first test;
    `destroy_data` names devices whose data may be destroyed."""
    if hosts:
        facts = [remote_facts(h) for h in hosts]
        target_names = []
    else:
        if not targets:
            raise IofleetError("easy-run needs a place to test: --target DIR (or --hosts INVENTORY)")
        paths = [Path(t).resolve() for t in targets]
        facts = [local_facts(paths)]
        target_names = [str(p) for p in paths]
    data, reasons = easy_plan(facts, target_names, durations, working_set)
    if destroy_data:
        data["destroy_data"] = [str(d) for d in destroy_data]
    plan_text = "# chosen by iofleet easy-run:\n" + "".join(f"#   {r}\n" for r in reasons) + yaml.safe_dump(
        data, sort_keys=False)
    plan = parse_plan(data, "easy-run")
    if on_plan:
        on_plan(plan_text, reasons)
    return run_plan(plan, plan_text, store, hosts=hosts, label=label or "easy-run", observer=observer, stop=stop)
