"""The network check as a run of its own (`iofleet hosts network`, `hosts
check --network`, the web's Fleet page): measured over SSH, stored with its
links in the run's methodology, so `results`, `compare` and the web UI see
it; and the last check of a fleet's hosts, which a fleet run records for
its diagnostics."""

from pathlib import Path

from ..fleet.inventory import Host
from ..fleet.network_check import NetworkCheck, check_network
from ..results.links import links_of
from ..results.methodology import NetworkRecord, RunMethodology
from ..results.store import RunFilter, Store

NETWORK_CHECK = "network check"  # the plan name of a network check's run


def record_of(check: NetworkCheck, pairs: str) -> NetworkRecord:
    return NetworkRecord(pairs=pairs, hosts=list(check.hosts), links=links_of(check), errors=list(check.errors),
                         problems=list(check.problems))


def check_and_store(store: Store, hosts: list[Host], pairs: str, label: str | None = None,
                    inventory: Path | str | None = None) -> tuple[int, NetworkCheck]:
    """Measure the links between `hosts` and store the check as a run:
    complete, or partial when some host could not measure (its errors)."""
    run_id = store.create_run(
        plan_name=NETWORK_CHECK, plan_text=None, label=label, source="run", fio_version=None,
        host_facts={"inventory": None if inventory is None else str(inventory),
                    "hosts": [{"name": h.name, "address": h.address} for h in hosts]},
        tests_planned=0)
    try:
        check = check_network(hosts, pairs)
        store.set_run_methodology(run_id, RunMethodology(network=record_of(check, pairs)))
    except BaseException as exc:
        store.finish_run(run_id, "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed", note=str(exc))
        raise
    store.finish_run(run_id, "partial" if check.errors else "complete")
    return run_id, check


def last_network_check(store: Store, hosts: list[dict]) -> NetworkRecord | None:
    """The newest stored check that measured at least two of `hosts` (each
    {name, address}, as a fleet run describes them), with its run and time."""
    ours = {(h.get("name"), h.get("address")) for h in hosts}
    if len(ours) < 2:
        return None
    for r in store.list_runs(RunFilter(plan=NETWORK_CHECK)):  # newest first
        net = r.methodology.network if r.methodology is not None else None
        if r.plan_name != NETWORK_CHECK or r.status not in ("complete", "partial") or not net:
            continue
        theirs = {(h.get("name"), h.get("address")) for h in (r.host_facts or {}).get("hosts") or []}
        if len(ours & theirs) >= 2:
            return NetworkRecord(pairs=net.pairs, hosts=net.hosts, links=net.links, errors=net.errors,
                                 problems=net.problems, run=r.id, at=r.created_at)
    return None
