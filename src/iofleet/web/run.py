"""The Run page and API: start a plan, follow it live (server-sent events),
stop it. The run lives in the server (live.RunManager), not in the page:
closing the browser does not stop it, and a page opened later reattaches."""

import asyncio
import json

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field

from ..errors import IofleetError
from ..plan.model import check_name
from ..studies.preflight import Check, preflight
from .live import RunBusy, RunManager
from .plans import list_plans, offered_examples, plan_from, read_plan
from .render import render, settings

router = APIRouter()
POLL_S = 0.5


class StartRun(BaseModel):
    plan: str | None = Field(None, description="A saved plan's name (GET /api/plans).")
    yaml: str | None = Field(None, description="Or the plan itself, as YAML.", max_length=200_000)
    targets: list[str] | None = Field(None, description="Directories replacing the plan's targets.")
    label: str | None = Field(None, description="Label stored with the run (for comparisons).")
    fleet: bool = Field(False, description="Run on the server's inventory (iofleet serve --hosts) at once.")


def runs(request: Request) -> RunManager:
    return request.app.state.runs


@router.post("/api/runs", status_code=202, tags=["runs"])
def start_run(body: StartRun, request: Request):
    """Start a run; 409 while another run is going on this store. Returns its status (with run_id)."""
    plan, text, hosts = _plan_of(body, settings(request))
    try:
        publisher = runs(request).start(plan, text, hosts, body.label)
    except RunBusy as exc:
        return JSONResponse({"error": str(exc)}, status_code=409)
    status = publisher.snapshot()
    if status["run_id"] is None and status["error"]:
        raise IofleetError(status["error"])
    return status


@router.post("/api/runs/validate", tags=["runs"])
def validate_run(body: StartRun, request: Request):
    """Validate before Start, with the same body: the checks the run makes before its first test
    (targets exist, are free and have room for the data, device safety, fio), one line each."""
    s = settings(request)
    try:
        plan, _, hosts = _plan_of(body, s)
    except IofleetError as exc:
        return {"ok": False, "checks": [{"name": "plan", "ok": False, "detail": str(exc).splitlines()[0]}]}
    manager = runs(request)
    busy = manager.held_elsewhere() or ("a run started here is still going" if manager.running else None)
    checks = [Check("store", busy is None, busy or f"no run going on {s.data_dir}")]
    checks += preflight(plan, hosts, str(s.data_dir)) if busy is None else []  # its targets are the run's now
    return {"ok": all(c.ok for c in checks), "checks": [c.to_dict() for c in checks]}


def _plan_of(body: StartRun, s) -> tuple:
    """The plan to run (with its text) and the hosts, from a Start or Validate body."""
    if (body.plan is None) == (body.yaml is None):
        raise IofleetError("give either `plan` (a saved plan's name) or `yaml` (the plan's text)")
    if body.plan is not None:
        plan, text = read_plan(s, body.plan)
        plan = plan_from(s, text, body.targets or None, f"plan {body.plan}")
    else:
        text = body.yaml
        plan = plan_from(s, text, body.targets or None)
    if body.label is not None:
        try:
            check_name(body.label)
        except ValueError as exc:
            raise IofleetError(f"label {body.label!r}: {exc}") from None
    hosts = None
    if body.fleet:
        if s.inventory is None:
            raise IofleetError("this server has no inventory: start it with `iofleet serve --hosts INVENTORY`")
        hosts = s.inventory.select(plan.hosts)
    return plan, text, hosts


@router.get("/api/runs/current", tags=["runs"])
def current_run(request: Request):
    """The run in progress (or the last one this server ran): state, test i of N, ETA, live figures."""
    return runs(request).status() or {"state": "idle"}


@router.post("/api/runs/current/stop", tags=["runs"])
def stop_run(request: Request):
    """Stop the run: fio stops on every host, finished tests are kept, the run is stored as interrupted."""
    if not runs(request).stop():
        return JSONResponse({"error": "no run is going"}, status_code=409)
    return {"stopping": True}


@router.get("/api/runs/current/events", response_class=EventSourceResponse, tags=["runs"])
async def run_events(request: Request, after: int = 0):
    """Server-sent events of the run: run, preparing, test, phase, live, result, warning, stopping, ended.
    A client that reconnects (Last-Event-ID) gets what it missed."""
    manager = runs(request)
    header = request.headers.get("last-event-id", "")
    last = int(header) if header.isdigit() else after
    yield ServerSentEvent(event="status", data=manager.status() or {"state": "idle"})
    while True:
        for event in manager.events_after(last):
            last = event["id"]
            yield ServerSentEvent(event=event["type"], data=event["data"], id=str(last))
        # The thread emits "ended" before it stops running, so nothing is lost here.
        if (not manager.going and not manager.events_after(last)) or await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)


@router.get("/run", include_in_schema=False)
def run_page(request: Request, plan: str = ""):
    s = settings(request)
    manager, plans = runs(request), list_plans(request)
    return render(request, "run.html.j2", "Run", charts=True, plans=plans, chosen=plan, fleet=s.inventory is not None,
                  status_json=json.dumps(manager.status()), busy=manager.held_elsewhere(),
                  examples=offered_examples(plans))
