"""The Lab server extension's door to JupyterHub (labextension/jupyterlab_hubgrid/hubroutes.py):
``hubgrid/hub/users/<owner>`` (GET) and ``hubgrid/hub/users/<owner>/servers/<name>``
(POST, DELETE) forwarded to the hub's API with the server's own token, and
nothing else.

A real Jupyter server (tests/lab_fixtures.py) forwards to a recording hub
double on loopback (what the hub sees and answers is the test's); at the end,
through the real hub, a session starts and stops another session of its
owner with its own token (``servers!user`` from ``server_token_scopes``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from types import SimpleNamespace

import psutil
import pytest
import requests
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from hub_fixtures import sqlite_hub  # noqa: F401
from lab_fixtures import TOKEN, lab_server
from session_fixtures import eventually, hub_log, server_of

HUB_TOKEN = "the-servers-own-hub-token"


class RecordingHub(web.RequestHandler):
    """A hub API double: records each call and answers what the test set."""

    def initialize(self, calls: list, answers: dict):
        self.calls, self.answers = calls, answers

    async def _answer(self, path):
        self.calls.append(SimpleNamespace(method=self.request.method, path=path,
                                          auth=self.request.headers.get("Authorization"),
                                          ctype=self.request.headers.get("Content-Type"),
                                          body=self.request.body))
        status, body = self.answers.get((self.request.method, path), (404, {"status": 404,
                                                                           "message": "no"}))
        if callable(status):  # an answer that waits for something: (coroutine fn, None)
            status, body = await status()
        self.set_status(status)
        if body is not None:
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(body))
        else:
            self.finish()

    get = post = delete = put = patch = _answer


@pytest.fixture
async def fake_hub():
    sock, port = bind_unused_port()
    calls, answers = [], {}
    app = web.Application([(r"/hub/api/(.*)", RecordingHub, {"calls": calls, "answers": answers})])
    server = HTTPServer(app)
    server.add_sockets([sock])
    try:
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}/hub/api", calls=calls,
                              answers=answers)
    finally:
        server.stop()
        await server.close_all_connections()
        sock.close()


def hub_config(tmp_path, **traits) -> None:
    """``c.HubgridHub`` for the next lab_server (its config dir is tmp_path/jupyter/config)."""
    conf = tmp_path / "jupyter" / "config"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "jupyter_server_config.json").write_text(json.dumps({"HubgridHub": traits}))


@pytest.fixture
async def lab(fake_hub, tmp_path, monkeypatch):
    """alice's Jupyter server, whose hub forwarder calls the hub double."""
    hub_config(tmp_path, hub_api_url=fake_hub.url, hub_token=HUB_TOKEN, owner="alice")
    async with lab_server(tmp_path, monkeypatch, user="alice", owner="alice") as lab:
        yield lab


# -- forwarding the owner's own calls ------------------------------------------------


async def test_starting_a_named_server_forwards_the_body_with_the_servers_token(lab, fake_hub):
    fake_hub.answers[("POST", "users/alice/servers/train")] = (202, None)
    options = {"user_options": {"project": "ml", "cpu": "2", "gpu_shares": "0.5",
                                "name": "<script>x</script>"}}
    resp, body = await lab.call("POST", "hubgrid/hub/users/alice/servers/train",
                                json_body=options)
    assert (resp.code, body) == (202, b"")
    [call] = fake_hub.calls
    assert (call.method, call.path, call.auth) == ("POST", "users/alice/servers/train",
                                                   f"token {HUB_TOKEN}")
    assert call.ctype == "application/json" and json.loads(call.body) == options


async def test_stopping_and_reading_pass_the_hubs_answers_through(lab, fake_hub):
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = (204, None)
    model = {"name": "alice", "servers": {"train": {"name": "train", "ready": True}}}
    fake_hub.answers[("GET", "users/alice")] = (200, model)
    resp, body = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert (resp.code, body) == (204, b"")
    resp, body = await lab.call("GET", "hubgrid/hub/users/alice")
    assert (resp.code, body) == (200, model)
    assert [(c.method, c.path, c.auth) for c in fake_hub.calls] == [
        ("DELETE", "users/alice/servers/train", f"token {HUB_TOKEN}"),
        ("GET", "users/alice", f"token {HUB_TOKEN}")]


async def test_the_hubs_refusals_keep_their_status_and_message(lab, fake_hub):
    refusal = {"status": 400, "message": "alice already has the maximum of 2 named servers"}
    fake_hub.answers[("POST", "users/alice/servers/third")] = (400, refusal)
    resp, body = await lab.call("POST", "hubgrid/hub/users/alice/servers/third",
                                json_body={"user_options": {}})
    assert (resp.code, body) == (400, refusal)
    fake_hub.answers[("POST", "users/alice/servers/bad")] = (403, {
        "status": 403, "message": "Action is not authorized with current scopes"})
    resp, body = await lab.call("POST", "hubgrid/hub/users/alice/servers/bad")
    assert resp.code == 403 and "current scopes" in body["message"]
    assert json.loads(fake_hub.calls[-1].body) == {}  # an empty start body is {}


# -- a stop while the start is pending --------------------------------------------------

#: what JupyterHub answers a start whose spawn it cancelled (or any exception it
#: has no message for)
NO_REASON_500 = (500, {"status": 500, "message": "Internal Server Error"})


async def until(check, timeout: float = 10.0):
    """Wait (bounded) until ``check()`` is true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_start_stopped_while_it_is_pending_answers_409_stopped_while_starting(lab, fake_hub):
    """JupyterHub's stop of a server whose start is pending cancels the spawn, and
    the start request then dies with a 500 that gives no reason: the forwarder,
    which forwarded the stop meanwhile, says what happened instead."""
    stopped = asyncio.Event()

    async def start():
        await stopped.wait()
        return NO_REASON_500

    async def stop():
        stopped.set()
        return 204, None

    fake_hub.answers[("POST", "users/alice/servers/train")] = (start, None)
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = (stop, None)
    starting = asyncio.ensure_future(lab.call("POST", "hubgrid/hub/users/alice/servers/train",
                                              json_body={"user_options": {}}))
    await until(lambda: len(fake_hub.calls) == 1)
    resp, _ = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert resp.code == 204
    resp, err = await asyncio.wait_for(starting, 30)
    assert resp.code == 409, err
    assert err["reason"] == "Stopped while starting"
    assert err["message"] == ("hubgrid: session train was stopped while it was starting: "
                              "it did not start and is not running")


def answers_in_turn(*answers):
    """A hub answer that is each of ``answers`` in turn."""
    left = iter(answers)

    async def answer():
        return next(left)

    return answer, None


def servers(**pending) -> tuple:
    """``GET users/alice``: alice's servers, each pending as given."""
    return 200, {"name": "alice", "servers": {
        name: {"name": name, "pending": p, "ready": p is None} for name, p in pending.items()}}


async def test_a_stop_failing_while_the_start_unwinds_is_asked_again_once_it_has(lab, fake_hub):
    """JupyterHub cancels the pending start, waits a second and answers 500
    ("pending spawn") when the start has not unwound by then: the forwarder
    waits until the hub no longer shows the start pending and stops again."""
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = answers_in_turn(
        NO_REASON_500, (202, None))
    fake_hub.answers[("GET", "users/alice")] = answers_in_turn(
        servers(train="spawn"), servers(train="spawn"), servers(train=None))
    resp, _ = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert resp.code == 202
    assert [(c.method, c.path) for c in fake_hub.calls] == [
        ("DELETE", "users/alice/servers/train"), ("GET", "users/alice"), ("GET", "users/alice"),
        ("GET", "users/alice"), ("DELETE", "users/alice/servers/train")]
    assert {c.auth for c in fake_hub.calls} == {f"token {HUB_TOKEN}"}


async def test_a_stop_failing_while_the_start_unwinds_is_done_when_the_server_is_gone(lab,
                                                                                     fake_hub):
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = NO_REASON_500
    fake_hub.answers[("GET", "users/alice")] = answers_in_turn(servers(train="spawn"),
                                                               servers(other=None))
    resp, _ = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert resp.code == 204
    assert [c.method for c in fake_hub.calls] == ["DELETE", "GET", "GET"]
    # a stop the hub fails with a reason is passed on as it is
    refusal = {"status": 400, "message": "Cannot stop a server while it is being renamed"}
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = (400, refusal)
    resp, err = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert (resp.code, err) == (400, refusal)


async def test_a_start_that_never_unwinds_is_a_409_after_the_request_timeout(fake_hub, tmp_path,
                                                                           monkeypatch):
    hub_config(tmp_path, hub_api_url=fake_hub.url, hub_token=HUB_TOKEN, owner="alice",
               request_timeout=0.3)
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = NO_REASON_500
    fake_hub.answers[("GET", "users/alice")] = servers(train="spawn")
    async with lab_server(tmp_path, monkeypatch, user="alice") as lab:
        resp, err = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert resp.code == 409 and err["reason"] == "Still starting", err
    assert "train is still starting 0.3 s after JupyterHub was asked to stop it" in err["message"]
    assert [c.method for c in fake_hub.calls][:2] == ["DELETE", "GET"]
    assert [c.method for c in fake_hub.calls].count("DELETE") == 1


async def test_a_start_that_fails_without_a_reason_says_which_and_where_to_look(lab, fake_hub):
    # a stop that ended before the start (or of another server) changes nothing
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = (204, None)
    fake_hub.answers[("DELETE", "users/alice/servers/other")] = (204, None)
    resp, _ = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train")
    assert resp.code == 204

    async def start():
        await lab.call("DELETE", "hubgrid/hub/users/alice/servers/other")
        return NO_REASON_500

    fake_hub.answers[("POST", "users/alice/servers/train")] = (start, None)
    resp, err = await lab.call("POST", "hubgrid/hub/users/alice/servers/train", json_body={})
    assert resp.code == 500, err
    assert err["message"].startswith("hubgrid: JupyterHub did not start session train and gave "
                                     "no reason (500 Internal Server Error)"), err
    # a start the hub refuses with its reason keeps it, also as a 500
    refusal = {"status": 500, "message": "Spawner failed to start [status=1]"}
    fake_hub.answers[("POST", "users/alice/servers/train")] = (500, refusal)
    resp, err = await lab.call("POST", "hubgrid/hub/users/alice/servers/train", json_body={})
    assert (resp.code, err) == (500, refusal)


# -- and nothing else -------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [
    ("POST", "hubgrid/hub/users/bob/servers/train"),
    ("DELETE", "hubgrid/hub/users/bob/servers/train"),
    ("GET", "hubgrid/hub/users/bob"),
])
async def test_another_users_servers_are_refused_without_asking_the_hub(lab, fake_hub, method,
                                                                       path):
    resp, err = await lab.call(method, path, json_body={} if method == "POST" else None)
    assert resp.code == 403 and "only alice's own servers" in err["message"]
    assert fake_hub.calls == []


@pytest.mark.parametrize("method, path, code", [
    ("GET", "hubgrid/hub/users/alice/servers/train", 405),   # read through users/<owner>
    ("POST", "hubgrid/hub/users/alice", 405),                # the default server
    ("DELETE", "hubgrid/hub/users/alice", 405),
    ("PATCH", "hubgrid/hub/users/alice", 405),
    ("POST", "hubgrid/hub/users/alice/tokens", 404),
    ("GET", "hubgrid/hub/users/alice/servers/train/progress", 404),
    ("GET", "hubgrid/hub/users", 404),
    ("POST", "hubgrid/hub/users/alice/servers/%2E%2E", 400),
    ("POST", "hubgrid/hub/users/alice/servers/a%2Fb", 400),
])
async def test_no_other_hub_call_goes_through(lab, fake_hub, method, path, code):
    resp, err = await lab.call(method, path,
                               json_body={} if method in ("POST", "PATCH") else None)
    assert resp.code == code, err
    assert fake_hub.calls == []


async def test_a_start_body_must_be_a_json_object(lab, fake_hub):
    for body in (b"not json", b"[1, 2]"):
        resp, err = await lab.call("POST", "hubgrid/hub/users/alice/servers/train", body=body)
        assert resp.code == 400 and "JSON" in err["message"]
    assert fake_hub.calls == []


# -- who may use it -----------------------------------------------------------------------


async def test_a_visitor_of_a_shared_server_is_refused(fake_hub, tmp_path, monkeypatch):
    hub_config(tmp_path, hub_api_url=fake_hub.url, hub_token=HUB_TOKEN, owner="alice")
    async with lab_server(tmp_path, monkeypatch, user="gina", owner="alice") as lab:
        for method, path in (("GET", "users/alice"), ("POST", "users/alice/servers/x"),
                             ("DELETE", "users/alice/servers/x")):
            resp, err = await lab.call(method, "hubgrid/hub/" + path,
                                       json_body={} if method == "POST" else None)
            assert resp.code == 403, method
            assert "only alice" in err["message"] and "gina" in err["message"]
    assert fake_hub.calls == []


async def test_an_unauthenticated_caller_is_refused(lab, fake_hub):
    resp, err = await lab.call("GET", "hubgrid/hub/users/alice", token=False)
    assert resp.code == 403 and "message" in err
    assert fake_hub.calls == []


async def test_a_browser_start_or_stop_needs_the_xsrf_token(lab, fake_hub):
    fake_hub.answers[("POST", "users/alice/servers/train")] = (201, None)
    fake_hub.answers[("DELETE", "users/alice/servers/train")] = (202, None)
    resp, _ = await lab.call("GET", f"api/status?token={TOKEN}", token=False)
    resp, _ = await lab.call("GET", "login", token=False)
    assert "_xsrf" in lab.jar
    for method in ("POST", "DELETE"):
        resp, err = await lab.call(method, "hubgrid/hub/users/alice/servers/train",
                                   json_body={} if method == "POST" else None,
                                   token=False, cookies=True)
        assert resp.code == 403 and "_xsrf" in err["message"], method
    assert fake_hub.calls == []
    xsrf = {"X-XSRFToken": lab.jar["_xsrf"]}
    resp, _ = await lab.call("POST", "hubgrid/hub/users/alice/servers/train", json_body={},
                             token=False, cookies=True, headers=xsrf)
    assert resp.code == 201
    resp, _ = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/train",
                             token=False, cookies=True, headers=xsrf)
    assert resp.code == 202
    assert [c.method for c in fake_hub.calls] == ["POST", "DELETE"]


# -- a hub that cannot be reached, a server outside a hub ------------------------------


async def test_an_unreachable_hub_is_a_502(tmp_path, monkeypatch):
    sock, port = bind_unused_port()
    sock.close()  # nothing listens there now
    hub_config(tmp_path, hub_api_url=f"http://127.0.0.1:{port}/hub/api", hub_token="t",
               owner="alice")
    async with lab_server(tmp_path, monkeypatch, user="alice") as lab:
        resp, err = await lab.call("GET", "hubgrid/hub/users/alice")
        assert resp.code == 502 and "JupyterHub is unreachable" in err["message"]


async def test_a_server_outside_a_hub_answers_503(tmp_path, monkeypatch):
    async with lab_server(tmp_path, monkeypatch, user="alice") as lab:  # no JUPYTERHUB_*
        resp, err = await lab.call("GET", "hubgrid/hub/users/alice")
        assert resp.code == 503 and "JUPYTERHUB_USER" in err["message"]
    hub_config(tmp_path, owner="alice", hub_token="t")
    async with lab_server(tmp_path, monkeypatch, user="alice") as lab:
        resp, err = await lab.call("DELETE", "hubgrid/hub/users/alice/servers/x")
        assert resp.code == 503 and "JUPYTERHUB_API_URL" in err["message"]


def test_the_defaults_come_from_the_servers_environment(monkeypatch):
    from traitlets import TraitError

    from jupyterlab_hubgrid.hubroutes import HubgridHub

    monkeypatch.setenv("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "server-token")
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    cfg = HubgridHub()
    assert (cfg.hub_api_url, cfg.hub_token, cfg.owner) == (
        "http://127.0.0.1:8081/hub/api", "server-token", "alice")
    with pytest.raises(TraitError, match="http"):
        HubgridHub(hub_api_url="file:///etc/passwd")


# -- through the real hub -----------------------------------------------------------------


def session_token(user: str, server: str) -> str:
    """The hub token of the running session process of ``user``/``server``."""
    for proc in psutil.process_iter(["environ"]):
        env = proc.info.get("environ") or {}
        if env.get("JUPYTERHUB_USER") == user and env.get("JUPYTERHUB_SERVER_NAME") == server:
            return env.get("JUPYTERHUB_API_TOKEN", "")
    return ""


@pytest.mark.hub
def test_a_session_starts_and_stops_its_owners_other_session_with_its_own_token(hub):  # noqa: F811
    """A real session's Lab starts a second named server of its owner and stops
    it, through hubgrid/hub/ with the session's own token (``servers!user``
    from ``server_token_scopes``); that token reaches no other user's server."""
    user, other = "hr" + uuid.uuid4().hex[:6], "hx" + uuid.uuid4().hex[:6]
    for name in (user, other):
        assert hub.login(name).status_code == 302
    r = hub.hub_call("POST", f"users/{user}/servers/lab", user=user,
                     json={"user_options": {"cpu": "0.5", "mem": "512M"}})
    assert r.status_code in (201, 202), r.text
    base = f"{hub.url}/user/{user}/lab/hubgrid/hub/users/{user}"
    auth = {"Authorization": f"token {hub.token(user)}"}

    def lab_call(method, path="", **kw):
        return requests.request(method, base + path, headers=auth, timeout=30,
                                allow_redirects=False, **kw)

    try:
        r = eventually(lambda: (r := lab_call("GET")).status_code == 200 and r, timeout=60)
        assert r, f"{base}: {lab_call('GET').text[:300]}\n{hub_log(hub)}"
        assert "lab" in r.json()["servers"]

        r = lab_call("POST", "/servers/second",
                     json={"user_options": {"cpu": "0.5", "mem": "512M"}})
        assert r.status_code in (201, 202), r.text
        assert eventually(lambda: (s := server_of(hub, user, "second")) and s["ready"],
                          timeout=90), hub_log(hub)
        r = lab_call("DELETE", "/servers/second")
        assert r.status_code in (202, 204), r.text
        assert eventually(lambda: server_of(hub, user, "second") is None, timeout=60)

        # stopped while its start is pending: the hub cancels the start, whose
        # request (still waiting for the server) is answered 409, not 500; or,
        # when the hub's stop came before it could cancel (a loaded machine),
        # the stop waits for the start to end and then stops the server
        started = {}
        start = threading.Thread(target=lambda: started.update(r=lab_call(
            "POST", "/servers/third", json={"user_options": {"cpu": "0.5", "mem": "512M"}})))
        start.start()
        try:
            assert eventually(lambda: (s := server_of(hub, user, "third")) and s["pending"],
                              timeout=30, interval=0.05), hub_log(hub)
            r = lab_call("DELETE", "/servers/third")
            assert r.status_code in (202, 204), f"{r.text}\n{hub_log(hub, 8000)}"
        finally:
            start.join(60)
        r = started["r"]
        assert r.status_code in (409, 201, 202), f"{r.status_code} {r.text}\n{hub_log(hub)}"
        if r.status_code == 409:
            assert "third was stopped while it was starting" in r.json()["message"]
        assert eventually(lambda: server_of(hub, user, "third") is None, timeout=60)

        # the session's own token: its owner's servers only
        token = session_token(user, "lab")
        assert token
        r = requests.post(f"{hub.hub_api}users/{other}/servers/x", timeout=30,
                          headers={"Authorization": f"token {token}"}, json={})
        assert r.status_code in (403, 404), r.text
        r = requests.get(f"{hub.hub_api}users/{user}/tokens", timeout=30,
                         headers={"Authorization": f"token {token}"})
        assert r.status_code == 403, r.text
    finally:
        for name in ("second", "third", "lab"):
            hub.hub_call("DELETE", f"users/{user}/servers/{name}", user=user)
