"""Who may use the web UI, and how state changes are protected.

- Without a token the server only listens on a loopback address; any other
  bind needs `--token` (like Jupyter's: whoever reaches the port could run
  fio, which writes files).
- With a token every request must carry it: `Authorization: Bearer T`
  (scripts), or the cookie a browser gets once from `/login`.
- A state-changing request (POST) made with cookies must also carry the
  CSRF token in the `X-CSRF-Token` header (double-submit: the page reads it
  from its <meta>, a cross-site page cannot). Bearer requests are exempt:
  browsers never add that header on their own.
- A request body is at most MAX_BODY_BYTES (a plan is a few KiB): refused
  by its Content-Length before a byte is read, or, sent in chunks, as soon
  as it passes the limit; either way the server never holds more.
"""

import hmac
import json
import secrets

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from .bind import is_loopback

TOKEN_COOKIE = "iofleet_token"
CSRF_COOKIE = "iofleet_csrf"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
MAX_BODY_BYTES = 2 * 1024**2  # the API's plan text is at most 200,000 characters
OPEN_PATHS = {"/login", "/static/iofleet.css"}  # reachable before logging in


def host_name(host_header: str) -> str:
    """'127.0.0.1:8080' → '127.0.0.1', '[::1]:8080' → '::1', 'localhost' → 'localhost'."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if ":" in host_header else host_header


def same(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())


def new_csrf() -> str:
    return secrets.token_urlsafe(24)


class Guard(BaseHTTPMiddleware):
    """Token check (when a token is set) and CSRF check on every POST."""

    def __init__(self, app, token: str | None):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next) -> Response:
        if not self.token and not is_loopback(host_name(request.headers.get("host", ""))):
            # Without a token only a loopback name may reach us: a page whose
            # DNS name is re-bound to 127.0.0.1 must not drive the server.
            return JSONResponse({"error": "without --token this server answers only to localhost, 127.0.0.1 "
                                          "or [::1]; give the server a --token to reach it by another name"},
                                status_code=421)
        bearer = request.headers.get("authorization", "")
        by_bearer = bearer.lower().startswith("bearer ") and same(bearer[7:].strip(), self.token)
        if self.token and not by_bearer and request.url.path not in OPEN_PATHS \
                and not same(request.cookies.get(TOKEN_COOKIE), self.token):
            return _refuse(request, 401, "this iofleet server needs its token: send `Authorization: Bearer TOKEN`, "
                                         "or log in at /login")
        if request.method not in SAFE_METHODS and not by_bearer and request.url.path != "/login":
            if not same(request.headers.get(CSRF_HEADER), request.cookies.get(CSRF_COOKIE)):
                return _refuse(request, 403, f"missing or wrong {CSRF_HEADER} header: send the value of the "
                                             f"{CSRF_COOKIE} cookie (GET /api/session gives both)")
        response = await call_next(request)
        if CSRF_COOKIE not in request.cookies:
            response.set_cookie(CSRF_COOKIE, request.state.csrf if hasattr(request.state, "csrf") else new_csrf(),
                                httponly=False, samesite="strict")
        return response


def csrf_of(request: Request) -> str:
    """This browser's CSRF token (made on its first visit, then kept in its cookie)."""
    token = request.cookies.get(CSRF_COOKIE)
    if not token:
        token = getattr(request.state, "csrf", None) or new_csrf()
        request.state.csrf = token
    return token


LOGIN_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>iofleet: log in</title>
<link rel="stylesheet" href="/static/iofleet.css"></head><body><main><h1>iofleet</h1>
<p>This server needs its token (the value given to <code>iofleet serve --token</code>).</p>
<form method="post" action="/login"><label>Token <input type="password" name="token" autofocus></label>
<button>Log in</button></form></main></body></html>"""


def _refuse(request: Request, status: int, message: str) -> Response:
    """401 or 403: a login page for a browser's page request, JSON otherwise."""
    if status == 401 and request.method == "GET" and "text/html" in request.headers.get("accept", "") \
            and not request.url.path.startswith("/api/"):
        return HTMLResponse(LOGIN_PAGE, status_code=401)
    return JSONResponse({"error": message}, status_code=status)


class BodyLimit:
    """ASGI middleware: a request body larger than `limit` gets 413 and a
    one-line JSON error; the application never sees more than the limit."""

    def __init__(self, app, limit: int = MAX_BODY_BYTES):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit():  # (h11 refuses a bad one)
            size = int(length) if len(length) <= 18 else None  # thousands of digits: not converted
            if size is None or size > self.limit:
                return await self._refuse(send, size)
        received, refused, started = 0, False, False

        async def limited_receive():
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # chunked: answer now; the app sees the client gone
                    refused = True
                    if not started:
                        await self._refuse(send, None)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            nonlocal started
            if refused:
                return  # the 413 was the answer
            started = True
            await send(message)

        await self.app(scope, limited_receive, guarded_send)

    async def _refuse(self, send, length: int | None) -> None:
        size = f"{length:,} bytes" if length is not None else f"more than {self.limit:,} bytes"
        body = json.dumps({"error": f"request body of {size} is too large (limit {self.limit:,} bytes); "
                                    f"a plan is a few KiB"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close"), (b"x-content-type-options", b"nosniff")]})
        await send({"type": "http.response.body", "body": body})
