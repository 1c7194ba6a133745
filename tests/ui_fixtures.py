"""Fixtures and helpers of the Lab UI tests (tests/test_ui_lab.py): headless
Chromium (Debian's, driven by Python playwright; no browser download)
through the REAL hub, proxy and service on the demo's local-process spawner.

Module-scoped fixtures are per module, and each user's Lab costs a server
start and a Lab load (~15-30 s on 2 cores): keep the tests that need a
user's Lab in one module, which imports what it uses::

    from ui_fixtures import chromium, lab_a, lab_b, people  # noqa: F401

- ``people``: two fresh users of acme, A and B, in a fresh project
  ``ui<hex>`` (limits cpu 8, gpu.shares 2); their servers are stopped at the end;
- ``lab_a`` / ``lab_b``: each user's own browser context, logged in through
  the hub's form, the default server started from the spawn form, in Lab:
  ``(page, dialogs)``, ``dialogs`` the messages of any alert() fired there.

Without Chromium or playwright these skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import requests

from hub_fixtures import require, world  # noqa: F401
from session_fixtures import eventually, hub_log, server_of

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: where the screenshots go: $HUBGRID_SCREENSHOTS (``docs/images`` refreshes the
#: docs' pictures) or the test's temporary folder (a test run leaves the tree clean)
SCREENSHOTS = "HUBGRID_SCREENSHOTS"
#: Lab, the server start and the panels' first reads (2 shared cores)
SLOW = 120_000
#: Lab's own toasts ("news?", "invited ...") are no part of a picture
NO_TOASTS = ".Toastify { display: none; }"


def _ok(r: requests.Response, *codes: int) -> dict:
    assert r.status_code in codes, f"{r.request.method} {r.url}: {r.status_code} {r.text[:500]}"
    return r.json() if r.content else {}


def screenshot(page, name: str, tmp_path: Path) -> Path:
    """``name`` (e.g. ``lab-launcher.png``) of the whole page, into
    $HUBGRID_SCREENSHOTS or ``tmp_path``."""
    shots = Path(os.environ.get(SCREENSHOTS) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / name), style=NO_TOASTS)
    assert (shots / name).stat().st_size > 0
    return shots / name


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


def submit_start(page, hub, user: str, project: str, group: str = "acme-gpu") -> None:
    """Log ``user`` in through the hub's form and submit the spawn form (the
    project, the group, 0.5 CPU, 512M); Lab is on its way."""
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.admin_password if user == "admin" else hub.user_password)
    page.click("#login_submit")
    page.wait_for_url("**/hub/**", timeout=SLOW)
    page.goto(f"{hub.url}/hub/spawn")
    page.select_option("#hg-project", project)
    page.select_option("#hg-rg", group)
    page.fill("#hg-cpu", "0.5")
    page.fill("#hg-mem", "512M")
    page.get_by_role("button", name="Start").click()


def in_lab(page, user: str) -> None:
    """Wait for ``user``'s Lab with the hubgrid panels."""
    page.wait_for_url(f"**/user/{user}/lab**", timeout=SLOW)
    tab(page, "jp-hubgrid-summary").wait_for(timeout=SLOW)


def open_lab(world, chromium, user: str, project: str, group: str = "acme-gpu",
             viewport: dict | None = None, **context_options):  # noqa: F811
    """A browser context of ``user``: the hub's login form, the spawn form
    (the project and group, 0.5 CPU, 512M), then Lab. Returns (context, page)."""
    hub = world.hub
    context = chromium.new_context(viewport=viewport or {"width": 1400, "height": 1000},
                                   **context_options)
    try:
        page = context.new_page()
        submit_start(page, hub, user, project, group)
        in_lab(page, user)
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


def user_lab(world, chromium, user: str, project: str):  # noqa: F811
    """(page, dialogs) of ``user``'s Lab; closes the context afterwards."""
    context, page = open_lab(world, chromium, user, project)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        yield page, dialogs
    finally:
        context.close()


@pytest.fixture(scope="module")
def lab_a(world, chromium, people):  # noqa: F811
    yield from user_lab(world, chromium, people["a"], people["project"])


@pytest.fixture(scope="module")
def lab_b(world, chromium, people):  # noqa: F811
    yield from user_lab(world, chromium, people["b"], people["project"])


def stop_servers(hub, users) -> None:
    """Stop every server of ``users``: all asked first, then waited for."""
    asked = []
    for user in users:
        r = hub.hub_call("GET", f"users/{user}")
        for name in (r.json().get("servers", {}) if r.status_code == 200 else {}):
            path = f"users/{user}/server" if name == "" else f"users/{user}/servers/{name}"
            hub.hub_call("DELETE", path)
            asked.append((user, name))
    for user, name in asked:
        eventually(lambda: server_of(hub, user, name) is None, timeout=60)


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


def create_folder(hub, user: str, name: str) -> dict:
    return _ok(hub.call("POST", "vfolders", user, json={"name": name}), 201)


def refreshed_data_panel(page):
    panel = show_panel(page, "jp-hubgrid-data")
    panel.locator(".jp-hubgrid-data-header").get_by_role("button", name="Refresh").click()
    return panel


def folder_row(panel, folder: dict):
    return panel.locator(f'tr[data-folder="{folder["id"]}"]')


def folder_link(panel, folder: dict):
    return folder_row(panel, folder).locator(".jp-hubgrid-data-name a")


def request_in_page(page, method: str, url: str, body: str | None = None, xsrf: bool = True,
                    content_type: str = "application/json") -> dict:
    """``method`` on ``url`` from the page, as its own scripts call: with its
    cookies and, unless ``xsrf`` is False, its ``_xsrf`` token in
    ``X-XSRFToken``; a body goes as ``content_type``. The answer's status,
    final URL and text."""
    return page.evaluate("""async ([url, method, body, xsrf, type]) => {
        const token = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        const init = {method, headers: {}};
        if (xsrf) { init.headers['X-XSRFToken'] = decodeURIComponent(token); }
        if (body !== null) { init.body = body; init.headers['Content-Type'] = type; }
        const r = await fetch(url, init);
        return {status: r.status, url: r.url, body: await r.text()};
    }""", [url, method, body, xsrf, content_type])


def fetch_in_page(page, url: str) -> dict:
    """GET ``url`` from the page (its cookies), as the panels do."""
    return request_in_page(page, "GET", url)
