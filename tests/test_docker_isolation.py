"""Docker sessions isolated on their node, black-box, through the
real hub and proxy on the shared Docker hub (tests/docker_fixtures.py).

Two users' sessions on the same node: each has a network of its own, so
neither reaches the other, nor the hubgrid service, the hub, the proxy's API
or PostgreSQL of its node; each still reaches the hub's and the hubgrid API
through its relay, and its own apps answer it (and only it) through the
proxy. The same probes from this machine (the node) and from inside the
session itself show the targets do answer: what the other session sees is
isolation, not absence.
"""

from __future__ import annotations

import json
import os
import uuid

import docker
import pytest
import requests

from docker_fixtures import HOSTS, IMAGE, group_on_first_engine, held
from hub_fixtures import _ok
from session_fixtures import (allocations, eventually, run_in_terminal, server_of, spawn,
                              stop_server, wait_ready)
from spawner.isolation import ICC_OPTION, egress_refusal

GROUP, NODE = "iso", "iso-node"
APP_PORT = 8765
ABSTRACT = "hubgrid-probe-a"

#: run in a session (or here): each target -> "open" or the error's name
PROBE = r"""
import json, socket, sys
out = {}
for t in json.loads(sys.argv[1]):
    if t.startswith("@"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); addr = "\0" + t[1:]
    else:
        host, port = t.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); addr = (host, int(port))
    s.settimeout(3)
    try:
        s.connect(addr); out[t] = "open"
    except OSError as e:
        out[t] = type(e).__name__
    finally:
        s.close()
print(json.dumps(out))
"""

#: an abstract Unix socket that answers "A" (a listener no file path names)
ABSTRACT_SERVER = r"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0%s"); s.listen(8)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b"A")
    except OSError:  # a probe that connected and left at once
        pass
    c.close()
""" % ABSTRACT

#: an HTTP GET on the session's loopback: "<status>" (any status), or the error
GET = r"""
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    print(opener.open(sys.argv[1], timeout=10).status)
except urllib.error.HTTPError as e:
    print(e.code)
"""


@pytest.fixture(scope="module")
def iso(dock):
    """A resource group with one node (the first engine): sessions of two
    users land side by side on it."""
    return group_on_first_engine(dock, GROUP, NODE)


def start(dock, user: str, server: str, group: str = GROUP,
          node: str = NODE) -> tuple[dict, str]:
    """A session of ``user`` in ``group`` (one node on the first engine): its
    allocation and container id."""
    hub = dock.hub
    r = spawn(hub, user, server, project="ml", resource_group=group, image=IMAGE, cpu="0.5",
              mem="512M")
    assert r.status_code in (201, 202), r.text
    wait_ready(hub, user, server)
    a = held(hub, user, server)
    assert a["node"] == node
    url, c = dock.container(a["id"])
    assert url == HOSTS[0]
    return a, c["Id"]


def probe(dock, container: str | None, targets: list[str]) -> dict:
    if container is None:  # from this machine: the node itself
        import subprocess
        import sys
        out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(targets)],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    else:
        out = dock.exec(HOSTS[0], container, ["python3", "-c", PROBE, json.dumps(targets)])
    return json.loads(out)


def in_a_namespace_of_its_own(dock, info: dict) -> bool:
    """The container's network is Docker's ``none``: its own, or that of
    the network sandbox it joined (spawner/sandboxes.py)."""
    mode = info["HostConfig"]["NetworkMode"]
    if mode.startswith("container:"):
        mode = dock.engines[HOSTS[0]].inspect_container(mode.split(":", 1)[1])["HostConfig"][
            "NetworkMode"]
    return mode == "none"


def get_inside(dock, container: str, url: str) -> str:
    return dock.exec(HOSTS[0], container, ["python3", "-c", GET, url])


@pytest.fixture(scope="module")
def pair(iso):
    """alice's session A, serving HTTP on every address and an abstract
    socket, and bob's session B, both on the same node."""
    hub = iso.hub
    a, ca = start(iso, "alice", "iso-a")
    try:
        b, cb = start(iso, "bob", "iso-b")
    except BaseException:
        stop_server(hub, "alice", "iso-a")
        raise
    cl = iso.engines[HOSTS[0]]
    # every address: IPv6's wildcard, dual-stack, takes IPv4 too (a container's
    # loopback has no IPv6 address: Docker turns IPv6 off in its networks)
    for cmd in (["python3", "-m", "http.server", str(APP_PORT), "--bind", "::"],
                ["python3", "-c", ABSTRACT_SERVER]):
        cl.exec_start(cl.exec_create(ca, cmd)["Id"], detach=True)
    own = [f"127.0.0.1:{APP_PORT}", f"@{ABSTRACT}"]
    assert eventually(lambda: set(probe(iso, ca, own).values()) == {"open"}, timeout=30), \
        probe(iso, ca, own)
    yield iso, (a, ca), (b, cb)
    stop_server(hub, "bob", "iso-b")
    stop_server(hub, "alice", "iso-a")


def test_a_session_reaches_neither_another_session_nor_any_service_of_its_node(pair):
    dock, (a, ca), (b, cb) = pair
    ports = dock.hub.ports
    services = {f"127.0.0.1:{ports[k]}": k for k in
                ("HUBGRID_SERVICE_PORT", "HUBGRID_HUB_PORT", "HUBGRID_PROXY_API_PORT",
                 "HUBGRID_GATEWAY_PORT", "port")}
    services["127.0.0.1:5432"] = "PostgreSQL"
    # from the node itself every service answers (PostgreSQL: make test starts it)
    here = probe(dock, None, list(services))
    assert set(here.values()) == {"open"}, here
    # A reaches its own listeners
    own = [f"127.0.0.1:{APP_PORT}", f"@{ABSTRACT}"]
    assert probe(dock, ca, own) == dict.fromkeys(own, "open")
    # B reaches none of them, nor any service of the node
    seen = probe(dock, cb, own + list(services))
    assert "open" not in seen.values(), seen
    # its network has its loopback only: no address leads anywhere else
    assert dock.exec(HOSTS[0], cb, ["ls", "/sys/class/net"]).split() == ["lo"]
    info = dock.engines[HOSTS[0]].inspect_container(cb)
    assert in_a_namespace_of_its_own(dock, info)
    # A's and B's socket directories: each mounts its own, and no other
    mounts = {m["Destination"]: (m["Source"], m["RW"]) for m in info["Mounts"]}
    assert mounts["/run/hubgrid"] == (f"/run/hubgrid/sessions/{b['id']}/session", True)
    assert mounts["/run/hubgrid-relay"] == (f"/run/hubgrid/sessions/{b['id']}/relay", False)
    assert a["id"] not in json.dumps(info["Mounts"])
    # the session's directory is root's (the pin lives there); its own part is its uid's alone
    top, own = (os.stat(f"/run/hubgrid/sessions/{a['id']}{p}") for p in ("", "/session"))
    assert (top.st_uid, oct(top.st_mode & 0o777)) == (0, "0o700")
    assert (own.st_uid, oct(own.st_mode & 0o777)) == (1000, "0o700")


def test_a_sessions_apps_answer_it_through_the_proxy_and_nobody_else(pair):
    dock, (a, ca), (b, cb) = pair
    hub = dock.hub
    app = f"{hub.url}/user/alice/iso-a/proxy/{APP_PORT}/"
    r = requests.get(app, headers={"Authorization": f"token {hub.token('alice')}"}, timeout=60)
    assert r.status_code == 200 and "Directory listing" in r.text, r.text[:300]
    r = requests.get(app, headers={"Authorization": f"token {hub.token('bob')}"}, timeout=60,
                     allow_redirects=False)
    assert r.status_code == 403, r.status_code
    # a terminal (websocket through the proxy to the socket), whose `hubgrid`
    # reaches the hubgrid API through the relay with alice's own token
    shown = run_in_terminal(hub, "alice", "iso-a", "hubgrid me --json | head -c 300")
    assert '"alice"' in shown, shown


def test_the_relay_carries_the_hub_api_and_the_hubgrid_api_and_nothing_else(pair):
    dock, (a, ca), _ = pair
    base = "http://127.0.0.1:8081"
    assert get_inside(dock, ca, f"{base}/hub/api/") == "200"  # the hub's API root
    assert get_inside(dock, ca, f"{base}/services/hubgrid/api/v1/me") == "401"  # needs a token
    for path in ("/hub/login", "/hub/admin", "/services/other/", "/user/bob/iso-b/api/status",
                 "/hub/api/../login", "/hub/api/%2e%2e/login", "/services/hubgrid/console/"):
        assert get_inside(dock, ca, base + path) == "403", path


def test_a_session_whose_socket_vanished_is_found_and_released(iso):
    hub = iso.hub
    a, c = start(iso, "alice", "iso-gone")
    try:
        # the session removes its server's socket (what the hub pinned stays:
        # the session is found by its poll all the same)
        iso.exec(HOSTS[0], c, ["rm", "/run/hubgrid/jupyter.sock"])
        assert eventually(lambda: server_of(hub, "alice", "iso-gone") is None, timeout=60), \
            "the hub still lists the session"
        [done] = allocations(hub, "alice", server="iso-gone")
        assert done["state"] == "released"
        assert iso.containers(allocation=a["id"]) == []
        assert not os.path.exists(f"/run/hubgrid/sessions/{a['id']}")
    finally:
        if server_of(hub, "alice", "iso-gone") is not None:
            stop_server(hub, "alice", "iso-gone")


@pytest.fixture
def network(dock):
    """Make a Docker network on the first engine (internal: no route out),
    removed after the test."""
    cl = dock.engines[HOSTS[0]]
    made = []

    def make(**options) -> dict:
        name = "hgtest-egress-" + uuid.uuid4().hex[:6]
        cl.create_network(name, driver="bridge", internal=True, options=options)
        made.append(name)
        return cl.inspect_network(name)

    yield make
    for name in made:
        try:
            cl.remove_network(name)
        except docker.errors.NotFound:
            pass


def test_an_egress_network_must_keep_its_sessions_apart(network):
    # what the spawner checks, on the engine's own description of real networks
    assert egress_refusal(network(**{ICC_OPTION: "false"}), "x") == ""
    assert "talk to each other" in egress_refusal(network(), "x")
    assert "does not exist" in egress_refusal(None, "x")
    assert "not a bridge" in egress_refusal({"Driver": "host", "Options": {}}, "x")


def test_a_node_whose_engine_is_on_another_machine_is_refused_and_released(iso):
    hub = iso.hub
    # TEST-NET-3: refused before anything is sent to it
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": "far"}), 201)
    _ok(hub.call("PUT", "resource-groups/far/grants", "admin", json={"domain": "acme"}), 201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": "far-node", "resource_group": "far", "backend_url": "tcp://203.0.113.7:2376",
        "capacity": {"cpu": "2", "mem": "4G"}}), 201)
    r = spawn(hub, "alice", "far", project="ml", resource_group="far", image=IMAGE, cpu="0.5",
              mem="512M")
    assert r.status_code == 500 and "on another machine" in r.text, r.text
    assert "isolated = False" in r.text
    assert server_of(hub, "alice", "far") is None
    assert [a["state"] for a in allocations(hub, "alice", server="far")] == ["released"]


def test_a_leftover_container_of_the_same_name_does_not_cost_the_new_session_its_network(iso):
    """DockerSpawner removes a container left under the session's name (a hub
    that died) before it starts the new one: the new one is still isolated."""
    hub, cl = iso.hub, iso.engines[HOSTS[0]]
    left = cl.create_container(IMAGE, ["sleep", "600"], name="hubgrid-alice--isoleft",
                               labels={"hubgrid.test": "leftover"})
    try:
        a, c = start(iso, "alice", "isoleft")
        assert c != left["Id"]
        assert in_a_namespace_of_its_own(iso, cl.inspect_container(c))
        assert os.path.exists(f"/run/hubgrid/sessions/{a['id']}/jupyter.sock")
    finally:
        stop_server(hub, "alice", "isoleft")
        try:
            cl.remove_container(left["Id"], force=True)
        except docker.errors.NotFound:
            pass
