"""Who may use `iofleet serve` and what protects its state changes: the bind
rule, the token (Bearer header or /login cookie), CSRF on every POST, GET
never changing anything, and the pages' Content-Security-Policy. Against a
real server on loopback addresses only."""

import os
import socket
import subprocess
import sys

import httpx
import pytest

from tests.browser import Seen, browser_page, screenshot
from tests.webserver import free_port, start_server

TOKEN = "s3cret-token-0123456789abcdef"
PLAN = "name: {name}\ndefaults: {{size: 16m, runtime: 1s}}\nworkloads:\n  - name: w\n"


def serve(*args: str, data_dir) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "IOFLEET_TOKEN"}
    return subprocess.run([sys.executable, "-m", "iofleet", "serve", "--data-dir", str(data_dir), *args],
                          capture_output=True, text=True, timeout=30, env=env)


def plans(url: str, **headers) -> list[str]:
    return [p["name"] for p in httpx.get(url + "/api/plans", headers=headers).json()]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server without a token, on loopback (one for this module's tests: none saves or runs anything)."""
    s = start_server(tmp_path_factory.mktemp("open") / "data")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A server started with --token, on loopback."""
    s = start_server(tmp_path_factory.mktemp("guarded") / "data", token=TOKEN)
    yield s
    s.stop()


def test_bind_beyond_loopback_without_token_is_refused_before_anything(tmp_path):
    port = free_port()
    proc = serve("--bind", f"0.0.0.0:{port}", data_dir=tmp_path / "data")
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "needs --token" in lines[0] and "127.0.0.1:8080" in lines[0]
    assert "open http" not in proc.stdout  # it never got as far as serving
    assert not (tmp_path / "data").exists()
    with socket.socket() as s:  # nothing kept the port
        s.bind(("127.0.0.1", port))


def test_too_short_token_is_refused(tmp_path):
    proc = serve("--bind", f"127.0.0.1:{free_port()}", "--token", "short", data_dir=tmp_path / "data")
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "at least 16 characters" in proc.stderr


def test_token_required_on_api_pages_and_metrics(guarded):
    url = guarded.url
    for path in ("/api/runs/current", "/api/plans", "/metrics", "/run"):
        r = httpx.get(url + path)
        assert r.status_code == 401 and "Authorization: Bearer TOKEN" in r.json()["error"], (path, r.text)
        wrong = httpx.get(url + path, headers={"Authorization": "Bearer " + TOKEN[:-1] + "X"})
        assert wrong.status_code == 401, path
        assert httpx.get(url + path, cookies={"iofleet_token": "nope-nope-nope-nope"}).status_code == 401, path
        assert httpx.get(url + path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200, path
    # A browser asking for a page gets the login form (with the pages' CSP), not JSON.
    page = httpx.get(url + "/run", headers={"Accept": "text/html"})
    assert page.status_code == 401 and 'action="/login"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    # Prometheus sends `authorization: bearer …` (lower case).
    m = httpx.get(url + "/metrics", headers={"authorization": f"bearer {TOKEN}"})
    assert m.status_code == 200 and "iofleet_run_active 0.0" in m.text
    # A POST without the token changes nothing, CSRF header or not.
    r = httpx.post(url + "/api/plans", json={"yaml": PLAN.format(name="anon")}, headers={"X-CSRF-Token": "x"},
                   cookies={"iofleet_csrf": "x"})
    assert r.status_code == 401
    assert "anon" not in plans(url, Authorization=f"Bearer {TOKEN}")


def test_login_cookie_works_and_posts_still_need_csrf(guarded):
    with httpx.Client(base_url=guarded.url) as browser:
        wrong = browser.post("/login", data={"token": "not-the-token-at-all"})
        assert wrong.status_code == 401 and "iofleet_token" not in browser.cookies
        r = browser.post("/login?next=/results", data={"token": TOKEN})
        assert r.status_code == 303 and r.headers["location"] == "/results"
        cookie = next(c for c in r.headers.get_list("set-cookie") if c.startswith("iofleet_token="))
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()

        assert browser.get("/api/runs/current").status_code == 200  # the cookie alone lets it in
        assert browser.get("/run").status_code == 200
        # With the cookie a POST also needs the CSRF header (a cross-site form would carry the cookie).
        r = browser.post("/api/plans", json={"yaml": PLAN.format(name="nocsrf")})
        assert r.status_code == 403 and "X-CSRF-Token" in r.json()["error"]
        r = browser.post("/api/plans", json={"yaml": PLAN.format(name="withcsrf")},
                         headers={"X-CSRF-Token": browser.cookies["iofleet_csrf"]})
        assert r.status_code == 200, r.text
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    names = plans(guarded.url, **bearer)
    assert "withcsrf" in names and "nocsrf" not in names
    # Scripts with the Bearer token need no CSRF header (browsers never add that header themselves).
    r = httpx.post(guarded.url + "/api/plans", json={"yaml": PLAN.format(name="script")}, headers=bearer)
    assert r.status_code == 200, r.text
    # Logging in takes a POST: a GET (a link, an <img>) sets no cookie.
    r = httpx.get(guarded.url + "/login", params={"token": TOKEN})
    assert r.status_code != 303 and "iofleet_token" not in r.cookies
    # /login only redirects within this server.
    r = httpx.post(guarded.url + "/login?next=//evil.example/x", data={"token": TOKEN})
    assert r.status_code == 303 and r.headers["location"] == "/"


def test_post_without_matching_csrf_changes_nothing(server, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    url, run = server.url, {"yaml": PLAN.format(name="csrf"), "targets": [str(target)]}
    with httpx.Client(base_url=url) as browser:
        csrf = browser.get("/api/session").json()["csrf_token"]
        assert browser.cookies["iofleet_csrf"] == csrf
        attempts = [
            {},  # no header
            {"X-CSRF-Token": csrf + "x"},  # a header that is not the cookie's value
            {"X-CSRF-Token": ""},
            {"Authorization": "Bearer " + csrf},  # no token on this server: a Bearer header proves nothing
        ]
        for headers in attempts:
            for path, body in (("/api/plans", {"yaml": run["yaml"]}), ("/api/runs", run),
                               ("/api/runs/current/stop", None)):
                r = browser.post(path, json=body, headers=headers)
                assert r.status_code == 403, (path, headers, r.text)
                assert "X-CSRF-Token" in r.json()["error"]
    # A header without the cookie (another client's value) is refused too.
    r = httpx.post(url + "/api/plans", json={"yaml": run["yaml"]}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 403
    assert plans(url) == [] and not (server.data_dir / "plans").exists()
    assert httpx.get(url + "/api/runs/current").json() == {"state": "idle"}
    assert not list(target.iterdir())  # no fio file was laid out


def test_get_never_changes_state_and_pages_carry_csp(server):
    client = server.client()
    assert client.get("/api/runs/current/stop").status_code == 405
    client.get("/api/runs", params={"plan": "x"})  # whatever GET /api/runs is, it starts nothing
    assert client.get("/api/runs/current").json() == {"state": "idle"}
    page = client.get("/run")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    csp = page.headers["content-security-policy"]
    for rule in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"):
        assert rule in csp, csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert page.headers["x-content-type-options"] == "nosniff"


def test_without_token_a_foreign_host_header_is_refused(server):
    """DNS rebinding: a page whose name now points at 127.0.0.1 must not read the API (nor its CSRF token)."""
    port = server.url.rsplit(":", 1)[1]
    assert httpx.get(server.url + "/api/session", headers={"Host": f"localhost:{port}"}).status_code == 200
    assert httpx.get(server.url + "/api/session", headers={"Host": f"[::1]:{port}"}).status_code == 200
    r = httpx.get(server.url + "/api/session", headers={"Host": f"rebind.example:{port}"})
    assert r.status_code == 421 and "answers only to localhost" in r.json()["error"]
    assert "iofleet_csrf" not in r.cookies


def test_api_docs_render_from_the_server_alone(server):
    """/api/docs draws the OpenAPI schema with the Swagger UI the server itself serves (no CDN)."""
    seen = Seen()
    with browser_page(seen) as page:
        page.goto(server.url + "/api/docs")
        page.wait_for_selector(".opblock-summary-path", timeout=20_000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        screenshot(page, "web-api-docs.png")
    assert {"/api/runs", "/api/results/{run_id}", "/api/compare", "/api/validate"} <= {p.strip() for p in paths}
    assert seen.errors == []
    assert all(url.startswith(server.url) for url in seen.requests), seen.requests
