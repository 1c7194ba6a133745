"""The ops admin pages in a real headless Chromium through the
REAL hub, proxy and service (tests/ui_fixtures.py): one Lab start for the
superadmin ``admin`` and one for ``ada`` (acme's domain admin).

A fresh resource group with two declared nodes (n1, n2: 4 CPUs, 2 GPUs
each) is made through the API; gina (globex) holds half a GPU on n1 before
n2 exists. Then, from the pages:

- admin grants the group to acme (Grants form), drains n1 (its switch; the
  service's node says ``schedulable: false``, until_empty shown), and a
  session alice starts through the API lands on n2: n2's GPU map and
  session list show it, n1 keeps gina's;
- two requests bigger than the free capacity wait; the Scheduler page lists
  them in order with their reasons; admin moves the second to the front:
  the PATCH answers position 0 and the access log has the ``queue.change``;
- ada sees alice's holder by name, gina's share only as "other domains"
  and her pending request only as an anonymous position; "gina" appears
  nowhere on ada's pages;
- Sessions (all) reads again by itself: a session alice starts through the
  API while it is open shows up without a click;
- admin stops ada's Lab server from Sessions (all): POST
  allocations/{id}/stop answers 202, the hub stops it, the allocation ends.

Screenshots lab-admin-groups.png, lab-admin-queue.png, lab-admin-sessions.png,
lab-admin-images.png and lab-admin-groups-domain-admin.png (into
$HUBGRID_SCREENSHOTS, e.g. docs/images). Without Chromium or playwright these
skip, and fail in CI (``CI=true``).
"""

from __future__ import annotations

import uuid
from urllib.parse import urlparse

import pytest

from hub_fixtures import hub, world  # noqa: F401
from session_fixtures import eventually, server_of
from ui_fixtures import SLOW, _ok, chromium, open_lab, screenshot, stop_servers, tab  # noqa: F401

pytestmark = [pytest.mark.hub, pytest.mark.parametrize("hub", ["sqlite"], indirect=True)]

MENU = "hubgrid Admin"


def _lab(world, chromium, user: str, project: str, group: str):  # noqa: F811
    """``user``'s browser context in Lab, the server started in ``project`` on ``group``."""
    return open_lab(world, chromium, user, project, group,
                    viewport={"width": 1500, "height": 1100})


def _is(response, method: str, path: str) -> bool:
    """The page's call ``method path`` (Lab adds a cache-busting query)."""
    return response.request.method == method and urlparse(response.url).path.endswith(path)


def open_page(page, label: str, selector: str):
    """An ops page from the hubgrid Admin menu."""
    page.locator(".lm-MenuBar-itemLabel", has_text=MENU).click()
    page.locator(".lm-Menu-itemLabel", has_text=label).click()
    found = page.locator(selector)
    found.wait_for(timeout=SLOW)
    return found


@pytest.fixture(scope="module")
def cluster(world):  # noqa: F811
    """A fresh group: n1 with gina's half GPU, then n2; an acme project for ada."""
    hub = world.hub
    tag = uuid.uuid4().hex[:6]
    group, n1, n2, project = f"ops{tag}", f"ops{tag}-n1", f"ops{tag}-n2", f"ops{tag}"
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": group}), 201)
    _ok(hub.call("PUT", f"resource-groups/{group}/grants", "admin", json={"domain": "globex"}), 201)
    node = {"resource_group": group, "capacity": {"cpu": "4", "mem": "8G"},
            "devices": [{"index": i, "model": "A100"} for i in range(2)]}
    # n1's MPS daemon is down, and an admin marked it "shares not enforced"
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": n1, **node, "devices": [{"index": i, "model": "A100", "memory": 80 * 2**30}
                                        for i in range(2)],
        "sharing_mode": "mps", "share_check": "MPS daemon not running",
        "shares_unenforced": True}), 201)
    gina = _ok(hub.call("POST", "allocations", "gina", json={
        "project": "lab", "resource_group": group, "slots": {"cpu": "1", "gpu.shares": "0.5"}}), 201)
    assert gina["node"] == n1
    _ok(hub.call("POST", "nodes", "admin", json={"name": n2, **node}), 201)
    _ok(hub.call("POST", "domains/acme/projects", "admin", json={"name": project}), 201)
    _ok(hub.call("PUT", f"domains/acme/projects/{project}/members/ada", "admin"), 201)
    made = {"group": group, "n1": n1, "n2": n2, "project": project, "gina": gina, "ids": [gina["id"]]}
    try:
        yield made
    finally:
        for alloc_id in made["ids"]:
            hub.call("DELETE", f"allocations/{alloc_id}", "admin")
        stop_servers(hub, ("admin", "ada"))


@pytest.fixture(scope="module")
def admin_lab(world, chromium, cluster):  # noqa: F811
    context, page = _lab(world, chromium, "admin", "default", "default")
    try:
        yield page
    finally:
        context.close()


def all_loaded(page, group: str) -> None:
    """Every node card of ``group`` has its GPU holders and sessions (each
    card reads them after it is drawn)."""
    page.wait_for_function(
        """group => {
            const cards = document.querySelectorAll(
                `#jp-hubgrid-admin-groups [data-group="${group}"] [data-node]`);
            return cards.length > 0 && [...cards].every(c => c.dataset.detail === 'loaded');
        }""", arg=group, timeout=SLOW)


def test_superadmin_grants_drains_and_a_new_session_lands_on_the_other_node(
        world, cluster, admin_lab, tmp_path):  # noqa: F811
    hub, page = world.hub, admin_lab
    group, n1, n2 = cluster["group"], cluster["n1"], cluster["n2"]
    groups = open_page(page, "Resource Groups and Nodes", "#jp-hubgrid-admin-groups")
    groups.get_by_label("resource group").select_option(group)
    all_loaded(page, group)
    card1 = groups.locator(f'[data-group="{group}"] [data-node="{n1}"][data-detail="loaded"]')
    card1.wait_for(timeout=SLOW)
    # gina's half GPU on n1, by name for a superadmin; exact bars
    assert f"gina/{cluster['gina']['id'][:8]} (globex/lab): 0.5" in card1.locator('[data-gpu="0"]').inner_text()
    holder = card1.locator(f'.jp-hubgrid-ops-holder[data-allocation="{cluster["gina"]["id"]}"]')
    assert holder.inner_text().endswith(": 0.5, memory cap 40 GiB")
    shares = card1.locator('[data-field="shares"]')
    assert (shares.inner_text(), shares.get_attribute("data-state")) == (
        "GPU sharing: MPS, shares not enforced (MPS daemon not running)", "not-enforced")
    assert holder.get_attribute("title") == f"session {cluster['gina']['id']}"
    assert card1.locator('[data-slot="gpu"] .jp-hubgrid-bar-text').inner_text() == \
        "0.5 of 2 used, 1.5 free"

    # grant acme from the Grants form
    grants = groups.locator(".jp-hubgrid-ops-grants")
    grants.get_by_label("grant kind").select_option("domain")
    grants.get_by_label("grant name").fill("acme")
    with page.expect_response(lambda r: _is(r, "PUT", f"/resource-groups/{group}/grants")) as answer:
        grants.get_by_role("button", name="Grant").click()
    assert answer.value.status == 201, answer.value.text()
    grants.locator('[data-grant="domain acme"]').wait_for(timeout=SLOW)
    assert {"domain": "acme"} in _ok(hub.call("GET", f"resource-groups/{group}", "admin"), 200)["grants"]

    # drain n1 from its switch: asked first (Cancel changes nothing), then drained
    card1.locator(".jp-hubgrid-ops-drain input").click()
    confirm = page.locator(".jp-Dialog", has_text=f"Drain {n1}?")
    confirm.get_by_role("button", name="Cancel").click()
    confirm.wait_for(state="detached", timeout=SLOW)
    assert _ok(hub.call("GET", f"nodes/{n1}", "admin"), 200)["schedulable"] is True
    with page.expect_response(lambda r: _is(r, "PATCH", f"/nodes/{n1}")) as answer:
        card1.locator(".jp-hubgrid-ops-drain input").click()
        confirm.get_by_role("button", name="Drain").click()
    assert answer.value.status == 200, answer.value.text()
    groups.locator(f'[data-node="{n1}"][data-schedulable="false"]').wait_for(timeout=SLOW)
    assert _ok(hub.call("GET", f"nodes/{n1}", "admin"), 200)["schedulable"] is False
    assert "Empty at the sessions' limits" in card1.inner_text()

    # a new session of alice lands on n2, and the page shows it there
    alice = _ok(hub.call("POST", "allocations", "alice", json={
        "project": "ml", "resource_group": group, "slots": {"cpu": "1", "gpu.shares": "0.5"}}), 201)
    cluster["ids"].append(alice["id"])
    assert alice["node"] == n2
    page.locator("#jp-hubgrid-admin-groups").get_by_role("button", name="Refresh").first.click()
    card2 = groups.locator(f'[data-node="{n2}"][data-detail="loaded"]')
    card2.locator(f'.jp-hubgrid-ops-node-sessions tr[data-allocation="{alice["id"]}"]').wait_for(timeout=SLOW)
    assert card2.locator(f'.jp-hubgrid-ops-holder[data-allocation="{alice["id"]}"]').count() == 1
    assert card1.locator(f'[data-allocation="{alice["id"]}"]').count() == 0
    screenshot(page, "lab-admin-groups.png", tmp_path)


def test_queue_shows_waiting_requests_and_a_move_to_the_front_is_logged(
        world, cluster, admin_lab, tmp_path):  # noqa: F811
    hub, page, group = world.hub, admin_lab, cluster["group"]
    waiting = []
    for user, project in (("alice", "ml"), ("gina", "lab")):
        r = hub.call("POST", "allocations", user, json={
            "project": project, "resource_group": group, "slots": {"cpu": "4"}})
        assert r.status_code == 202, r.text
        waiting.append(r.json())
        cluster["ids"].append(r.json()["id"])
    queue = open_page(page, "Scheduler Queue", "#jp-hubgrid-admin-queue")
    section = queue.locator(f'.jp-hubgrid-ops-queue[data-group="{group}"]')
    second = section.locator(f'tr[data-request="{waiting[1]["id"]}"]')
    second.wait_for(timeout=SLOW)
    assert second.get_attribute("data-position") == "1"
    # the request is named as a session (owner/server; an API one by its short id), its id in the title
    who = second.locator('[data-field="session"]')
    assert who.inner_text() == f"gina/{waiting[1]['id'][:8]} (globex/lab)", who.inner_text()
    assert who.get_attribute("title") == f"session {waiting[1]['id']}"
    assert "CPU 4" in second.inner_text()
    screenshot(page, "lab-admin-queue.png", tmp_path)
    with page.expect_response(lambda r: _is(r, "PATCH", f"/queue/{waiting[1]['id']}")) as answer:
        second.get_by_role("button", name="Move").click()
    assert answer.value.status == 200, answer.value.text()
    assert answer.value.json()["position"] == 0
    section.locator(f'tr[data-request="{waiting[1]["id"]}"][data-position="0"]').wait_for(timeout=SLOW)
    entries = _ok(hub.call("GET", "audit?action=queue.change&user=admin&limit=50", "admin"), 200)["entries"]
    mine = [e for e in entries if e["target"] == f"{group}/{waiting[1]['id']}"]
    assert len(mine) == 1 and mine[0]["outcome"] == "success", entries
    assert "position 1 -> 0" in mine[0]["detail"], mine[0]
    # live: a request that comes shows up, and one that leaves the queue (cancelled by its
    # owner here; an admitted one leaves it the same way) goes, by itself, no Refresh
    extra = _ok(hub.call("POST", "allocations", "alice", json={
        "project": "ml", "resource_group": group, "slots": {"cpu": "4"}}), 202)
    cluster["ids"].append(extra["id"])
    row = section.locator(f'tr[data-request="{extra["id"]}"]')
    row.wait_for(timeout=30_000)
    _ok(hub.call("DELETE", f"allocations/{extra['id']}", "alice"), 204)
    row.wait_for(state="detached", timeout=30_000)

    sessions = open_page(page, "Sessions (All)", "#jp-hubgrid-admin-sessions")
    sessions.locator(f'tr[data-allocation="{cluster["gina"]["id"]}"]').wait_for(timeout=SLOW)
    screenshot(page, "lab-admin-sessions.png", tmp_path)
    # the page reads again by itself while shown: a session started now shows up, no click
    later = _ok(hub.call("POST", "allocations", "alice", json={
        "project": "ml", "resource_group": "acme-gpu", "slots": {"cpu": "1", "mem": "1G"}}), 201)
    cluster["ids"].append(later["id"])
    sessions.locator(f'tr[data-allocation="{later["id"]}"]').wait_for(timeout=30_000)
    images = open_page(page, "Images", "#jp-hubgrid-admin-images")
    with page.expect_response(lambda r: _is(r, "POST", "/images/scan")) as answer:
        images.get_by_role("button", name="Rescan engines").click()
    assert answer.value.status == 200, answer.value.text()
    images.locator(".jp-hubgrid-ops-scan li").first.wait_for(timeout=SLOW)
    screenshot(page, "lab-admin-images.png", tmp_path)


def test_domain_admin_sees_only_acme_holders(world, chromium, cluster, admin_lab, tmp_path):  # noqa: F811
    group, n1 = cluster["group"], cluster["n1"]
    context, page = _lab(world, chromium, "ada", cluster["project"], "acme-gpu")
    try:
        groups = open_page(page, "Resource Groups and Nodes", "#jp-hubgrid-admin-groups")
        groups.get_by_label("resource group").select_option(group)
        all_loaded(page, group)
        card1 = groups.locator(f'[data-group="{group}"] [data-node="{n1}"][data-detail="loaded"]')
        card1.wait_for(timeout=SLOW)
        hidden = card1.locator('.jp-hubgrid-ops-holder[data-visible="false"]')
        assert hidden.first.inner_text() == "other domains: 0.5"
        assert "alice (acme/ml)" in groups.inner_text()
        screenshot(page, "lab-admin-groups-domain-admin.png", tmp_path)
        assert "gina" not in groups.inner_text()
        assert "globex" not in groups.inner_text()
        queue = open_page(page, "Scheduler Queue", "#jp-hubgrid-admin-queue")
        section = queue.locator(f'.jp-hubgrid-ops-queue[data-group="{group}"]')
        section.locator('tr[data-visible="false"]').first.wait_for(timeout=SLOW)
        assert section.locator('tr[data-visible="true"]').count() == 1
        assert "another domain's request" in section.inner_text()
        assert "gina" not in queue.inner_text()
    finally:
        context.close()

    # the superadmin stops ada's Lab server from Sessions (all), through the service and the hub
    hub, page = world.hub, admin_lab
    ada = [a for a in _ok(hub.call("GET", "allocations?state=allocated&user=ada", "admin"), 200)
           if a["origin"] == "hub"]
    assert len(ada) == 1, ada
    sessions = open_page(page, "Sessions (All)", "#jp-hubgrid-admin-sessions")
    sessions.locator('input[name="user"]').fill("ada")
    row = sessions.locator(f'tr[data-allocation="{ada[0]["id"]}"]')
    row.wait_for(timeout=SLOW)
    row.get_by_role("button", name="Stop").click()
    with page.expect_response(lambda r: _is(r, "POST", f"/allocations/{ada[0]['id']}/stop")) as answer:
        page.locator(".jp-Dialog").get_by_role("button", name="Stop").click()
    assert answer.value.status == 202, answer.value.text()
    eventually(lambda: server_of(hub, "ada", "") is None, timeout=60)
    eventually(lambda: _ok(hub.call("GET", f"allocations/{ada[0]['id']}", "admin"), 200)["state"]
               == "released", timeout=60)
