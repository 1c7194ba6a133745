"""A hub killed (-9) while an isolated Docker session starts: the restarted
hub stops that server at its first check, instead of waiting for it at a TCP
address it never had (JupyterHub's start-up check gave up after
http_timeout, 30 s, holding the allocation all that time), and the service
releases its allocation. The session's container is paused the moment it
exists, so the hub dies before the server could answer. The time from the
new hub answering to the release is printed, not asserted."""

from __future__ import annotations

import signal
import threading
import time

import requests

from docker_fixtures import HOSTS, SERVICE_CONFIG, opts
from hub_fixtures import launch_hub, stop_hub
from session_fixtures import allocations, eventually, hub_log, server_of, spawn


def test_a_hub_killed_mid_start_lets_the_new_hub_stop_that_server_at_once(dock):
    try:
        killed_mid_start(dock)
    finally:  # a failed run leaves no container behind for the next
        for url, c in dock.containers(user="bob"):
            if c["Names"] and c["Names"][0].endswith("--midway"):
                dock.engines[url].remove_container(c["Id"], force=True)


def killed_mid_start(dock):
    hub = dock.hub
    # the hub answers a spawn once it is up (or after 10 s): asked beside the test
    def ask():
        try:
            spawn(hub, "bob", "midway", **opts())
        except requests.RequestException:
            pass  # the hub is killed before it answers
    threading.Thread(target=ask, daemon=True).start()
    a = eventually(lambda: allocations(hub, "bob", "allocated", "midway"), timeout=60,
                   interval=0.05)[0]
    # the container, paused as soon as it exists: its server never answers this hub
    found = eventually(lambda: dock.containers(allocation=a["id"]), timeout=60, interval=0.02)
    url, c = found[0]
    cl = dock.engines[url]
    assert eventually(lambda: cl.inspect_container(c["Id"])["State"]["Running"], timeout=60,
                      interval=0.02)
    cl.pause(c["Id"])
    hub.process.send_signal(signal.SIGKILL)
    hub.process.wait(timeout=30)
    stop_hub(hub)  # what the hub's process group left (its service, its proxy)
    dock.engines[url].unpause(c["Id"])
    dock.hub = hub = launch_hub(hub.state, config="", ports=hub.ports,
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
    answering = time.monotonic()
    released = eventually(lambda: allocations(hub, "bob", "released", "midway"), timeout=60,
                          interval=0.2)
    assert released and released[0]["id"] == a["id"], (allocations(hub, "bob"), [
        line for line in hub_log(hub, 10**7).splitlines() if "midway" in line or "Initialized" in line
        or "appears" in line or "reconcil" in line or "release" in line][-40:])
    print(f"\nreleased {time.monotonic() - answering:.1f} s after the new hub answered")
    assert eventually(lambda: server_of(hub, "bob", "midway") is None, timeout=30)
    assert eventually(lambda: dock.containers(allocation=a["id"]) == [], timeout=60)
    log = hub_log(hub, 10**7)
    # found ended at the first check: not waited for at an address it never had
    assert "bob:midway appears to have stopped while the Hub was down" in log
    assert "never showed up" not in log
    assert not allocations(hub, "bob", "allocated", "midway")
