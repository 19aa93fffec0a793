"""Open a page in the distribution's Chromium (headless, through Playwright)
and report what a reader would see: console errors, network requests, charts."""

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"  # screenshots, kept after the run (make clean removes them)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed; `make test` installs it (Debian package chromium)")
    return path


@dataclass
class Seen:
    errors: list[str] = field(default_factory=list)  # console errors and uncaught exceptions
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    charts: int = 0  # plotly charts drawn
    empty_charts: list[str] = field(default_factory=list)  # ids of charts with no trace drawn
    text: str = ""
    values: dict = field(default_factory=dict)  # results of `evaluate` expressions


@contextlib.contextmanager
def browser_page(seen: Seen | None = None):
    """A Playwright page in the distribution's Chromium (headless); console
    errors, uncaught exceptions and requests go to `seen`."""
    from playwright.sync_api import sync_playwright

    seen = seen if seen is not None else Seen()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium())
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
            page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen.errors.append(str(e)))
            page.on("request", lambda r: seen.requests.append(r.url))
            yield page
        finally:
            browser.close()


def screenshot(page, name: str) -> Path:
    """A full-page screenshot in test-artifacts/NAME."""
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


def open_page(path: Path, screenshot: str, evaluate: dict[str, str] | None = None) -> Seen:
    """Load a local HTML file, wait for its charts, save a full-page screenshot
    to test-artifacts/SCREENSHOT, and return what was seen."""
    seen = Seen()
    with browser_page(seen) as page:
        page.goto(path.resolve().as_uri(), wait_until="load")
        # Plotly marks each chart it has drawn with the class js-plotly-plot.
        page.wait_for_function("document.querySelectorAll('.chart').length === "
                               "document.querySelectorAll('.chart.js-plotly-plot').length", timeout=30_000)
        seen.charts = page.locator(".js-plotly-plot").count()
        seen.empty_charts = page.evaluate(
            "[...document.querySelectorAll('.js-plotly-plot')]"
            ".filter(c => c.querySelectorAll('.trace, .bars .point').length === 0).map(c => c.id)")
        seen.text = page.inner_text("body")
        seen.values = {k: page.evaluate(expr) for k, expr in (evaluate or {}).items()}
        page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
    return seen
