"""The hubgrid console in a real headless Chromium through the
REAL hub, proxy and service, with no Jupyter server of the caller's running.
These tests run in tests/test_ui_admin_tenancy.py, which imports them (its
hub, ``world`` and Chromium serve both; the console needs no Lab):

- gus, globex's domain admin, in no project (he cannot start a server), logs
  in through the hub's form, follows the hub's "hubgrid console" link and
  finds every admin page, in the Lab menu's order; on the Users page he
  creates a user in globex, which the service then has (made by gus, in
  globex); acme's users are absent; no server of his ever ran;
- alice, a plain user, finds Summary, Sessions, Data, Serving, Model Store
  and Chat there and no admin page (not even when the address names one); her session shows on Sessions
  and she stops it there; every admin call from the page is
  refused; a call without the ``_xsrf`` token the page set is not
  authenticated by the login cookie (no cross-site requests with it);
- the hub's admin panel links the console.

Screenshot console-admin-users.png (into $HUBGRID_SCREENSHOTS, e.g. docs/images).
"""

from __future__ import annotations

import uuid

import pytest

from hub_fixtures import _ok
from session_fixtures import eventually
from ui_fixtures import SLOW, request_in_page, screenshot

#: every admin page, in the Lab menu's order (tests/test_ui_admin_tenancy.py: PAGES)
ADMIN_PAGES = ["Users", "Domains and Projects", "Resource Policies", "Resource Groups and Nodes",
               "Scheduler Queue", "Sessions (All)", "Images", "Access Log"]
CONSOLE = "/services/hubgrid/console/"


def hub_login(chromium, hub, user: str):  # noqa: F811
    """A browser context of ``user``, logged in through the hub's form (no
    server started). Returns (context, page)."""
    context = chromium.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: messages.append(f"error: {e}"))
    page.console_messages_seen = messages  # for console_ready's failure
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.admin_password if user == "admin" else hub.user_password)
    page.click("#login_submit")
    page.wait_for_url("**/hub/**", timeout=SLOW)
    return context, page


def console_ready(page):
    """The console's navigation, once its ``GET me`` has answered."""
    page.wait_for_url(f"**{CONSOLE}**", timeout=SLOW)
    nav = page.locator('nav.jp-hubgrid-console-nav[data-ready="true"]')
    try:
        nav.wait_for(timeout=SLOW)
    except Exception as e:
        pytest.fail(f"the console did not load at {page.url}: {e}\n"
                    + "\n".join(getattr(page, "console_messages_seen", [])))
    return nav


def in_page(page, method: str, path: str, body: str | None = None, xsrf: bool = True,
            under: str = "api") -> dict:
    """``method`` console/hubgrid/``under``/``path`` from the page, as the
    console calls it (the login cookie, and the ``_xsrf`` token unless
    ``xsrf`` is False): ``api`` the hubgrid API, ``gateway`` its Chat's forward."""
    return request_in_page(page, method, f"{CONSOLE}hubgrid/{under}/{path}", body, xsrf)


def servers_of(hub, user: str) -> dict:
    return _ok(hub.hub_call("GET", f"users/{user}"), 200).get("servers", {})


def fresh() -> str:
    """A fresh suffix (not the module's ``tag``: its tests search users by it)."""
    return uuid.uuid4().hex[:6]


def test_console_a_domain_admin_with_no_project_administers_his_domain(
        world, chromium, tmp_path):  # noqa: F811
    hub, tag = world.hub, fresh()
    assert _ok(hub.call("GET", "users/gus", "admin"), 200)["projects"] == []
    context, page = hub_login(chromium, hub, "gus")
    try:
        page.goto(f"{hub.url}/hub/home")
        page.locator("#hubgrid-console-nav").click()
        nav = console_ready(page)
        assert page.locator("#hubgrid-console-who").inner_text() == "gus · domain-admin · globex"
        admin = nav.locator('[data-section="admin"] .jp-hubgrid-console-page-link')
        assert admin.all_inner_texts() == ADMIN_PAGES
        assert nav.locator('[data-section="you"] .jp-hubgrid-console-page-link').all_inner_texts() == [
            "Summary", "Sessions", "Data"]

        admin.get_by_text("Users", exact=True).click()
        users = page.locator('[data-console-page="admin-users"] .jp-hubgrid-admin[data-page="users"]')
        users.locator('tr[data-user="gina"]').wait_for(timeout=SLOW)
        form = users.locator('[data-form="create-user"]')
        assert form.locator('input[name="domain"]').input_value() == "globex"
        form.locator('input[name="name"]').fill(f"c{tag}")
        form.get_by_role("button", name="Create user").click()
        users.locator(f'tr[data-user="c{tag}"]').wait_for(timeout=SLOW)
        made = _ok(hub.call("GET", f"users/c{tag}", "admin"), 200)
        assert (made["domain"], made["role"]) == ("globex", "user")
        log = _ok(hub.call("GET", "audit?action=user.create&user=gus", "admin"), 200)["entries"]
        assert any(e["target"].endswith(f"c{tag}") and (e["actor"], e["domain"], e["outcome"])
                   == ("gus", "globex", "success") for e in log), log
        assert "alice" not in users.inner_text() and "ada" not in users.inner_text()
        assert page.url.endswith("#admin-users")
        screenshot(page, "console-admin-users.png", tmp_path)

        # the Domains page: his domain, its project, and no other domain
        admin.get_by_text("Domains and Projects", exact=True).click()
        domains = page.locator('[data-console-page="admin-domains"]')
        domains.locator('.jp-hubgrid-admin-domain[data-domain="globex"] tr[data-project="lab"]').wait_for(
            timeout=SLOW)
        assert "acme" not in domains.inner_text()
        assert servers_of(hub, "gus") == {}  # all of it with no server of his
    finally:
        context.close()


def test_console_a_plain_user_finds_her_pages_and_no_admin_page(world, chromium):  # noqa: F811
    hub, tag = world.hub, fresh()
    context, page = hub_login(chromium, hub, "alice")
    try:
        page.goto(f"{hub.url}{CONSOLE}#admin-users")
        nav = console_ready(page)
        assert nav.locator("section").evaluate_all("els => els.map(e => e.dataset.section)") == [
            "you", "serving"]
        assert nav.locator(".jp-hubgrid-console-page-link").all_inner_texts() == [
            "Summary", "Sessions", "Data", "Serving", "Model Store", "Chat"]
        assert page.locator('[data-console-page^="admin-"]').count() == 0
        page.wait_for_url("**#summary", timeout=SLOW)  # the address named no page of hers
        page.locator('[data-console-page="summary"] .jp-hubgrid-level[data-level="project"]').wait_for(
            timeout=SLOW)
        nav.get_by_text("Data", exact=True).click()
        page.locator('[data-console-page="data"]').wait_for(timeout=SLOW)

        # her session (one made through the API) shows on Sessions; she stops it there
        made = _ok(hub.call("POST", "allocations", "alice", json={
            "project": "ml", "resource_group": "acme-gpu", "slots": {"cpu": "1"}}), 201)
        nav.get_by_text("Sessions", exact=True).click()
        sid = made["id"]
        row = page.locator(f'[data-console-page="sessions"] tr[data-allocation="{sid}"]')
        row.wait_for(timeout=SLOW)
        row.get_by_role("button", name="Stop").click()
        page.locator(".jp-Dialog").get_by_role("button", name="Stop").click()
        assert eventually(lambda: _ok(hub.call("GET", f"allocations/{sid}", "alice"), 200)[
            "state"] != "allocated", timeout=30)

        for method, path, body in (("GET", "users", None), ("GET", "audit", None),
                                   ("POST", "users", f'{{"name": "z{tag}", "domain": "acme"}}'),
                                   ("GET", "domains/acme/totals", None)):
            assert in_page(page, method, path, body)["status"] in (403, 404), (method, path)
        assert hub.call("GET", f"users/z{tag}", "admin").status_code == 404
        # the login cookie counts only with the page's _xsrf token
        assert in_page(page, "GET", "me")["status"] == 200
        assert in_page(page, "GET", "me", xsrf=False)["status"] == 401
        body = f'{{"name": "x{tag}"}}'
        assert in_page(page, "POST", "vfolders", body, xsrf=False)["status"] == 401
        assert in_page(page, "POST", "vfolders", body)["status"] == 201
        assert servers_of(hub, "alice") == {}
    finally:
        context.close()


def test_console_the_hubs_admin_panel_links_it(world, chromium):  # noqa: F811
    context, page = hub_login(chromium, world.hub, "admin")
    try:
        page.goto(f"{world.hub.url}/hub/admin")
        link = page.locator("#hubgrid-admin-console a")
        link.wait_for(timeout=SLOW)
        assert link.get_attribute("href") == f"{CONSOLE}#admin-users"
        link.click()
        nav = console_ready(page)
        page.locator('[data-console-page="admin-users"] .jp-hubgrid-admin[data-page="users"]').wait_for(
            timeout=SLOW)
        assert len(nav.locator('[data-section="admin"] li').all_inner_texts()) == len(ADMIN_PAGES)
    finally:
        context.close()

