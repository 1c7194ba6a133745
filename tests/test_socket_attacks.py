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
import signal
import socket
import subprocess
import threading
import uuid

import pytest
import requests

import test_docker_isolation
from docker_fixtures import (HOSTS, SERVICE_CONFIG, _engines, docker_hub, group_on_first_engine,
                             held, opts)
from hub_fixtures import _ok, launch_hub
from serving_fixtures import INFERENCE
from session_fixtures import allocations, eventually, server_of, spawn, stop_server, wait_ready
from test_crash_recovery import listening
from test_docker_isolation import GET
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
        # the model server has no login: whatever mode the replica gives its
        # socket, no local account of the node reaches it but through the gateway
        dock.exec(url, c["Id"], ["chmod", "777", "/run/hubgrid/jupyter.sock"])
        for uid in ("1000", "65534"):
            probe = subprocess.run(
                ["setpriv", "--reuid", uid, "--regid", "100", "--clear-groups",
                 "/usr/bin/python3", "-c",  # one every account may run (not a venv's or pyenv's)
                 "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])",
                 f"/run/hubgrid/sessions/{a['id']}/jupyter.sock"], capture_output=True, text=True)
            assert probe.returncode != 0 and "PermissionError" in probe.stderr, probe
        swap(dock, c["Id"], node_socket.path)
        for path in ("v1/models", "health", "version", "containers/json"):
            r = requests.get(base + path, headers=auth, timeout=30)
            assert "node-api" not in r.text, (path, r.status_code)
        # the hub's poll finds the swap: that replica goes (the endpoint starts another)
        assert eventually(lambda: a["id"] not in {x["id"] for x in replica_allocations(
            hub, e["id"])}, timeout=90), "the hub kept a replica whose socket became a link"
        assert node_socket.connections == 0
    finally:
        hub.call("DELETE", f"endpoints/{e['id']}", "bob")
        eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)


def _accepts(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        return s.connect_ex(path) == 0


#: the hub under umask 077, as scripts/run.sh starts it: the session still
#: reaches its relay, whose directory the hub makes
HUB_CONFIG = ("c.HubgridDockerSpawner.pending_poll_interval = 0.5\nc.Spawner.poll_interval = 2\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n"
              "import os\nos.umask(0o077)\n")


@pytest.fixture
def own_hub(tmp_path):
    """A Docker hub of this test's own (it is killed and started again)."""
    with docker_hub(tmp_path, _engines(), HUB_CONFIG, (("own-a", HOSTS[0], 0),),
                    SERVICE_CONFIG) as d:
        yield d


def test_a_hub_restart_rebinds_the_relay_where_no_session_planted_anything(own_hub, tmp_path):
    """A hub started again binds each running session's relay anew, as root.
    The session plants links everywhere it can write, pointing at a root-owned
    file of the node, and keeps swapping them while the hub restarts: the
    file keeps its owner and mode, the relay and the pinned server work."""
    d = own_hub
    victim = tmp_path / "victim"
    victim.write_text("the node's\n")
    os.chmod(victim, 0o644)
    os.chmod(tmp_path, 0o755)  # the link resolves for whoever follows it
    server = f"rs{uuid.uuid4().hex[:6]}"  # its container's name is unique on the engine
    r = spawn(d.hub, "alice", server, **opts(cpu="0.5"))
    assert r.status_code in (201, 202), r.text
    wait_ready(d.hub, "alice", server)
    a = held(d.hub, "alice", server)
    url, c = d.container(a["id"])
    relay = f"/run/hubgrid/sessions/{a['id']}/relay/hub.sock"
    # what it can write: its own directory, where it keeps planting links
    # named as the relay's and the server's sockets (in the background)
    loop = (f"while true; do ln -sfn {victim} /run/hubgrid/hub.sock.x; "
            "mv -T /run/hubgrid/hub.sock.x /run/hubgrid/hub.sock; done")
    cl = d.engines[url]
    cl.exec_start(cl.exec_create(c["Id"], ["sh", "-c", loop])["Id"], detach=True)
    out = d.exec(url, c["Id"], ["sh", "-c", f"ln -s {victim} /run/hubgrid-relay/hub.sock.x "
                                "2>&1; echo rc=$?"])
    assert "Read-only file system" in out and out.endswith("rc=1"), out
    # the hub dies and comes back: its first poll of the session binds the relay again
    d.hub.process.send_signal(signal.SIGKILL)
    d.hub.process.wait(timeout=30)
    assert eventually(lambda: not _accepts(relay), timeout=30)  # it died with the hub
    # and so did the service (else the new hub's launch would find the old one answering)
    assert eventually(lambda: not listening(d.hub.ports["HUBGRID_SERVICE_PORT"]), timeout=30)
    env = {"HUBGRID_SPAWNER": "docker", "HUBGRID_DOCKER_URL": HOSTS[0]}
    new = launch_hub(d.hub.state, env, config=HUB_CONFIG, service_config=SERVICE_CONFIG,
                     ports=d.hub.ports)
    d.hub = new
    assert eventually(lambda: _accepts(relay), timeout=60), \
        "the restarted hub did not bind the relay again"
    st = os.stat(victim)
    assert (st.st_uid, st.st_gid, oct(st.st_mode & 0o777)) == (0, 0, "0o644")
    sock = os.lstat(relay)
    assert (sock.st_uid, oct(sock.st_mode & 0o777)) == (1000, "0o600")
    # the session reaches the hub through its relay, and its server is reached on its pin
    assert d.exec(url, c["Id"], ["python3", "-c", GET, "http://127.0.0.1:8081/hub/api/"]) == "200"
    r = requests.get(f"{new.url}/user/alice/{server}/api/status", timeout=30,
                     headers={"Authorization": f"token {new.token('alice')}"})
    assert r.status_code == 200, r.text[:300]
    stop_server(new, "alice", server)
