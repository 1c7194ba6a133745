"""The Model Store page in Lab, in a real headless Chromium on
the shared Docker hub (serving_fixtures.serving_lab: bob's Lab in a Docker
session). The superadmin publishes a folder of their own (the echo-chat
stand-in) twice: to acme as it is, and to every domain with a replica too
big for any node. bob finds both cards, is told by the check why the big
one cannot be deployed (at its field, nothing made), deploys the other in
one click and is told which endpoint he made; he sees no Publish. The
endpoint is removed and both unpublished after. Made a domain admin for
a while, bob publishes his own echo folder from the page (a bad field is
said before any call) and unpublishes it after a confirmation.
Screenshots for docs/serving.md.
"""

from __future__ import annotations

from hub_fixtures import _ok
from serving_fixtures import INFERENCE, model_folder
from session_fixtures import eventually
from ui_fixtures import SLOW, screenshot

PAGE = ".jp-hubgrid-store-page"
NAME = "uistore"


def open_store(page):
    """The page, opened from the command palette, and read again. Lab may
    still be restoring its last layout (the pages other runs left open)
    when a module starts: a widget it opens takes the focus, which closes
    the palette, and its shortcut toggles the palette; each step is tried
    again until the page shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    palette = page.locator(".lm-CommandPalette-input")
    active = page.locator(".lm-CommandPalette-item.lm-mod-active"
                          "[data-command='hubgrid:show-model-store']")
    store = page.locator(PAGE)
    for _ in range(6):
        try:
            page.keyboard.press("Escape")
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("Control+Shift+C")
            palette.wait_for(state="visible", timeout=5000)
            palette.fill("hubgrid: Model Store", timeout=5000)
            active.wait_for(timeout=5000)  # Enter runs the active item
            palette.press("Enter", timeout=5000)
            store.wait_for(timeout=10000)
            break
        except PlaywrightTimeout:
            continue
    store.wait_for(timeout=SLOW)
    store.get_by_role("button", name="Refresh").click()
    return store


def close_store(page) -> None:
    """Close the page's tab: the next module (and the next run's restore of
    the layout) finds the Lab as it was."""
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="Model Store")
    if tab.count():
        tab.first.locator(".lm-TabBar-tabCloseIcon").click()
        tab.first.wait_for(state="detached", timeout=SLOW)


def endpoints_named(hub, name: str) -> list[dict]:
    return [e for e in _ok(hub.call("GET", "endpoints?project=ml", "bob"), 200)
            if e["name"] == name]


def test_bob_deploys_from_the_model_store_in_one_click(serving_lab, tmp_path):
    page, hub = serving_lab.page, serving_lab.hub
    folder = model_folder(hub, "admin", NAME, "echo-chat", {})
    small = _ok(hub.call("POST", "model-store", "admin", json={
        "folder": folder, "image": INFERENCE, "domain": "acme", "name": NAME}), 201)
    big = _ok(hub.call("POST", "model-store", "admin", json={
        "folder": folder, "image": INFERENCE, "name": "uibig",
        "slots": {"cpu": "16", "mem": "1G"}}), 201)
    try:
        deployed(page, hub, small, tmp_path)
    finally:
        for e in endpoints_named(hub, NAME):
            hub.call("DELETE", f"endpoints/{e['id']}", "bob")
        assert eventually(lambda: not endpoints_named(hub, NAME), timeout=120, interval=0.5)
        for entry in (small, big):
            hub.call("DELETE", f"model-store/{entry['id']}", "admin")
        hub.call("DELETE", f"vfolders/{folder}", "admin")


def deployed(page, hub, small, tmp_path):
    store = open_store(page)
    cards = store.locator(".jp-hubgrid-store-card")
    store.locator(f'.jp-hubgrid-store-card[data-model="{NAME}"]').wait_for(timeout=SLOW)
    assert sorted(cards.evaluate_all("els => els.map(e => e.dataset.model)")) == ["uibig", NAME]
    card = store.locator(f'.jp-hubgrid-store-card[data-model="{NAME}"]')
    assert "Echo chat (stand-in)" in card.inner_text()
    assert "text-generation" in card.inner_text() and "BSD-3-Clause" in card.inner_text()
    assert "cpu 0.5 · mem 256 MiB" in card.inner_text()
    assert store.get_by_role("button", name="Publish…").count() == 0  # bob is no admin

    # the search keeps what matches every word
    search = store.get_by_label("Search models")
    search.fill("no such model")
    store.locator(".jp-hubgrid-store-empty").wait_for(timeout=SLOW)
    search.fill("stand-in chat")
    card.wait_for(timeout=SLOW)

    # the big one: the check refuses, at Replicas, with the group's largest node; nothing made
    store.locator('.jp-hubgrid-store-card[data-model="uibig"]').click()
    detail = store.locator(".jp-hubgrid-store-detail")
    form = detail.locator(".jp-hubgrid-store-deploy")
    form.wait_for(timeout=SLOW)
    assert "serve" in form.get_by_label("Resource group").locator("option").all_inner_texts()
    form.get_by_label("Resource group").select_option("serve")
    form.get_by_label("Project").select_option("ml")
    form.get_by_label("Endpoint name").fill(NAME)
    form.get_by_role("button", name="Deploy").click()
    refused = form.locator('.jp-hubgrid-store-problem[data-field="slots.cpu"]')
    refused.wait_for(timeout=SLOW)
    assert "the largest node of resource group serve has 8" in refused.inner_text()
    assert endpoints_named(hub, NAME) == []
    screenshot(page, "lab-modelstore-refused.png", tmp_path)

    # the one that fits: one click, and the page names the endpoint made
    card.click()
    form = detail.locator(".jp-hubgrid-store-deploy")
    form.wait_for(timeout=SLOW)
    assert form.locator(".jp-hubgrid-store-problem").count() == 0
    form.get_by_label("Resource group").select_option("serve")
    form.get_by_label("Project").select_option("ml")
    form.get_by_label("Endpoint name").fill(NAME)
    form.get_by_role("button", name="Deploy").click()
    made = detail.locator(".jp-hubgrid-store-made")
    made.wait_for(timeout=SLOW)
    assert f"Endpoint {NAME} made in project ml" in made.inner_text()
    assert f"as model {NAME}" in made.locator('[data-field="call-as"]').inner_text()
    [e] = endpoints_named(hub, NAME)
    assert e["store_model"] == small["id"] and e["model_folder"]["id"] == small["folder"]["id"]
    assert e["created_by"] == "bob" and e["slots"]["cpu"] == "0.5"
    screenshot(page, "lab-modelstore-deployed.png", tmp_path)


def test_an_admin_publishes_and_unpublishes_from_the_page(serving_lab):
    page, serving, hub = serving_lab.page, serving_lab.serving, serving_lab.hub
    _ok(hub.call("PATCH", "users/bob", "admin", json={"role": "domain-admin"}), 200)
    try:
        published(page, serving, hub)
    finally:
        _ok(hub.call("PATCH", "users/bob", "admin", json={"role": "user"}), 200)
        assert _ok(hub.call("GET", "me", "bob"), 200)["role"] == "user"
        close_store(page)
        for m in _ok(hub.call("GET", "model-store", "admin"), 200):
            if m["name"] == "uipub":
                hub.call("DELETE", f"model-store/{m['id']}", "admin")


def published(page, serving, hub):
    store = open_store(page)
    publish = store.get_by_role("button", name="Publish…")

    def admin_now():
        store.get_by_role("button", name="Refresh").click()
        page.wait_for_timeout(500)
        return publish.count() == 1
    assert eventually(admin_now, timeout=60, interval=1)
    publish.click()
    form = store.locator(".jp-hubgrid-store-publish")
    form.wait_for(timeout=SLOW)
    assert form.get_by_label("Published to").locator("option").all_inner_texts() == ["domain acme"]
    # the registry's inference images only (other modules of the run may add theirs)
    images = form.get_by_label("Image").locator("option").all_inner_texts()
    assert INFERENCE in images and "hubgrid/base:latest" not in images
    form.get_by_label("Image").select_option(INFERENCE)
    form.get_by_label("Model folder").select_option(serving.echo)
    form.get_by_label("Name").fill("uipub")
    form.get_by_label("CPU per replica").fill("1")
    form.get_by_role("button", name="Publish").click()
    form.locator('.jp-hubgrid-store-problem[data-field="slots"]').wait_for(timeout=SLOW)
    form.get_by_label("CPU per replica").fill("")
    form.get_by_role("button", name="Publish").click()
    card = store.locator('.jp-hubgrid-store-card[data-model="uipub"]')
    card.wait_for(timeout=SLOW)
    assert form.count() == 0
    [entry] = [m for m in _ok(hub.call("GET", "model-store", "bob"), 200) if m["name"] == "uipub"]
    assert (entry["domain"], entry["published_by"]) == ("acme", "bob")
    assert entry["folder"]["id"] == serving.echo and entry["slots"]["cpu"] == "0.5"

    # unpublish, after a confirmation
    card.click()
    store.locator(".jp-hubgrid-store-unpublish").click()
    page.locator(".jp-Dialog").get_by_role("button", name="Unpublish").click()
    card.wait_for(state="detached", timeout=SLOW)
    assert not [m for m in _ok(hub.call("GET", "model-store", "bob"), 200) if m["name"] == "uipub"]
