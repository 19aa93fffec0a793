"""`iofleet serve`: the browser front door. One FastAPI app: server-rendered
pages (Jinja2 + htmx), the REST API under /api/ (OpenAPI at /api/docs) that
the pages use too, and /metrics for Prometheus. The run itself goes through
the same study as `iofleet run` (iofleet.studies.run)."""

from importlib.resources import files
from pathlib import Path

import plotly
from fastapi import FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..errors import IofleetError, StoreDamagedError
from . import compare, fleet, metrics, plans, results, run
from .live import RunManager
from .render import Settings
from .security import CSRF_COOKIE, LOGIN_PAGE, TOKEN_COOKIE, BodyLimit, Guard, csrf_of, same

STATIC = Path(__file__).parent / "static"
MAX_PROBLEMS = 20  # a 422 lists at most this many of a request's problems
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
SWAGGER = files("fastapi_offline") / "static"
# Pages load nothing from elsewhere and run no inline script (plotly injects styles).
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")


def create_app(settings: Settings) -> FastAPI:
    app = FastAPI(title="iofleet", version=__version__, docs_url=None, redoc_url=None,
                  openapi_url="/api/openapi.json",
                  description="Plan, run, watch and compare fio storage benchmarks. Every POST needs the "
                              "`X-CSRF-Token` header (from `GET /api/session`) or `Authorization: Bearer TOKEN`.")
    app.state.settings = settings
    app.state.runs = RunManager(settings.data_dir)
    app.add_middleware(Guard, token=settings.token)

    @app.middleware("http")
    async def headers(request: Request, call_next):
        response = await call_next(request)
        if not request.url.path.startswith("/api/docs"):
            response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.exception_handler(IofleetError)
    async def iofleet_error(request: Request, exc: IofleetError):
        from .render import error_response
        if isinstance(exc, StoreDamagedError):
            return results.damaged_store(request, exc)
        return error_response(exc, getattr(exc, "status_code", 400))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        return JSONResponse(request_problems(exc), status_code=422)

    @app.get("/static/plotly.min.js", include_in_schema=False)  # before the mount, which would shadow it
    def plotly_js():
        return FileResponse(PLOTLY_JS, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return Response(status_code=204)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/api/docs", include_in_schema=False)
    def api_docs():
        return get_swagger_ui_html(openapi_url="/api/openapi.json", title="iofleet API",
                                   swagger_js_url="/api/docs/swagger-ui-bundle.js",
                                   swagger_css_url="/api/docs/swagger-ui.css", swagger_favicon_url="")

    @app.get("/api/docs/{name}", include_in_schema=False)
    def api_docs_asset(name: str):
        if name not in ("swagger-ui-bundle.js", "swagger-ui.css"):
            return JSONResponse({"error": f"no {name}"}, status_code=404)
        return Response((SWAGGER / name).read_bytes(),
                        media_type="text/javascript" if name.endswith(".js") else "text/css")

    @app.get("/api/session", tags=["session"])
    def session(request: Request):
        """The CSRF token to send as `X-CSRF-Token` with every POST (it is also set as a cookie)."""
        return {"csrf_token": csrf_of(request), "token_required": settings.token is not None}

    @app.get("/login", include_in_schema=False)
    def login_page():
        return HTMLResponse(LOGIN_PAGE)

    @app.post("/login", include_in_schema=False)
    def login(request: Request, token: str = Form(""), next: str = "/"):
        if not settings.token or not same(token, settings.token):
            return JSONResponse({"error": "wrong token"}, status_code=401)
        target = next if next.startswith("/") and not next.startswith("//") else "/"
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
        response.set_cookie(CSRF_COOKIE, csrf_of(request), samesite="strict")
        return response

    @app.get("/", include_in_schema=False)
    def home():
        return RedirectResponse("/run", status_code=303)

    for module in (plans, fleet, run, results, compare, metrics):
        app.include_router(module.router)
    app.add_middleware(BodyLimit)  # added last: the outermost, before anything reads the body
    return app


def request_problems(exc: RequestValidationError) -> dict:
    """A 422's body: each problem's field path and message, never the input
    (FastAPI's default echoes the whole request body back), bounded."""
    problems = []
    for err in exc.errors()[:MAX_PROBLEMS]:
        where = ".".join(str(part)[:64] for part in err.get("loc", ()))
        problems.append({"field": where, "message": str(err.get("msg", "invalid"))[:200]})
    lines = [f"{p['field']}: {p['message']}" for p in problems] or ["invalid request"]
    return {"error": lines[0], "problems": lines, "fields": problems}
