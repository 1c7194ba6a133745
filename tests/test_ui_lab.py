"""The Lab extension's panels in a real headless Chromium (Debian's, driven by
Python playwright; no browser download), through the REAL hub, proxy and
service on the demo's local-process spawner (tests/hub_fixtures.py).

Two fresh users of acme share a fresh project ``ui<hex>`` (limits cpu 8,
gpu.shares 2) on the world's ``acme-gpu`` group (declared A100s):

- user A logs in through the hub's login form, starts the server from the
  spawn form and lands in Lab; the Summary panel shows A's levels with bars
  (screenshot ``ui-summary.png``; ``HUBGRID_SCREENSHOTS=docs/images`` refreshes the docs' one);
- A starts a named 0.5-GPU session from the Sessions panel's launcher: it
  shows up without a reload and the project's GPU bar reads 0.5 exactly;
- user B, in a browser context of its own, sees none of A's sessions and
  folders, and B's Lab forwarder refuses to act for A;
- a folder named ``<img src=x onerror=alert(1)><script>alert(2)`` shows as
  text in the Data panel and no dialog fires (the service refuses '/' in a
  folder name, so ``</script>`` cannot be a folder's name);
- a file uploaded in a folder's file browser (the Data panel) finishes its
  upload, is listed, and the service holds its bytes.

Without Chromium or playwright these skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import requests

from hub_fixtures import hub, require, world  # noqa: F401
from session_fixtures import eventually, hub_log, server_of, wait_ready

pytestmark = [pytest.mark.hub, pytest.mark.parametrize("hub", ["sqlite"], indirect=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: where the screenshots go: $HUBGRID_SCREENSHOTS (``docs/images`` refreshes the
#: docs' pictures) or the test's temporary folder (a test run leaves the tree clean)
SCREENSHOTS = "HUBGRID_SCREENSHOTS"
#: Lab, the server start and the panels' first reads (2 shared cores)
SLOW = 120_000
#: a folder name that is HTML (the service refuses '/' in names, so no
#: closing tag: the <img> fires a dialog if any panel renders it as HTML)
HTML_NAME = "<img src=x onerror=alert(1)><script>alert(2)"


def _ok(r: requests.Response, *codes: int) -> dict:
    assert r.status_code in codes, f"{r.request.method} {r.url}: {r.status_code} {r.text[:500]}"
    return r.json() if r.content else {}


@pytest.fixture(scope="module")
def chromium():
    require("Chromium", os.path.exists(CHROMIUM),
            "bash scripts/install.sh installs Debian's chromium (as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    require("playwright (Python)", sync_playwright is not None,
            "pip install -e '.[test]' (bash scripts/install.sh)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def people(world):  # noqa: F811
    """Two fresh acme users, A and B, in a fresh project with limits."""
    hub = world.hub
    tag = uuid.uuid4().hex[:6]
    a, b, project = f"uia{tag}", f"uib{tag}", f"ui{tag}"
    _ok(hub.call("POST", "domains/acme/projects", "admin", json={
        "name": project, "total_resource_slots": {"cpu": "8", "gpu.shares": "2"}}), 201)
    for user in (a, b):
        _ok(hub.call("POST", "users", "admin",
                     json={"name": user, "domain": "acme", "role": "user"}), 201)
        _ok(hub.call("PUT", f"domains/acme/projects/{project}/members/{user}", "admin"), 201)
    try:
        yield {"a": a, "b": b, "project": project}
    finally:
        for user in (a, b):
            r = hub.hub_call("GET", f"users/{user}")
            for name in (r.json().get("servers", {}) if r.status_code == 200 else {}):
                path = f"users/{user}/server" if name == "" else f"users/{user}/servers/{name}"
                hub.hub_call("DELETE", path)
                eventually(lambda: server_of(hub, user, name) is None, timeout=60)


def open_lab(world, chromium, user: str, project: str):  # noqa: F811
    """A browser context of ``user``: the hub's login form, the spawn form
    (the project, 0.5 CPU, 512M), then Lab. Returns (context, page)."""
    hub = world.hub
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{hub.url}/hub/login")
        page.fill("#username_input", user)
        page.fill("#password_input", hub.user_password)
        page.click("#login_submit")
        page.wait_for_url("**/hub/**", timeout=SLOW)
        page.goto(f"{hub.url}/hub/spawn")
        page.select_option("#hg-project", project)
        page.select_option("#hg-rg", "acme-gpu")
        page.fill("#hg-cpu", "0.5")
        page.fill("#hg-mem", "512M")
        page.get_by_role("button", name="Start").click()
        page.wait_for_url(f"**/user/{user}/lab**", timeout=SLOW)
        tab(page, "jp-hubgrid-summary").wait_for(timeout=SLOW)
    except Exception as e:
        try:
            tabs = page.eval_on_selector_all(".lm-TabBar-tab[data-id]", "els => els.map(e => e.dataset.id)")
            where = f"at {page.url}, sidebar tabs {tabs} (no hubgrid tabs: a stale extension in "
            where += ".venv? run `bash scripts/install.sh`)"
        except Exception:
            where = ""
        context.close()
        pytest.fail(f"{user} did not get to Lab: {e}\n{where}\n{hub_log(hub)}")
    return context, page


def tab(page, panel_id: str):
    """The left sidebar's tab of a panel (Lumino writes the widget id as data-id)."""
    return page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{panel_id}"]')


def show_panel(page, panel_id: str):
    t = tab(page, panel_id)
    t.wait_for(timeout=SLOW)
    if "lm-mod-current" not in (t.get_attribute("class") or ""):
        t.click()
    panel = page.locator(f"#{panel_id}")
    panel.wait_for(state="visible", timeout=SLOW)
    return panel


def level_bar(panel, level: str, name: str, slot: str):
    return panel.locator(f'.jp-hubgrid-level[data-level="{level}"][data-name="{name}"] '
                         f'.jp-hubgrid-bar-row[data-slot="{slot}"]')


@pytest.fixture(scope="module")
def lab_a(world, chromium, people):  # noqa: F811
    context, page = open_lab(world, chromium, people["a"], people["project"])
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        yield page, dialogs
    finally:
        context.close()


# -- 1. Summary --------------------------------------------------------------------------


def test_a_user_logs_in_starts_lab_and_sees_their_levels_with_bars(world, people, lab_a, tmp_path):  # noqa: F811
    page, _ = lab_a
    panel = show_panel(page, "jp-hubgrid-summary")
    project = people["project"]
    cpu = level_bar(panel, "project", project, "cpu")
    try:
        cpu.wait_for(timeout=SLOW)
    except Exception:
        pytest.fail(f"no project bars: {panel.inner_text()}\n{hub_log(world.hub)}")
    # the default server (0.5 CPU) counts against the project's limits, exactly
    gpu = level_bar(panel, "project", project, "gpu.shares")
    assert cpu.locator('[data-field="amount"]').inner_text().startswith("0.5 / 8"), panel.inner_text()
    assert gpu.locator('[data-field="amount"]').inner_text().startswith("0 / 2"), panel.inner_text()
    assert cpu.locator('[role="meter"]').get_attribute("aria-valuenow") is not None
    levels = panel.locator(".jp-hubgrid-level")
    kinds = {(levels.nth(i).get_attribute("data-level"), levels.nth(i).get_attribute("data-name"))
             for i in range(levels.count())}
    assert ("project", project) in kinds and ("domain", "acme") in kinds, kinds
    shots = Path(os.environ.get(SCREENSHOTS) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    # Lab's own "news?" toast is no part of the picture
    page.screenshot(path=str(shots / "ui-summary.png"), style=".Toastify { display: none; }")
    assert (shots / "ui-summary.png").stat().st_size > 0


def create_folder(hub, user: str, name: str) -> dict:
    return _ok(hub.call("POST", "vfolders", user, json={"name": name}), 201)


# -- 2. a second session from the Sessions panel ---------------------------------------


def test_a_session_started_from_the_sessions_panel_shows_live_and_moves_the_summary(
        world, people, lab_a):  # noqa: F811
    page, _ = lab_a
    hub, a, project = world.hub, people["a"], people["project"]
    name = f"gpu-{uuid.uuid4().hex[:6]}"
    panel = show_panel(page, "jp-hubgrid-sessions")
    panel.locator(".jp-hubgrid-session").first.wait_for(timeout=SLOW)
    try:
        panel.locator(".jp-hubgrid-header").get_by_role("button", name="New").click()
        dialog = page.locator(".jp-Dialog")
        dialog.locator('input[name="name"]').wait_for(timeout=SLOW)
        dialog.locator('input[name="name"]').fill(name)
        dialog.locator('select[name="project"]').select_option(project)
        dialog.locator('select[name="group"]').select_option("acme-gpu")
        dialog.locator('input[name="cpu"]').fill("0.5")
        dialog.locator('input[name="mem"]').fill("512M")
        dialog.locator('select[name="gpuMode"]').select_option("shares")
        dialog.locator('input[name="gpu"]').fill("0.5")
        dialog.locator('[data-verdict="fits"]').wait_for(timeout=SLOW)
        dialog.locator(".jp-mod-accept").click()
        dialog.wait_for(state="detached", timeout=SLOW)

        # live: the new row shows, then runs, without a reload
        row = panel.locator(f'.jp-hubgrid-session[data-name="{name}"]')
        row.wait_for(timeout=SLOW)
        page.wait_for_selector(f'#jp-hubgrid-sessions .jp-hubgrid-session[data-name="{name}"]'
                               f'[data-state="allocated"]', timeout=SLOW)
        sizes = row.locator('[data-field="sizes"]').inner_text()
        assert "CPU 0.5" in sizes and "0.5" in sizes.split("GPU", 1)[1], sizes
        assert row.locator('[data-field="project"]').inner_text() == project

        # the Summary: two sessions of 0.5 CPU and one 0.5 GPU share, exactly
        summary = show_panel(page, "jp-hubgrid-summary")
        gpu = level_bar(summary, "project", project, "gpu.shares").locator('[data-field="amount"]')
        cpu = level_bar(summary, "project", project, "cpu").locator('[data-field="amount"]')
        page.wait_for_function(
            "([el, want]) => el && el.textContent.startsWith(want)",
            arg=[gpu.element_handle(timeout=SLOW), "0.5 / 2"], timeout=SLOW)
        assert gpu.inner_text().startswith("0.5 / 2"), gpu.inner_text()
        assert cpu.inner_text().startswith("1 / 8"), cpu.inner_text()
        # the hub's start request ends when the server answers: stopping it
        # earlier would fail that request (and the panel would say so)
        wait_ready(hub, a, name)
    finally:
        if server_of(hub, a, name) is not None:
            hub.hub_call("DELETE", f"users/{a}/servers/{name}")
            assert eventually(lambda: server_of(hub, a, name) is None, timeout=60), hub_log(hub)


def refreshed_data_panel(page):
    panel = show_panel(page, "jp-hubgrid-data")
    panel.locator(".jp-hubgrid-data-header").get_by_role("button", name="Refresh").click()
    return panel


def folder_link(panel, folder: dict):
    return panel.locator(f'tr[data-folder="{folder["id"]}"] .jp-hubgrid-data-name a')


def fetch_in_page(page, url: str) -> dict:
    """GET ``url`` from the page (its cookies), as the panels do."""
    return page.evaluate("""async url => {
        const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        const r = await fetch(url, {headers: {'X-XSRFToken': decodeURIComponent(xsrf)}});
        return {status: r.status, url: r.url, body: await r.text()};
    }""", url)


# -- 3. one user never sees another's ---------------------------------------------------


def test_another_user_sees_none_of_their_sessions_or_folders(world, chromium, people, lab_a):  # noqa: F811
    hub, a, b = world.hub, people["a"], people["b"]
    tag = uuid.uuid4().hex[:6]
    mine = create_folder(hub, a, f"a-private-{tag}")
    theirs = create_folder(hub, b, f"b-own-{tag}")
    a_sessions = {str(x["id"]) for x in hub.call("GET", f"allocations?user={a}", "admin").json()}
    assert a_sessions, "A has sessions (the default server at least)"

    context, page = open_lab(world, chromium, b, people["project"])
    try:
        sessions = show_panel(page, "jp-hubgrid-sessions")
        sessions.locator('.jp-hubgrid-session[data-state="allocated"]').first.wait_for(timeout=SLOW)
        shown = set(sessions.locator(".jp-hubgrid-session").evaluate_all(
            "els => els.map(e => e.dataset.session)"))
        assert shown and not shown & a_sessions, (shown, a_sessions)
        assert a not in sessions.inner_text()

        data = refreshed_data_panel(page)
        folder_link(data, theirs).wait_for(timeout=SLOW)
        assert folder_link(data, mine).count() == 0
        assert mine["name"] not in data.inner_text() and a not in data.inner_text()

        # B's forwarder acts as B only: A's folder is not B's to read
        r = fetch_in_page(page, f"/user/{b}/hubgrid/api/vfolders/{mine['id']}")
        assert r["status"] in (403, 404), r
        assert mine["name"] not in r["body"], r
        r = fetch_in_page(page, f"/user/{b}/hubgrid/api/me")
        assert r["status"] == 200 and f'"name": "{b}"' in r["body"].replace('":"', '": "'), r
        # ...and A's server (with A's forwarder) is not B's to reach
        r = fetch_in_page(page, f"/user/{a}/hubgrid/api/me")
        assert r["status"] == 403, r
        assert f'"name": "{a}"' not in r["body"].replace('":"', '": "'), r
    finally:
        context.close()


# -- 4. names are text ------------------------------------------------------------------


def test_a_folder_named_like_html_renders_as_text_in_the_data_panel(world, people, lab_a):  # noqa: F811
    page, dialogs = lab_a
    folder = create_folder(world.hub, people["a"], HTML_NAME)
    assert folder["name"] == HTML_NAME
    panel = refreshed_data_panel(page)
    link = folder_link(panel, folder)
    link.wait_for(timeout=SLOW)
    assert link.text_content() == HTML_NAME
    assert panel.locator('img[src="x"]').count() == 0 and panel.locator("script").count() == 0
    assert dialogs == [], dialogs


# -- 5. files ---------------------------------------------------------------------------


def test_a_file_uploaded_in_the_data_panel_is_listed_and_stored(world, people, lab_a):  # noqa: F811
    page, dialogs = lab_a
    hub, a = world.hub, people["a"]
    folder = create_folder(hub, a, f"up-{uuid.uuid4().hex[:6]}")
    panel = refreshed_data_panel(page)
    link = folder_link(panel, folder)
    link.wait_for(timeout=SLOW)
    link.click()
    files = page.locator(".jp-hubgrid-files:visible")
    files.locator('table[aria-label="files"]').wait_for(timeout=SLOW)
    content = b"hello from the browser\n" * 1000
    files.locator('input[aria-label="files to upload"]').set_input_files(
        files=[{"name": "hello.txt", "mimeType": "text/plain", "buffer": content}])
    page.locator('[data-upload$="hello.txt"][data-phase="done"]').wait_for(timeout=SLOW)
    assert page.locator('progress[aria-label$="hello.txt"]').count() >= 1
    files.locator('tr[data-entry="hello.txt"][data-type="file"]').wait_for(timeout=SLOW)
    r = hub.call("GET", f"vfolders/{folder['id']}/download?path=hello.txt", a)
    assert r.status_code == 200 and r.content == content, (r.status_code, r.text[:200])
    assert dialogs == [], dialogs
