"""Plans: saved as YAML files in the store's plans/ folder (the file name is
the plan's validated name, so no request can name a path), validated with
the same model as `iofleet validate`. The Plans page lists them and edits
one in a form and its YAML side by side (plan_form keeps the two in step)."""

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from ..errors import PlanError
from ..plan.expand import expand
from ..plan.load import parse_plan_text, read_plan_text, with_targets, yaml_data
from ..plan.model import Plan, check_name
from ..plan.units import format_duration
from ..studies.preview import preview_plan
from . import plan_form
from .render import NotFound, Settings, fragment, render, settings

router = APIRouter()


class PlanText(BaseModel):
    yaml: str = Field(description="The plan, as YAML (see docs/plans.md).", max_length=200_000)
    targets: list[str] | None = Field(None, description="Directories replacing the plan's targets.")


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
    text = read_plan_text(path)
    return parse_plan_text(text, f"plan {name}"), text


def plan_from(s: Settings, text: str, targets: list[str] | None, source: str = "plan") -> Plan:
    plan = parse_plan_text(text, source)
    return with_targets(plan, targets, "targets") if targets else plan


def validation(s: Settings, text: str, targets: list[str] | None) -> dict:
    """{ok, tests, estimate_s} or {ok: false, error, problems, fields}."""
    try:
        plan = plan_from(s, text, targets)
        p = preview_plan(plan)  # as `iofleet validate` shows it (its tests: expand's checks too)
    except PlanError as exc:
        return {"ok": False, "error": exc.problems[0], "problems": exc.problems,
                "fields": [{"field": f, "message": m} for f, m in exc.fields]}
    return {"ok": True, "name": plan.name, "columns": p.columns, "tests": p.rows, "estimate_s": p.estimate_s}


def examples_dir() -> Path | None:
    """The project's examples/ (next to src/ in a checkout); a wheel has none."""
    import iofleet
    folder = Path(iofleet.__file__).resolve().parents[2] / "examples"
    return folder if folder.is_dir() else None


def examples() -> dict[str, tuple[str, str]]:
    """The example plans offered when the store has none: file stem → (its
    YAML, its description). Files that are not plans (model inputs) are left out."""
    folder, out = examples_dir(), {}
    for path in sorted(folder.glob("*.yaml")) if folder else ():
        try:
            text = read_plan_text(path)
            plan = parse_plan_text(text, path.name)
        except PlanError:
            continue
        out[path.stem] = (text, plan.description or f"{len(expand(plan))} tests")
    return out


def offered_examples(plans: list[dict]) -> list[dict]:
    """The examples to offer: only while no plan is saved."""
    return [] if plans else [{"name": n, "description": d} for n, (_, d) in examples().items()]


@router.get("/api/plans", tags=["plans"])
def list_plans(request: Request):
    """The saved plans, each with its test count (or its first problem)."""
    s = settings(request)
    out = []
    for path in sorted(s.plans_dir.glob("*.yaml")) if s.plans_dir.is_dir() else []:
        entry = {"name": path.stem}
        try:
            plan = parse_plan_text(read_plan_text(path), path.name)
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


def store_plan(s: Settings, text: str) -> Plan:
    """Validate the plan and save its text under its name (replacing a plan of that name)."""
    plan = plan_from(s, text, None)
    s.plans_dir.mkdir(parents=True, exist_ok=True)
    path = plan_file(s, plan.name)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)  # a reader never sees half a plan
    return plan


@router.post("/api/plans", tags=["plans"])
def save_plan(body: PlanText, request: Request):
    """Validate and save a plan under its name (replacing a plan of that name)."""
    plan = store_plan(settings(request), body.yaml)
    return {"name": plan.name, "tests": len(expand(plan)), "saved": True}


@router.post("/api/validate", tags=["plans"])
def validate_plan(body: PlanText, request: Request):
    """Check a plan without saving it: its tests, or every problem with the field it belongs to."""
    return validation(settings(request), body.yaml, body.targets)


# The Plans page. The editor's requests come from htmx and answer with
# out-of-band pieces: a form edit swaps in the YAML and the messages at the
# fields (never the inputs, so a field being typed in is not replaced); a
# YAML edit swaps in the form (never the YAML text, which stays the user's).

MAX_TEST_ROWS = 200  # the preview lists this many; a larger matrix says how many more


@router.get("/plans", include_in_schema=False)
def plans_page(request: Request):
    plans = list_plans(request)
    return render(request, "plans.html.j2", "Plans", plans=plans, examples=offered_examples(plans))


@router.get("/plans/new", include_in_schema=False)
def new_plan_page(request: Request, example: str = ""):
    """A new plan; `example`: starting from one of the project's examples (saved once Save is pressed)."""
    if example:
        found = examples().get(example)  # a known example's name, never a path
        if found is None:
            raise NotFound(f"no example plan {example!r}; see the Plans page")
        return _editor_page(request, found[0], original="")
    return _editor_page(request, plan_form.to_yaml(plan_form.NEW_PLAN), original="")


@router.get("/plans/{name}", include_in_schema=False)
def plan_page(name: str, request: Request):
    s = settings(request)
    try:
        path = plan_file(s, name)
        text = path.read_text() if path.is_file() else None
    except NotFound:
        text = None
    if text is None:  # the list, saying what was not found
        return render(request, "plans.html.j2", "Plans", status_code=404, plans=list_plans(request), missing=name)
    return _editor_page(request, text, original=name)  # even an invalid plan opens, to be mended


def _editor_page(request: Request, text: str, original: str) -> HTMLResponse:
    title = f"Plan {original}" if original else "New plan"
    return render(request, "plans_editor.html.j2", title, ed=editor_view(settings(request), text), original=original)


def editor_view(s: Settings, text: str) -> dict[str, Any]:
    """What the editor shows for this YAML: the form's values, each problem
    at its field or (path and message) above the YAML, the tests it makes."""
    try:
        data, readable = yaml_data(text, "plan"), True
    except PlanError:
        data, readable = None, False
    data = {} if data is None else data
    check = validation(s, text, None)
    workload_form = readable and plan_form.workloads_on_form(data)
    count = plan_form.workload_count(data) if workload_form else 0
    fields = {f.input: f for f in (*plan_form.PLAN_FIELDS, *plan_form.workload_fields(count)) if count or not f.param
              and f.name != "workload"}
    shown = list(fields)
    fixed = plan_form.disabled(data)
    problems = [] if check["ok"] else \
        check["fields"] or [{"field": "", "message": m} for m in check["problems"]]
    at_field, others = plan_form.place_problems(problems, set(shown) - fixed if readable else set())
    return {"text": text, "readable": readable, "form_values": plan_form.form_values(data), "fields": fields,
            "shown": shown, "disabled": fixed, "workload_form": workload_form, "workloads": count,
            "max_workloads": plan_form.MAX_WORKLOADS,
            "unshown": plan_form.unshown(data) if readable else [], "comments": plan_form.has_comments(text),
            "at_field": at_field, "others": others, "check": check,
            "estimate": format_duration(check["estimate_s"]) if check["ok"] else None, "max_rows": MAX_TEST_ROWS}


def _sync(s: Settings, text: str, from_form: bool, note: str | None = None, rebuilt: bool = False) -> HTMLResponse:
    """`rebuilt`: a workload was added or removed, so the form's inputs are swapped in too."""
    return HTMLResponse(fragment("plans_sync.html.j2", ed=editor_view(s, text), from_form=from_form, note=note,
                                 rebuilt=rebuilt))


@router.post("/plans/editor/form", include_in_schema=False)
async def form_to_yaml(request: Request):
    """The form changed: merge it into the YAML's data (keeping what the form
    does not show) and answer with the new YAML and every problem."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    text, action = form.pop("yaml", ""), form.pop("_action", "")
    try:
        data = yaml_data(text, "plan")
    except PlanError:  # its line shows above the YAML
        data = "unreadable"
    data = {} if data is None else data  # an emptied YAML: the form starts a plan
    if not isinstance(data, dict):
        return _sync(settings(request), text, True, "The form changes nothing until the YAML is mended.")
    merged = plan_form.merge(data, form)
    rebuilt = plan_form.act(merged, action)  # Add a workload / Remove
    if merged != data:  # unchanged: keep the user's text (and its comments) as it is
        text = plan_form.to_yaml(merged)
    return _sync(settings(request), text, True, rebuilt=rebuilt)


@router.post("/plans/editor/yaml", include_in_schema=False)
async def yaml_to_form(request: Request):
    """The YAML changed: the form shows it again, with every problem."""
    text = (await request.form()).get("yaml", "")
    return _sync(settings(request), text if isinstance(text, str) else "", False)


@router.post("/plans/editor/save", include_in_schema=False)
async def save_from_editor(request: Request):
    """Save the YAML (as POST /api/plans does). Saving a new plan, or a plan
    renamed, over another saved plan asks first."""
    s = settings(request)
    form = await request.form()
    text, original = str(form.get("yaml", "")), str(form.get("original", ""))
    try:
        name = plan_from(s, text, None).name
        if name != original and plan_file(s, name).is_file() and form.get("replace") != "1":
            return HTMLResponse(fragment("plans_saved.html.j2", clash=name))
        plan = store_plan(s, text)
    except PlanError as exc:
        problems = [f"{field}: {message}" if field else message for field, message in exc.fields] or exc.problems
        return HTMLResponse(fragment("plans_saved.html.j2", problems=problems))
    response = HTMLResponse(fragment("plans_saved.html.j2", plan=plan, tests=len(expand(plan)),
                                     renamed_from=original if original and original != plan.name else None))
    response.headers["HX-Replace-Url"] = f"/plans/{plan.name}"  # a reload opens the saved plan
    return response
