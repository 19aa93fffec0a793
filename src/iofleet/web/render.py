"""What every page and API route shares: the server's settings, a store per
request, the page templates (the report's own templates render inside the
web layout, so the result page shows exactly what the HTML report shows)."""

import contextlib
import datetime
import functools
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, select_autoescape

from .. import __version__
from ..errors import IofleetError, PlanError
from ..fleet.inventory import Inventory
from ..plan.params import PARAMS
from ..report.html import TEMPLATES as REPORT_TEMPLATES
from ..report.html import figure_json
from ..results.store import Store
from .security import csrf_of

TEMPLATES = Path(__file__).parent / "templates"
PAGES = [("plans", "Plans"), ("fleet", "Fleet"), ("run", "Run"), ("results", "Results"), ("compare", "Compare")]


@dataclass
class Settings:
    data_dir: Path
    token: str | None = None
    inventory: Inventory | None = None
    inventory_path: Path | None = None

    @property
    def plans_dir(self) -> Path:
        return self.data_dir / "plans"


def settings(request: Request) -> Settings:
    return request.app.state.settings


class NotFound(IofleetError):
    """No such run, plan or file: a 404."""

    status_code = 404


@contextlib.contextmanager
def open_store(request: Request):
    """The store for one request: `with open_store(request) as store:`. Not a
    FastAPI dependency, which may open and close it in different worker
    threads (sqlite3 connections belong to their thread)."""
    with Store.open(settings(request).data_dir) as store:
        yield store


@functools.cache
def _environment() -> Environment:
    env = Environment(loader=ChoiceLoader([FileSystemLoader(TEMPLATES), FileSystemLoader(REPORT_TEMPLATES)]),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["figure"] = figure_json
    # The parameter table's labels, and which columns hold words rather than numbers.
    env.globals["param_labels"] = {name: p.label for name, p in PARAMS.items()}
    env.globals["word_params"] = {name for name, p in PARAMS.items() if p.kind == "choice"}
    return env


def render(request: Request, template: str, title: str, status_code: int = 200, charts: bool = False,
           **context) -> HTMLResponse:
    """A page in the web layout (nav, CSRF token for htmx); `charts`: it
    draws charts, and loads plotly.js (cached a day) for them."""
    html = _environment().get_template(template).render(
        request=request, title=title, layout="layout.html.j2", pages=PAGES, version=__version__, charts=charts,
        csrf_token=csrf_of(request), path=request.url.path,
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), **context)
    return HTMLResponse(html, status_code=status_code)


def fragment(template: str, **context) -> str:
    """Part of a page (htmx swaps it in)."""
    return _environment().get_template(template).render(**context)


def error_response(exc: IofleetError, status_code: int = 400) -> JSONResponse:
    """An iofleet error as JSON: `error` is the one-line message, `problems`
    every line, `fields` the (field, message) pairs of a plan's problems."""
    lines = str(exc).splitlines() or ["error"]
    body = {"error": lines[0], "problems": lines}
    if isinstance(exc, PlanError) and exc.fields:
        body["fields"] = [{"field": f, "message": m} for f, m in exc.fields]
    return JSONResponse(body, status_code=status_code)
