"""Helpers for tests that start real sessions through the hub's REST API."""

from __future__ import annotations

import time

import requests

from hub_fixtures import Hub


def eventually(check, timeout=60.0, interval=0.2):
    """Poll ``check`` until it returns a truthy value (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def spawn(hub: Hub, user: str, server: str, **options) -> requests.Response:
    """Start ``user``'s named server with ``options`` as that user."""
    return hub.hub_call("POST", f"users/{user}/servers/{server}", user=user,
                        json={"user_options": options})


def server_of(hub: Hub, user: str, server: str) -> dict | None:
    r = hub.hub_call("GET", f"users/{user}", user=user)
    assert r.status_code == 200, r.text
    return r.json()["servers"].get(server)


def wait_ready(hub: Hub, user: str, server: str, timeout: float = 120) -> dict:
    def ready():
        s = server_of(hub, user, server)
        if s is None:
            raise AssertionError(f"{user}/{server} is gone: {hub_log(hub)}")
        return s if s["ready"] else None

    s = eventually(ready, timeout=timeout)
    assert s, f"{user}/{server} not ready after {timeout}s: {hub_log(hub)}"
    return s


def stop_server(hub: Hub, user: str, server: str, timeout: float = 60) -> None:
    r = hub.hub_call("DELETE", f"users/{user}/servers/{server}", user=user)
    assert r.status_code in (202, 204), r.text
    assert eventually(lambda: server_of(hub, user, server) is None, timeout=timeout), \
        f"{user}/{server} did not stop"


def allocations(hub: Hub, user: str, state: str | None = None, server: str | None = None) -> list:
    q = f"allocations?user={user}" + (f"&state={state}" if state else "")
    r = hub.call("GET", q, "admin")
    assert r.status_code == 200, r.text
    return [a for a in r.json() if server is None or a.get("server_name") == server]


def hub_log(hub: Hub, n: int = 3000) -> str:
    return (hub.state / "hub.log").read_text(errors="replace")[-n:]


def run_in_terminal(hub: Hub, user: str, server: str, command: str, timeout: float = 60) -> str:
    """Run ``command`` in a new Lab terminal of ``user``'s ``server``, as a
    person would (the shell Jupyter starts for a terminal, over its
    websocket); what the terminal showed after the command, up to its end."""
    import asyncio
    import json
    import re
    import uuid

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    base = f"{hub.url}/user/{user}/{server}/" if server else f"{hub.url}/user/{user}/"
    headers = {"Authorization": f"token {hub.token(user)}"}
    r = requests.post(base + "api/terminals", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    name, mark = r.json()["name"], uuid.uuid4().hex[:8]

    async def talk() -> str:
        ws = base.replace("http://", "ws://") + f"terminals/websocket/{name}"
        conn = await websocket_connect(HTTPRequest(ws, headers=headers))
        seen = ""
        try:
            await conn.write_message(json.dumps(["stdin", f"{command}; echo END-{mark}-$?\r"]))
            while not re.search(rf"END-{mark}-[0-9]+", seen):  # the echo, not its input
                raw = await asyncio.wait_for(conn.read_message(), timeout)
                assert raw is not None, f"the terminal closed: {seen[-500:]}"
                kind, *data = json.loads(raw)
                if kind == "stdout":
                    seen += data[0]
        finally:
            conn.close()
            while await asyncio.wait_for(conn.read_message(), 10) is not None:
                pass
        return seen.split(f"END-{mark}-$?", 1)[-1]

    try:
        return asyncio.run(talk())
    finally:
        requests.delete(base + f"api/terminals/{name}", headers=headers, timeout=30)
