"""Queued sessions through the real hub: longer than start_timeout, through a
restart of the hubgrid service, and refusals that say what is wrong.

The hub runs local-process servers with ``start_timeout = 3``; the resource
group ``tiny`` has one node of one CPU, so a session waits in the queue while
an allocation made through the API (``hold``) uses it.
"""

from __future__ import annotations

import shutil
import signal
import time
import uuid

import psutil
import pytest
import requests

from hub_fixtures import _ok, build_world, launch_hub, require, stop_hub
from session_fixtures import allocations, eventually, hub_log, server_of, spawn, wait_ready

START_TIMEOUT = 3
QUEUED = {"project": "ml", "resource_group": "tiny", "cpu": "1", "mem": "256M"}
#: JupyterHub notices that a managed service exited at its service spawner's
#: poll, every 30 s, and no setting reaches that spawner (it is built without
#: the hub's config): this hub polls its service each second instead, so the
#: restart test waits for the restart, not for the poll
SERVICE_POLLED_EACH_SECOND = """
from jupyterhub.services import service as _service
_start_polling = _service._ServiceSpawner.start_polling
def _each_second(self):
    self.poll_interval = 1
    return _start_polling(self)
_service._ServiceSpawner.start_polling = _each_second
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    require("configurable-http-proxy", shutil.which("configurable-http-proxy") is not None,
            "run `make test` (it installs it from npm)")
    config = (f"c.Spawner.start_timeout = {START_TIMEOUT}\n"
              "c.Spawner.pending_poll_interval = 0.2\n" + SERVICE_POLLED_EACH_SECOND)
    hub = launch_hub(tmp_path_factory.mktemp("resilience-hub"), config=config)
    try:
        build_world(hub)
        _ok(hub.call("POST", "resource-groups", "admin", json={"name": "tiny"}), 201)
        _ok(hub.call("PUT", "resource-groups/tiny/grants", "admin", json={"domain": "acme"}), 201)
        _ok(hub.call("POST", "nodes", "admin", json={
            "name": "tiny-node", "resource_group": "tiny",
            "capacity": {"cpu": "1", "mem": "4G"}}), 201)
        yield hub
    finally:
        stop_hub(hub)


def hold(hub, user="alice") -> str:
    """An API allocation that takes the whole of ``tiny``."""
    a = _ok(hub.call("POST", "allocations", user, json={
        "project": "ml", "resource_group": "tiny", "slots": {"cpu": "1", "mem": "256M"}}), 201)
    assert a["state"] == "allocated", a
    return a["id"]


def let_go(hub, alloc_id, user="alice") -> None:
    _ok(hub.call("DELETE", f"allocations/{alloc_id}", user), 200, 204)


def queued(hub, user, server) -> bool:
    s = server_of(hub, user, server)
    return bool(s and s["pending"] == "spawn" and allocations(hub, user, "pending", server))


def stop(hub, user, server) -> None:
    hub.hub_call("DELETE", f"users/{user}/servers/{server}", user=user)
    eventually(lambda: server_of(hub, user, server) is None, timeout=60)


def service_process(hub) -> psutil.Process:
    [proc] = [p for p in psutil.Process(hub.process.pid).children(recursive=True)
              if "quota_service" in " ".join(p.cmdline())]
    return proc


def service_up(hub) -> bool:
    try:
        return requests.get(hub.api + "openapi.json", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def test_a_queued_session_waits_longer_than_start_timeout_and_then_starts(hub):
    held = hold(hub)
    server = "q" + uuid.uuid4().hex[:6]
    try:
        r = spawn(hub, "alice", server, **QUEUED)
        assert r.status_code in (201, 202), r.text
        assert eventually(lambda: queued(hub, "alice", server), timeout=30), hub_log(hub)
        time.sleep(START_TIMEOUT + 2)  # queued for longer than the start budget
        assert queued(hub, "alice", server), hub_log(hub)
        let_go(hub, held)
        s = wait_ready(hub, "alice", server, timeout=60)
        assert s["ready"] and allocations(hub, "alice", "allocated", server)
    finally:
        stop(hub, "alice", server)
        hub.call("DELETE", f"allocations/{held}", "alice")


def test_a_queued_session_rides_through_a_restart_of_the_service(hub):
    held = hold(hub)
    server = "r" + uuid.uuid4().hex[:6]
    hub.token("alice")  # logins need the service: log in before it goes
    try:
        assert spawn(hub, "alice", server, **QUEUED).status_code in (201, 202)
        assert eventually(lambda: queued(hub, "alice", server), timeout=30), hub_log(hub)
        service_process(hub).send_signal(signal.SIGKILL)
        assert eventually(lambda: not service_up(hub), timeout=30)

        # a start while the service is down fails at once, and says why
        r = spawn(hub, "alice", "down" + server, **QUEUED)
        assert r.status_code == 503, r.text
        assert "hubgrid service unavailable" in r.json()["message"]

        # the hub starts the service again (at its next poll of the service)
        assert eventually(lambda: service_up(hub), timeout=120, interval=1), hub_log(hub)
        assert server_of(hub, "alice", server)["pending"] == "spawn"
        let_go(hub, held)
        assert wait_ready(hub, "alice", server, timeout=60)["ready"]
        assert f"alice:{server}: hubgrid service unavailable, retrying" in hub_log(hub, 10**6)
    finally:
        stop(hub, "alice", server)
        hub.call("DELETE", f"allocations/{held}", "alice")


def test_a_hub_user_hubgrid_does_not_know_gets_a_403_that_says_so(hub):
    name = "ghost" + uuid.uuid4().hex[:6]
    _ok(hub.hub_call("POST", f"users/{name}"), 201)
    r = hub.hub_call("POST", f"users/{name}/server", json={"user_options": {}})
    assert r.status_code == 403, r.text
    assert r.json()["message"] == (f"user {name!r} is not registered in hubgrid: log in to "
                                   "the hub once, or ask an admin to add you")


def test_a_local_sessions_output_is_its_log_and_its_file_goes_when_it_ends(hub):
    """The demo's local processes keep their output as Docker and Slurm sessions
    do: the server's own start-up lines reach the session's log while it runs;
    once it has ended the whole output is with the service and the local file
    is gone."""
    server = "o" + uuid.uuid4().hex[:6]
    try:
        r = spawn(hub, "alice", server, project="ml", resource_group="acme-gpu", cpu="0.5",
                  mem="256M")
        assert r.status_code in (201, 202), r.text
        wait_ready(hub, "alice", server, timeout=90)
        alloc = allocations(hub, "alice", "allocated", server)[0]["id"]
        output = hub.state / "local-sessions" / f"{alloc}.log"
        assert output.exists() and output.stat().st_mode & 0o077 == 0

        def logged():
            r = hub.call("GET", f"allocations/{alloc}/logs", "alice")
            return r.text if r.status_code == 200 and "Jupyter Server" in r.text else None

        text = eventually(logged, timeout=30)  # pushed at the hub's polls (2 s)
        assert text, hub_log(hub)
    finally:
        stop(hub, "alice", server)
    assert eventually(lambda: not output.exists(), timeout=30)
    r = hub.call("GET", f"allocations/{alloc}/logs", "alice")
    assert r.status_code == 200 and "Jupyter Server" in r.text
