"""The Chat page in Lab, in a real headless Chromium on the shared
Docker hub (serving_fixtures.serving_lab: bob's Lab in a Docker session):
bob picks his echo-chat endpoint's model, types, and the answer streams in
through the Lab's forward (``hubgrid/gateway/``, server-sent events) and the
gateway (bob's own hub token); text stays text; the conversation is on the
server, so after a reload (another browser alike) it is listed and reads
back; rename and delete from the page. Screenshot for docs/serving.md.
"""

from __future__ import annotations

from hub_fixtures import _ok
from serving_fixtures import INFERENCE, chat_answer
from session_fixtures import eventually
from test_replicas_docker import endpoint, until_state
from ui_fixtures import SLOW, screenshot, tab

PAGE = ".jp-hubgrid-chat"
SAID = "hello <b>bold</b> world"


def open_chat(page):
    """The page, opened from the command palette (after a reload Lab may have
    restored it already; its key binding works once Lab has the focus)."""
    chat = page.locator(PAGE)
    palette = page.locator(".lm-CommandPalette-input")

    def palette_open():
        if chat.is_visible():
            return True
        page.locator("#jp-main-dock-panel").click(position={"x": 5, "y": 5})
        page.keyboard.press("Control+Shift+C")
        try:
            palette.wait_for(state="visible", timeout=3000)
        except Exception:  # noqa: BLE001 - not bound yet: again
            return False
        return True
    assert eventually(palette_open, timeout=SLOW / 1000, interval=0.5)
    if not chat.is_visible():
        palette.fill("hubgrid: Chat")
        page.locator(".lm-CommandPalette-item", has_text="hubgrid: Chat").first.click()
    chat.wait_for(timeout=SLOW)
    return chat


def no_news(page):
    """Lab's "news?" toast sits over the page's bottom right (the Send button)."""
    news = page.locator(".Toastify__toast", has_text="Jupyter news")
    if news.count():
        news.get_by_role("button", name="No", exact=True).click()
        news.wait_for(state="detached", timeout=SLOW)


def chats_of(hub) -> list[dict]:
    return _ok(hub.call("GET", "chats", "bob"), 200)


def test_bob_chats_with_his_echo_endpoint_and_finds_the_conversation_again(serving_lab, tmp_path):
    page, serving, hub = serving_lab.page, serving_lab.serving, serving_lab.hub
    name = "uichat"
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": name, "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "256M"},
        "replicas": 1}), 201)
    before = {c["id"] for c in chats_of(hub)}
    try:
        until_state(hub, e["id"], "running", 1)
        chatted(page, hub, name, tmp_path, serving_lab.lab_url)
    finally:
        for c in chats_of(hub):
            if c["id"] not in before:
                hub.call("DELETE", f"chats/{c['id']}", "bob")
        hub.call("DELETE", f"endpoints/{e['id']}", "bob")
        eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)


def chatted(page, hub, name, tmp_path, lab_url):
    chat = open_chat(page)
    content = chat_answer(page, chat, name, SAID, "hubgrid/gateway/v1/chat/completions",
                          before_send=lambda: no_news(page))
    assert content.inner_text() == f"echo: {SAID}"
    assert content.locator("b").count() == 0  # text, not markup
    title = SAID  # the first message titles it
    item = chat.locator(".jp-hubgrid-chat-item", has_text=title)
    item.wait_for(timeout=SLOW)
    # kept on the server: both messages, in order
    [mine] = [c for c in chats_of(hub) if c["title"] == title]
    kept = _ok(hub.call("GET", f"chats/{mine['id']}", "bob"), 200)
    assert [(m["role"], m["content"]) for m in kept["messages"]] == [
        ("user", SAID), ("assistant", f"echo: {SAID}")]
    assert kept["endpoint_name"] == name and kept["model"] == name
    screenshot(page, "lab-chat.png", tmp_path)

    # a reload (as another browser would): the conversation is listed and reads back
    page.goto(lab_url)
    tab(page, "jp-hubgrid-summary").wait_for(timeout=SLOW)
    chat = open_chat(page)
    chat.locator(".jp-hubgrid-chat-item", has_text=title).locator(
        ".jp-hubgrid-chat-title").click()
    shown = chat.locator(".jp-hubgrid-chat-message .jp-hubgrid-chat-content")
    eventually(lambda: shown.count() == 2, timeout=30, interval=0.3)
    assert shown.all_inner_texts() == [SAID, f"echo: {SAID}"]

    # rename, then delete (a second click confirms)
    item = chat.locator(f'.jp-hubgrid-chat-item[data-id="{mine["id"]}"]')
    item.get_by_role("button", name="Rename").click()
    item.get_by_label("Title").fill("Echo test")
    item.get_by_role("button", name="Save").click()
    assert eventually(lambda: _ok(hub.call("GET", f"chats/{mine['id']}", "bob"), 200)["title"]
                      == "Echo test", timeout=30, interval=0.3)
    item.locator(".jp-hubgrid-chat-title", has_text="Echo test").wait_for(timeout=SLOW)
    item.get_by_role("button", name="Delete").click()
    item.get_by_role("button", name="Confirm delete").click()
    assert eventually(lambda: hub.call("GET", f"chats/{mine['id']}", "bob").status_code == 404,
                      timeout=30, interval=0.3)
    item.wait_for(state="detached", timeout=SLOW)
