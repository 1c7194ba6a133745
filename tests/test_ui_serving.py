"""The Serving page in Lab, in a real headless Chromium on the
shared Docker hub (serving_fixtures.serving_lab: bob's Lab in a Docker
session): bob makes an endpoint of his echo folder from the page (a refused
validate shows its problem at its field and keeps Create off; the fixed form
validates and is created), sees it running and healthy with its URL and
model, makes a token (its secret shown once, and it opens the gateway),
scales it to two replicas, adds an autoscaling rule and removes it, reads
a replica's log, is told why he may not scale alice's endpoint, and
deletes his. Screenshots for docs/serving.md.
"""

from __future__ import annotations

import requests
from playwright.sync_api import TimeoutError as PlaywrightTimeout, expect

from hub_fixtures import _ok
from serving_fixtures import INFERENCE, model_folder
from session_fixtures import eventually
from ui_fixtures import SLOW, screenshot

GATEWAY = "/services/hubgrid-gateway/"
PAGE = ".jp-hubgrid-serving-page"
NAME = "uiecho"


def open_serving(page):
    """The page, opened from its launcher card (a new launcher if none shows)."""
    card = page.locator(".jp-LauncherCard", has_text="Serving").first
    try:
        card.wait_for(timeout=15_000)
    except PlaywrightTimeout:  # another page test closed it
        page.locator(".lm-TabBar-addButton:not(.lm-mod-hidden)").first.click()
        card.wait_for(timeout=SLOW)
    card.click()
    serving = page.locator(PAGE)
    serving.wait_for(timeout=SLOW)
    return serving


def field(form, name: str):
    return form.locator(f'.jp-hubgrid-serving-field[data-field="{name}"]')


def until_text(page, locator, check: str, what: str = "") -> None:
    """Wait until ``check`` (a JS expression of ``t``, the element's text) holds."""
    try:
        page.wait_for_function(f"el => {{ const t = el.textContent; return {check}; }}",
                               arg=locator.element_handle(), timeout=SLOW)
    except PlaywrightTimeout:
        raise AssertionError(f"{check}: the text is {locator.inner_text()!r} {what}") from None


def endpoint_of(hub, name: str) -> dict | None:
    found = [e for e in _ok(hub.call("GET", "endpoints?project=ml", "bob"), 200) if e["name"] == name]
    return found[0] if found else None


def test_bob_serves_his_echo_folder_from_the_serving_page(serving_lab, tmp_path):
    page, serving, hub = serving_lab.page, serving_lab.serving, serving_lab.hub
    # alice's endpoint of the same project (no replicas): bob sees it, may not change it
    alices = model_folder(hub, "alice", "uialice", "echo-chat", {})
    other = _ok(hub.call("POST", "endpoints", "alice", json={
        "name": "uialice", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": alices, "slots": {"cpu": "0.5", "mem": "256M"}, "replicas": 0}), 201)
    try:
        served(page, serving, hub, tmp_path)
    finally:
        hub.call("DELETE", f"endpoints/{other['id']}", "alice")
        hub.call("DELETE", f"vfolders/{alices}", "alice")
        mine = endpoint_of(hub, NAME)
        if mine:
            hub.call("DELETE", f"endpoints/{mine['id']}", "bob")
            eventually(lambda: endpoint_of(hub, NAME) is None, timeout=120, interval=0.5)


def served(page, serving, hub, tmp_path):
    panel = open_serving(page)
    alice_row = panel.locator('tr[data-endpoint="uialice"]')
    alice_row.wait_for(timeout=SLOW)

    # the create form offers only what runs inference: a refused validate says why, at its field
    panel.get_by_role("button", name="New endpoint").click()
    form = panel.locator(".jp-hubgrid-serving-create")
    form.wait_for(timeout=SLOW)
    # the registry's inference images only (other modules of the run may add theirs)
    images = form.get_by_label("Image").locator("option").all_inner_texts()
    assert INFERENCE in images and "hubgrid/base:latest" not in images
    form.get_by_label("Image").select_option(INFERENCE)
    assert "serve" in form.get_by_label("Resource group").locator("option").all_inner_texts()
    form.get_by_label("Name").fill(NAME)
    form.get_by_label("Model folder").select_option(serving.echo)
    form.get_by_label("Project").select_option("ml")
    form.get_by_label("Resource group").select_option("serve")
    form.get_by_label("CPU cores").fill("0.5")
    form.get_by_label("Memory").fill("64G")
    create = form.get_by_role("button", name="Create")
    form.get_by_role("button", name="Validate").click()
    problems = field(form, "mem").locator(".jp-hubgrid-serving-problem")
    problems.first.wait_for(timeout=SLOW)
    assert "the largest node of resource group serve" in field(form, "mem").inner_text()
    expect(create).to_be_disabled()
    # what the page reads itself is said before any call
    form.get_by_label("Replicas").fill("many")
    form.get_by_role("button", name="Validate").click()
    field(form, "replicas").locator(".jp-hubgrid-serving-problem").wait_for(timeout=SLOW)
    form.get_by_label("Replicas").fill("1")
    form.get_by_label("Memory").fill("256M")
    form.get_by_role("button", name="Validate").click()
    form.locator('[data-field="validated"]').wait_for(timeout=SLOW)
    assert form.locator(".jp-hubgrid-serving-problem").count() == 0
    expect(create).to_be_enabled()
    screenshot(page, "lab-serving-create.png", tmp_path)
    # a changed form must be validated again
    form.get_by_label("Replicas").fill("2")
    expect(create).to_be_disabled()
    form.get_by_label("Replicas").fill("1")
    form.get_by_role("button", name="Validate").click()
    form.locator('[data-field="validated"]').wait_for(timeout=SLOW)
    create.click()

    # it is listed and shown; running and healthy once its replica serves
    row = panel.locator(f'tr[data-endpoint="{NAME}"]')
    row.wait_for(timeout=SLOW)
    e = endpoint_of(hub, NAME)
    assert e["created_by"] == "bob" and e["slots"]["cpu"] == "0.5"
    detail = panel.locator(f'.jp-hubgrid-serving-detail[data-endpoint="{NAME}"]')
    detail.wait_for(timeout=SLOW)
    state, health = detail.locator('[data-field="state"]').first, detail.locator('[data-field="health"]')
    until_text(page, state, "t.startsWith('running')")
    until_text(page, health, "t === 'healthy: 1 of 1 up'")
    assert row.locator('[data-field="health"]').inner_text() == "healthy: 1 of 1 up"
    assert row.locator('[data-field="model"]').inner_text() == NAME
    url = f"{hub.url}{GATEWAY}e/{e['id']}/"
    assert detail.locator('[data-field="url"]').inner_text() == url
    assert detail.locator('[data-field="may-change"]').count() == 0
    replica = detail.locator("tr[data-replica]").first
    until_text(page, replica.locator('[data-field="probe"]'), "t.startsWith('up (L7OK')")

    # a token: its secret once, and it opens the gateway
    detail.get_by_label("Expires in days").fill("7")
    detail.get_by_role("button", name="New token").click()
    secret = detail.locator('[data-field="secret"]')
    secret.wait_for(timeout=SLOW)
    token = secret.inner_text()
    assert token.startswith("hge_")
    detail.locator('tr[data-token][data-state="active"]').wait_for(timeout=SLOW)
    screenshot(page, "lab-serving-endpoint.png", tmp_path)

    def models():
        r = requests.get(hub.url + GATEWAY + "v1/models", timeout=30,
                         headers={"Authorization": f"Bearer {token}"})
        return r.status_code == 200 and [m["id"] for m in r.json()["data"]] == [NAME]
    assert eventually(models, timeout=60, interval=0.5)
    detail.get_by_role("button", name="Done").click()
    secret.wait_for(state="detached", timeout=SLOW)
    assert token not in panel.inner_text()  # nowhere else, ever

    # scale to two: both serve
    detail.get_by_label("Replicas wanted").fill("2")
    detail.get_by_role("button", name="Scale").click()
    until_text(page, row.locator('[data-field="replicas"]'), "t === '2 of 2'")
    assert detail.locator("tr[data-replica]").count() >= 2

    # an autoscaling rule: one the page cannot take is said, one it can is kept, then removed
    rules = detail.locator(".jp-hubgrid-serving-autoscaling")
    rules.get_by_label("Threshold").fill("100")
    rules.get_by_label("Min replicas").fill("3")
    rules.get_by_label("Max replicas").fill("2")
    rules.get_by_role("button", name="Add rule").click()
    assert rules.locator('[data-field="rules-error"]').inner_text() == \
        "min_replicas: 3 is more than max_replicas 2"
    rules.get_by_label("Min replicas").fill("1")
    rules.get_by_role("button", name="Add rule").click()
    rules.locator('li[data-rule="0"]').wait_for(timeout=SLOW)
    assert rules.locator('li[data-rule="0"]').inner_text().startswith(
        "in_flight > 100: +1 replica(s), within 1 to 2")
    assert endpoint_of(hub, NAME)["autoscaling"][0]["threshold"] == "100"
    rules.locator('li[data-rule="0"]').get_by_role("button", name="Remove").click()
    rules.locator('li[data-rule="0"]').wait_for(state="detached", timeout=SLOW)
    assert endpoint_of(hub, NAME)["autoscaling"] == []

    # a replica's log: its session's output, in the log view
    replica.get_by_role("button", name="Log").click()
    log = page.locator(".jp-hubgrid-log-lines")
    log.wait_for(timeout=SLOW)
    until_text(page, log, "t.includes('not a language model')")
    screenshot(page, "lab-serving-log.png", tmp_path)
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="Log:").first.locator(
        ".lm-TabBar-tabCloseIcon").click()

    # alice's: bob is told beforehand, and the service's 403 says who may
    alice_row.get_by_role("link", name="uialice").click()
    theirs = panel.locator('.jp-hubgrid-serving-detail[data-endpoint="uialice"]')
    theirs.wait_for(timeout=SLOW)
    assert "only its creator (alice)" in theirs.locator('[data-field="may-change"]').inner_text()
    theirs.get_by_label("Replicas wanted").fill("1")
    theirs.get_by_role("button", name="Scale").click()
    refused = theirs.get_by_role("alert")
    refused.wait_for(timeout=SLOW)
    assert "alice" in refused.inner_text() and "may change" in refused.inner_text()

    # delete, after a confirmation
    row.get_by_role("link", name=NAME).click()
    detail.wait_for(timeout=SLOW)
    detail.get_by_role("button", name="Delete…").click()
    detail.get_by_role("button", name="Keep it").click()
    assert endpoint_of(hub, NAME) is not None
    detail.get_by_role("button", name="Delete…").click()
    detail.get_by_role("button", name="Delete it").click()
    row.wait_for(state="detached", timeout=SLOW)
    assert eventually(lambda: endpoint_of(hub, NAME) is None, timeout=120, interval=0.5)
