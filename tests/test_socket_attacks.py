"""A session or a replica that swaps its own server socket for a link reaches
nothing outside it, on the real hub, proxy, gateway and haproxy (the shared
Docker hub, tests/docker_fixtures.py).

The attack: as the session's own uid, ``ln -s <a node socket> x && mv -T x
jupyter.sock`` in the directory where its server listens. A host-side
process that connected by that name would follow the link as root (to the
node's Docker API, or another tenant's replica). Here the "node socket" is
a stand-in that counts every connection: it must see none, through the
proxy, the gateway or the hub's checks, and the session is stopped.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid

import pytest
import requests

import test_docker_isolation
from docker_fixtures import HOSTS, group_on_first_engine
from hub_fixtures import _ok
from serving_fixtures import INFERENCE
from session_fixtures import allocations, eventually, server_of, stop_server
from test_replicas_docker import endpoint, replica_allocations, until_state

GATEWAY = "/services/hubgrid-gateway/"
GROUP, NODE = "swap", "swap-node"


@pytest.fixture(scope="module")
def iso(dock):
    return group_on_first_engine(dock, GROUP, NODE)


def start(dock, user: str, server: str) -> tuple[dict, str]:
    return test_docker_isolation.start(dock, user, server, GROUP, NODE)


class NodeSocket:
    """A root-owned socket of the node that answers any HTTP request with
    ``node-api`` and counts the connections it accepted."""

    def __init__(self):
        self.path = f"/run/hubgrid-test-node-{uuid.uuid4().hex[:8]}.sock"
        self.connections = 0
        self._sock = socket.socket(socket.AF_UNIX)
        self._sock.bind(self.path)
        os.chmod(self.path, 0o666)  # even so: nothing may reach it
        self._sock.listen(16)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            try:
                c.recv(4096)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n"
                          b"node-api")
            except OSError:
                pass
            c.close()

    def close(self):
        self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        os.unlink(self.path)


@pytest.fixture
def node_socket():
    s = NodeSocket()
    try:
        yield s
    finally:
        s.close()


def swap(dock, container: str, target: str) -> None:
    """What the session runs, as its own uid: its server's name becomes a link."""
    dock.exec(HOSTS[0], container, ["sh", "-c", f"ln -s {target} /run/hubgrid/x && "
                                    "mv -T /run/hubgrid/x /run/hubgrid/jupyter.sock"])


def test_a_session_that_swaps_its_socket_for_a_link_reaches_nothing_and_is_stopped(
        iso, node_socket):
    hub = iso.hub
    a, c = start(iso, "alice", "iso-swap")
    try:
        # the relay's directory is not the session's to write: nothing planted there
        out = iso.exec(HOSTS[0], c, ["sh", "-c", "touch /run/hubgrid-relay/x 2>&1; "
                                     "ln -sf /etc/passwd /run/hubgrid-relay/hub.sock 2>&1; "
                                     "echo rc=$?"])
        assert out.count("Read-only file system") == 2 and out.endswith("rc=1"), out
        swap(iso, c, node_socket.path)
        token = {"Authorization": f"token {hub.token('alice')}"}
        for _ in range(5):  # her server's URL leads to her own socket, pinned, or nowhere
            r = requests.get(f"{hub.url}/user/alice/iso-swap/api/status", headers=token,
                             timeout=30, allow_redirects=False)
            assert "node-api" not in r.text
        # the hub's poll finds the swap: stopped, its allocation released
        assert eventually(lambda: server_of(hub, "alice", "iso-swap") is None, timeout=60), \
            "the hub kept a session whose socket became a link"
        [done] = allocations(hub, "alice", server="iso-swap")
        assert done["state"] == "released"
        assert node_socket.connections == 0
        assert not os.path.exists(f"/run/hubgrid/sessions/{a['id']}")
    finally:
        if server_of(hub, "alice", "iso-swap") is not None:
            stop_server(hub, "alice", "iso-swap")


def test_a_replica_that_swaps_its_socket_for_a_link_serves_nothing_of_the_node(
        serving, node_socket):
    dock, hub = serving.dock, serving.hub
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "swap", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "512M"},
        "replicas": 1}), 201)
    try:
        token = _ok(hub.call("POST", f"endpoints/{e['id']}/tokens", "bob",
                             json={"expires_in_days": 1}), 201)["token"]
        until_state(hub, e["id"], "running", 1)
        [a] = replica_allocations(hub, e["id"])
        url, c = dock.container(a["id"])
        auth = {"Authorization": f"Bearer {token}"}
        base = f"{hub.url}{GATEWAY}e/{e['id']}/"
        # haproxy holds a connection to the replica open: the swap comes after a call
        requests.get(base + "health", headers=auth, timeout=30)
        swap(dock, c["Id"], node_socket.path)
        for path in ("version", "containers/json", "health"):
            r = requests.get(base + path, headers=auth, timeout=30)
            assert "node-api" not in r.text, (path, r.status_code)
        # the hub's poll finds the swap: that replica goes (the endpoint starts another)
        assert eventually(lambda: a["id"] not in {x["id"] for x in replica_allocations(
            hub, e["id"])}, timeout=90), "the hub kept a replica whose socket became a link"
        assert node_socket.connections == 0
    finally:
        hub.call("DELETE", f"endpoints/{e['id']}", "bob")
        eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)
