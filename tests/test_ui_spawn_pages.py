"""The hub's spawn pages in a real headless Chromium, through the REAL hub,
proxy and service on the demo's local-process spawner (tests/hub_fixtures.py,
the browser fixtures of tests/ui_fixtures.py):

- a domain admin in no project is told to create a project (a link to the
  console's Domains and Projects page), not to ask an admin, and the Start
  button is disabled with the reason;
- a waiting page opened again after the queue moved shows the current place
  from its first message (not the one the start last reported);
- Start right after Stop: the hub's stop-pending page waits for the stop and
  goes on to the spawn page, whose start then starts the server.

Without Chromium or playwright these skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import uuid

import pytest

from hub_fixtures import hub, world  # noqa: F401
from session_fixtures import allocations, eventually, hub_log, server_of, spawn, wait_ready
from ui_fixtures import SLOW, chromium, people, screenshot  # noqa: F401

pytestmark = [pytest.mark.hub, pytest.mark.parametrize("hub", ["sqlite"], indirect=True)]


def logged_in(chromium, hub, user: str):  # noqa: F811
    """(context, page) of ``user``, logged in through the hub's form."""
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.user_password)
    page.click("#login_submit")
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=SLOW)
    return context, page


def tiny_group(hub, project: str) -> str:
    """A fresh group of one 1-CPU node, granted to ``project``."""
    group = f"tiny{uuid.uuid4().hex[:6]}"
    assert hub.call("POST", "resource-groups", "admin", json={"name": group}).status_code == 201
    assert hub.call("PUT", f"resource-groups/{group}/grants", "admin",
                    json={"project": f"acme/{project}"}).status_code == 201
    assert hub.call("POST", "nodes", "admin", json={
        "name": f"{group}-1", "resource_group": group,
        "capacity": {"cpu": "1", "mem": "64G"}}).status_code == 201
    return group


def test_a_domain_admin_in_no_project_is_told_to_create_one_and_start_is_disabled(
        world, chromium, tmp_path):  # noqa: F811
    hub = world.hub
    admin = f"uiadm{uuid.uuid4().hex[:6]}"
    r = hub.call("POST", "users", "admin",
                 json={"name": admin, "domain": "acme", "role": "domain-admin"})
    assert r.status_code == 201, r.text
    context, page = logged_in(chromium, hub, admin)
    try:
        page.goto(f"{hub.url}/hub/spawn/{admin}")
        note = page.locator("#hg-no-project")
        note.wait_for(timeout=SLOW)
        text = " ".join(note.inner_text().split())
        assert "You administer acme: create a project and add yourself to it" in text, text
        assert "Ask an admin" not in text
        link = page.locator("#hg-console-projects")
        assert link.get_attribute("href") == "/services/hubgrid/console/#domains"
        start = page.locator("#spawn_form button[type=submit]")
        assert start.is_disabled() and "you are in no project" in start.inner_text()
        screenshot(page, "hub-spawn-domain-admin.png", tmp_path)
        link.click()
        page.wait_for_url("**/services/hubgrid/console/#domains", timeout=SLOW)
    finally:
        context.close()


def test_a_reopened_waiting_page_starts_on_the_current_place_in_the_queue(
        world, chromium, people):  # noqa: F811
    hub, a, b, project = world.hub, people["a"], people["b"], people["project"]
    group = tiny_group(hub, project)
    slots = {"cpu": "1", "mem": "1G"}
    held = hub.call("POST", "allocations", a, json={
        "project": project, "resource_group": group, "slots": slots})
    assert held.status_code == 201, held.text
    ahead = hub.call("POST", "allocations", a, json={
        "project": project, "resource_group": group, "slots": slots})
    assert ahead.status_code == 202, ahead.text  # waits: B's start comes after it
    context, page = logged_in(chromium, hub, b)
    try:
        page.goto(f"{hub.url}/hub/spawn/{b}/place")
        page.select_option("#hg-project", project)
        page.select_option("#hg-rg", group)
        page.fill("#hg-cpu", "0.5")
        page.fill("#hg-mem", "512M")
        page.get_by_role("button", name="Start").click()
        message = page.locator("#progress-message")
        try:
            page.wait_for_function("el => el.textContent.includes('number 2 of 2')",
                                   arg=message.element_handle(timeout=SLOW), timeout=SLOW)
        except Exception:
            pytest.fail(f"no place 2 of 2 on {page.url}: {page.content()[:3000]}\n"
                        f"{hub_log(hub)}")
        # the one ahead leaves the queue; B opens the page again at once
        assert hub.call("DELETE", f"allocations/{ahead.json()['id']}", a).status_code in (200, 204)
        page.reload()
        page.wait_for_function("el => el.textContent.includes('in line')",
                               arg=message.element_handle(timeout=SLOW), timeout=5000)
        # the new page's first place (after the hub's "Server requested"; the
        # log sits in a closed <details>: its text)
        first = page.locator("#progress-log .progress-log-event").filter(
            has_text="in line").first.text_content()
        assert "number 1 of 1 in line" in first, first
    finally:
        context.close()
        hub.hub_call("DELETE", f"users/{b}/servers/place")
        eventually(lambda: server_of(hub, b, "place") is None
                   or not server_of(hub, b, "place")["pending"], timeout=60)
        hub.call("DELETE", f"allocations/{held.json()['id']}", a)
    [gone] = allocations(hub, b, server="place")
    assert gone["state"] == "cancelled", gone


def test_start_right_after_stop_waits_for_the_stop_then_starts(
        world, chromium, people, tmp_path):  # noqa: F811
    hub, b, project = world.hub, people["b"], people["project"]
    options = {"project": project, "resource_group": "acme-gpu", "cpu": "0.5", "mem": "512M"}
    r = spawn(hub, b, "again", **options)
    assert r.status_code in (201, 202), r.text
    wait_ready(hub, b, "again")
    context, page = logged_in(chromium, hub, b)
    try:
        r = hub.hub_call("DELETE", f"users/{b}/servers/again", user=b)
        assert r.status_code in (202, 204), r.text
        page.goto(f"{hub.url}/hub/spawn/{b}/again")  # Start, while the stop may still run
        page.locator("#hg-project").wait_for(timeout=SLOW)  # the spawn form: not home
        assert "/hub/spawn/" in page.url, page.url
        page.select_option("#hg-project", project)
        page.select_option("#hg-rg", "acme-gpu")
        page.fill("#hg-cpu", "0.5")
        page.fill("#hg-mem", "512M")
        page.get_by_role("button", name="Start").click()
        page.wait_for_url(f"**/user/{b}/again/**", timeout=SLOW)
    finally:
        context.close()
        hub.hub_call("DELETE", f"users/{b}/servers/again")
        eventually(lambda: server_of(hub, b, "again") is None
                   or not server_of(hub, b, "again")["pending"], timeout=60)
