"""The Fleet page and API: the server's inventory (`iofleet serve --hosts`)
and the same checks as `iofleet hosts check` and `iofleet hosts network`."""

from dataclasses import asdict

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from ..report.network import network_view
from ..studies.hosts import check_fleet as check_fleet_hosts
from ..studies.network import check_and_store
from .render import fragment, open_store, render, settings

router = APIRouter()


def inventory_rows(request: Request) -> list[dict]:
    s = settings(request)
    if s.inventory is None:
        return []
    return [{"name": h.name, "address": h.shown_address, "targets": h.targets, "labels": h.labels,
             "metrics": h.metrics} for h in s.inventory.hosts]


@router.get("/api/fleet", tags=["fleet"])
def get_fleet(request: Request):
    """The inventory this server runs fleet plans on (empty without --hosts)."""
    s = settings(request)
    return {"inventory": str(s.inventory_path) if s.inventory_path else None, "hosts": inventory_rows(request)}


@router.post("/api/fleet/check", tags=["fleet"])
def check_fleet(request: Request):
    """Check every host: fio server reachable, same fio version, targets writable, free space, metrics."""
    s = settings(request)
    if s.inventory is None:
        return {"controller_fio": None, "hosts": [], "problems": ["this server has no inventory: "
                                                                   "start it with `iofleet serve --hosts INVENTORY`"]}
    fleet = check_fleet_hosts(s.inventory.hosts, s.inventory_path)  # as `iofleet hosts check` shows it
    hosts = [{"name": c.host.name, "address": c.host.address, "reachable": c.reachable, "fio_version": c.fio_version,
              "metrics": c.metrics, "targets": [asdict(t) for t in c.targets], "ok": c.ok} for c in fleet.checks]
    return {"controller_fio": fleet.controller_fio, "hosts": hosts, "problems": fleet.problems, "notes": fleet.notes}


@router.post("/api/fleet/network", tags=["fleet"])
def check_network(request: Request, pairs: str = "ring"):
    """The links between the hosts, as `iofleet hosts network` measures them
    (over SSH): round trip and loss of every pair, the expected MTU,
    iperf3 bandwidth in a ring or every pair (`pairs=all`), and the problems;
    stored as a run (`run`: its id)."""
    s = settings(request)
    if s.inventory is None or len(s.inventory.hosts) < 2:
        return {"hosts": [], "rtt_ms": {}, "bandwidth": [], "errors": [], "run": None,
                "problems": ["the network check needs a server started with `iofleet serve --hosts INVENTORY` "
                             "of at least two hosts"]}
    if pairs not in ("ring", "all"):
        raise HTTPException(400, f"pairs={pairs!r}: give ring or all")
    with open_store(request) as store:
        run_id, check = check_and_store(store, s.inventory.hosts, pairs, inventory=s.inventory_path)
    return network_view(check) | {"run": run_id}


@router.post("/fleet/network", include_in_schema=False, response_class=HTMLResponse)
def network_fragment(request: Request):
    return fragment("fleet_network.html.j2", net=check_network(request))


@router.post("/fleet/check", include_in_schema=False, response_class=HTMLResponse)
def check_fragment(request: Request):
    return fragment("fleet_check.html.j2", check=check_fleet(request))


@router.get("/fleet", include_in_schema=False)
def fleet_page(request: Request):
    return render(request, "fleet.html.j2", "Fleet", fleet=get_fleet(request))
