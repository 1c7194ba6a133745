"""Idle reclamation in the Lab extension, in headless
Chromium through the REAL hub, proxy and service (local spawner), the
service's reclaim pass running every second (its own hub: the session's
hub passes every 60 s):

a session of A's is idle, and its policy gets a short ``idle_timeout``
(the service warns at its next pass and sets the deadline a full lead
time ahead: no reclaim without the warning); A's Lab shows the service's warning as a notification (once) with
"Keep it", the session's row counts down to the deadline the service
announced; the row's Keep extends it (the policy allows one keep: the
notification's "Keep it" then shows the service's refusal); later the
session is reclaimed and its row ends with the reason. The session is an
API allocation made with A's keypair (the keypair's policy binds it) while
A's Lab starts, so the server running A's Lab stays under A's own policy,
which reclaims nothing.

Takes lab-reclaim-warning.png ($HUBGRID_SCREENSHOTS=docs/images for the docs).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hub_fixtures import _ok, build_world, launch_hub, require, stop_hub
from session_fixtures import eventually, hub_log
from ui_fixtures import SCREENSHOTS, SLOW, chromium, lab_a, people, show_panel  # noqa: F401

#: a hub of its own with local sessions and a browser, no engine or Slurm, and
#: mostly the wait for an idle timeout: run beside the tests that share those
pytestmark = pytest.mark.apart

#: the policy's idle timeout: warned half of it before the deadline (the lead's
#: cap), kept once by KEEP seconds; the test's clicks fit well inside the warning
IDLE = 30
WARNING = 15
KEEP = 5
POLICY = "uireclaim"
CALM = "uicalm"  # the keypair's policy while A's Lab starts: no reclaim rule


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Like hub_fixtures' world, on a hub whose service passes every second."""
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test`")
    state = tmp_path_factory.mktemp("ui-reclaim-hub")
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "local"},
                     service_config="c.HubgridService.reclaim_interval = 1.0\n")
    try:
        world = build_world(hub)
        _ok(hub.call("POST", "resource-policies", "admin", json={
            "name": POLICY, "total_resource_slots": {"cpu": "4"}, "unspecified_limited": False,
            "idle_timeout": IDLE, "reclaim_warning": WARNING, "keep_extension": KEEP,
            "max_keeps": 1}), 201)
        _ok(hub.call("POST", "resource-policies", "admin", json={
            "name": CALM, "total_resource_slots": {"cpu": "4"}, "unspecified_limited": False}), 201)
        yield world
    finally:
        stop_hub(hub)


@pytest.fixture(scope="module")
def idle_session(world, people):  # noqa: F811
    """An API session of A's under a calm keypair policy, made before A's Lab
    starts (it is idle from then on); returns (allocation, access key)."""
    hub = world.hub
    kp = _ok(hub.call("POST", "keypairs", "admin", json={"user": people["a"], "resource_policy": CALM}), 201)
    alloc = _ok(hub.call("POST", "allocations", f"Keypair {kp['access_key']}:{kp['secret_key']}", json={
        "project": people["project"], "resource_group": "acme-gpu", "slots": {"cpu": "0.5"}}), 201, 202)
    assert alloc["state"] == "allocated", alloc
    return alloc, kp["access_key"]


def refresh(panel):
    panel.locator(".jp-hubgrid-header").get_by_title("Read again").click()


def until(panel, check, timeout: float, what: str):
    """Read the Sessions panel again until ``check()`` holds (bounded)."""
    def again():
        refresh(panel)
        try:
            return check()
        except Exception:  # a locator that waited in vain
            return None
    value = eventually(again, timeout=timeout, interval=0.5)
    assert value, what
    return value


def test_an_idle_session_is_warned_counts_down_is_kept_once_then_reclaimed(
        world, people, idle_session, lab_a, tmp_path):  # noqa: F811
    hub = world.hub
    page, _dialogs = lab_a
    user = people["a"]
    alloc, access_key = idle_session
    short = alloc["id"][:8]
    panel = show_panel(page, "jp-hubgrid-sessions")
    row = panel.locator(f'li[data-session="{alloc["id"]}"]')
    row.wait_for(timeout=SLOW)
    assert row.get_attribute("data-reclaim-deadline") is None
    # idle for a while already: the short timeout applies at the next pass
    _ok(hub.call("PATCH", f"keypairs/{access_key}", "admin", json={"resource_policy": POLICY}), 200)

    # the warning: a notification with "Keep it", and the row's countdown to
    # the deadline the service announced
    toast = page.locator(".Toastify__toast", has_text=f"Session {short} will be reclaimed")
    until(panel, lambda: toast.count() == 1, IDLE, f"no warning toast\n{hub_log(hub)}")
    notice = hub.call("GET", f"allocations/{alloc['id']}", user).json()["reclaim"]
    assert notice["rule"] == "idle" and notice["can_keep"], notice
    assert "reclaimed at " in toast.inner_text() and "(idle)" in toast.inner_text()
    assert toast.get_by_role("button", name="Keep it").is_visible()
    row.locator('[data-field="countdown"]').wait_for(timeout=SLOW)
    assert row.get_attribute("data-reclaim-deadline") == notice["deadline"]
    assert "idle_timeout is 30 s" in row.locator('[data-field="reclaim-reason"]').inner_text()
    first = row.locator('[data-field="countdown"]').inner_text()
    assert first.startswith("reclaimed in "), first
    assert eventually(lambda: row.locator('[data-field="countdown"]').inner_text() != first,
                      timeout=10, interval=0.2), "the countdown does not tick"
    shots = Path(os.environ.get(SCREENSHOTS) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    # Lab's own toasts ("news?") are no part of the picture; the warning is
    page.evaluate("""text => document.querySelectorAll('.Toastify__toast').forEach(t => {
        if (!t.textContent.includes(text)) { t.style.display = 'none'; } })""",
                  f"Session {short} will be reclaimed")
    page.screenshot(path=str(shots / "lab-reclaim-warning.png"))

    # Keep on the row: the service pushes the deadline; the row says how far
    row.get_by_role("button", name="Keep", exact=True).click()
    row.locator('[data-field="kept"]').get_by_text("(1 of 1 keep)").wait_for(timeout=SLOW)
    row.get_by_role("button", name="Keep", exact=True).wait_for(state="detached", timeout=SLOW)
    model = hub.call("GET", f"allocations/{alloc['id']}", user).json()
    assert model["state"] == "allocated", model
    events = hub.call("GET", f"reclaim/events?allocation={alloc['id']}&kind=extended", user).json()
    assert len(events["events"]) == 1, events

    # the notification's "Keep it" now: the service's refusal, as it says it
    toast.get_by_role("button", name="Keep it").click()
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_text(f"Session {short} was not kept").wait_for(timeout=SLOW)
    assert "the most the policy allows (max_keeps 1)" in dialog.inner_text()
    dialog.locator(".jp-Dialog-button.jp-mod-accept, .jp-Dialog-button").first.click()
    dialog.wait_for(state="detached", timeout=SLOW)
    # the warning that follows A's own keep: on the row, not notified again
    until(panel, lambda: row.get_attribute("data-reclaim-deadline"), 30, "no warning after the keep")
    assert (row.get_attribute("data-reclaim-deadline")
            == hub.call("GET", f"allocations/{alloc['id']}", user).json()["reclaim"]["deadline"])
    assert "(1 of 1 keep)" in row.locator('[data-field="kept"]').inner_text()
    assert page.locator(".Toastify__toast", has_text=f"Session {short} will be reclaimed").count() == 0

    # the deadline passes: reclaimed, the row ends with the rule and its numbers
    until(panel, lambda: row.get_attribute("data-state") == "released", IDLE + KEEP + 30,
          f"not reclaimed\n{hub_log(hub)}")
    ended = row.locator('[data-field="ended"]').inner_text()
    assert ended.startswith("reclaimed (idle): no activity for"), ended
    assert row.get_attribute("data-reclaim-deadline") is None
    page.locator(".Toastify__toast", has_text=f"Session {short} ended: reclaimed (idle)").wait_for(
        timeout=SLOW)
