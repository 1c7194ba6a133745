"""An isolated session's ways out and in, piece by piece (spawner/relay.py,
spawner/isolation.py, spawner/scripts/hubgrid-relay), with real sockets on
loopback and in a temporary directory. End to end through the hub, the
proxy and real containers: tests/test_docker_isolation.py."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from spawner.isolation import (SERVER_PORT, SessionNetwork, check_root, egress_refusal,
                               engine_is_local, gateway_url, relay_routes)
from spawner.relay import Relays, Route, route_for

SCRIPT = Path(__file__).resolve().parent.parent / "spawner" / "scripts" / "hubgrid-relay"
ROUTES = (Route("/hub/api/", "http://127.0.0.1:1"), Route("/services/hubgrid/api/", "http://x"))


# ---------------------------------------------------------------- what passes

@pytest.mark.parametrize("path", ["/hub/api", "/hub/api/", "/hub/api/users/a/activity",
                                  "/hub/api/oauth2/token?x=1", "/services/hubgrid/api/v1/me"])
def test_the_hub_api_and_the_hubgrid_api_pass(path):
    assert isinstance(route_for(ROUTES, "GET", path, {}), Route)


@pytest.mark.parametrize("path,why", [
    ("/hub/login", "not a path"), ("/hub/apiary", "not a path"), ("/user/b/x/api/status", "not a path"),
    ("/services/other/api/", "not a path"), ("/", "not a path"),
    ("/hub/api/../login", "dot segments"), ("/hub/api/./users", "dot segments"),
    ("/hub/api/%2e%2e/login", "dot segments"), ("/hub/api/%2E%2E/login", "dot segments"),
    ("/hub/api/users%2fb", "encoded slashes"), ("/hub/api/..", "dot segments"),
    ("/hub/api/a\\..\\b", "dot segments"),
    # upstream cuts a fragment off: "/hub/api/..#x" would be "/hub/api/..", the /hub/ above
    ("/hub/api/..#x", "fragment"), ("/hub/api/.#", "fragment"), ("/hub/api/x#y", "fragment"),
    ("/services/hubgrid/api/..#", "fragment"),
])
def test_everything_else_is_refused_with_why(path, why):
    refusal = route_for(ROUTES, "GET", path, {})
    assert isinstance(refusal, str) and why in refusal


@pytest.mark.parametrize("method,headers", [
    ("GET", {"Connection": "Upgrade", "Upgrade": "websocket"}),
    ("GET", {"Upgrade": "h2c"}), ("CONNECT", {}),
])
def test_upgrades_and_tunnels_are_refused(method, headers):
    assert "plain HTTP" in route_for(ROUTES, method, "/hub/api/", headers)


# ---------------------------------------------------------------- the relay, for real

@pytest.fixture
async def upstream():
    """A real HTTP server on loopback that records what it was sent."""
    seen = []

    async def handle(request: web.Request):
        body = await request.read()
        seen.append((request.method, request.raw_path, dict(request.headers), body))
        if request.path.endswith("/stream"):
            resp = web.StreamResponse(headers={"X-Kind": "stream"})
            await resp.prepare(request)
            for i in range(5):
                await resp.write(f"chunk{i};".encode())
            await resp.write_eof()
            return resp
        resp = web.Response(status=201 if request.method == "POST" else 200,
                            body=hashlib.sha256(body).hexdigest().encode(),
                            headers={"X-Upstream": "yes"})
        resp.headers.add("Set-Cookie", "a=1")
        resp.headers.add("Set-Cookie", "b=2")
        return resp

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


@pytest.fixture
async def relay(upstream, tmp_path):
    origin, seen = upstream
    relays = Relays()
    path = str(tmp_path / "hub.sock")
    r = await relays.ensure(path, (Route("/hub/api/", origin),), os.getuid(), os.getgid())
    client = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path))
    yield relays, r, client, seen
    await client.close()
    await relays.close(path)
    await relays._client.close()


async def test_requests_go_through_with_their_body_path_query_and_headers(relay):
    relays, r, client, seen = relay
    assert stat.S_IMODE(os.stat(r.path).st_mode) == 0o600
    body = os.urandom(5 * 2**20)
    async with client.post("http://session/hub/api/x?q=1", data=io.BytesIO(body),
                           headers={"Authorization": "token t", "Host": "evil",
                                    "X-Forwarded-For": "6.6.6.6", "X-Real-IP": "6.6.6.6",
                                    "Forwarded": "for=6.6.6.6"}) as resp:
        assert resp.status == 201
        assert await resp.text() == hashlib.sha256(body).hexdigest()
        assert resp.headers.getall("Set-Cookie") == ["a=1", "b=2"]
        assert resp.headers["X-Upstream"] == "yes"
    method, raw_path, headers, got = seen[-1]
    assert (method, raw_path, got == body) == ("POST", "/hub/api/x?q=1", True)
    assert headers["Authorization"] == "token t" and headers["Host"] != "evil"
    # a session cannot pass for another address (the upstream trusts loopback's word)
    assert not {"X-Forwarded-For", "X-Real-IP", "Forwarded"} & set(headers)
    async with client.get("http://session/hub/api/stream") as resp:
        assert await resp.text() == "chunk0;chunk1;chunk2;chunk3;chunk4;"
        assert resp.headers["X-Kind"] == "stream"


async def test_a_refused_request_never_reaches_the_upstream_and_is_logged(relay, caplog):
    relays, r, client, seen = relay
    async with client.get("http://session/hub/login") as resp:
        assert resp.status == 403
        assert "not a path" in (await resp.json())["message"]
    assert seen == []
    assert f"relay {r.path} refused GET /hub/login: not a path" in caplog.text


async def test_an_unreachable_upstream_is_a_502_and_a_relay_is_made_once(relay, tmp_path):
    relays, r, client, seen = relay
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    path = str(tmp_path / "down.sock")
    await relays.ensure(path, (Route("/hub/api/", f"http://127.0.0.1:{port}"),), os.getuid(),
                        os.getgid())
    again = await relays.ensure(path, (), 0, 0)  # a second ensure keeps the running one
    assert again.routes[0].upstream.endswith(str(port))
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path)) as c:
        async with c.get("http://session/hub/api/") as resp:
            assert resp.status == 502 and "upstream unreachable" in (await resp.json())["message"]
    await relays.close(path)
    assert relays.get(path) is None


async def test_a_relay_is_not_bound_where_others_may_write(upstream, tmp_path):
    # a directory a session (any other uid) may write could hold a planted link
    origin, _ = upstream
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    relays = Relays()
    with pytest.raises(OSError, match="only uid"):
        await relays.ensure(str(shared / "hub.sock"), (Route("/hub/api/", origin),), 1000, 100)
    assert relays.get(str(shared / "hub.sock")) is None and not os.listdir(shared)
    if relays._client is not None:
        await relays._client.close()


async def test_a_relay_socket_is_given_to_the_session_without_following_a_link(tmp_path):
    # the owner and mode are set on the inode bound, never through a link
    # found in its place
    from spawner.sockpin import PinError, own_socket
    victim = tmp_path / "victim"
    victim.write_text("root's")
    os.chmod(victim, 0o644)
    os.symlink(victim, tmp_path / "hub.sock")
    with pytest.raises(PinError, match="not the socket"):
        own_socket(str(tmp_path / "hub.sock"), 1000, 100, 0o600)
    st = os.stat(victim)
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o644)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "real.sock"))
    own_socket(str(tmp_path / "real.sock"), 1000, 100, 0o600)
    st = os.lstat(tmp_path / "real.sock")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (1000, 100, 0o600)
    s.close()


async def test_a_stale_socket_file_is_replaced(upstream, tmp_path):
    origin, _ = upstream
    path = tmp_path / "hub.sock"
    path.write_text("left by a hub that died")
    relays = Relays()
    await relays.ensure(str(path), (Route("/hub/api/", origin),), os.getuid(), os.getgid())
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    await relays.close(str(path))
    await relays._client.close()


# ---------------------------------------------------------------- hubgrid-relay (in the session)

def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _kill_relay_of(path: str) -> None:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"hubgrid-relay" in cmd and path.encode() in cmd:
                os.kill(int(pid), 9)


async def test_beside_the_server_it_serves_in_the_foreground_and_ends_the_server_if_it_cannot_bind(
        tmp_path):
    """hubgrid-session starts the relay beside the server with the server's
    PID: it stays in the foreground and copies; one that cannot bind says why
    and sends the server a TERM, so the start fails."""
    path = str(tmp_path / "hub.sock")

    async def echo(reader, writer):
        writer.write(b"hub says: " + await reader.read(1 << 16))
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(echo, path)
    port = _free_port()
    stand_in = subprocess.Popen(["sleep", "60"])  # the Jupyter server
    relay = None
    try:
        relay = await asyncio.create_subprocess_exec(
            sys.executable, str(SCRIPT), str(port), path, str(stand_in.pid))
        for _ in range(100):  # it binds in its own time: the caller does not wait
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        writer.write(b"hello")
        await writer.drain()
        assert await reader.read() == b"hub says: hello"
        writer.close()
        assert relay.returncode is None  # still serving, in the foreground
        # a second one cannot bind: it ends "the server"
        again = await asyncio.create_subprocess_exec(
            sys.executable, str(SCRIPT), str(port), path, str(stand_in.pid),
            stderr=subprocess.PIPE)
        _, err = await again.communicate()
        assert again.returncode == 1 and b"cannot listen" in err and b"ending the server" in err
        assert stand_in.wait(timeout=10) == -signal.SIGTERM
    finally:
        if relay is not None and relay.returncode is None:
            relay.kill()
            await relay.wait()
        if stand_in.poll() is None:
            stand_in.kill()
        server.close()
        await server.wait_closed()


def test_a_session_whose_relay_cannot_bind_does_not_start(tmp_path):
    """hubgrid-session with the relay's port taken: the server (here a
    stand-in, ``sleep``) it exec'd is ended, and the relay says why."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    session = SCRIPT.parent / "hubgrid-session"
    env = dict(os.environ, HUBGRID_NO_INIT="1", HUBGRID_RELAY_PORT=str(taken.getsockname()[1]),
               HUBGRID_RELAY_SOCKET=str(tmp_path / "hub.sock"))
    try:
        done = subprocess.run(["sh", str(session), "sleep", "60"], env=env, capture_output=True,
                              text=True, timeout=30)
    finally:
        taken.close()
    assert done.returncode == -signal.SIGTERM
    assert "relay cannot listen" in done.stderr and "ending the server" in done.stderr


def test_a_batch_session_ends_its_relay_with_it(tmp_path):
    """In batch mode hubgrid-session waits for its children at the end: the
    relay (serving until told) is stopped with the server, and the session
    ends with the batch command's code."""
    path = str(tmp_path / "hub.sock")
    session = SCRIPT.parent / "hubgrid-session"
    env = dict(os.environ, HUBGRID_NO_INIT="1", HUBGRID_RELAY_PORT=str(_free_port()),
               HUBGRID_RELAY_SOCKET=path, HUBGRID_BATCH_COMMAND="exit 3",
               HUBGRID_BATCH_GRACE="0")
    env.pop("JUPYTERHUB_SERVICE_URL", None)
    try:
        done = subprocess.run(["sh", str(session), "sleep", "60"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 3, done.stderr
        assert "batch command exited with code 3" in done.stderr
        relays = [pid for pid in os.listdir("/proc") if pid.isdigit()
                  and path.encode() in _cmdline(pid)]
        assert relays == []
    finally:
        _kill_relay_of(path)


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def test_the_session_side_relay_listens_before_it_returns_and_copies_both_ways(tmp_path):
    path = str(tmp_path / "hub.sock")

    async def echo(reader, writer):
        data = await reader.read(1 << 16)
        writer.write(b"hub says: " + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(echo, path)
    port = _free_port()
    try:
        proc = await asyncio.create_subprocess_exec(sys.executable, str(SCRIPT), str(port), path)
        assert await proc.wait() == 0  # returns once bound, the relay goes on
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # no retry needed
        writer.write(b"hello")
        await writer.drain()
        assert await reader.read() == b"hub says: hello"
        writer.close()
        # the same port again: taken, exit 1 with why
        proc = await asyncio.create_subprocess_exec(sys.executable, str(SCRIPT), str(port), path,
                                                    stderr=subprocess.PIPE)
        _, err = await proc.communicate()
        assert proc.returncode == 1 and b"cannot listen" in err
    finally:
        _kill_relay_of(path)
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("args", [[], ["8081"], ["x", "/s"], ["1", "/s", "extra"]])
def test_the_session_side_relay_refuses_bad_arguments(args):
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "usage: hubgrid-relay PORT SOCKET" in r.stderr


# ---------------------------------------------------------------- isolation decisions

@pytest.mark.parametrize("root", ["/run/hubgrid/sessions", "/var/lib/hubgrid-x/s_1/", "/"])
def test_socket_roots_that_survive_a_lowercased_url(root):
    assert check_root(root) == (root.rstrip("/") or "/")


@pytest.mark.parametrize("root", ["run/x", "/Run/x", "/run/x y", "/run/../etc", "/run//x",
                                  "/run/%2f", ""])
def test_socket_roots_an_url_would_change_are_refused(root):
    with pytest.raises(ValueError, match="lowercase"):
        check_root(root)


def test_a_sessions_sockets_environment_and_arguments():
    net = SessionNetwork.of("/run/hubgrid/sessions/", "ab-12", 8081)
    assert net.server_socket == "/run/hubgrid/sessions/ab-12/jupyter.sock"
    assert net.server_url == "http+unix://%2Frun%2Fhubgrid%2Fsessions%2Fab-12%2Fjupyter.sock"
    # the session writes its own directory; the relay's it only reads; the
    # pin (server_socket) is in neither
    assert [(m.source, m.target, m.read_only) for m in net.mounts()] == [
        ("/run/hubgrid/sessions/ab-12/session", "/run/hubgrid", False),
        ("/run/hubgrid/sessions/ab-12/relay", "/run/hubgrid-relay", True)]
    assert [m.source for m in net.mounts(relay=False)] == ["/run/hubgrid/sessions/ab-12/session"]
    assert net.relay_socket == "/run/hubgrid/sessions/ab-12/relay/hub.sock"
    assert net.server_args() == ["--ServerApp.sock=/run/hubgrid/jupyter.sock",
                                 "--ServerApp.sock_mode=0600"]
    env = net.environment({"JUPYTERHUB_API_URL": "http://10.0.0.1:8081/jh/hub/api",
                           "JUPYTERHUB_ACTIVITY_URL": "http://10.0.0.1:8081/jh/hub/api/users/a/activity",
                           "KEEP": "1"},
                          "http://10.0.0.1:8081/jh/hub/api",
                          "http://127.0.0.1:10101/jh/services/hubgrid/api/v1/")
    assert env == {
        "KEEP": "1", "HUBGRID_RELAY_PORT": "8081", "HUBGRID_RELAY_SOCKET": "/run/hubgrid-relay/hub.sock",
        "HUBGRID_SERVER_SOCKET": "/run/hubgrid/jupyter.sock",
        "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/jh/hub/api",
        "JUPYTERHUB_ACTIVITY_URL": "http://127.0.0.1:8081/jh/hub/api/users/a/activity",
        "HUBGRID_API_URL": "http://127.0.0.1:8081/jh/services/hubgrid/api/v1/"}
    assert SERVER_PORT == 8888  # jupyter_server's default, the only port it takes with a socket


@pytest.mark.parametrize("alloc", ["../x", "AB", "a/b", "", "x" * 65])
def test_an_allocation_id_that_cannot_name_a_directory_is_refused(alloc):
    with pytest.raises(ValueError, match="cannot name a directory"):
        SessionNetwork.of("/run/hubgrid/sessions", alloc, 8081)


def test_the_relay_carries_the_hubs_api_and_the_services_api():
    assert relay_routes("http://127.0.0.1:8081/jh/hub/api",
                        "http://127.0.0.1:10101/jh/services/hubgrid/api/v1/") == (
        Route("/jh/hub/api/", "http://127.0.0.1:8081"),
        Route("/jh/services/hubgrid/api/", "http://127.0.0.1:10101"))
    assert relay_routes("", "http://s:1/services/hubgrid/api/v1/") == (
        Route("/services/hubgrid/api/", "http://s:1"),)
    # the serving gateway, through the hub's proxy, for the Lab's Chat page
    gw = gateway_url("http://127.0.0.1:8000/jh/services/hubgrid/api/v1/")
    assert gw == "http://127.0.0.1:8000/jh/services/hubgrid-gateway/"
    assert relay_routes("", "http://s:1/jh/services/hubgrid/api/v1/", gw)[-1] == Route(
        "/jh/services/hubgrid-gateway/", "http://127.0.0.1:8000")
    assert gateway_url("http://elsewhere/api/") == ""


@pytest.mark.parametrize("url,local", [
    ("unix:///var/run/docker.sock", True), ("tcp://127.0.0.1:2376", True),
    ("tcp://localhost:2375", True), ("tcp://gpu-3:2376", False), ("https://10.1.2.3:2376", False),
])
def test_only_engines_on_this_machine_can_run_isolated_sessions(url, local):
    assert engine_is_local(url) is local


def test_egress_refusals_say_why():
    ok = {"Driver": "bridge", "Options": {"com.docker.network.bridge.enable_icc": "false"}}
    assert egress_refusal(ok, "e") == ""
    assert "talk to each other" in egress_refusal({"Driver": "bridge", "Options": None}, "e")
    assert "not a bridge" in egress_refusal({"Driver": "overlay"}, "e")
    assert "does not exist" in egress_refusal(None, "e")
