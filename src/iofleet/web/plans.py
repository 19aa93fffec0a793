"""Plans: saved as YAML files in the store's plans/ folder (the file name is
the plan's validated name, so no request can name a path), validated with
the same model as `iofleet validate`."""

from pathlib import Path

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from ..errors import IofleetError, PlanError
from ..plan.expand import expand
from ..plan.load import parse_plan_text, with_targets
from ..plan.model import Plan, check_name
from ..plan.units import format_size
from ..studies.run import estimate_seconds
from .render import Settings, settings

router = APIRouter()


class PlanText(BaseModel):
    yaml: str = Field(description="The plan, as YAML (see docs/plans.md).", max_length=200_000)
    targets: list[str] | None = Field(None, description="Directories replacing the plan's targets.")


class NotFound(IofleetError):
    status_code = 404


def plan_file(s: Settings, name: str) -> Path:
    """The saved plan's file; the name passes the plan-name check first."""
    try:
        check_name(name)
    except ValueError as exc:
        raise NotFound(f"plan {name!r}: not a plan name ({exc})") from None
    return s.plans_dir / f"{name}.yaml"


def read_plan(s: Settings, name: str) -> tuple[Plan, str]:
    path = plan_file(s, name)
    if not path.is_file():
        raise NotFound(f"plan {name!r}: no such saved plan in {s.plans_dir}; see GET /api/plans")
    text = path.read_text()
    return parse_plan_text(text, f"plan {name}"), text


def plan_from(s: Settings, text: str, targets: list[str] | None, source: str = "plan") -> Plan:
    plan = parse_plan_text(text, source)
    return with_targets(plan, targets, "targets") if targets else plan


def test_rows(plan: Plan) -> list[dict]:
    return [{"id": t.id, "bs": format_size(t.bs), "read_pct": t.read_pct, "random_pct": t.random_pct,
             "jobs": t.jobs, "iodepth": t.iodepth, "size": format_size(t.size), "ramp_s": t.ramp,
             "runtime_s": t.runtime, "until": t.until, "engine": t.engine, "repeat": t.repeat}
            for t in expand(plan)]


def validation(s: Settings, text: str, targets: list[str] | None) -> dict:
    """{ok, tests, estimate_s} or {ok: false, error, problems, fields}."""
    try:
        plan = plan_from(s, text, targets)
    except PlanError as exc:
        return {"ok": False, "error": exc.problems[0], "problems": exc.problems,
                "fields": [{"field": f, "message": m} for f, m in exc.fields]}
    specs = expand(plan)
    return {"ok": True, "name": plan.name, "tests": test_rows(plan), "estimate_s": estimate_seconds(specs)}


@router.get("/api/plans", tags=["plans"])
def list_plans(request: Request):
    """The saved plans, each with its test count (or its first problem)."""
    s = settings(request)
    out = []
    for path in sorted(s.plans_dir.glob("*.yaml")) if s.plans_dir.is_dir() else []:
        entry = {"name": path.stem}
        try:
            plan = parse_plan_text(path.read_text(), path.name)
            entry |= {"description": plan.description, "tests": len(expand(plan)), "label": plan.label}
        except PlanError as exc:
            entry["problem"] = exc.problems[0]
        out.append(entry)
    return out


@router.get("/api/plans/{name}", tags=["plans"])
def get_plan(name: str, request: Request):
    """A saved plan's YAML text."""
    plan, text = read_plan(settings(request), name)
    return {"name": plan.name, "yaml": text}


@router.post("/api/plans", tags=["plans"])
def save_plan(body: PlanText, request: Request):
    """Validate and save a plan under its name (replacing a plan of that name)."""
    s = settings(request)
    plan = plan_from(s, body.yaml, None)
    s.plans_dir.mkdir(parents=True, exist_ok=True)
    path = plan_file(s, plan.name)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(body.yaml)
    tmp.replace(path)
    return {"name": plan.name, "tests": len(expand(plan)), "saved": True}


@router.post("/api/validate", tags=["plans"])
def validate_plan(body: PlanText, request: Request):
    """Check a plan without saving it: its tests, or every problem with the field it belongs to."""
    return validation(settings(request), body.yaml, body.targets)
