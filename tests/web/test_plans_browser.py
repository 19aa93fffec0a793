"""The Plans page in Chromium against a real `iofleet serve`: the form and
the YAML follow each other, problems show at their field, saving stores the
plan, and what a user typed stays text."""

import re

from playwright.sync_api import expect

from ..browser import Seen, browser_page, screenshot

HOSTILE = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"
MULTI = """name: three-ways
description: Random read, random write, sequential read
# one workload per access pattern
keep_files: true
workloads:
  - name: rand-read
    bs: 4k
  - name: rand-write
    bs: 4k
    read_pct: 0
  - name: seq-read
    bs: 128k
    random_pct: 0
"""


def open_editor(page, url: str, dialogs: list):
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    expect(page.locator("#plan-yaml")).to_be_visible()


def yaml_view(page):
    return page.locator("#plan-yaml")


def test_the_form_writes_the_yaml_shows_problems_at_their_field_and_saves(server):
    seen, dialogs = Seen(), []
    with browser_page(seen) as page:
        open_editor(page, server.url + "/plans/new", dialogs)
        page.fill("#f-name", "web-study")
        page.fill("#f-targets", "/mnt/storage-under-test")
        page.fill("#f-bs", "4k, 64k")
        page.fill("#f-read_pct", "100, 70")
        page.fill("#f-size", "16m")
        page.fill("#f-runtime", "2s")
        page.select_option("#f-engine", "psync")
        page.press("#f-runtime", "Enter")  # sends the form to the server, does not leave the page
        for line in ("name: web-study", "targets: [/mnt/storage-under-test]", "runtime: 2s", "size: 16m",
                     "engine: psync", "bs: [4k, 64k]", "read_pct: [100, 70]"):
            expect(yaml_view(page)).to_have_value(re.compile(re.escape(line)))
        expect(page.locator("#test-summary")).to_contain_text("4 tests")
        expect(page.locator("#test-list tr")).to_have_count(5)
        expect(page.locator("#test-list")).to_contain_text("64k-r70-rand-j1-qd1")
        assert page.url == server.url + "/plans/new"
        screenshot(page, "web-plan-editor.png")

        # A wrong value: its problem shows at its field, and goes once mended.
        page.fill("#f-bs", "4k, 4q")
        page.fill("#f-runtime", "abc")
        expect(page.locator("#error-bs")).to_contain_text("'4q' is not a size")
        expect(page.locator("#error-runtime")).to_contain_text("'abc' is not a duration")
        expect(page.locator("#f-bs")).to_have_class(re.compile(r"\binvalid\b"))
        expect(page.locator("#yaml-problems li")).to_have_count(0)  # every problem is at its field
        expect(page.locator("#test-summary")).to_contain_text("2 problems")
        screenshot(page, "web-plan-error.png")
        page.fill("#f-bs", "4k, 64k")
        page.fill("#f-runtime", "2s")
        expect(page.locator("#error-bs")).to_be_empty()
        expect(page.locator("#error-runtime")).to_be_empty()
        expect(page.locator("#f-bs")).not_to_have_class(re.compile(r"\binvalid\b"))
        expect(page.locator("#test-summary")).to_contain_text("4 tests")

        page.click("#save")
        expect(page.locator("#saved")).to_contain_text("Saved plan web-study (4 tests)")
        expect(page).to_have_url(server.url + "/plans/web-study")
        saved = {p["name"]: p for p in server.client().get("/api/plans").json()}
        assert saved["web-study"]["tests"] == 4
        page.click("#saved a")  # on to the Run page, the plan chosen
        expect(page).to_have_url(server.url + "/run?plan=web-study")
        expect(page.locator("#plan")).to_have_value("web-study")
    assert seen.errors == [] and dialogs == []


def test_the_yaml_writes_the_form_and_keeps_what_the_form_cannot_show(server):
    client = server.client()
    client.post("/api/plans", json={"yaml": "name: web-study\ndefaults: {runtime: 2s}\nworkloads: [{name: main}]\n"})
    seen, dialogs = Seen(), []
    with browser_page(seen) as page:
        open_editor(page, server.url + "/plans/web-study", dialogs)
        expect(page.locator("#f-runtime")).to_have_value("2s")
        text = yaml_view(page).input_value()
        page.fill("#plan-yaml", text.replace("runtime: 2s", "runtime: 3s") + "keep_files: true\n")
        expect(page.locator("#f-runtime")).to_have_value("3s")
        expect(page.locator("#edit-in-yaml")).to_contain_text("keep_files")
        page.fill("#f-description", "after the firmware update")
        expect(yaml_view(page)).to_have_value(re.compile("description: after the firmware update"))
        assert "keep_files: true" in yaml_view(page).input_value()
        assert "runtime: 3s" in yaml_view(page).input_value()

        # A field the form does not show: its problem is listed above the YAML with its path.
        page.fill("#plan-yaml", yaml_view(page).input_value().replace("keep_files: true", "keep_files: maybe"))
        expect(page.locator("#yaml-problems li")).to_contain_text("keep_files: expected true or false")

        # A YAML syntax error names its line; the form keeps its last readable state.
        page.fill("#plan-yaml", "name: web-study\nworkloads: [\n")
        expect(page.locator("#yaml-problems")).to_contain_text("not valid YAML at line 3")
        expect(page.locator("#f-runtime")).to_have_value("3s")

        # Saving a new plan over a saved one asks first.
        page.goto(server.url + "/plans/new")
        page.fill("#f-name", "web-study")
        expect(yaml_view(page)).to_have_value(re.compile("name: web-study"))
        page.click("#save")
        expect(page.locator("#clash")).to_contain_text("already named web-study")
        assert "runtime: 2s" in client.get("/api/plans/web-study").json()["yaml"]
        page.click("#clash button")
        expect(page.locator("#saved")).to_contain_text("Saved plan web-study")
        assert "runtime: 1m" in client.get("/api/plans/web-study").json()["yaml"]
    assert seen.errors == [] and dialogs == []


def test_typed_markup_stays_text(server):
    seen, dialogs = Seen(), []
    with browser_page(seen) as page:
        open_editor(page, server.url + "/plans/new", dialogs)
        page.fill("#f-name", HOSTILE)
        page.fill("#f-description", HOSTILE)
        expect(page.locator("#error-name")).to_contain_text("<script>window.pwned = 1</script>")
        expect(yaml_view(page)).to_have_value(re.compile(re.escape("<script>window.pwned")))
        page.fill("#f-name", "hostile")
        expect(page.locator("#error-name")).to_be_empty()
        page.click("#save")
        expect(page.locator("#saved")).to_contain_text("Saved plan hostile")
        page.goto(server.url + "/plans")
        expect(page.locator("#plans")).to_contain_text(HOSTILE)
        page.goto(server.url + "/plans/hostile")
        expect(page.locator("#f-description")).to_have_value(HOSTILE)
        assert page.evaluate("window.pwned") is None
        assert page.locator("main script:not([src])").count() == 0 and page.locator("main img").count() == 0
    assert seen.errors == [] and dialogs == []


def test_plans_list_and_a_plan_of_several_workloads(server):
    client = server.client()
    assert client.post("/api/plans", json={"yaml": MULTI}).json()["tests"] == 3
    (server.data_dir / "plans" / "broken.yaml").write_text("name: broken\nworkloads: []\n")
    seen, dialogs = Seen(), []
    with browser_page(seen) as page:
        page.goto(server.url + "/plans")
        rows = page.locator("#plans tr")
        expect(rows).to_have_count(3)
        expect(rows.nth(1)).to_contain_text("broken")
        expect(rows.nth(1)).to_contain_text("workloads")  # its problem instead of a test count
        expect(rows.nth(2)).to_contain_text("3")
        screenshot(page, "web-plans-list.png")

        page.click("text=three-ways")
        expect(page.locator("#f-name")).to_have_value("three-ways")
        expect(page.locator("#edit-in-yaml")).to_contain_text("keep_files")
        expect(page.locator("#yaml-problems")).to_contain_text("comments")
        # Each workload is on the form; one becomes a matrix, one is added, one removed.
        expect(page.locator("#f-w2-workload")).to_have_value("seq-read")
        expect(page.locator("#f-w2-bs")).to_have_value("128k")
        # A value the model takes but the tests refuse (bs 1000: not whole sectors): at its field, form,
        # YAML and tests in step; from the YAML too, and gone once mended.
        page.fill("#f-w1-bs", "1000")
        expect(page.locator("#error-w1-bs")).to_contain_text("bs 1000 is not a multiple of 512 bytes")
        expect(yaml_view(page)).to_have_value(re.compile(r"name: rand-write\n    bs: 1000\n"))
        expect(page.locator("#test-summary")).to_contain_text("1 problem")
        expect(page.locator("#test-list tr")).to_have_count(0)
        page.fill("#f-w1-bs", "4k")
        expect(page.locator("#error-w1-bs")).to_be_empty()
        expect(page.locator("#test-summary")).to_contain_text("3 tests")
        page.fill("#plan-yaml", yaml_view(page).input_value().replace("bs: 128k", "bs: 1000"))
        expect(page.locator("#error-w2-bs")).to_contain_text("bs 1000 is not a multiple of 512 bytes")
        expect(page.locator("#f-w2-bs")).to_have_value("1000")
        page.fill("#plan-yaml", yaml_view(page).input_value().replace("bs: 1000", "bs: 128k"))
        expect(page.locator("#error-w2-bs")).to_be_empty()
        page.fill("#f-w1-bs", "4k, 8k")
        expect(yaml_view(page)).to_have_value(re.compile(r"name: rand-write\n(.*\n)*?    matrix:\n      bs: \[4k, 8k\]"))
        expect(page.locator("#test-summary")).to_contain_text("4 tests")
        page.click("#add-workload")
        expect(page.locator("#f-w3-workload")).to_have_value("workload4")
        expect(page.locator("#test-summary")).to_contain_text("5 tests")
        screenshot(page, "web-plan-workloads.png")
        page.click("#workload-0 .remove-workload")
        expect(page.locator("#f-workload")).to_have_value("rand-write")
        expect(page.locator("#f-w3-workload")).to_have_count(0)
        expect(page.locator("#test-summary")).to_contain_text("4 tests")
        assert "rand-read" not in yaml_view(page).input_value()
        page.fill("#f-label", "baseline")
        expect(yaml_view(page)).to_have_value(re.compile("label: baseline"))
        text = yaml_view(page).input_value()
        for kept in ("keep_files: true", "name: seq-read", "random_pct: 0", "read_pct: 0"):
            assert kept in text
        expect(page.locator("#test-summary")).to_contain_text("4 tests")
    assert seen.errors == [] and dialogs == []
    assert not [r for r in seen.requests if "plotly" in r]  # 4.8 MB only on pages that draw charts
    missing = client.get("/plans/no-such-plan")
    assert missing.status_code == 404 and "No saved plan named <code>no-such-plan</code>" in missing.text
