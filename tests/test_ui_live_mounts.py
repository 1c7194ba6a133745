"""Folders in a running Docker session without a restart, in a real
headless Chromium through the real hub (the shared Docker hub,
docker_fixtures.py): bob's Lab runs in an isolated Docker session; a folder
he makes afterwards is mounted from the Data panel's "This session"
("Mount in this session"), a terminal in that Lab writes a file into it and
the file is in the folder (the service's files API); the container and its
home stay (a file written there before is still there); a folder shared
with him read-only stays read-only; once its owner revokes the share it
disappears from the session and from the panel. Screenshot for docs/user.md.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from docker_fixtures import held
from hub_fixtures import _ok, require
from session_fixtures import eventually, hub_log, run_in_terminal, server_of, spawn, wait_ready
from ui_fixtures import CHROMIUM, CHROMIUM_ARGS, SLOW, screenshot, show_panel, tab

SERVER = f"mnt{uuid.uuid4().hex[:6]}"
LIVE = "/home/jovyan/mounted-folders"


def terminal(hub, command: str) -> str:
    """``command`` in a Lab terminal of bob's session (its own thread: the
    page's sync API holds this one's event loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run_in_terminal, hub, "bob", SERVER, command).result()


@pytest.fixture(scope="module")
def lab(dock):
    """bob's Lab in a Docker session (server ``SERVER``), open in Chromium."""
    require("Chromium", Path(CHROMIUM).exists(), "bash scripts/install.sh (as root)")
    from playwright.sync_api import sync_playwright

    hub = dock.hub
    r = spawn(hub, "bob", SERVER, project="ml", resource_group="dock",
              image="hubgrid/base:latest", cpu="0.5", mem="512M")
    assert r.status_code in (201, 202), r.text
    try:
        wait_ready(hub, "bob", SERVER, timeout=180)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            try:
                page = context.new_page()
                page.goto(f"{hub.url}/hub/login")
                page.fill("#username_input", "bob")
                page.fill("#password_input", hub.user_password)
                page.click("#login_submit")
                page.wait_for_url("**/hub/**", timeout=SLOW)
                page.goto(f"{hub.url}/user/bob/{SERVER}/lab")
                tab(page, "jp-hubgrid-summary").wait_for(timeout=SLOW)
                yield page
            finally:
                context.close()
                browser.close()
    finally:
        hub.hub_call("DELETE", f"users/bob/servers/{SERVER}")
        eventually(lambda: server_of(hub, "bob", SERVER) is None, timeout=60)


def this_session(page):
    panel = show_panel(page, "jp-hubgrid-data")
    panel.locator(".jp-hubgrid-data-header").get_by_role("button", name="Refresh").click()
    panel.get_by_role("tab", name="Folders").click()  # away and back: read again
    panel.get_by_role("tab", name="This session").click()
    return panel


def row(panel, folder_id: str):
    return panel.locator(f'tr[data-folder="{folder_id}"]')


def test_a_folder_made_after_the_start_is_mounted_from_the_data_panel_and_used(
        dock, lab, tmp_path):
    hub, page = dock.hub, lab
    container = dock.container(held(hub, "bob", SERVER)["id"])[1]["Id"]
    assert "kept" in terminal(hub, "echo kept > ~/home-file.txt && cat ~/home-file.txt")
    tag = uuid.uuid4().hex[:6]
    mine = _ok(hub.call("POST", "vfolders", "bob", json={"name": f"later-{tag}"}), 201)
    theirs = _ok(hub.call("POST", "vfolders", "alice", json={"name": f"alices-{tag}"}), 201)
    inv = _ok(hub.call("POST", f"vfolders/{theirs['id']}/invitations", "alice",
                       json={"user": "bob", "permission": "ro"}), 201)
    _ok(hub.call("POST", f"invitations/{inv['id']}/accept", "bob"), 200)
    try:
        panel = this_session(page)
        for folder in (mine, theirs):
            button = row(panel, folder["id"]).get_by_role(
                "button", name=f"Mount {folder['name']} in this session")
            try:
                button.wait_for(timeout=SLOW)
            except Exception:
                pytest.fail(f"no mount button: {panel.inner_text()}\n{hub_log(hub)}")
            button.click()
            panel.locator(".jp-hubgrid-data-message").filter(
                has_text=f"Mounting {folder['name']}").wait_for(timeout=SLOW)
        for folder in (mine, theirs):
            where = f"~/mounted-folders/{folder['name']}"  # the panel's short path
            row(panel, folder["id"]).filter(has_text=where).wait_for(timeout=SLOW)
        # the spawner mounts within seconds: used from a terminal of this very Lab
        assert eventually(lambda: mine["name"] in terminal(hub, f"ls {LIVE}"), timeout=60), \
            hub_log(hub)
        terminal(hub, f"echo from-the-terminal > {LIVE}/{mine['name']}/note.txt")
        r = hub.call("GET", f"vfolders/{mine['id']}/download?path=note.txt", "bob")
        assert (r.status_code, r.content) == (200, b"from-the-terminal\n"), r.text
        out = terminal(hub, f"touch {LIVE}/{theirs['name']}/x 2>&1")
        assert "Read-only file system" in out, out
        row(panel, theirs["id"]).filter(has_text="read-only").wait_for(timeout=SLOW)
        screenshot(page, "data-this-session.png", tmp_path)
        # no restart: the same container, its home as it was
        assert dock.container(held(hub, "bob", SERVER)["id"])[1]["Id"] == container
        assert "kept" in terminal(hub, "cat ~/home-file.txt")
        # the share revoked: gone from the session and from the panel
        assert hub.call("DELETE", f"vfolders/{theirs['id']}/shares/bob",
                        "alice").status_code in (200, 204)
        assert eventually(lambda: theirs["name"] not in terminal(hub, f"ls {LIVE}"),
                          timeout=60), hub_log(hub)
        panel = this_session(page)
        row(panel, theirs["id"]).wait_for(state="detached", timeout=SLOW)
        where = f"~/mounted-folders/{mine['name']}"
        row(panel, mine["id"]).filter(has_text=where).wait_for(timeout=SLOW)
    finally:
        for owner, folder in (("bob", mine), ("alice", theirs)):
            hub.call("DELETE", f"vfolders/{folder['id']}", owner)
            hub.call("POST", f"vfolders/{folder['id']}/purge", owner)
