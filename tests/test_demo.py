"""The README's demo exactly as ``make run`` starts it (its node with two
declared demo GPUs, a 0.5-GPU session placed on one of them and served by the
Lab extension, locally and in Docker), and the service's life next to the hub
that manages it (a killed hub leaves no service behind; a stale service does
not lock a new one out of its port)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from bs4 import BeautifulSoup

from hub_fixtures import free_port, launch_hub, require, stop_hub
from quota_service.runtime import lifecycle
from session_fixtures import (allocations, eventually, hub_log, run_in_terminal, server_of,
                              stop_server, wait_ready)

HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = "hubgrid/base:latest"
VENV_BIN = Path(sys.executable).parent
#: the declared inventory of demo_service_config.py (HUBGRID_DEMO_GPUS unset)
DEMO_GPUS = [{"index": i, "model": "demo-declared", "memory": 16 * 2**30} for i in (0, 1)]


def _alive(pid: int) -> bool:
    return lifecycle._alive(pid)


def _form_defaults(html: str) -> dict:
    """What a browser submits when the user clicks Start without changing
    anything: every named input's value, every select's selected option."""
    form = BeautifulSoup(html, "html.parser").find("form", id="spawn_form")
    assert form is not None, html[:2000]
    data: dict[str, str] = {}
    for el in form.find_all("input"):
        if not el.get("name") or el.get("type") in ("submit", "button"):
            continue
        if el.get("type") in ("checkbox", "radio") and not el.has_attr("checked"):
            continue
        data[el["name"]] = el.get("value", "")
    for sel in form.find_all("select"):
        opt = sel.find("option", selected=True) or sel.find("option")
        if sel.get("name") and opt is not None:
            data[sel["name"]] = opt.get("value", opt.text)
    for area in form.find_all("textarea"):
        if area.get("name"):
            data[area["name"]] = area.text
    return data


def _start_from_form(hub, browser, server: str, **changes) -> None:
    """Open ``server``'s spawn form, change ``changes``, click Start."""
    url = f"{hub.url}/hub/spawn/admin/{server}" if server else f"{hub.url}/hub/spawn"
    form = browser.get(url, timeout=30)
    assert form.status_code == 200, form.text[:500]
    data = {**_form_defaults(form.text), **changes, "_xsrf": browser.cookies.get("_xsrf")}
    r = browser.post(url, data=data, allow_redirects=False, timeout=60)
    assert r.status_code in (200, 302), r.text[:1000]


def _check_demo_gpus(hub) -> str:
    """The demo's one node declares the two demo GPUs, and says so in the log;
    its name."""
    r = hub.call("GET", "nodes", "admin")
    assert r.status_code == 200, r.text
    nodes = r.json()
    declared = [[{k: v for k, v in d.items() if k not in ("taken", "uuid")} for d in n["devices"]]
                for n in nodes]
    assert declared == [DEMO_GPUS], nodes
    assert "declares 2 GPUs of the model 'demo-declared': they are NOT real" in hub_log(hub, 10**6)
    return nodes[0]["name"]


def _check_half_gpu_placed(hub, browser, node: str, server: str) -> dict:
    """``server``'s allocation holds half of one demo GPU of ``node``, and the
    session's Lab extension (``<server>/hubgrid/api/``) shows it as the
    Summary's GPU map reads it."""
    [a] = allocations(hub, "admin", "allocated", server)
    assert a["node"] == node, a
    assert a["slots"]["gpu.shares"] == "0.5", a
    assert len(a["gpus"]) == 1 and a["gpus"][0]["share"] == "0.5", a
    assert a["gpus"][0]["index"] in (0, 1), a
    lab = f"{hub.url}/user/admin/{server}/"
    assert browser.get(lab + "lab", timeout=60).status_code == 200  # the server's OAuth
    r = browser.get(lab + "hubgrid/api/allocations?state=allocated", timeout=60)
    assert r.status_code == 200, r.text[:1000]
    [seen] = [x for x in r.json() if x["id"] == a["id"]]
    assert seen["gpus"] == a["gpus"], seen
    return a


def _session_process(hub, server: str):
    """This hub's local session process ``admin/<server>`` (psutil), or None."""
    import psutil

    for proc in psutil.process_iter(["environ"]):
        env = proc.info.get("environ") or {}
        if env.get("JUPYTERHUB_USER") == "admin" and env.get("JUPYTERHUB_SERVER_NAME") == server \
                and hub.ports["HUBGRID_HUB_PORT"] in env.get("JUPYTERHUB_API_URL", ""):
            return proc
    return None


def _session_env(hub, server: str) -> dict:
    """The environment of this hub's local session process ``admin/<server>``."""
    proc = _session_process(hub, server)
    return (proc.info.get("environ") or {}) if proc is not None else {}


def test_demo_places_a_half_gpu_session_on_a_declared_demo_gpu(tmp_path):
    """make run: the node has two declared demo GPUs; a newcomer starts a
    session with 0.5 GPU from the spawn form and sees it placed on one of them,
    through the session's own Lab extension; the `hubgrid` command is on the
    session's PATH."""
    hub = launch_hub(tmp_path, test_overrides=False)
    try:
        node = _check_demo_gpus(hub)
        login = hub.login("admin")
        assert login.status_code == 302, login.text[:500]
        browser = login.session
        _start_from_form(hub, browser, "gpu", gpu_shares="0.5", cpu="0.5", mem="512M")
        wait_ready(hub, "admin", "gpu")
        a = _check_half_gpu_placed(hub, browser, node, "gpu")
        env = _session_env(hub, "gpu")
        assert env.get("CUDA_VISIBLE_DEVICES") == str(a["gpus"][0]["index"]), env
        assert env.get("HUBGRID_GPU_MEMORY_FRACTION") == "0.5", env
        assert shutil.which("hubgrid", path=env["PATH"]) == str(VENV_BIN / "hubgrid"), env["PATH"]
        # and in a Lab terminal (a shell of its own), with no set-up: as its owner
        shown = run_in_terminal(hub, "admin", "gpu", "hubgrid me --json")
        assert '"name": "admin"' in shown, shown
        assert re.search(r"END-[0-9a-f]{8}-0\b", shown), shown  # exit code 0
        # leaving: stopping the demo's hub stops its local sessions (they run
        # as the hub's user, root under `make run`), and says so in its log
        session = _session_process(hub, "gpu")
        assert session is not None and session.is_running()
        stop_hub(hub)
        assert eventually(lambda: not session.is_running(), timeout=30), \
            f"the demo's session {session.pid} outlived its hub"
        assert "Cleaning up single-user servers" in hub_log(hub, 10**6)
    finally:
        if hub.process.poll() is None:
            try:
                if server_of(hub, "admin", "gpu") is not None:
                    stop_server(hub, "admin", "gpu")
            finally:
                stop_hub(hub)


def test_demo_gpus_can_be_turned_off_and_a_service_config_still_applies(tmp_path):
    """HUBGRID_DEMO_GPUS=0: the node is registered as discovered (no GPUs
    here); HUBGRID_SERVICE_CONFIG is read after the demo's file."""
    (tmp_path / "mine.py").write_text("c = get_config()  # noqa\n"
                                      "c.HubgridService.default_project = 'mine'\n")
    hub = launch_hub(tmp_path, {"HUBGRID_DEMO_GPUS": "0",
                                "HUBGRID_SERVICE_CONFIG": str(tmp_path / "mine.py")},
                     test_overrides=False)
    try:
        r = hub.call("GET", "nodes", "admin")
        assert r.status_code == 200, r.text
        assert [n["devices"] for n in r.json()] == [[]], r.json()
        assert "NOT real" not in hub_log(hub, 10**6)
        projects = hub.call("GET", "projects", "admin").json()
        assert "mine" in [p["name"] for p in projects], projects
    finally:
        stop_hub(hub)


def test_docker_demo_first_start_works(tmp_path):
    """HUBGRID_SPAWNER=docker make run, log in, click Start: the session runs."""
    import docker

    require("a Docker engine with the session image", bool(HOSTS),
            "run `make test` (scripts/start-docker.sh, scripts/build-images.sh)")
    engine = docker.APIClient(base_url=HOSTS[0], version="auto", timeout=30)
    try:
        engine.inspect_image(IMAGE)
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        require(f"{IMAGE} on {HOSTS[0]}", False, f"{e} (run `make test`)")
    hub = launch_hub(tmp_path, {"HUBGRID_SPAWNER": "docker", "HUBGRID_DOCKER_URL": HOSTS[0]},
                     test_overrides=False)
    try:
        login = hub.login("admin")
        assert login.status_code == 302, login.text[:500]
        browser = login.session
        form = browser.get(hub.url + "/hub/spawn", timeout=30)
        assert form.status_code == 200, form.text[:500]
        assert IMAGE in form.text, "the spawn form does not offer the demo's image"
        # the inference image the same build made is registered for the
        # replicas of endpoints only (docs/serving.md): never offered here
        served = hub.call("GET", "images/hubgrid%2Finference:latest", "admin")
        assert served.status_code == 200, served.text
        assert served.json()["session_types"] == ["inference"], served.json()
        assert "hubgrid/inference:latest" not in form.text
        groups = hub.call("GET", "resource-groups", "admin").json()
        assert groups and all("inference" in g["session_types"] for g in groups), groups
        data = _form_defaults(form.text)
        data["_xsrf"] = browser.cookies.get("_xsrf")
        r = browser.post(hub.url + "/hub/spawn", data=data, allow_redirects=False, timeout=60)
        assert r.status_code in (200, 302), r.text[:1000]
        token = hub.token("admin")

        def servers() -> dict:
            return requests.get(hub.hub_api + "users/admin", timeout=30,
                                headers={"Authorization": f"token {token}"}).json()["servers"]

        def ready():
            s = servers().get("")
            assert s is not None, (hub.state / "hub.log").read_text()[-4000:]
            return s["ready"]

        assert eventually(ready, timeout=120), (hub.state / "hub.log").read_text()[-4000:]
        refused = [line for line in (hub.state / "hub.log").read_text().splitlines()
                   if "unknown image" in line]
        assert not refused, refused

        # a second session with half a declared demo GPU: placed on one, its
        # container gets that GPU's environment and no device request (the
        # engine has no NVIDIA runtime), and its Lab extension (from the image)
        # shows the placement
        node = _check_demo_gpus(hub)
        _start_from_form(hub, browser, "gpu", gpu_shares="0.5", cpu="0.5", mem="512M")
        wait_ready(hub, "admin", "gpu")
        a = _check_half_gpu_placed(hub, browser, node, "gpu")
        [c] = engine.containers(filters={"label": f"hubgrid.allocation={a['id']}"})
        info = engine.inspect_container(c["Id"])
        env = dict(e.split("=", 1) for e in info["Config"]["Env"])
        assert env["NVIDIA_VISIBLE_DEVICES"] == str(a["gpus"][0]["index"]), env
        assert env["CUDA_VISIBLE_DEVICES"] == "0", env  # its one device, numbered 0 inside
        assert not info["HostConfig"].get("DeviceRequests"), info["HostConfig"]
        stop_server(hub, "admin", "gpu")
        r = requests.delete(hub.hub_api + "users/admin/server", timeout=60,
                            headers={"Authorization": f"token {token}"})
        assert r.status_code in (202, 204), r.text
        assert eventually(lambda: "" not in servers(), timeout=60), "the session did not stop"
    finally:
        stop_hub(hub)


def _service_pid(state) -> int:
    pid_file = state / "hubgrid-service.pid"
    assert eventually(pid_file.exists, timeout=30), "the service wrote no pid file"
    return int(pid_file.read_text())


def test_killed_hub_leaves_no_service_and_a_new_hub_starts(tmp_path):
    hub = launch_hub(tmp_path)
    try:
        service = _service_pid(tmp_path)
        assert _alive(service)
        os.kill(hub.process.pid, signal.SIGKILL)  # the hub alone, not its group
        hub.process.wait(timeout=30)
        assert eventually(lambda: not _alive(service), timeout=30), \
            "the service outlived the hub that managed it"
        again = launch_hub(tmp_path, ports=hub.ports)
        try:
            assert again.call("GET", "me", "admin").status_code == 200
            assert _service_pid(tmp_path) != service
        finally:
            stop_hub(again)
    finally:
        try:
            os.killpg(hub.process.pid, signal.SIGKILL)  # the old proxy, if left
        except ProcessLookupError:
            pass


def _standalone_service(tmp_path, port: int) -> subprocess.Popen:
    env = dict(os.environ, HUBGRID_DB_URL=f"sqlite:///{tmp_path / 'svc.sqlite'}",
               JUPYTERHUB_SERVICE_URL=f"http://127.0.0.1:{port}",
               HUBGRID_INTERNAL_TOKEN="t" * 32)
    for var in ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "HUBGRID_CONFIG_FILE"):
        env.pop(var, None)
    with open(tmp_path / "svc.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "quota_service", "--HubgridService.exit_with_parent=False",
             "--HubgridService.register_local_node=False",
             "--HubgridService.scan_images_at_start=False"],
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)


def _answers(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/services/hubgrid/api/v1/openapi.json",
                            timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def test_a_stale_service_is_ended_by_the_next_one(tmp_path):
    port = free_port()
    first = _standalone_service(tmp_path, port)
    second = None
    try:
        assert eventually(lambda: _answers(port), timeout=60), (tmp_path / "svc.log").read_text()
        second = _standalone_service(tmp_path, port)
        assert first.wait(timeout=30) is not None  # ended by the second
        assert eventually(lambda: _answers(port), timeout=60), (tmp_path / "svc.log").read_text()
        assert int((tmp_path / "hubgrid-service.pid").read_text()) == second.pid
        assert "ending stale hubgrid service" in (tmp_path / "svc.log").read_text()
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_a_pid_file_naming_another_program_is_not_acted_on(tmp_path):
    other = subprocess.Popen(["sleep", "60"])
    try:
        pid_file = tmp_path / "hubgrid-service.pid"
        pid_file.write_text(f"{other.pid}\n")
        assert lifecycle.stale_service(pid_file) is None
        lifecycle.claim_pid_file(pid_file, __import__("logging").getLogger("test"))
        assert other.poll() is None  # untouched
        assert int(pid_file.read_text()) == os.getpid()
        lifecycle.release_pid_file(pid_file)
        assert not pid_file.exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("content", ["", "not a pid", "999999999"])
def test_a_pid_file_without_a_live_service_is_taken_over(tmp_path, content):
    pid_file = tmp_path / "p.pid"
    pid_file.write_text(content)
    assert lifecycle.stale_service(pid_file) is None


def test_parent_gone_is_false_for_our_parent():
    assert lifecycle.parent_gone(os.getppid()) is False
    assert lifecycle.parent_gone(os.getppid() + 1) is True


def test_watch_parent_stops_the_service_when_the_parent_changes():
    import asyncio
    import logging

    async def run():
        stop = asyncio.Event()
        await asyncio.wait_for(
            lifecycle.watch_parent(os.getppid() + 1, stop, 0.01, logging.getLogger("t")), 5)
        return stop.is_set()

    assert asyncio.run(run()) is True


def test_listen_waits_while_the_port_is_taken_then_gives_up():
    import logging
    import socket

    from tornado.httpserver import HTTPServer
    from tornado.web import Application

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    assert lifecycle.port_in_use(port, "127.0.0.1")
    server = HTTPServer(Application())
    try:
        with pytest.raises(OSError):
            lifecycle.listen(server, port, "127.0.0.1", logging.getLogger("t"), wait=0.6)
    finally:
        holder.close()
    assert not lifecycle.port_in_use(port, "127.0.0.1")
    lifecycle.listen(server, port, "127.0.0.1", logging.getLogger("t"), wait=5)
    server.stop()
