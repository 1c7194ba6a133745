"""A hub killed with -9 and started again: the capacity its dead spawns held
comes back, and the queue admits nobody whose server is gone.

The real hub (local spawner) with the service's shipped ``reconcile_grace``.
Figures (how long capacity was held by nothing) are printed, not asserted.
"""

from __future__ import annotations

import os
import signal
import socket
import time
import uuid

import psutil
import pytest
import requests

from hub_fixtures import _ok, launch_hub, require, stop_hub
from session_fixtures import eventually, hub_log, spawn, wait_ready

SHIPPED_GRACE = (
    "from quota_service.app import HubgridService\n"
    "c.HubgridService.reconcile_grace = "
    "HubgridService.class_traits()['reconcile_grace'].default_value\n"
)


@pytest.fixture
def hub(tmp_path):
    require("configurable-http-proxy", __import__("shutil").which("configurable-http-proxy")
            is not None, "run `make test` (it installs it from npm)")
    hub = launch_hub(tmp_path, service_config=SHIPPED_GRACE)
    try:
        yield hub
    finally:
        stop_hub(hub)


def tiny_group(hub, name: str) -> None:
    """A resource group with room for exactly one session of 1 cpu."""
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": name}), 201)
    _ok(hub.call("PUT", f"resource-groups/{name}/grants", "admin", json={"domain": "default"}),
        201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": f"{name}-1", "resource_group": name, "capacity": {"cpu": "1", "mem": "64G"}}), 201)


def allocation(hub, alloc_id: str) -> dict:
    r = hub.call("GET", f"allocations/{alloc_id}", "admin")
    assert r.status_code == 200, r.text
    return r.json()


def of(hub, user: str, state: str | None = None) -> list[dict]:
    q = f"allocations?user={user}" + (f"&state={state}" if state else "")
    return _ok(hub.call("GET", q, "admin"), 200)


def server_pid(user: str) -> int | None:
    for proc in psutil.process_iter(["environ"]):
        if (proc.info.get("environ") or {}).get("JUPYTERHUB_USER") == user:
            return proc.pid
    return None


def listening(port: str) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", int(port))) == 0


def kill_hub(hub) -> None:
    """kill -9 of the hub alone; its service follows it (it watches its parent)."""
    hub.process.send_signal(signal.SIGKILL)
    hub.process.wait(timeout=30)
    assert eventually(lambda: not listening(hub.ports["HUBGRID_SERVICE_PORT"]), timeout=30)


def restart(hub):
    new = launch_hub(hub.state, service_config=SHIPPED_GRACE, ports=hub.ports)
    new.tokens.clear()

    def hub_up():
        try:
            return requests.get(new.hub_api, timeout=5).status_code == 200
        except requests.ConnectionError:
            return False

    assert eventually(hub_up, timeout=60), hub_log(new)
    return new


def test_after_a_hub_crash_pending_requests_of_dead_spawns_are_cancelled_not_admitted(hub):
    tiny_group(hub, "tiny")
    u1, u2, u3 = (f"{p}{uuid.uuid4().hex[:6]}" for p in ("run", "wait", "next"))
    for user in (u1, u2, u3):
        assert hub.login(user).status_code == 302
    opts = {"resource_group": "tiny", "cpu": "1", "mem": "256M"}
    assert spawn(hub, u1, "a", **opts).status_code in (201, 202)
    wait_ready(hub, u1, "a")
    r = spawn(hub, u2, "b", **opts)
    assert r.status_code == 202, r.text
    [waiting] = eventually(lambda: of(hub, u2, "pending"), timeout=30)

    kill_hub(hub)
    # the running session dies while the hub is down: its capacity frees at restart
    os.kill(server_pid(u1), signal.SIGKILL)
    restarted_at = time.monotonic()
    hub = restart(hub)
    try:
        def settled():
            a = allocation(hub, waiting["id"])
            return a if a["state"] not in ("pending", "allocated") else None

        done = eventually(settled, timeout=60)
        assert done, hub_log(hub)
        # never admitted: nobody could have used it
        assert done["state"] == "cancelled" and done["admitted_at"] is None, done
        assert eventually(lambda: of(hub, u1, "allocated") == [], timeout=60), hub_log(hub)
        # and the capacity serves a real user
        assert spawn(hub, u3, "c", **opts).status_code in (201, 202)
        wait_ready(hub, u3, "c")
        print(f"\nthe dead spawn's request ended {done['release_reason']!r}; capacity back "
              f"{time.monotonic() - restarted_at:.1f} s after the restart began")
    finally:
        # the hub leaves servers running when it stops: u3's would outlive the run
        if (pid := server_pid(u3)) is not None:
            os.kill(pid, signal.SIGTERM)
        stop_hub(hub)


def test_after_a_hub_crash_mid_spawn_the_allocation_no_server_holds_is_released(hub):
    tiny_group(hub, "mid")
    user = f"mid{uuid.uuid4().hex[:6]}"
    assert hub.login(user).status_code == 302
    # the service admitted and placed it; the hub died before its spawner
    # recorded the allocation (nothing will ever start or release it)
    r = hub.internal("POST", "internal/allocations", json={
        "user": user, "project": "default", "resource_group": "mid",
        "slots": {"cpu": "1", "mem": "256M"}, "server_name": "gone"})
    assert r.status_code == 201, r.text
    orphan = r.json()["id"]
    kill_hub(hub)
    killed_at = time.monotonic()
    hub = restart(hub)
    try:
        def released():
            a = allocation(hub, orphan)
            return a if a["state"] == "released" else None

        done = eventually(released, timeout=45)
        assert done and "reconciled" in done["release_reason"], hub_log(hub)
        print(f"\ncapacity held by nothing for {time.monotonic() - killed_at:.1f} s after the "
              f"kill (hub restart included): {done['release_reason']}")
        # the group's one cpu is free again
        r = hub.internal("POST", "internal/allocations", json={
            "user": user, "project": "default", "resource_group": "mid",
            "slots": {"cpu": "1", "mem": "256M"}, "server_name": "again"})
        assert r.status_code == 201, r.text
        hub.internal("DELETE", f"internal/allocations/{r.json()['id']}")
    finally:
        stop_hub(hub)
