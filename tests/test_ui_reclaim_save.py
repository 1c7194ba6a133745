"""Reclaim with its save, in headless Chromium through the REAL hub, proxy
and service (local spawner: real single-user servers with the Lab extension
and its activity reporter every 2 s; the service's reclaim pass every
second):

- item 7: an invitation sent while the invitee's Lab is open shows there
  (the Data tab's badge) within seconds, with no reload or Refresh;
- item 4: A types into a new notebook in their Lab (typing is activity: the
  session's report carries it), leaves it unsaved and walks away (the tab
  hidden); A's policy then gets a short ``idle_timeout``: the service warns,
  the Lab saves the notebook a few seconds before the deadline (the edit is
  on disk), the session is reclaimed, and when A comes back the page says
  it was reclaimed, why (the rule and its numbers) and offers to start it
  again, instead of the stock "Server unavailable"; the reclaim warning's
  toast is gone;
- with a policy that warns 0 s ahead, B's notebook, changed on disk while
  B's Lab held unsaved edits, is kept on disk and B's version written as a
  copy next to it before the session is stopped (no "File Changed" dialog
  holds the stop).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid

import pytest

from hub_fixtures import _ok, build_world, launch_hub, require, stop_hub
from session_fixtures import eventually, hub_log, server_of
from ui_fixtures import SLOW, chromium, lab_a, lab_b, people, tab  # noqa: F401

#: a hub of its own with local sessions and a browser, no engine or Slurm, and
#: mostly the wait for an idle timeout: run beside the tests that share those
pytestmark = pytest.mark.apart

IDLE = 30
WARNING = 15
SAVE_AHEAD = 8
POLICY = "uisave"
TEXT = "kept by hubgrid before the reclaim"
NO_WARNING = "uisave0"
MINE = "B's edit, unsaved in the Lab"
THEIRS = "written on disk by someone else"

HIDE = """() => {
    Object.defineProperty(document, 'hidden', {value: true, configurable: true});
    Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
    document.dispatchEvent(new Event('visibilitychange'));
}"""
SHOW = """() => {
    Object.defineProperty(document, 'hidden', {value: false, configurable: true});
    Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true});
    document.dispatchEvent(new Event('visibilitychange'));
}"""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A hub whose service passes every second, whose sessions report their
    activity every 2 s and save 8 s ahead of a reclaim, in a known folder."""
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test`")
    state = tmp_path_factory.mktemp("ui-reclaim-save-hub")
    (state / "notebooks").mkdir()
    config = (f"c.Spawner.notebook_dir = {str(state / 'notebooks')!r}\n"
              "c.Spawner.args.append('--HubgridLab.activity_interval=2')\n"
              f"c.Spawner.args.append('--HubgridLab.reclaim_save_ahead={SAVE_AHEAD}')\n")
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "local"}, config=config,
                     service_config="c.HubgridService.reclaim_interval = 1.0\n")
    try:
        world = build_world(hub)
        _ok(hub.call("POST", "resource-policies", "admin", json={
            "name": POLICY, "total_resource_slots": {"cpu": "4"}, "unspecified_limited": False,
            "idle_timeout": IDLE, "reclaim_warning": WARNING}), 201)
        _ok(hub.call("POST", "resource-policies", "admin", json={
            "name": NO_WARNING, "total_resource_slots": {"cpu": "4"},
            "unspecified_limited": False, "idle_timeout": IDLE, "reclaim_warning": 0}), 201)
        yield world
    finally:
        stop_hub(hub)


def test_an_invitation_shows_in_the_open_lab_within_seconds(world, people, lab_b):  # noqa: F811
    hub, a, b = world.hub, people["a"], people["b"]
    page, _dialogs = lab_b
    badged = page.locator('.jp-SideBar .lm-TabBar-tab[data-id="jp-hubgrid-data"][data-hubgrid-badge]')
    tab(page, "jp-hubgrid-data").wait_for(timeout=SLOW)
    page.wait_for_timeout(3000)  # the Data menu's first read is over: no badge
    assert badged.count() == 0
    folder = _ok(hub.call("POST", "vfolders", a, json={"name": f"inv-{uuid.uuid4().hex[:6]}"}), 201)
    _ok(hub.call("POST", f"vfolders/{folder['id']}/invitations", a,
                 json={"user": b, "permission": "ro"}), 201)
    # no reload, no Refresh: the quick check (every 10 s) finds it
    badged.wait_for(timeout=30_000)
    assert badged.get_attribute("data-hubgrid-badge") == "1"


def test_a_reclaimed_session_saves_its_notebook_and_says_why(world, people, lab_a):  # noqa: F811
    hub, a = world.hub, people["a"]
    page, _dialogs = lab_a
    # Lab's own autosave off: the save is the reclaim's
    page.evaluate("""async url => {
        const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        const r = await fetch(url, {method: 'PUT', body: JSON.stringify({raw: '{"autosave": false}'}),
            headers: {'X-XSRFToken': decodeURIComponent(xsrf), 'Content-Type': 'application/json'}});
        if (!r.ok) { throw new Error('settings: ' + r.status); }
    }""", f"/user/{a}/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    page.reload()
    page.locator(".jp-LauncherCard[data-category='Notebook']").first.click(timeout=SLOW)
    cell = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    cell.click(timeout=SLOW)
    page.keyboard.type(f"print({TEXT!r})")
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty").wait_for(timeout=SLOW)
    notebook = world.hub.state / "notebooks" / "Untitled.ipynb"
    assert notebook.exists() and TEXT not in notebook.read_text()

    # typing is activity: the session's report carries it
    alloc = next(x for x in hub.call("GET", f"allocations?user={a}&state=allocated", a).json()
                 if x["origin"] == "hub" and not x["server_name"])
    typed = page.evaluate("() => new Date().toISOString()")
    page.keyboard.type(" ")
    assert eventually(lambda: activity_of(world, alloc["id"]) >= typed[:19], timeout=30), \
        f"typing did not reach the session's report\n{hub_log(hub)}"

    # A walks away (the tab hidden); A's policy reclaims an idle session soon
    page.evaluate(HIDE)
    _ok(hub.call("PATCH", f"users/{a}", "admin", json={"resource_policy": POLICY}), 200)
    saved = page.locator("body[data-hubgrid-reclaim-saved]")
    saved.wait_for(state="attached", timeout=(IDLE + WARNING + 30) * 1000)
    assert saved.get_attribute("data-hubgrid-reclaim-saved") == "1"
    assert TEXT in "".join(json.loads(notebook.read_text())["cells"][0]["source"])
    assert eventually(lambda: server_of(hub, a, "") is None, timeout=60), \
        f"not reclaimed\n{hub_log(hub)}"
    ended = hub.call("GET", f"allocations/{alloc['id']}", a).json()
    assert ended["release_reason"].startswith("reclaimed (idle)"), ended

    # A comes back: what happened, why, and a way back
    page.evaluate(SHOW)
    dialog = page.locator(".jp-Dialog", has_text="Your session was reclaimed")
    dialog.wait_for(timeout=SLOW)
    text = dialog.inner_text()
    assert "(idle)" in text and f"idle_timeout is {IDLE} s" in text, text
    assert "was saved at" in text and "T" not in text.split("last: ")[1][:8], text
    assert "Server unavailable" not in page.locator("body").inner_text()
    assert page.locator(".Toastify__toast", has_text="will be reclaimed").count() == 0
    start = dialog.get_by_role("button", name="Start it again")
    assert start.is_visible()
    start.click()
    page.wait_for_url(f"**/hub/spawn**", timeout=SLOW)


def test_with_no_warning_a_notebook_changed_on_disk_is_saved_as_a_copy_before_the_stop(world, people, lab_b):  # noqa: F811
    """B's policy warns 0 s ahead; B's open notebook has unsaved edits, and
    its file was changed on disk meanwhile (the Lab's own save would ask
    "overwrite or revert?" and wait). The stop waits for B's Lab: the file
    on disk is kept as it was, B's version is written next to it, and only
    then is the session stopped."""
    hub, b = world.hub, people["b"]
    page, _dialogs = lab_b
    page.evaluate("""async url => {
        const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        const r = await fetch(url, {method: 'PUT', body: JSON.stringify({raw: '{"autosave": false}'}),
            headers: {'X-XSRFToken': decodeURIComponent(xsrf), 'Content-Type': 'application/json'}});
        if (!r.ok) { throw new Error('settings: ' + r.status); }
    }""", f"/user/{b}/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    page.reload()
    page.locator(".jp-LauncherCard[data-category='Notebook']").first.click(timeout=SLOW)
    cell = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    cell.click(timeout=SLOW)
    page.keyboard.type(f"print({MINE!r})")
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty").wait_for(timeout=SLOW)
    name = page.locator("#jp-main-dock-panel .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel") \
        .inner_text().strip()
    notebook = world.hub.state / "notebooks" / name
    assert notebook.exists(), name
    # someone else writes the file meanwhile (a script, a terminal)
    theirs = json.loads(notebook.read_text())
    theirs["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": THEIRS}]
    notebook.write_text(json.dumps(theirs))

    page.evaluate(HIDE)
    _ok(hub.call("PATCH", f"users/{b}", "admin", json={"resource_policy": NO_WARNING}), 200)
    copied = page.locator("body[data-hubgrid-reclaim-copies]")
    copied.wait_for(state="attached", timeout=(IDLE + 60) * 1000)
    assert copied.get_attribute("data-hubgrid-reclaim-copies") == "1"
    assert THEIRS in notebook.read_text() and MINE not in notebook.read_text()
    stem = name.rsplit(".", 1)[0]
    copies = list(notebook.parent.glob(f"{stem}.reclaim-*Z.ipynb"))
    assert len(copies) == 1, copies
    assert MINE in "".join(json.loads(copies[0].read_text())["cells"][0]["source"])
    assert eventually(lambda: server_of(hub, b, "") is None, timeout=60), \
        f"not reclaimed\n{hub_log(hub)}"

    page.evaluate(SHOW)
    dialog = page.locator(".jp-Dialog", has_text="Your session was reclaimed")
    dialog.wait_for(timeout=SLOW)
    text = dialog.inner_text()
    # the copy the dialog names is there with the Lab's version (a notice the
    # pass announced again before the stop may have made a second, later one)
    named = [c for c in notebook.parent.glob(f"{stem}.reclaim-*Z.ipynb") if c.name in text]
    assert "had changed on disk" in text and len(named) == 1, text
    assert MINE in "".join(json.loads(named[0].read_text())["cells"][0]["source"])
    assert page.locator(".jp-Dialog", has_text="File Changed").count() == 0


def activity_of(world, alloc_id: str) -> str:
    """The session's last reported activity (ISO), read from the service's
    database (the demo's SQLite file in the hub's state directory)."""
    with sqlite3.connect(world.hub.state / "hubgrid.sqlite") as db:
        row = db.execute("SELECT activity FROM allocations WHERE id = ?", (alloc_id,)).fetchone()
    return (json.loads(row[0]) or {}).get("last_activity") or "" if row and row[0] else ""
