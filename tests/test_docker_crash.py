"""A hub killed (-9) during a burst of isolated Docker spawns, and the hub
started again on the same state (one kill, one restart, for every test of
this module; the shared ``dock`` hub is the one killed and restarted, once
more before, for the killed hub's settings).

JupyterHub writes a spawner's state only once start() returns, so the
restarted hub knows nothing of those starts but their servers' names
(spawner/dockerrecover.py). The killed hub asks a started server whether
it answers only every 30 s: ``upnow``'s server is up when the hub is
killed, and the new hub keeps it, with its allocation. ``midway``'s
container is paused the moment it runs: its server never answers, and it
is stopped at once, its
allocation released, its session directory, live directory and network
sandbox removed. The others end either way; none holds capacity with a
server that can never become ready. The new hub reaps its network
sandboxes every half second (``sandbox_reap_interval``): no holder beyond
the pool is left, and the holders sessions take while passes run are not
reaped. Times are printed, and bounded where the held-out check bounds them.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import requests

from docker_fixtures import DOCK_CONFIG, HOSTS, SERVICE_CONFIG, group_on_first_engine, opts
from hub_fixtures import _ok, launch_hub, stop_hub
from session_fixtures import allocations, eventually, hub_log, server_of, spawn, wait_ready

GROUP, NODE = "crash", "crash-a"
SOCKET_ROOT, LIVE_ROOT = "/run/hubgrid/sessions", "/run/hubgrid/live"  # the spawner's defaults
BURST = ("upnow", "midway", "burst-1", "burst-2")
#: taken from the new hub's pool while its reaping passes run
TAKERS = ("take-1", "take-2", "take-3")
POOL = 8  # sandbox_pool_size's default
#: the killed hub asks a started server whether it answers only every 30 s:
#: a server can be up (past its own check of the hub, through its relay in
#: that hub) while the hub has not seen its start finish
SLOW_READY = "c.HubgridDockerSpawner.ready_poll_interval = 30\n"
REAPING = ("c.HubgridDockerSpawner.sandbox_reap_interval = 0.5\n"
           "c.HubgridDockerSpawner.sandbox_reap_min_age = 5\n")
#: the held-out check: a dead start's capacity is back this soon after the new hub answers
RELEASED_WITHIN = 10.0


def within(check, crash, interval=0.05):
    """``check`` comes true at most RELEASED_WITHIN seconds after the new hub answered."""
    return eventually(check, timeout=max(0.1, crash["answering"] + RELEASED_WITHIN
                                         - time.monotonic()), interval=interval)


def small(**kw) -> dict:
    return opts(resource_group=GROUP, cpu="0.5", **kw)  # the image's least cpu


def holders(dock) -> list[dict]:
    """This hub's network sandboxes on the first engine (its API URL's port
    is in their ``hubgrid.sandbox`` label)."""
    port = f":{dock.hub.ports['HUBGRID_HUB_PORT']}/"
    cl = dock.engines[HOSTS[0]]
    return [c for c in cl.containers(all=True, filters={"label": ["hubgrid.sandbox"]})
            if port in c["Labels"]["hubgrid.sandbox"]]


def joined(dock) -> set[str]:
    """The holders a container of the first engine has joined."""
    modes = {(c.get("HostConfig") or {}).get("NetworkMode", "")
             for c in dock.engines[HOSTS[0]].containers(all=True)}
    return {m.split(":", 1)[1] for m in modes if m.startswith("container:")}


def unjoined(dock) -> list[dict]:
    taken = joined(dock)
    return [h for h in holders(dock) if h["Id"] not in taken]


def answers_inside(cl, cid: str, base_url: str) -> bool:
    """Whether the session's server answers on its own socket, asked from
    inside its container (nothing outside connects to a session's name)."""
    code = ("import socket;s=socket.socket(socket.AF_UNIX);s.settimeout(2);"
            "s.connect('/run/hubgrid/jupyter.sock');"
            f"s.sendall(b'GET {base_url}api HTTP/1.1\\r\\nHost: localhost\\r\\n"
            "Connection: close\\r\\n\\r\\n');print(s.recv(64).split()[1].decode())")
    ex = cl.exec_create(cid, ["python3", "-c", code])
    out = cl.exec_start(ex["Id"]).decode(errors="replace").strip()
    # what the spawner's readiness check takes for up: any status below 500
    return cl.exec_inspect(ex["Id"])["ExitCode"] == 0 and out.isdigit() and int(out) < 500


def paused_when_running(dock, hub, name: str) -> tuple[dict, str, str, str]:
    """(allocation, engine URL, container id, the holder it joined) of
    ``name``'s start, its container paused as soon as it runs: its server
    answers no hub."""
    a = eventually(lambda: allocations(hub, "bob", "allocated", name), timeout=90,
                   interval=0.05)[0]
    url, c = eventually(lambda: dock.containers(allocation=a["id"]), timeout=90,
                        interval=0.02)[0]
    cl = dock.engines[url]
    assert eventually(lambda: cl.inspect_container(c["Id"])["State"]["Running"], timeout=90,
                      interval=0.02)
    cl.pause(c["Id"])
    return a, url, c["Id"], c["HostConfig"]["NetworkMode"].split(":", 1)[-1]


def started_unseen(dock, hub, name: str) -> tuple[dict, str, str, str]:
    """The same of a start whose server answers before the hub asks it."""
    a = eventually(lambda: allocations(hub, "bob", "allocated", name), timeout=90,
                   interval=0.05)[0]
    url, c = eventually(lambda: dock.containers(allocation=a["id"]), timeout=90,
                        interval=0.05)[0]
    cl = dock.engines[url]
    assert eventually(lambda: cl.inspect_container(c["Id"])["State"]["Running"] and
                      answers_inside(cl, c["Id"], f"/user/bob/{name}/"), timeout=25,
                      interval=0.2), f"{name}'s server did not answer"
    s = server_of(hub, "bob", name)
    assert s and not s["ready"], s  # the hub has not seen it answer
    return a, url, c["Id"], c["HostConfig"]["NetworkMode"].split(":", 1)[-1]


def relaunch(dock, config: str):
    """The shared hub started again on its state with ``config``, answering logins."""
    hub = dock.hub
    dock.hub = hub = launch_hub(hub.state, config=config, ports=hub.ports,
                                service_config=SERVICE_CONFIG,
                                env_extra={"HUBGRID_SPAWNER": "docker",
                                           "HUBGRID_DOCKER_URL": HOSTS[0]})
    hub.tokens.clear()

    def answering_logins():
        try:
            return hub.login("admin").status_code == 302
        except requests.RequestException:
            return False
    assert eventually(answering_logins, timeout=60), hub_log(hub)
    return hub


@pytest.fixture(scope="module")
def crash(dock):
    """Kill the hub in a burst of starts, start it again: what was seen."""
    stop_hub(dock.hub)
    hub = relaunch(dock, DOCK_CONFIG + SLOW_READY)
    group_on_first_engine(dock, GROUP, NODE)
    # room for the burst and the takers at once: a second node on the same engine
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": f"{NODE}2", "resource_group": GROUP, "backend_url": HOSTS[0],
        "capacity": {"cpu": "2", "mem": "4G"}}), 201)
    old_holders = {h["Labels"].get("hubgrid.sandbox.process") for h in holders(dock)}

    def ask(name):
        try:
            spawn(hub, "bob", name, **small())
        except requests.RequestException:
            pass  # the hub is killed before it answers
    for name in BURST:
        threading.Thread(target=ask, args=(name,), daemon=True).start()
    seen = {}
    try:
        seen["midway"] = paused_when_running(dock, hub, "midway")
        seen["upnow"] = started_unseen(dock, hub, "upnow")
        burst = {a["server_name"]: a for a in allocations(hub, "bob")
                 if a["server_name"] in BURST}
        hub.process.send_signal(signal.SIGKILL)
        hub.process.wait(timeout=30)
        stop_hub(hub)  # what the hub's process group left (its service, its proxy)
        old_holders |= {h["Labels"].get("hubgrid.sandbox.process") for h in holders(dock)}
        hub = relaunch(dock, DOCK_CONFIG + REAPING)
        yield {"hub": hub, "answering": time.monotonic(), "seen": seen, "burst": burst,
               "old_holders": old_holders - {None}}
    finally:  # a failed run leaves no container of these servers for the next module
        for url, c in dock.containers(user="bob"):
            if c["Names"] and c["Names"][0].rsplit("--", 1)[-1] in BURST + TAKERS:
                dock.engines[url].remove_container(c["Id"], force=True)


def test_a_server_not_up_when_the_hub_died_is_stopped_at_once_and_its_capacity_released(
        dock, crash):
    hub = crash["hub"]
    a, url, cid, holder = crash["seen"]["midway"]
    released = within(lambda: allocations(hub, "bob", "released", "midway"), crash)
    print(f"\nmidway released {time.monotonic() - crash['answering']:.1f} s after the new "
          "hub answered")
    assert released and released[0]["id"] == a["id"], (allocations(hub, "bob"), [
        line for line in hub_log(hub, 10**7).splitlines() if "midway" in line][-30:])
    # its session directory and live directory: removed (by a path the session cannot replace)
    directory, live = f"{SOCKET_ROOT}/{a['id']}", f"{LIVE_ROOT}/{a['id']}"
    assert within(lambda: not os.path.lexists(directory) and not os.path.lexists(live),
                  crash), (os.path.lexists(directory), os.path.lexists(live))
    assert eventually(lambda: server_of(hub, "bob", "midway") is None, timeout=30)
    assert eventually(lambda: dock.containers(allocation=a["id"]) == [], timeout=30)
    assert eventually(lambda: holder not in {h["Id"] for h in holders(dock)}, timeout=30)
    log = hub_log(hub, 10**7)
    # found at the first check, never waited for at an address it never had
    assert "bob:midway appears to have stopped while the Hub was down" in log
    assert "never showed up" not in log


def test_no_start_of_the_burst_holds_capacity_for_a_server_that_cannot_become_ready(
        dock, crash):
    hub = crash["hub"]

    def settled():
        now = {x["id"]: x for x in allocations(hub, "bob")}
        for name, a in crash["burst"].items():
            if now[a["id"]]["state"] in ("pending", "allocated"):
                s = server_of(hub, "bob", name)
                if not (s and s["ready"]):
                    return False
        return True
    assert within(settled, crash, interval=0.2), [
        (x["server_name"], x["state"]) for x in allocations(hub, "bob")]
    print(f"\nthe burst settled {time.monotonic() - crash['answering']:.1f} s after the new "
          "hub answered")


def test_a_server_up_when_the_hub_died_is_kept_with_its_allocation(dock, crash):
    hub = crash["hub"]
    a, url, cid, _ = crash["seen"]["upnow"]
    server = wait_ready(hub, "bob", "upnow", timeout=30)
    assert server["ready"] and allocations(hub, "bob", "allocated", "upnow")[0]["id"] == a["id"]
    assert dock.engines[url].inspect_container(cid)["State"]["Running"]
    # the proxy reaches it on its pinned socket, and the hub's token of bob is taken there
    r = requests.get(f"{hub.url}/user/bob/upnow/api/status", timeout=30,
                     headers={"Authorization": f"token {hub.token('bob')}"})
    assert r.status_code == 200, r.text[:300]
    # the service confirmed it: the server's state names the allocation
    assert eventually(lambda: "is recovered (allocation" in hub_log(hub, 10**7), timeout=30)
    state = hub.hub_call("GET", "users/bob").json()["servers"]
    assert state["upnow"]["state"].get("hubgrid_allocation") == a["id"], state["upnow"]
    # stopped, its recovered allocation is released and its directory goes
    r = hub.hub_call("DELETE", "users/bob/servers/upnow", user="bob")
    assert r.status_code in (202, 204), r.text
    assert eventually(lambda: allocations(hub, "bob", "released", "upnow"), timeout=60)
    assert eventually(lambda: not os.path.lexists(f"{SOCKET_ROOT}/{a['id']}"), timeout=30)


def test_no_holder_beyond_the_pool_is_left_once_the_reaping_pass_ran(dock, crash):
    old = crash["old_holders"]
    # the earlier process's holders no session joined: gone at the new hub's passes
    assert eventually(lambda: not [h for h in unjoined(dock)
                                   if h["Labels"].get("hubgrid.sandbox.process") in old],
                      timeout=30), [h["Labels"] for h in unjoined(dock)]
    assert eventually(lambda: len(unjoined(dock)) <= POOL, timeout=30), len(unjoined(dock))


def test_holders_taken_while_the_reaping_passes_run_are_not_reaped(dock, crash):
    hub = crash["hub"]
    # the pool's holders are older than sandbox_reap_min_age: only being kept saves them
    def aged():
        now = time.time()
        idle = unjoined(dock)
        return len(idle) >= len(TAKERS) and all(now - h["Created"] > 6 for h in idle)
    assert eventually(aged, timeout=90, interval=0.5), len(unjoined(dock))
    for name in TAKERS:
        r = spawn(hub, "bob", name, **small())
        assert r.status_code in (201, 202), r.text
    for name in TAKERS:
        wait_ready(hub, "bob", name, timeout=120)
    alive = {h["Id"] for h in holders(dock)}
    for name in TAKERS:
        a = allocations(hub, "bob", "allocated", name)[0]
        url, c = dock.container(a["id"])
        mode = c["HostConfig"]["NetworkMode"]
        assert mode.startswith("container:") and mode.split(":", 1)[1] in alive, mode
    assert "could not join network sandbox" not in hub_log(hub, 10**7)
    assert len(unjoined(dock)) <= POOL
