"""The serving gateway (gateway/): its pure rules with plain data, then the
real thing: real haproxy balancing over real inference servers (the chat
stand-in of images/inference, run as processes on Unix sockets, as replicas
listen), the gateway's tornado app in front, called with the openai client.

The route table is given to the gateway directly here (the service's side,
``serving/routes``, is tested with the service)."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web

from gateway import access, haproxycfg, table as tablelib, usercred
from gateway.access import Refusal
from gateway.app import State, make_app
from gateway.balancer import Balancer, BalancerError
from gateway.haproxycfg import Health, Replica, Route, RouteError

REPO = Path(__file__).resolve().parent.parent
NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.timezone.utc)
EP1, EP2, EP3 = "1" * 32, "2" * 32, "3" * 32
PREFIX = "/services/hubgrid-gateway/"


def sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def doc(replicas1=(), replicas2=(), public3=True, now=NOW):
    later = (now + dt.timedelta(days=1)).isoformat()
    earlier = (now - dt.timedelta(seconds=1)).isoformat()
    return {"endpoints": [
        {"id": EP1, "name": "chat", "domain": "acme", "project": "ml", "public": False,
         "models": ["echo"], "health": {"path": "/health", "interval": 1, "max_retries": 2,
                                        "expected_status": 200},
         "replicas": [{"name": n, "target": t} for n, t in replicas1],
         "tokens": [{"id": "t1", "sha256": sha("secret-one"), "expires_at": later},
                    {"id": "t0", "sha256": sha("old-one"), "expires_at": earlier}]},
        {"id": EP2, "name": "chat", "domain": "acme", "project": "nlp", "public": False,
         "models": ["echo"], "health": {}, "paths": ["/v1/*"],
         "replicas": [{"name": n, "target": t} for n, t in replicas2],
         "tokens": [{"id": "t2", "sha256": sha("secret-two"), "expires_at": later}]},
        {"id": EP3, "name": "open", "domain": "beta", "project": "pub", "public": public3,
         "models": [], "health": {}, "replicas": [], "tokens": []},
    ]}


# ----------------------------------------------------------------- pure rules

def test_the_table_reads_endpoints_tokens_and_health_defaults():
    t = tablelib.read(doc([("r1", "unix:/tmp/x.sock")]))
    assert t.endpoints[EP1].route.replicas == (Replica("r1", "unix:/tmp/x.sock"),)
    assert t.endpoints[EP1].route.health == Health("/health", 1, 2, 200)
    assert t.endpoints[EP2].route.health == Health()  # defaults
    assert t.tokens[sha("secret-one")].endpoint_id == EP1
    assert [r.endpoint_id for r in t.routes] == [EP1, EP2, EP3]
    with pytest.raises(KeyError):
        tablelib.read({"endpoints": [{"name": "x"}]})


def test_a_token_opens_its_own_endpoint_only():
    t = tablelib.read(doc(public3=False))
    assert access.may_call(t, EP1, "secret-one", NOW).name == "chat"
    for secret, ep, status, words in [
        (None, EP1, 401, "needs a token"),
        ("nonsense", EP1, 401, "neither an endpoint token"),
        ("hge_nonsense", EP1, 401, "unknown or revoked"),
        ("old-one", EP1, 401, "expired"),
        # a valid token of another endpoint learns no more than of a missing id
        ("secret-two", EP1, 404, "no such endpoint"),
        ("secret-one", "9" * 32, 404, "no such endpoint"),
        (None, "9" * 32, 401, "needs a token"),  # no probing for ids without a token
    ]:
        with pytest.raises(Refusal) as e:
            access.may_call(t, ep, secret, NOW)
        assert (e.value.status, words in e.value.message) == (status, True), secret


def test_a_token_expires_at_its_instant():
    t = tablelib.read(doc())
    exp = t.tokens[sha("secret-one")].expires_at
    assert access.may_call(t, EP1, "secret-one", exp - dt.timedelta(microseconds=1))
    with pytest.raises(Refusal):
        access.may_call(t, EP1, "secret-one", exp)


def test_public_endpoints_take_any_caller_and_any_token():
    """Any Bearer or none, and a hub token the hub refused or could not check
    (``refused``): the app asks nobody for a public endpoint (test_gateway_edges)."""
    t = tablelib.read(doc())
    hub_said_no = Refusal(401, "invalid hub token")
    for secret in (None, "nonsense", "EMPTY", "secret-two", "old-one", "hge_x"):
        for users, refused in ((None, None), (None, hub_said_no), (frozenset(), None),
                               (None, Refusal(503, "cannot check"))):
            assert access.may_call(t, EP3, secret, NOW, users, refused).name == "open"
    assert sorted(access.usable(t, "EMPTY", NOW, None, hub_said_no)[0]) == ["open"]
    assert access.choose(t, "open", None, NOW, None, hub_said_no).id == EP3
    # a private one: the hub's refusal is the answer
    with pytest.raises(Refusal) as e:
        access.may_call(t, EP1, None, NOW, None, hub_said_no)
    assert e.value is hub_said_no


def test_model_ids_are_names_qualified_only_where_two_share_one():
    t = tablelib.read(doc())
    def ids(t, secret):
        return sorted(access.usable(t, secret, NOW)[0])

    assert ids(t, "secret-one") == ["chat", "open"]
    assert ids(t, None) == ["open"]
    assert ids(t, "nonsense") == ["open"]  # public still usable
    assert access.usable(t, "nonsense", NOW)[1].status == 401
    both = tablelib.read({"endpoints": [dict(e, public=True) for e in doc()["endpoints"]]})
    assert ids(both, None) == ["ml/chat", "nlp/chat", "open"]
    clash = doc()["endpoints"]
    clash[1] = dict(clash[1], project="ml", domain="other", public=True)
    clash[0] = dict(clash[0], public=True)
    assert ids(tablelib.read({"endpoints": clash}), None) == [
        "acme/ml/chat", "open", "other/ml/chat"]
    private = tablelib.read(doc(public3=False))
    assert access.usable(private, None, NOW) == ({}, None)


def test_a_hub_tokens_endpoints_open_as_a_token_opens_its_own_and_hide_the_rest():
    """``users``: what the service says a Lab user's hub token may use."""
    t = tablelib.read(doc(public3=False))
    assert access.may_call(t, EP1, None, NOW, frozenset({EP1})).name == "chat"
    for users, ep in [(frozenset({EP1}), EP2), (frozenset(), EP1), (frozenset({"9" * 32}),
                                                                     "9" * 32)]:
        with pytest.raises(Refusal) as e:
            access.may_call(t, ep, None, NOW, users)
        assert e.value.status == 404
    assert sorted(access.usable(t, None, NOW, frozenset({EP1, EP2}))[0]) == [
        "ml/chat", "nlp/chat"]
    assert access.choose(t, "chat", None, NOW, frozenset({EP2})).id == EP2
    with pytest.raises(Refusal) as e:
        access.choose(t, "open", None, NOW, frozenset({EP2}))
    assert e.value.status == 404  # not 401: a credential was presented
    public = tablelib.read(doc())
    assert access.may_call(public, EP3, None, NOW, frozenset()).name == "open"


def test_a_hub_token_is_read_from_the_token_scheme_only():
    assert usercred.hub_token({"Authorization": "token abc"}) == "abc"
    assert usercred.hub_token({"Authorization": "Token  abc "}) == "abc"
    for h in ({"Authorization": "Bearer abc"}, {"Authorization": "token "}, {}):
        assert usercred.hub_token(h) is None


def test_a_call_is_routed_by_model_or_refused_with_the_reason():
    t = tablelib.read(doc())
    assert access.choose(t, "chat", "secret-one", NOW).id == EP1
    assert access.choose(t, "chat", "secret-two", NOW).id == EP2
    assert access.choose(t, "open", None, NOW).id == EP3
    for model, secret, status, words in [
        ("chat", None, 401, "no public model"),
        ("chat", "old-one", 401, "expired"),
        ("chat", "nonsense", 401, "neither an endpoint token"),
        ("chat", "hge_nonsense", 401, "unknown"),
        ("ml/chat", "secret-two", 404, "you may use"),
        ("open2", "secret-one", 404, "you may use"),
    ]:
        with pytest.raises(Refusal) as e:
            access.choose(t, model, secret, NOW)
        assert (e.value.status, words in e.value.message) == (status, True), (model, secret)


def test_credentials_are_read_from_bearer_or_api_key_headers():
    assert access.bearer({"authorization": "Bearer abc "}) == "abc"
    assert access.bearer({"authorization": "bearer abc"}) == "abc"
    assert access.bearer({"api-key": "k"}) == "k"
    assert access.bearer({"x-api-key": "k2"}) == "k2"
    assert access.bearer({"authorization": "Basic xyz"}) is None
    assert access.bearer({"authorization": "Bearer "}) is None
    assert access.bearer({}) is None


def test_the_configuration_has_a_frontend_and_checked_backend_per_endpoint():
    text = haproxycfg.render([Route(EP1, (Replica("r1", "unix:/run/a/s.sock"),
                                          Replica("r-2", "127.0.0.1:8000")),
                                    Health("/healthz", 5, 3, 204)),
                              Route(EP2)], "/run/gw")
    assert f"bind unix@/run/gw/ep-{EP1}.sock mode 600" in text
    assert "server r1 unix@/run/a/s.sock check" in text
    assert "server r-2 127.0.0.1:8000 check" in text
    assert "http-check send meth GET uri /healthz" in text
    assert "http-check expect status 204" in text
    assert "inter 5s fall 3 rise 1" in text
    assert f"backend be_{EP2}" in text  # no replica: still routed (503)


@pytest.mark.parametrize("route", [
    Route("not-an-id"),
    Route(EP1, (Replica("bad name", "unix:/x"),)),
    Route(EP1, (Replica("r", "unix:/x"), Replica("r", "unix:/y"))),
    Route(EP1, (Replica("r", "unix:relative"),)),
    Route(EP1, (Replica("r", "unix:/x y"),)),
    Route(EP1, (Replica("r", "host:99999"),)),
    Route(EP1, (Replica("r", "nohost"),)),
    Route(EP1, (), Health("no-slash")),
    Route(EP1, (), Health("/x", 0)),
    Route(EP1, (), Health("/x", 5, 3, 700)),
])
def test_a_route_the_balancer_cannot_take_is_refused(route):
    with pytest.raises(RouteError):
        haproxycfg.render([route], "/run/gw")


def test_an_endpoint_listed_twice_is_refused():
    with pytest.raises(RouteError):
        haproxycfg.render([Route(EP1), Route(EP1)], "/run/gw")


# ------------------------------------------------------- the real balancer

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
needs_haproxy = pytest.mark.skipif(not os.path.exists(HAPROXY) and not os.environ.get("CI"),
                                   reason="haproxy is not installed (scripts/install.sh)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Recorder:
    """A replica that records what reaches it: a tornado server on a Unix
    socket in the test's own loop, answering every method and path with what
    it received (and 200 at /health, haproxy's probe)."""

    def __init__(self, sock: Path):
        self.sock, self.seen = sock, []
        recorder = self

        class Echo(tornado.web.RequestHandler):
            SUPPORTED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

            def _any(self, *_):
                if self.request.path != "/health":
                    recorder.seen.append((self.request.method, self.request.path,
                                          {k.lower(): v for k, v in self.request.headers.items()}))
                self.finish({"method": self.request.method, "path": self.request.path})

            get = post = put = patch = delete = head = options = _any

        self.server = tornado.httpserver.HTTPServer(tornado.web.Application([(r".*", Echo)]))
        self.server.add_socket(tornado.netutil.bind_unix_socket(str(sock)))

    @property
    def target(self) -> str:
        return "unix:" + str(self.sock)

    def close(self) -> None:
        self.server.stop()


class Replicas:
    """Real chat stand-in servers (images/inference), each on its Unix socket."""

    def __init__(self, root: Path):
        self.root = root
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str) -> str:
        sock = self.root / f"{name}.sock"
        env = {**os.environ, "PYTHONPATH": str(REPO / "images" / "inference")}
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "hubgrid_inference.echochat", "--model-name", "echo",
             "--port", str(free_port()), "--unix", str(sock)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert self.procs[name].poll() is None, "the replica exited"
            assert time.monotonic() < deadline, "the replica did not listen"
            time.sleep(0.02)
        return "unix:" + str(sock)

    def kill(self, name: str) -> None:
        self.procs[name].kill()
        self.procs[name].wait()

    def stop(self):
        for p in self.procs.values():
            p.kill()
            p.wait()


@pytest.fixture
async def gateway(tmp_path):
    """(state, balancer, replicas, base url): the app on a free port."""
    run = Path(f"/tmp/hubgrid-gw-{os.getpid()}-{id(tmp_path)}")  # sockets: short paths
    balancer = Balancer(run, HAPROXY)
    state = State(balancer.socket_of)
    replicas = Replicas(tmp_path)
    server = tornado.httpserver.HTTPServer(make_app(PREFIX, state))
    port = free_port()
    server.listen(port, "127.0.0.1")
    try:
        yield state, balancer, replicas, f"http://127.0.0.1:{port}{PREFIX}"
    finally:
        server.stop()
        await server.close_all_connections()
        await balancer.stop()
        for c in state.clients.values():
            await c.aclose()
        replicas.stop()
        shutil.rmtree(run, ignore_errors=True)


def real_doc(*a, **kw):
    """The table with tokens' expiries around the real clock (the app's)."""
    return doc(*a, now=dt.datetime.now(dt.timezone.utc), **kw)


async def serve(state, balancer, d):
    t = tablelib.read(d)
    await balancer.apply(t.routes)
    await state.set_table(t)


@needs_haproxy
async def test_calls_are_balanced_streamed_and_survive_a_killed_replica(gateway):
    state, balancer, replicas, base = gateway
    r1, r2 = replicas.start("r1"), replicas.start("r2")
    await serve(state, balancer, real_doc([("r1", r1), ("r2", r2)]))
    client = openai.AsyncOpenAI(base_url=base + "v1", api_key="secret-one", max_retries=0)
    try:
        await balanced_streamed_and_healed(client, state, balancer, replicas)
    finally:
        await client.close()


async def balanced_streamed_and_healed(client, state, balancer, replicas):
    r2 = "unix:" + str(replicas.root / "r2.sock")
    models = await client.models.list()
    assert sorted(m.id for m in models.data) == ["chat", "open"]
    answer = await client.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "hello there"}])
    assert answer.choices[0].message.content == "echo: hello there"
    assert answer.model == "echo"  # the name the replica serves
    stream = await client.chat.completions.create(
        model="chat", stream=True, messages=[{"role": "user", "content": "one two three"}])
    words = [c.choices[0].delta.content async for c in stream if c.choices and
             c.choices[0].delta.content]
    assert "".join(words).split() == ["echo:", "one", "two", "three"]
    for _ in range(6):
        await client.completions.create(model="chat", prompt="x")
    served = {s.name: s.sessions for s in await balancer.status()}
    assert served["r1"] > 0 and served["r2"] > 0, served  # both replicas took calls

    replicas.kill("r1")
    results = [await client.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": f"after {i}"}]) for i in range(8)]
    assert [r.choices[0].message.content for r in results] == [f"echo: after {i}"
                                                               for i in range(8)]
    down = {s.name: s for s in await balancer.status()}
    assert not down["r1"].up and down["r2"].up, down

    # the runtime replaces it: a new replica joins the rotation
    r3 = replicas.start("r3")
    assert await balancer.apply(tablelib.read(real_doc([("r2", r2), ("r3", r3)])).routes)
    assert not await balancer.apply(tablelib.read(real_doc([("r2", r2), ("r3", r3)])).routes)
    for _ in range(6):
        await client.completions.create(model="chat", prompt="y")
    assert {s.name for s in await balancer.status() if s.endpoint_id == EP1} == {"r2", "r3"}
    calls = state.counts.take()
    assert {(c["endpoint"], c["code"]) for c in calls} == {(EP1, "2xx")}
    assert sum(c["calls"] for c in calls) == 1 + 1 + 6 + 8 + 6
    assert state.counts.take() == []
    state.counts.give_back(calls)  # a report that did not arrive: counted again
    assert state.counts.take() == calls


@needs_haproxy
async def test_refusals_answer_in_openais_shape(gateway):
    state, balancer, replicas, base = gateway
    r1 = replicas.start("r1")
    await serve(state, balancer, real_doc([("r1", r1)]))
    async with httpx.AsyncClient(base_url=base) as h:
        cases = [
            ("POST", "v1/chat/completions", None, {"model": "chat"}, 401),  # no token, not public
            ("POST", "v1/chat/completions", "old-one", {"model": "chat"}, 401),
            ("POST", "v1/chat/completions", "secret-two", {"model": "ml/chat"}, 404),
            ("POST", "v1/chat/completions", "secret-one", {"messages": []}, 400),
            ("GET", f"e/{EP1}/health", "secret-two", None, 404),  # tells no id exists
            ("GET", f"e/{EP1}/health", None, None, 401),
            ("GET", f"e/{'9' * 32}/health", "secret-one", None, 404),
        ]
        for method, path, secret, body, status in cases:
            headers = {"Authorization": f"Bearer {secret}"} if secret else {}
            r = await h.request(method, path, headers=headers, json=body)
            assert r.status_code == status, (path, secret, r.text)
            assert r.json()["error"]["message"]
        r = await h.post("v1/embeddings", content=b"{not json",
                         headers={"Authorization": "Bearer secret-one"})
        assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
        # the endpoint's own URL passes paths through
        r = await h.get(f"e/{EP1}/v1/models", headers={"Authorization": "Bearer secret-one"})
        assert r.status_code == 200 and r.json()["data"][0]["id"] == "echo"
        # the caller's credentials stay at the gateway, however they came: the
        # replica records every header it received
        rec = Recorder(replicas.root / "rec.sock")
        try:
            await serve(state, balancer, real_doc([("r1", r1)], [("rec", rec.target)]))
            sent = [{"Authorization": "Bearer secret-two", "Cookie": "jupyterhub-session=c"},
                    {"api-key": "secret-two", "Proxy-Authorization": "Basic eDp5"},
                    {"x-api-key": "secret-two"}]
            for headers in sent:
                r = await h.post(f"e/{EP2}/v1/anything?q=1", headers=headers,
                                 json={"model": "x"})
                assert r.status_code == 200 and r.json()["path"] == "/v1/anything", r.text
                r = await h.post("v1/embeddings", headers=headers,
                                 json={"model": "chat", "input": "x"})
                assert r.status_code == 200, r.text
            assert len(rec.seen) == 2 * len(sent)
            for method, path, got in rec.seen:
                assert not {"authorization", "api-key", "x-api-key", "cookie",
                            "proxy-authorization"} & set(got), got
                assert "secret-two" not in repr(got)
        finally:
            rec.close()
        await serve(state, balancer, real_doc([("r1", r1)]))
        # the gateway itself answers at its prefix (the hub's check of a service)
        for path in ("", "health"):
            r = await h.get(path)
            assert r.status_code == 200 and r.json()["ok"] is True
        # a public endpoint with no replica yet: a clear 503
        r = await h.get(f"e/{EP3}/v1/models")
        assert r.status_code == 503 and r.json()["error"]["code"] == "no_replica"
        # an endpoint whose only replica died
        replicas.kill("r1")
        r = await h.post("v1/chat/completions", headers={"Authorization": "Bearer secret-one"},
                         json={"model": "chat", "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 503 and "no replica" in r.json()["error"]["message"]


@needs_haproxy
async def test_a_configuration_haproxy_refuses_changes_nothing(tmp_path):
    run = Path(f"/tmp/hubgrid-gwbad-{os.getpid()}")
    b = Balancer(run, HAPROXY)
    try:
        await b.apply([Route(EP1)])
        before = (run / "haproxy.cfg").read_text()
        # a socket path haproxy cannot bind (too long for a Unix socket address)
        with pytest.raises(BalancerError):
            await b.apply([Route(EP1, (Replica("r", "unix:/" + "x" * 200),))]) or \
                await asyncio.sleep(0)
        assert (run / "haproxy.cfg").read_text() == before
        assert b.running
    finally:
        await b.stop()
        shutil.rmtree(run, ignore_errors=True)


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of ours counts as gone
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


@needs_haproxy
def test_haproxy_dies_with_a_killed_gateway(tmp_path):
    run = Path(f"/tmp/hubgrid-gwkill-{os.getpid()}")
    script = (
        "import asyncio, sys\n"
        "from gateway.balancer import Balancer\n"
        "from gateway.haproxycfg import Route\n"
        "async def main():\n"
        f"    b = Balancer({str(run)!r}, {HAPROXY!r})\n"
        f"    await b.apply([Route({EP1!r})])\n"
        "    print(b.proc.pid, flush=True)\n"
        "    await asyncio.sleep(600)\n"
        "asyncio.run(main())\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             cwd=str(REPO))
    try:
        haproxy = int(child.stdout.readline())
        os.kill(haproxy, 0)  # it runs
        child.kill()  # SIGKILL: no clean-up in the gateway
        child.wait()
        assert _gone(haproxy), "haproxy outlived the gateway"
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        shutil.rmtree(run, ignore_errors=True)


def test_the_gateway_exits_when_the_hub_that_started_it_is_gone(tmp_path):
    port = free_port()
    env = {**os.environ, "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}",
           "HUBGRID_API_URL": f"http://127.0.0.1:{free_port()}/services/hubgrid/api/v1/",
           "HUBGRID_INTERNAL_TOKEN": "t" * 32, "HUBGRID_GATEWAY_RUN_DIR": str(tmp_path / "run"),
           "PYTHONPATH": str(REPO)}
    # a stand-in for the hub: starts the gateway, says its pid, then is killed
    hub = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time\n"
         "p = subprocess.Popen([sys.executable, '-m', 'gateway'], stderr=subprocess.DEVNULL)\n"
         "print(p.pid, flush=True)\ntime.sleep(600)\n"],
        env=env, stdout=subprocess.PIPE, text=True)
    try:
        gw = int(hub.stdout.readline())
        deadline = time.monotonic() + 30
        while httpx_get(f"http://127.0.0.1:{port}{PREFIX}health") != 200:
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.1)
        hub.kill()
        hub.wait()
        assert _gone(gw), "the gateway outlived the hub that started it"
    finally:
        hub.kill()
        hub.wait()
        hub.stdout.close()
        try:
            os.kill(gw, 9)
        except (ProcessLookupError, UnboundLocalError):
            pass


def httpx_get(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.HTTPError:
        return None


async def test_a_balancer_with_no_endpoint_runs_nothing_and_reports_nothing(tmp_path):
    b = Balancer(Path(f"/tmp/hubgrid-gwnone-{os.getpid()}"), HAPROXY)
    assert await b.status() == []
    assert await b.apply([]) is False and not b.running
    assert await b.status() == []
