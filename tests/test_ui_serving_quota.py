"""Scaling an endpoint within its creator's session limit from the Lab's
Serving page, in a real headless Chromium on the shared Docker hub
(serving_fixtures.serving_lab: bob's Lab in a Docker session, the page
tests' fixtures): bob may hold his sessions now and two more; his endpoint's
one replica serves (one of the two), and scaling it to two replicas from
the page takes the last one: his running replica is counted once. Three
more are refused at the page with the exact numbers. And his Lab's own
session detail shows its use now (CPU of its granted cores, memory of its
limit), read by the reclaim pass under the shipped settings though his
policy has no utilization rule.
"""

from __future__ import annotations

import re
import uuid

import pytest

from hub_fixtures import _ok
from serving_fixtures import GROUP, INFERENCE, LAB_SERVER
from session_fixtures import eventually
import test_ui_serving as page_tools  # its helpers (a module import: its test is not run again)
from ui_fixtures import SLOW, show_panel

NAME = "uiquota"


def live_sessions(hub, user: str) -> int:
    return len(_ok(hub.call("GET", f"allocations?user={user}&state=pending,allocated",
                            "admin"), 200))


@pytest.fixture
def bobs_room(serving_lab):
    """bob under a policy of his sessions now plus two (restored after)."""
    hub = serving_lab.hub
    before = _ok(hub.call("GET", "users/bob", "admin"), 200)["resource_policy"]
    policy = f"uiquota{uuid.uuid4().hex[:6]}"
    limit = live_sessions(hub, "bob") + 2
    _ok(hub.call("POST", "resource-policies", "admin", json={
        "name": policy, "max_concurrent_sessions": limit, "unspecified_limited": False}), 201)
    _ok(hub.call("PATCH", "users/bob", "admin", json={"resource_policy": policy}), 200)
    try:
        yield limit
    finally:
        _ok(hub.call("PATCH", "users/bob", "admin", json={"resource_policy": before}), 200)
        hub.call("DELETE", f"resource-policies/{policy}", "admin")


def test_bob_scales_his_endpoint_up_to_his_session_limit(serving_lab, bobs_room):
    page, serving, hub = serving_lab.page, serving_lab.serving, serving_lab.hub
    ep = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": NAME, "project": "ml", "resource_group": GROUP, "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "256M"},
        "replicas": 1}), 201)
    try:
        assert eventually(lambda: page_tools.endpoint_of(hub, NAME)["running_replicas"] == 1,
                          timeout=180, interval=1), page_tools.endpoint_of(hub, NAME)
        # the replica is bob's session now: one of his two more is left
        assert live_sessions(hub, "bob") == bobs_room - 1
        panel = page_tools.open_serving(page)
        row = panel.locator(f'tr[data-endpoint="{NAME}"]')
        row.wait_for(timeout=SLOW)
        row.get_by_role("link", name=NAME).click()
        detail = panel.locator(f'.jp-hubgrid-serving-detail[data-endpoint="{NAME}"]')
        detail.wait_for(timeout=SLOW)
        page_tools.until_text(page, row.locator('[data-field="replicas"]'), "t === '1 of 1'")

        detail.get_by_label("Replicas wanted").fill("2")
        detail.get_by_role("button", name="Scale").click()
        page_tools.until_text(page, row.locator('[data-field="replicas"]'), "t === '2 of 2'",
                   f"(alerts: {detail.get_by_role('alert').all_inner_texts()})")
        assert detail.get_by_role("alert").count() == 0
        assert page_tools.endpoint_of(hub, NAME)["replicas"] == 2

        # past the limit: refused, with the exact numbers, and nothing changes
        detail.get_by_label("Replicas wanted").fill("4")
        detail.get_by_role("button", name="Scale").click()
        refused = detail.get_by_role("alert")
        refused.wait_for(timeout=SLOW)
        assert ("4 replicas with 2 running or queued already are 2 more sessions: your limits "
                "leave room for 0 more") in refused.inner_text()
        assert page_tools.endpoint_of(hub, NAME)["replicas"] == 2
    finally:
        hub.call("DELETE", f"endpoints/{ep['id']}", "bob")
        eventually(lambda: page_tools.endpoint_of(hub, NAME) is None, timeout=120, interval=0.5)


def test_bobs_lab_shows_its_use_now_under_the_shipped_settings(serving_lab):
    page, hub = serving_lab.page, serving_lab.hub
    policy = _ok(hub.call("GET", "users/bob", "admin"), 200)["resource_policy"]
    rules = _ok(hub.call("GET", f"resource-policies/{policy}", "admin"), 200)
    assert not rules.get("utilization_thresholds"), rules  # no rule reads it
    [lab] = [a for a in _ok(hub.call("GET", "allocations?user=bob&state=allocated", "bob"), 200)
             if a.get("server_name") == LAB_SERVER]
    panel = show_panel(page, "jp-hubgrid-sessions")
    panel.locator(".jp-hubgrid-header").get_by_role("button", name="Read again").click()
    row = panel.locator(f'.jp-hubgrid-session[data-session="{lab["id"]}"]')
    row.wait_for(timeout=SLOW)
    row.get_by_role("button", name="Details").click()
    detail = page.locator(f"#jp-hubgrid-detail-{lab['id']}")
    use = detail.get_by_role("table", name="use now")
    cpu = use.locator('tr[data-field="cpu"] td')
    # two readings make a CPU figure; the view reads again every 5 s
    page_tools.until_text(page, cpu, "/% of 0.5 cores$/.test(t)")
    assert re.fullmatch(r"\d+(\.\d+)? % of 0\.5 cores", cpu.inner_text()), cpu.inner_text()
    mem = use.locator('tr[data-field="mem"] td').inner_text()
    assert re.fullmatch(r"(≈ )?\d+(\.\d+)? [KMG]iB of \d+(\.\d+)? [MG]iB", mem), mem
    assert detail.locator('[data-field="usage-note"]').count() == 0
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
