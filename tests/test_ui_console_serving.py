"""The console's Serving section (Serving, Model Store, Chat) in a real
headless Chromium through the REAL hub, proxy, service and gateway on the
shared Docker hub (serving_fixtures.serving: group ``serve``, the inference
image, bob's echo folder), with no Jupyter server of the caller's running:

- the superadmin, logged in through the hub's form, opens the console's
  Model Store, publishes a folder of his own from it (the form preselected
  his folder, not bob's, and offers every domain and each domain), finds its
  card, and unpublishes it after a confirmation; no server of his started;
- bob's echo-chat endpoint is on his console's Serving page with its detail;
  on the console's Chat he picks it and the answer streams in through the
  service's forward to the gateway (``console/hubgrid/gateway/``, his own
  login token, never in the page), text staying text; a call to that
  forward without the page's ``_xsrf`` token is not authenticated by the
  cookie, and a path other than the Chat's is refused; no server of his
  started.

Screenshots console-modelstore.png, console-serving.png, console-chat.png
(into $HUBGRID_SCREENSHOTS, e.g. docs/images).
"""

from __future__ import annotations

import uuid

from hub_fixtures import _ok
from serving_fixtures import INFERENCE, chat_answer, model_folder
from session_fixtures import eventually
from test_replicas_docker import endpoint, until_state
from ui_console_checks import CONSOLE, console_ready, hub_login, in_page, servers_of
from ui_fixtures import SLOW, chromium, screenshot  # noqa: F401

SAID = "hi <i>console</i>"


def open_page(page, hub, name: str):
    """The console at ``#name``, its navigation ready; the page's root."""
    page.goto(f"{hub.url}{CONSOLE}#{name}")
    nav = console_ready(page)
    links = nav.locator('[data-section="serving"] .jp-hubgrid-console-page-link')
    assert links.all_inner_texts() == ["Serving", "Model Store", "Chat"]
    root = page.locator(f'[data-console-page="{name}"]')
    root.wait_for(timeout=SLOW)
    return root


def test_console_an_admin_publishes_and_unpublishes_with_no_server(
        serving, chromium, tmp_path):  # noqa: F811
    hub = serving.hub
    name = f"cpub{uuid.uuid4().hex[:5]}"
    folder = model_folder(hub, "admin", name, "echo-chat", {})
    assert servers_of(hub, "admin") == {}
    context, page = hub_login(chromium, hub, "admin")
    try:
        store = open_page(page, hub, "model-store")
        store.get_by_role("button", name="Publish…").click()
        form = store.locator(".jp-hubgrid-store-publish")
        form.wait_for(timeout=SLOW)
        # his own folder first and chosen; bob's echo folder listed, marked, not chosen
        assert form.get_by_label("Model folder").input_value() == folder
        options = form.get_by_label("Model folder").locator("option")
        assert f"{name} (yours)" in options.all_inner_texts()
        assert "echo (bob's)" in options.all_inner_texts()
        domains = [d["name"] for d in _ok(hub.call("GET", "domains", "admin"), 200) if d["active"]]
        scopes = form.get_by_label("Published to").locator("option").all_inner_texts()
        assert scopes[0] == "every domain" and len(domains) >= 2
        assert sorted(scopes[1:]) == sorted(f"domain {d}" for d in domains)
        form.get_by_label("Image").select_option(INFERENCE)
        form.get_by_label("Published to").select_option(label="domain acme")
        screenshot(page, "console-modelstore-publish.png", tmp_path)
        form.get_by_role("button", name="Publish").click()
        card = store.locator(f'.jp-hubgrid-store-card[data-model="{name}"]')
        card.wait_for(timeout=SLOW)
        [entry] = [m for m in _ok(hub.call("GET", "model-store", "admin"), 200)
                   if m["name"] == name]
        assert (entry["domain"], entry["published_by"], entry["folder"]["id"]) == (
            "acme", "admin", folder)
        assert name in [m["name"] for m in _ok(hub.call("GET", "model-store", "bob"), 200)]
        card.click()
        store.locator(".jp-hubgrid-store-detail").wait_for(timeout=SLOW)
        screenshot(page, "console-modelstore.png", tmp_path)

        store.locator(".jp-hubgrid-store-unpublish").click()
        page.locator(".jp-Dialog").get_by_role("button", name="Unpublish").click()
        card.wait_for(state="detached", timeout=SLOW)
        assert name not in [m["name"] for m in _ok(hub.call("GET", "model-store", "admin"), 200)]
        assert servers_of(hub, "admin") == {}  # all of it without a Lab
    finally:
        context.close()
        for m in _ok(hub.call("GET", "model-store", "admin"), 200):
            if m["name"] == name:
                hub.call("DELETE", f"model-store/{m['id']}", "admin")
        hub.call("DELETE", f"vfolders/{folder}", "admin")


def test_console_serving_lists_bobs_endpoint_and_chat_answers_through_the_gateway(
        serving, chromium, tmp_path):  # noqa: F811
    hub = serving.hub
    name = f"cchat{uuid.uuid4().hex[:5]}"
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": name, "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "256M"},
        "replicas": 1}), 201)
    before_chats = {c["id"] for c in _ok(hub.call("GET", "chats", "bob"), 200)}
    # bob's servers other than endpoints' replicas (those are servers of his too: ep-...)
    labs = lambda: {s for s in servers_of(hub, "bob") if not s.startswith("ep-")}  # noqa: E731
    before = labs()
    context, page = hub_login(chromium, hub, "bob")
    try:
        until_state(hub, e["id"], "running", 1)
        listed = open_page(page, hub, "serving")
        row = listed.locator(f'tr[data-endpoint="{name}"]')
        row.wait_for(timeout=SLOW)
        assert row.get_attribute("data-project") == "ml"
        row.locator("a").first.click()
        detail = listed.locator(f'.jp-hubgrid-serving-detail[data-endpoint="{name}"]')
        detail.wait_for(timeout=SLOW)
        assert "running" in detail.locator('dd[data-field="state"]').inner_text().lower()
        screenshot(page, "console-serving.png", tmp_path)

        # the forward: the cookie counts only with the page's _xsrf; only the Chat's paths
        body = '{"model": "%s", "messages": [{"role": "user", "content": "x"}]}' % name
        refused = in_page(page, "POST", "v1/chat/completions", body, xsrf=False, under="gateway")
        assert refused["status"] == 401
        assert in_page(page, "GET", "v1/embeddings", under="gateway")["status"] == 404
        models = in_page(page, "GET", "v1/models", under="gateway")
        assert models["status"] == 200 and name in models["body"], models

        chat = open_page(page, hub, "chat")
        content = chat_answer(page, chat, name, SAID,
                              "console/hubgrid/gateway/v1/chat/completions")
        assert content.inner_text() == f"echo: {SAID}"
        assert content.locator("i").count() == 0  # text, not markup
        # the page holds no hub token: none in its cookies' readable part nor its storage
        readable = page.evaluate(
            "document.cookie + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)")
        assert "hubgrid-gateway" not in readable and "token" not in readable.lower()
        screenshot(page, "console-chat.png", tmp_path)
        assert labs() == before  # no Lab started for any of it
    finally:
        context.close()
        for c in _ok(hub.call("GET", "chats", "bob"), 200):
            if c["id"] not in before_chats:
                hub.call("DELETE", f"chats/{c['id']}", "bob")
        hub.call("DELETE", f"endpoints/{e['id']}", "bob")
        eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)
