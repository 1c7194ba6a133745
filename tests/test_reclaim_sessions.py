"""Idle reclamation's conformance on real single-user servers, through the
real hub (local spawner: jupyterhub-singleuser from this venv, with the Lab
extension and its activity reporter), against the real service's reclaim
pass (every second here):

- a kernel busy with a long cell and no browser attached keeps its session
  past the policy's idle timeout (jupyterhub-idle-culler #10, #55), while an
  idle session of the same user in the same run is reclaimed;
- the owner is warned first: the allocation's JSON carries the reclaim
  notice while the server still runs (idle-culler #4, #79).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from hub_fixtures import _ok, launch_hub, require, stop_hub
from session_fixtures import allocations, eventually, hub_log, server_of, spawn, stop_server, wait_ready

IDLE_TIMEOUT = 10
WARNING = 4


@pytest.fixture(scope="module")
def quick_hub(tmp_path_factory):
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test`")
    state = tmp_path_factory.mktemp("reclaim-hub")
    config = ("c.Spawner.args.append('--HubgridLab.activity_interval=1')\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")
    service = "c.HubgridService.reclaim_interval = 1.0\n"
    hub = launch_hub(state, {"HUBGRID_SPAWNER": "local"}, config=config, service_config=service)
    try:
        _ok(hub.call("POST", "resource-policies", "admin", json={
            "name": "quick", "idle_timeout": IDLE_TIMEOUT, "reclaim_warning": WARNING}), 201)
        yield hub
        # the servers that survived (the busy one): the hub leaves them running
        for user in hub.hub_call("GET", "users").json():
            for name in [n for n in user.get("servers", {}) if n]:
                stop_server(hub, user["name"], name)
    finally:
        stop_hub(hub)


def new_user(hub, policy: str) -> str:
    name = "r" + uuid.uuid4().hex[:8]
    assert hub.login(name).status_code == 302
    _ok(hub.call("PATCH", f"users/{name}", "admin", json={"resource_policy": policy}), 200)
    return name


async def _run_cell(ws_url: str, token: str, code: str) -> None:
    """Send one cell to a kernel over Jupyter's websocket, wait until the
    kernel says it is busy with it, and leave (no browser stays attached)."""
    session = uuid.uuid4().hex
    conn = await websocket_connect(HTTPRequest(f"{ws_url}?session_id={session}",
                                               headers={"Authorization": f"token {token}"}))
    try:
        msg_id = uuid.uuid4().hex
        await conn.write_message(json.dumps({
            "header": {"msg_id": msg_id, "session": session, "username": "",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        }))
        while True:
            raw = await asyncio.wait_for(conn.read_message(), 60)
            assert raw is not None, "the kernel's websocket closed"
            msg = json.loads(raw)
            if (msg.get("msg_type") == "status" and msg["parent_header"].get("msg_id") == msg_id
                    and msg["content"]["execution_state"] == "busy"):
                return
    finally:
        # wait for the server's close frame: a connection left mid-close
        # outlives asyncio.run's loop and its socket is reported unclosed
        # (a ResourceWarning) by whichever later test collects it
        conn.close()
        while await asyncio.wait_for(conn.read_message(), 10) is not None:
            pass


def test_a_busy_kernel_with_no_browser_survives_and_an_idle_session_is_warned_then_reclaimed(quick_hub):
    hub = quick_hub
    user = new_user(hub, "quick")
    token = hub.token(user)
    r = spawn(hub, user, "busy", cpu="0.5", mem="256M")
    assert r.status_code in (201, 202), r.text
    wait_ready(hub, user, "busy")
    with ThreadPoolExecutor(1) as pool:
        # the idle session starts while the busy one's kernel gets its long cell
        idle_spawn = pool.submit(spawn, hub, user, "idle", cpu="0.5", mem="256M")
        base = f"{hub.url}/user/{user}/busy/api/"
        r = requests.post(base + "kernels", json={"name": "python3"}, timeout=60,
                          headers={"Authorization": f"token {token}"})
        assert r.status_code == 201, r.text
        ws = base.replace("http://", "ws://") + f"kernels/{r.json()['id']}/channels"
        asyncio.run(_run_cell(ws, token, "import time; time.sleep(120)"))
        assert idle_spawn.result().status_code in (201, 202), idle_spawn.result().text
    wait_ready(hub, user, "idle")
    [busy] = allocations(hub, user, "allocated", "busy")
    [idle] = allocations(hub, user, "allocated", "idle")

    # the idle session: warned while its server still runs, then stopped
    def warned_while_running():
        notice = hub.call("GET", f"allocations/{idle['id']}", user).json()["reclaim"]
        return notice if notice and server_of(hub, user, "idle") is not None else None

    notice = eventually(warned_while_running, timeout=IDLE_TIMEOUT + 20, interval=0.3)
    assert notice, hub_log(hub)
    assert notice["rule"] == "idle" and notice["numbers"]["idle_timeout"] == IDLE_TIMEOUT
    assert eventually(lambda: server_of(hub, user, "idle") is None, timeout=WARNING + 30), \
        hub_log(hub)
    ended = eventually(lambda: [a for a in allocations(hub, user, "released", "idle")
                                if a["release_reason"].startswith("reclaimed (idle)")],
                       timeout=30)
    assert ended, allocations(hub, user)

    # the busy one, past its own idle deadline too (it started first): still running
    assert server_of(hub, user, "busy")["ready"]
    [still] = allocations(hub, user, "allocated", "busy")
    assert still["id"] == busy["id"] and still["reclaim"] is None
    events = hub.call("GET", "reclaim/events", user).json()["events"]
    assert {(e["allocation"], e["kind"]) for e in events} >= {(idle["id"], "warning"),
                                                               (idle["id"], "reclaimed")}
    assert not [e for e in events if e["allocation"] == busy["id"] and e["kind"] == "reclaimed"]
