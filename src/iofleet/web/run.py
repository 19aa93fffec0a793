"""The Run page and API: start a plan or a study (each of studies/kinds/
that has a title on the page), follow it live (server-sent events), stop it.
The study lives in the server (live.RunManager), not in the page: closing
the browser does not stop it, and a page opened later reattaches."""

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, Field

from ..errors import IofleetError
from ..plan.load import check_targets
from ..plan.model import check_name
from ..plan.units import whole_number
from ..studies.kinds import STUDIES
from ..studies.launch import Launch, plan_launch
from ..studies.preflight import Check, preflight
from ..studies.study import Where
from .live import RunBusy, RunManager
from .plans import list_plans, offered_examples, plan_from, read_plan
from .render import render, settings

router = APIRouter()
POLL_S = 0.5


# A plan, or a study the page offers.
ON_THE_PAGE = ("plan", *(name for name, s in STUDIES.items() if s.title))


class StartRun(BaseModel):
    study: Literal[ON_THE_PAGE] = Field("plan", description="What to run: a plan, or a study of its own.")
    plan: str | None = Field(None, description="A saved plan's name (GET /api/plans); study plan.")
    yaml: str | None = Field(None, description="Or the plan itself, as YAML; for study scenario, the scenario.",
                             max_length=200_000)
    targets: list[str] | None = Field(None, description="Directories replacing the plan's targets (a study's "
                                                        "targets, unless it runs on the fleet).")
    label: str | None = Field(None, description="Label stored with the run (for comparisons).")
    fleet: bool = Field(False, description="Run on the server's inventory (iofleet serve --hosts) at once.")
    settings: dict[str, Any] | None = Field(None, description="A study's settings by name, as the command's "
                                            "options (e.g. {\"bs\": \"4k\", \"slo\": \"p99<=2ms\"} for saturate); "
                                            "left out: the study's defaults.")


def runs(request: Request) -> RunManager:
    return request.app.state.runs


@router.post("/api/runs", status_code=202, tags=["runs"])
def start_run(body: StartRun, request: Request):
    """Start a plan or a study; 409 while another is going on this store. Returns its status (with run_id,
    its first run's)."""
    launch = _launch_of(body, settings(request))
    try:
        status = runs(request).start(launch)
    except RunBusy as exc:
        return JSONResponse({"error": str(exc)}, status_code=409)
    if status["run_id"] is None and status["error"]:
        raise IofleetError(status["error"])
    return status


@router.post("/api/runs/validate", tags=["runs"])
def validate_run(body: StartRun, request: Request):
    """Validate before Start, with the same body: the checks the run makes before its first test
    (settings, targets exist, are free and have room for the data, device safety, fio), one line each."""
    s = settings(request)
    manager = runs(request)
    try:
        launch = _launch_of(body, s)
        busy = manager.held_elsewhere() or ("a run started here is still going" if manager.running else None)
        checks = [Check("store", busy is None, busy or f"no run going on {s.data_dir}")]
        if launch.study != "plan":
            checks.append(Check("study", True, f"{launch.study}: {launch.about}"))
        # Its targets are the run's now while one goes.
        checks += preflight(launch.preview, launch.hosts, str(s.data_dir)) if busy is None else []
    except IofleetError as exc:  # the plan or the settings, as the run would refuse them
        what = "plan" if body.study == "plan" else "settings"
        return {"ok": False, "checks": [{"name": what, "ok": False, "detail": str(exc).splitlines()[0]}]}
    return {"ok": all(c.ok for c in checks), "checks": [c.to_dict() for c in checks]}


def _launch_of(body: StartRun, s) -> Launch:
    """The plan or study to run, from a Start or Validate body."""
    if body.label is not None:
        try:
            check_name(body.label)
        except ValueError as exc:
            raise IofleetError(f"label {body.label!r}: {exc}") from None
    if body.study == "plan":
        plan, text, hosts = _plan_of(body, s)
        return plan_launch(plan, text, hosts, body.label)
    if body.plan is not None:
        raise IofleetError(f"a {body.study} takes no plan: its settings say what it runs")
    hosts = _fleet(s, None) if body.fleet else None
    if hosts and body.targets:
        raise IofleetError("give targets or the fleet, not both: each host's targets are the inventory's")
    targets = [Path(t) for t in check_targets(body.targets, "targets")] if body.targets else []
    if not hosts and not targets:
        raise IofleetError(f"a {body.study} needs a place to test: give targets (one directory or device "
                           f"a line){', or run on the fleet' if s.inventory is not None else ''}")
    chosen = STUDIES[body.study]
    if chosen.text is not None and not body.yaml:
        raise IofleetError(chosen.text.missing)
    if chosen.text is None and body.yaml is not None:
        raise IofleetError(f"a {body.study} takes no YAML: give its `settings`")
    return chosen.launch(Where(targets or None, hosts, body.label), body.settings, body.yaml, s.data_dir)


def _fleet(s, selection: dict | None):
    """The inventory's hosts the selection names (all: None)."""
    if s.inventory is None:
        raise IofleetError("this server has no inventory: start it with `iofleet serve --hosts INVENTORY`")
    return s.inventory.select(selection)


def _plan_of(body: StartRun, s) -> tuple:
    """The plan to run (with its text) and the hosts, from a Start or Validate body."""
    if (body.plan is None) == (body.yaml is None):
        raise IofleetError("give either `plan` (a saved plan's name) or `yaml` (the plan's text)")
    if body.settings:
        raise IofleetError("a plan takes no `settings`: its YAML says what it runs")
    if body.plan is not None:
        plan, text = read_plan(s, body.plan)
        plan = plan_from(s, text, body.targets or None, f"plan {body.plan}")
    else:
        text = body.yaml
        plan = plan_from(s, text, body.targets or None)
    return plan, text, _fleet(s, plan.hosts) if body.fleet else None


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
    last = whole_number(header)
    last = after if last is None else last
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
def run_page(request: Request, plan: str = "", study: str = "plan"):
    s = settings(request)
    manager, plans = runs(request), list_plans(request)
    offered = {k: x for k, x in STUDIES.items() if x.title}
    return render(request, "run.html.j2", "Run", charts=True, plans=plans, chosen=plan, fleet=s.inventory is not None,
                  status_json=json.dumps(manager.status()), busy=manager.held_elsewhere(),
                  examples=offered_examples(plans), study=study, studies=[(k, x.title) for k, x in offered.items()],
                  texts={k: x.text for k, x in offered.items() if x.text},
                  settings_of={k: x.fields() for k, x in offered.items() if x.text is None})
