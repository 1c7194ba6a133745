"""The notebook widgets for real: in a notebook of a real JupyterLab, in
headless Chromium (Debian's, driven by Python playwright), against the real
service; and the launcher starting a session through the real hub.

- ``test_the_quota_widget_renders_in_a_notebook_in_jupyterlab``: ``jupyter
  lab`` runs with the hubgrid settings of a user (a keypair) in its
  environment, as a session's server does with its token; a notebook runs
  ``widgets.quota()``; the page shows the exact amounts ("0.9 / 1")
  beside the bars; Refresh clicked in the page brings the new amounts; the
  auto-refresh checkbox starts and stops its task in the real kernel. The
  screenshot goes to ``$HUBGRID_SCREENSHOTS/widgets-quota.png`` when that
  variable names a folder (``HUBGRID_SCREENSHOTS=docs/images`` refreshes
  the one in the docs), else to the test's tmp folder.
- ``test_the_launcher_starts_a_session_through_the_hub_and_a_row_stops_it``:
  tests/hub_fixtures.py's hub, proxy and service with local sessions.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tornado.httpclient import AsyncHTTPClient

from bench.hubproc import free_port
from hub_fixtures import require, sqlite_hub, world  # noqa: F401
from session_fixtures import eventually, hub_log, server_of

from jupyterlab_hubgrid import widgets
from jupyterlab_hubgrid.client import HubgridClient
from service_app import served  # noqa: E402,F401

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: what the lab's own environment must not pass on to its kernels
HUB_VARS = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_USER",
            "JUPYTERHUB_SERVER_NAME", "JUPYTERHUB_SERVICE_PREFIX", "JUPYTERHUB_CLIENT_ID",
            "JUPYTER_CONFIG_PATH", "HUBGRID_ACCESS_KEY", "HUBGRID_SECRET_KEY", "HUBGRID_API_URL")
TOKEN = "widgets-ui-token"


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    return sqlite_db_url


def keypair_env(served, user: str) -> dict:  # noqa: F811
    access, secret = served.auth(user).removeprefix("Keypair ").split(":", 1)
    return {"HUBGRID_API_URL": served.api, "HUBGRID_ACCESS_KEY": access,
            "HUBGRID_SECRET_KEY": secret}


async def allocate(served, user: str = "alice", **slots) -> dict:  # noqa: F811
    resp, body = await served.call("POST", "allocations", user, json_body={
        "project": "ml", "resource_group": "gpu", "slots": slots})
    assert resp.code in (201, 202), body
    return body


def write_notebook(path: Path, source: str) -> None:
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "quota",
                   "metadata": {}, "outputs": [], "source": source}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))


def lab_settings(folder: Path) -> None:
    """No news or update checks (nothing but loopback), no toast over the
    page, and the notebook's kernel starts without asking."""
    for plugin, values in (
        ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
        ("notebook-extension/tracker", {"autoStartDefaultKernel": True}),
    ):
        path = folder / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


async def lab_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    client = AsyncHTTPClient(force_instance=True)
    try:
        for _ in range(240):
            assert proc.poll() is None, f"jupyter lab exited:\n{log.read_text()[-3000:]}"
            try:
                resp = await client.fetch(f"{url}api/status?token={TOKEN}", raise_error=False)
                if resp.code == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.5)
        pytest.fail(f"jupyter lab did not answer:\n{log.read_text()[-3000:]}")
    finally:
        client.close()


async def shown(locator, page, log: Path, shots: Path, timeout: float = 60_000) -> None:
    """Wait until ``locator`` is visible; else fail with what the page and
    the lab said (and a screenshot in ``shots``)."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await locator.first.wait_for(timeout=timeout)
    except PlaywrightTimeout:
        await page.screenshot(path=str(shots / "failure.png"))
        outputs = await page.locator(".jp-OutputArea-output").all_inner_texts()
        pytest.fail(f"not shown: {locator}\noutputs: {outputs}\n"
                    f"lab log:\n{log.read_text()[-3000:]}")


async def run_first_cell(page, editor) -> None:
    """Run the first cell in place (Ctrl+Enter), again if the kernel was not
    connected yet and the cell did not start."""
    from playwright.async_api import expect

    prompt = page.locator(".jp-Cell .jp-InputPrompt").first
    for _ in range(6):
        await editor.click()
        await page.keyboard.press("Control+Enter")
        try:
            await expect(prompt).to_have_text(re.compile(r"\[(\*|\d+)\]"), timeout=10_000)
            return
        except AssertionError:
            continue
    pytest.fail(f"the cell did not run: its prompt says {await prompt.inner_text()!r}")


@pytest.fixture
async def quota_world(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"n1": ("A100", "A100")}, cpu="8", mem="32G")
    cluster.set_project("acme", "ml", slots={"cpu": "4", "gpu.shares": "1"})
    cluster.set_domain("acme", slots={"gpu.shares": "2"})
    cluster.set_policy("default", total_resource_slots={"cpu": "6", "mem": "0"})
    return served


async def test_the_quota_widget_renders_in_a_notebook_in_jupyterlab(quota_world, tmp_path):
    require("Chromium", os.path.exists(CHROMIUM), "apt-get install -y chromium")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        async_playwright = None
    require("playwright (Python)", async_playwright is not None, "pip install playwright")
    for _ in range(3):
        await allocate(quota_world, cpu="1", **{"gpu.shares": "0.3"})

    root, settings = tmp_path / "notebooks", tmp_path / "settings"
    root.mkdir()
    lab_settings(settings)
    write_notebook(root / "quota.ipynb",
                   "from jupyterlab_hubgrid import widgets\nwidgets.quota()")
    env = {k: v for k, v in os.environ.items() if k not in HUB_VARS}
    env.update(keypair_env(quota_world, "alice"))
    for name in ("config", "runtime"):
        (tmp_path / name).mkdir()
        env[f"JUPYTER_{name.upper()}_DIR"] = str(tmp_path / name)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "lab.log"
    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent)) or "jupyter"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [jupyter, "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
             f"--ServerApp.root_dir={root}", "--allow-root",
             f"--LabApp.user_settings_dir={settings}",
             f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
             "--LabApp.news_url=None", "--LabApp.check_for_updates_class="
             "jupyterlab.NeverCheckForUpdate"],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        await lab_ready(url, proc, log)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 1120})
                await page.goto(f"{url}lab/tree/quota.ipynb?token={TOKEN}")
                editor = page.locator(".jp-Cell .jp-InputArea-editor").first
                await editor.wait_for(timeout=60_000)
                # the kernel is up (or Lab asks which one: the notebook's)
                choose = page.locator(".jp-Dialog .jp-mod-accept")
                idle = page.locator(".jp-StatusBar-TextItem", has_text="| Idle")
                await idle.or_(choose).first.wait_for(timeout=60_000)
                if await choose.count():
                    await choose.click()
                await run_first_cell(page, editor)
                output = page.locator(".jp-OutputArea-output").first
                await shown(output.locator(".widget-label", has_text="0.9 / 1"), page, log,
                            tmp_path, timeout=90_000)
                labels = await output.locator(".widget-label").all_inner_texts()
                assert "Project ml" in labels and "Domain acme" in labels, labels
                assert "0.9 / 2" in labels and "3 / 6" in labels, labels
                assert "0 B / 0 B" in labels, labels  # a limit of 0 stays visible
                assert await output.locator(".widget-hprogress").count() == 7 + 7 + 5
                assert await output.locator("script").count() == 0
                shots = Path(os.environ.get("HUBGRID_SCREENSHOTS") or tmp_path)
                shots.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(shots / "widgets-quota.png"))

                # Refresh, clicked in the page: the kernel asks the service again
                await allocate(quota_world, cpu="1", **{"gpu.shares": "0.1"})
                await output.get_by_role("button", name="Refresh").click()
                await shown(output.locator(".widget-label", has_text="1 / 2"), page, log,
                            tmp_path)
                # auto-refresh: a task on the real kernel's loop, started and stopped
                box = output.locator(".widget-checkbox input")
                await box.check()
                await shown(output.locator(".widget-label", has_text="auto-refresh every 10 s"),
                            page, log, tmp_path)
                await box.uncheck()
                await shown(output.locator(".widget-label", has_text="auto-refresh off"),
                            page, log, tmp_path)
            finally:
                await browser.close()
    finally:
        os.killpg(proc.pid, 15)
        try:
            await asyncio.wait_for(asyncio.to_thread(proc.wait), 30)
        except asyncio.TimeoutError:
            os.killpg(proc.pid, 9)


# --- through the real hub -----------------------------------------------------------------

def test_the_launcher_starts_a_session_through_the_hub_and_a_row_stops_it(world):  # noqa: F811
    hub = world.hub
    env = {"HUBGRID_API_URL": hub.api, "JUPYTERHUB_API_TOKEN": hub.token("alice")}
    name = f"w-{uuid.uuid4().hex[:6]}"
    with HubgridClient.from_env(env) as client:
        s = widgets.SessionsWidget(client, this_session=("alice", "not-this"))
        launch = s.launcher
        try:
            assert launch.group.value == "acme-gpu" and launch.project.value == "ml"
            launch.name.value = name
            launch.mem.value = "256M"
            launch.gpu_mode.value = "shares"
            launch.gpu.value = "0.5"
            launch.check_button.click()
            assert launch.verdict.value.startswith("Fits now: node acme-node, GPU "), (
                launch.verdict.value, launch.status.value)
            launch.start_button.click()
            assert launch.status.value in (f"session {name}: starting",
                                           f"session {name}: running"), launch.status.value
            assert launch.name.value != name  # a fresh name for the next one

            def shown():
                s.refresh()
                return next((rw for rw in s.rows if rw.row.name == name
                             and rw.row.state == "allocated"), None)

            rw = eventually(shown, timeout=60)
            assert rw is not None, hub_log(hub)
            assert [c.value for c in rw.cells][1:8] == ["running", "ml", "acme-gpu", "-", "1",
                                                        "256 MiB", "0.5 GPU share"]
            rw.stop.click()
            assert s.status.value in (f"session {name}: stopped", f"session {name}: stopping")
            assert eventually(lambda: server_of(hub, "alice", name) is None, timeout=60)
        finally:
            if server_of(hub, "alice", name) is not None:
                hub.hub_call("DELETE", f"users/alice/servers/{name}", user="alice")
                eventually(lambda: server_of(hub, "alice", name) is None, timeout=60)
