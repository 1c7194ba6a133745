"""The openai client from a notebook in a Docker session, as a newcomer
follows the docs: in a real headless Chromium on the shared Docker hub
(serving_fixtures.serving_lab: bob's Lab in an isolated Docker session, a
network of its own), bob's echo-chat endpoint runs; the Serving page gives
the OpenAI base URL that works from this Lab (the session's relay on its own
loopback, which the browser's origin is not) and a snippet; the snippet,
pasted into a notebook, runs there with the image's openai client and gets
the echo answer; ``OpenAI()`` finds the same URL in ``$OPENAI_BASE_URL``;
the hub's public URL answers nothing from inside; ``hubgrid serve show`` in
the session prints the relay's URL too. Screenshot for docs/serving.md.
"""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from hub_fixtures import _ok
from serving_fixtures import INFERENCE
from session_fixtures import eventually
from test_replicas_docker import endpoint, until_state
from test_ui_serving import open_serving, until_text
from ui_fixtures import SLOW, screenshot

NAME = "uinotebook"
NOTEBOOK = "openai-call.ipynb"
#: the end of the cell's output, whatever happened before it
DONE = "CELL-DONE"


def in_page(page, method: str, url: str, body: str | None = None) -> dict:
    """``method`` on ``url`` from the page (its cookies and XSRF token), as Lab does."""
    return page.evaluate("""async ([method, url, body]) => {
        const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
        const r = await fetch(url, {method, body, headers: {
            'X-XSRFToken': decodeURIComponent(xsrf), 'Content-Type': 'application/json'}});
        return {status: r.status, body: await r.text()};
    }""", [method, url, body])


def cell_source(snippet: str, public: str) -> str:
    """The page's snippet as pasted, then what else the docs promise from a notebook."""
    return "\n".join([
        snippet,
        "import subprocess",
        "from openai import APIConnectionError",
        'print("RELAY", os.environ["HUBGRID_RELAY_PORT"])',
        'print("ENV", os.environ["OPENAI_BASE_URL"])',
        "bare = OpenAI(api_key=os.environ['JUPYTERHUB_API_TOKEN'])  # $OPENAI_BASE_URL",
        f"said = bare.chat.completions.create(model={NAME!r}, "
        "messages=[{'role': 'user', 'content': 'from the environment'}])",
        'print("BARE", said.choices[0].message.content)',
        "try:",
        f"    OpenAI(base_url={public!r}, api_key='x', max_retries=0, timeout=10).models.list()",
        '    print("PUBLIC answered")',
        "except APIConnectionError:",
        '    print("PUBLIC unreachable")',
        f"shown = subprocess.run(['hubgrid', 'serve', 'show', {NAME!r}], capture_output=True, "
        "text=True)",
        'print("SHOW", shown.returncode, shown.stdout, shown.stderr)',
        f"print({DONE!r})"])


def notebook(source: str) -> str:
    return json.dumps({"type": "notebook", "content": {
        "cells": [{"cell_type": "code", "execution_count": None, "id": "call", "metadata": {},
                   "outputs": [], "source": source}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}})


def run_first_cell(page) -> str:
    """Run the notebook's cell (again while the kernel was not connected yet
    and it did not start); its whole output once it printed DONE or failed."""
    editor = page.locator(".jp-Cell .jp-InputArea-editor").first
    editor.wait_for(timeout=SLOW)
    choose = page.locator(".jp-Dialog .jp-mod-accept")  # Lab asking which kernel
    idle = page.locator(".jp-StatusBar-TextItem", has_text="| Idle")
    idle.or_(choose).first.wait_for(timeout=SLOW)
    if choose.count():
        choose.click()
    prompt = page.locator(".jp-Cell .jp-InputPrompt").first
    for _ in range(6):
        editor.click()
        page.keyboard.press("Control+Enter")
        try:
            expect(prompt).to_have_text(re.compile(r"\[(\*|\d+)\]"), timeout=10_000)
            break
        except AssertionError:
            continue
    outputs = page.locator(".jp-OutputArea-output")

    def ended():
        text = "\n".join(outputs.all_inner_texts())
        return DONE in text or "Traceback" in text or "Error" in text.split("SHOW")[0]
    assert eventually(ended, timeout=SLOW / 1000, interval=1), outputs.all_inner_texts()
    return "\n".join(outputs.all_inner_texts())


def test_a_notebook_in_a_docker_session_calls_an_endpoint_with_the_openai_client(
        serving_lab, tmp_path):
    page, serving, hub = serving_lab.page, serving_lab.serving, serving_lab.hub
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": NAME, "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "256M"},
        "replicas": 1}), 201)
    server = serving_lab.lab_url.removesuffix("/lab")
    try:
        until_state(hub, e["id"], "running", 1)
        called(page, hub, server, tmp_path)
    finally:
        forget_notebook(page, server)
        hub.call("DELETE", f"endpoints/{e['id']}", "bob")
        eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)


def forget_notebook(page, server: str) -> None:
    """The notebook's kernel stopped, the file deleted, and a Lab without it
    (the Lab tests after this one share bob's server: none restores it)."""
    if page.locator(".jp-mod-dirty").count():  # else Lab asks before it is left
        page.keyboard.press("Control+s")
        page.locator(".jp-mod-dirty").first.wait_for(state="detached", timeout=SLOW)
    page.goto(server + "/lab?reset")
    page.locator(".jp-LabShell").wait_for(timeout=SLOW)
    listed = in_page(page, "GET", server + "/api/sessions")
    for s in json.loads(listed["body"]) if listed["status"] == 200 else []:
        if s.get("path", "").endswith(NOTEBOOK):
            in_page(page, "DELETE", f"{server}/api/sessions/{s['id']}")
    in_page(page, "DELETE", f"{server}/api/contents/{NOTEBOOK}")


def called(page, hub, server, tmp_path):
    public = f"{hub.url}/services/hubgrid-gateway/v1"
    # the Serving page: the URL from this Lab is the relay's, not the browser's
    panel = open_serving(page)
    row = panel.locator(f'tr[data-endpoint="{NAME}"]')
    row.wait_for(timeout=SLOW)
    row.get_by_role("link", name=NAME).click()
    detail = panel.locator(f'.jp-hubgrid-serving-detail[data-endpoint="{NAME}"]')
    lab_base = detail.locator('[data-field="openai-lab"] code')
    lab_base.wait_for(timeout=SLOW)
    base = lab_base.inner_text()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/services/hubgrid-gateway/v1", base), base
    assert base != public  # what the docs used to say: refused inside the session
    assert detail.locator('[data-field="openai"] code').inner_text() == public  # from outside
    snippet = detail.locator('[data-field="snippet"]').inner_text()
    assert f'base_url="{base}"' in snippet and 'os.environ["JUPYTERHUB_API_TOKEN"]' in snippet
    assert f'model="{NAME}"' in snippet
    until_text(page, detail.locator('[data-field="health"]'), "t === 'healthy: 1 of 1 up'")
    detail.locator(".jp-hubgrid-serving-snippet").scroll_into_view_if_needed()
    screenshot(page, "lab-serving-openai.png", tmp_path)

    # the snippet, pasted into a notebook of this Lab, run in its kernel
    r = in_page(page, "PUT", f"{server}/api/contents/{NOTEBOOK}",
                notebook(cell_source(snippet, public)))
    assert r["status"] in (200, 201), r
    page.goto(f"{server}/lab/tree/{NOTEBOOK}")
    out = run_first_cell(page)
    lines = out.splitlines()
    assert "echo: hello" in lines, out  # the snippet's answer, through the relay
    [relay] = [line.split()[1] for line in lines if line.startswith("RELAY ")]
    assert base == f"http://127.0.0.1:{relay}/services/hubgrid-gateway/v1"
    assert f"ENV {base}" in lines, out
    assert "BARE echo: from the environment" in lines, out
    assert "PUBLIC unreachable" in lines, out
    # the hubgrid command in the session finds the same gateway
    assert "SHOW 0" in out and f'client = OpenAI(base_url="{base}",' in out, out
    assert re.search(r"OpenAI base URL\s+" + re.escape(base), out), out
    screenshot(page, "lab-notebook-openai.png", tmp_path)
