"""What every test of serving on the real Docker engine shares:
one inference-only resource group on the shared Docker hub
(docker_fixtures.dock), the inference image registered, and bob's two model
folders (the real all-MiniLM-L6-v2 embeddings model, and the echo-chat
stand-in). Made once per test run: the Docker-replica, gateway and Lab page
tests use it side by side, each with endpoints of its own names.
"""

from __future__ import annotations

import io
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from docker_fixtures import HOSTS, require_image
from hub_fixtures import _ok, require
from session_fixtures import eventually, hub_log, server_of, spawn, wait_ready
from ui_fixtures import CHROMIUM, CHROMIUM_ARGS, SLOW, tab

REPO = Path(__file__).resolve().parent.parent
INFERENCE = "hubgrid/inference:latest"
MODEL_FILES = "/opt/hubgrid/models/all-minilm-l6-v2"
GROUP = "serve"
NODE = "serve-a"


@dataclass
class Serving:
    dock: object  # docker_fixtures' shared hub
    minilm: str  # bob's folder: the real embeddings model
    echo: str  # bob's folder: the echo-chat stand-in
    client: object  # docker APIClient of the group's engine

    @property
    def hub(self):
        return self.dock.hub


def model_files(client) -> dict[str, bytes]:
    """model.onnx and tokenizer.json out of the image (as the example's README does)."""
    cid = client.create_container(INFERENCE, command=["true"])["Id"]
    try:
        stream, _ = client.get_archive(cid, MODEL_FILES + "/.")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            return {Path(m.name).name: tar.extractfile(m).read() for m in tar.getmembers()
                    if m.isfile() and Path(m.name).name in ("model.onnx", "tokenizer.json")}
    finally:
        client.remove_container(cid, force=True)


def model_folder(hub, user: str, name: str, example: str, files: dict[str, bytes]) -> str:
    """A folder of ``user`` with an example's model-definition.yaml and ``files``."""
    folder = _ok(hub.call("POST", "vfolders", user, json={"name": name}), 201)["id"]
    files = {"model-definition.yaml":
             (REPO / "examples/models" / example / "model-definition.yaml").read_bytes(), **files}
    for fname, data in files.items():
        _ok(hub.call("PUT", f"vfolders/{folder}/upload?path={fname}", user, data=data), 201)
    return folder


@pytest.fixture(scope="session")
def serving(dock) -> Serving:
    """Group ``serve`` (inference only; 8 CPUs, 16G on the first engine),
    the inference image registered, bob's folders ``minilm`` and ``echo``."""
    client = require_image(HOSTS[0], INFERENCE)
    hub = dock.hub
    _ok(hub.call("POST", "resource-groups", "admin",
                 json={"name": GROUP, "session_types": ["inference"]}), 201)
    _ok(hub.call("PUT", f"resource-groups/{GROUP}/grants", "admin", json={"domain": "acme"}), 201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": NODE, "resource_group": GROUP, "backend_url": HOSTS[0],
        "capacity": {"cpu": "8", "mem": "16G"}}), 201)
    _ok(hub.call("POST", "images/scan", "admin"), 200)  # the image as built now
    image = _ok(hub.call("GET", f"images/{INFERENCE.replace('/', '%2F')}", "admin"), 200)
    assert image["labels"]["ai.hubgrid.inference.unix-socket"] == "1"
    minilm = model_folder(hub, "bob", "minilm", "all-minilm-l6-v2", model_files(client))
    echo = model_folder(hub, "bob", "echo", "echo-chat", {})
    return Serving(dock, minilm, echo, client)


@dataclass
class ServingLab:
    """bob's Lab in a Docker session of group ``dock`` (server ``LAB_SERVER``),
    open in Chromium: the Serving, Chat and Model Store page tests share it."""
    page: object  # playwright Page, in Lab
    context: object  # its browser context
    serving: Serving
    lab_url: str  # {hub}/user/bob/<server>/lab
    dialogs: list  # the messages of any alert() fired there (dismissed)

    @property
    def hub(self):
        return self.serving.hub


#: a named server of bob's (the Docker tests' default servers of bob stay
#: free), named per run: its container's name (hubgrid-bob--<server>) is
#: unique on the engines that test runs side by side share
LAB_SERVER = f"pages{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def bob_lab_server(serving):
    """bob's Lab server ``LAB_SERVER`` in a Docker session of group ``dock``,
    started once per run with what the spawn form sends (project ml, the base
    image, 0.5 CPU, 512M); its Lab URL."""
    hub = serving.hub
    r = spawn(hub, "bob", LAB_SERVER, project="ml", resource_group="dock",
              image="hubgrid/base:latest", cpu="0.5", mem="512M")
    assert r.status_code in (201, 202), r.text
    wait_ready(hub, "bob", LAB_SERVER, timeout=180)
    try:
        yield f"{hub.url}/user/bob/{LAB_SERVER}/lab"
    finally:
        hub.hub_call("DELETE", f"users/bob/servers/{LAB_SERVER}")
        eventually(lambda: server_of(hub, "bob", LAB_SERVER) is None, timeout=60)


@pytest.fixture(scope="module")
def serving_lab(serving, bob_lab_server):
    """Chromium for one test module, bob logged in through the hub's form and
    his Lab (``bob_lab_server``, shared by the modules) open. Per module, not
    per run: playwright's sync API holds the thread's event loop while it
    runs, so a Chromium kept to the end of the run broke every later test that
    runs an event loop. The Lab runs the extension as built into the image:
    after changing labextension/, rebuild it and the image (docs/serving.md,
    "Tests")."""
    require("Chromium", Path(CHROMIUM).exists(),
            "bash scripts/install.sh installs Debian's chromium (as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    require("playwright (Python)", sync_playwright is not None,
            "pip install -e '.[test]' (bash scripts/install.sh)")
    hub = serving.hub
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(f"{hub.url}/hub/login")
            page.fill("#username_input", "bob")
            page.fill("#password_input", hub.user_password)
            page.click("#login_submit")
            page.wait_for_url("**/hub/**", timeout=SLOW)
            page.goto(bob_lab_server)
            try:
                tab(page, "jp-hubgrid-summary").wait_for(timeout=SLOW)
            except Exception as e:  # noqa: BLE001 - say where it stopped
                pytest.fail(f"bob did not get to Lab in Docker at {page.url}: {e} (a stale "
                            f"extension in the image? scripts/build-images.sh)\n{hub_log(hub)}")
            yield ServingLab(page, context, serving, bob_lab_server, dialogs)
        finally:
            context.close()
            browser.close()


def chat_answer(page, chat, model: str, said: str, sent: str, before_send=None):
    """Ask ``model`` ``said`` on a Chat page (``chat``: Lab's or the
    console's): wait until the gateway offers the model (it routes a new
    endpoint after its next sync; Reload models until then), send it, and
    check that the answer streams in as server-sent events from the URL
    holding ``sent``. The answer's content, once complete (``before_send``:
    what the page needs first, e.g. a toast out of the way)."""
    choice = chat.get_by_label("Model")

    def offered():
        if model in choice.locator("option").all_inner_texts():
            return True
        chat.get_by_role("button", name="Reload models").click()
        return False
    assert eventually(offered, timeout=60, interval=1)
    choice.select_option(model)
    chat.get_by_label("Message").fill(said)
    if before_send is not None:
        before_send()
    with page.expect_response(lambda r: sent in r.url) as resp:
        chat.get_by_role("button", name="Send").click()
    assert resp.value.status == 200
    assert resp.value.headers["content-type"].startswith("text/event-stream")
    answer = chat.locator(
        '.jp-hubgrid-chat-message[data-role="assistant"][data-streaming="false"]')
    answer.wait_for(timeout=SLOW)
    return answer.locator(".jp-hubgrid-chat-content")
