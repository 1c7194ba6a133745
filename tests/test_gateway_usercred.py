"""A Lab user's own hub token at the gateway, end to end: the
real hub, its proxy, the gateway it runs and the service that decides.
bob's and alice's hub tokens (both members of acme/ml) open bob's echo-chat
endpoint, gina's (globex) does not, an unknown token is 401; the openai
client streams a chat with the hub token; and ``usercred.UserCreds`` asks
the real service once per token within its TTL. The shared Docker hub
(docker_fixtures.dock) and serving group (serving_fixtures.serving)."""

from __future__ import annotations

import asyncio
import json
import uuid

import openai
import pytest
import requests

from gateway import usercred
from gateway.access import Refusal
from hub_fixtures import _ok
from serving_fixtures import INFERENCE
from session_fixtures import eventually
from test_replicas_docker import endpoint, until_state

GATEWAY = "/services/hubgrid-gateway/"


@pytest.fixture(scope="module")
def chat(serving):
    """bob's echo-chat endpoint with one replica serving."""
    hub = serving.hub
    name = f"uc-{uuid.uuid4().hex[:6]}"
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": name, "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "256M"},
        "replicas": 1}), 201)
    until_state(hub, e["id"], "running", 1)
    yield hub, e
    hub.call("DELETE", f"endpoints/{e['id']}", "bob")
    eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)


def as_user(hub, user):
    return {"Authorization": f"token {hub.token(user)}"}


def model_ids(hub, headers) -> list[str] | int:
    r = requests.get(hub.url + GATEWAY + "v1/models", headers=headers, timeout=30)
    return [m["id"] for m in r.json()["data"]] if r.status_code == 200 else r.status_code


def test_a_hub_token_opens_the_endpoints_its_user_may_use_and_no_other(chat):
    hub, e = chat
    # the gateway routes it once its sync has the endpoint (~2 s)
    assert eventually(lambda: e["name"] in model_ids(hub, as_user(hub, "bob")), timeout=30)
    assert e["name"] in model_ids(hub, as_user(hub, "alice"))  # another member of ml
    assert e["name"] not in model_ids(hub, as_user(hub, "gina"))  # globex
    assert model_ids(hub, {"Authorization": "token not-a-hub-token"}) == 401
    url = hub.url + GATEWAY + f"e/{e['id']}/v1/models"
    r = requests.get(url, headers=as_user(hub, "alice"), timeout=30)
    assert r.status_code == 200 and r.json()["data"][0]["id"] == "echo-chat"
    r = requests.get(url, headers=as_user(hub, "gina"), timeout=30)
    assert r.status_code == 404 and r.json()["error"]["message"]
    r = requests.get(url, headers={"Authorization": "token not-a-hub-token"}, timeout=30)
    assert r.status_code == 401 and "hub token" in r.json()["error"]["message"]
    body = {"model": e["name"], "messages": [{"role": "user", "content": "hi"}]}
    r = requests.post(hub.url + GATEWAY + "v1/chat/completions", json=body,
                      headers=as_user(hub, "gina"), timeout=30)
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


def test_the_openai_client_streams_a_chat_with_the_users_hub_token(chat):
    hub, e = chat
    assert eventually(lambda: e["name"] in model_ids(hub, as_user(hub, "bob")), timeout=30)
    with openai.OpenAI(base_url=hub.url + GATEWAY + "v1", api_key="unused", max_retries=0,
                       timeout=60, default_headers=as_user(hub, "bob")) as client:
        stream = client.chat.completions.create(
            model=e["name"], stream=True,
            messages=[{"role": "user", "content": "one two three"}])
        words = [c.choices[0].delta.content for c in stream
                 if c.choices and c.choices[0].delta.content]
    assert "".join(words).split() == ["echo:", "one", "two", "three"]
    assert len(words) > 1  # it came in pieces
    # the hub token as the client's api_key (sent as Bearer) works the same
    with openai.OpenAI(base_url=hub.url + GATEWAY + "v1", api_key=hub.token("alice"),
                       max_retries=0, timeout=60) as client:
        assert e["name"] in [m.id for m in client.models.list().data]
        answer = client.chat.completions.create(
            model=e["name"], messages=[{"role": "user", "content": "as alice"}])
        assert answer.choices[0].message.content == "echo: as alice"
    with openai.OpenAI(base_url=hub.url + GATEWAY + "v1", api_key=hub.token("gina"),
                       max_retries=0, timeout=60) as client:
        assert e["name"] not in [m.id for m in client.models.list().data]
    r = requests.get(hub.url + GATEWAY + "v1/models", timeout=30,
                     headers={"Authorization": "Bearer not-a-hub-token"})
    assert r.status_code == 401 and "hub token" in r.json()["error"]["message"]


def test_the_service_is_asked_once_per_token_within_the_ttl(chat):
    hub, e = chat
    now = [0.0]
    creds = usercred.UserCreds(hub.api, ttl=10, clock=lambda: now[0], hub_api=hub.hub_api)

    async def run():
        try:
            token = hub.token("bob")
            many = await asyncio.gather(*(creds.endpoints(token) for _ in range(5)))
            assert all(e["id"] in got for got in many) and creds.asked == 1
            now[0] = 9.9
            await creds.endpoints(token)
            assert creds.asked == 1
            now[0] = 10.0  # expired: asked again
            await creds.endpoints(token)
            assert creds.asked == 2
            assert e["id"] not in await creds.endpoints(hub.token("gina"))
            unknown = uuid.uuid4().hex  # could be a hub token: asked about
            for _ in range(2):  # a refusal is kept too
                with pytest.raises(Refusal) as r:
                    await creds.endpoints(unknown)
                assert r.value.status == 401
            assert creds.asked == 4
            with pytest.raises(Refusal) as r:  # cannot be one: nobody is asked
                await creds.endpoints("not-a-hub-token")
            assert r.value.status == 401 and creds.asked == 4
            # no token kept: the cache is keyed by its hash
            assert token not in repr(creds.cache)
        finally:
            await creds.aclose()

    asyncio.run(run())


def test_a_revoked_hub_token_is_refused_at_the_next_question_whatever_the_service_kept(chat):
    """The service keeps the hub's answer about a token for a while; the
    gateway asks the hub itself, so a revoked token is refused once the
    gateway's own TTL is over (an injected clock), not that plus the service's."""
    hub, e = chat
    s = hub.login("bob").session
    made = s.post(f"{hub.hub_api}users/bob/tokens", json={"note": "revoked soon"},
                  headers={"X-XSRFToken": s.cookies.get("_xsrf")}, timeout=30)
    assert made.status_code == 201, made.text
    token, token_id = made.json()["token"], made.json()["id"]
    now = [0.0]
    creds = usercred.UserCreds(hub.api, ttl=10, clock=lambda: now[0], hub_api=hub.hub_api)

    async def run():
        try:
            assert e["id"] in await creds.endpoints(token)
            # the service asked the hub too, and keeps its answer a while
            assert hub.call("GET", "endpoints", f"token {token}").status_code == 200
            r = hub.hub_call("DELETE", f"users/bob/tokens/{token_id}", user="bob")
            assert r.status_code == 204, r.text
            now[0] = 10.0  # the gateway's TTL is over: asked again
            with pytest.raises(Refusal) as refused:
                await creds.endpoints(token)
            assert refused.value.status == 401 and creds.asked == 2
        finally:
            await creds.aclose()

    asyncio.run(run())


def test_a_public_endpoint_takes_the_openai_clients_empty_key_through_the_real_gateway(chat):
    """``api_key="EMPTY"`` (what OpenAI clients send where no key is needed)
    opens a public endpoint, and is refused (401, not as a hub token) once it
    is private again."""
    hub, e = chat
    url = hub.url + GATEWAY
    _ok(hub.call("PATCH", f"endpoints/{e['id']}", "admin", json={"public": True}), 200)
    try:
        def ids(key):
            r = requests.get(url + "v1/models", headers={"Authorization": f"Bearer {key}"},
                             timeout=30)
            return [m["id"] for m in r.json()["data"]] if r.status_code == 200 else []
        assert eventually(lambda: e["name"] in ids("EMPTY"), timeout=30, interval=0.3)
        with openai.OpenAI(base_url=url + "v1", api_key="EMPTY", max_retries=0,
                           timeout=60) as client:
            answer = client.chat.completions.create(
                model=e["name"], messages=[{"role": "user", "content": "empty key"}])
        assert answer.choices[0].message.content == "echo: empty key"
        for key in ("EMPTY", "sk-no-key-required", uuid.uuid4().hex):
            r = requests.get(url + f"e/{e['id']}/v1/models", timeout=30,
                             headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, (key, r.text)
    finally:
        _ok(hub.call("PATCH", f"endpoints/{e['id']}", "admin", json={"public": False}), 200)
    r = None

    def refused():
        nonlocal r
        r = requests.post(url + "v1/chat/completions", timeout=30,
                          headers={"Authorization": "Bearer EMPTY"},
                          json={"model": e["name"], "messages": []})
        return r.status_code == 401
    assert eventually(refused, timeout=30, interval=0.3)
    assert "neither an endpoint token" in r.json()["error"]["message"]


def test_a_service_that_cannot_be_asked_is_a_503_asked_again_next_time():
    async def run():
        creds = usercred.UserCreds("http://127.0.0.1:9/nowhere/")  # discard port: refused
        try:
            for n in (1, 2):
                with pytest.raises(Refusal) as r:
                    await creds.endpoints(uuid.uuid4().hex)
                assert r.value.status == 503 and creds.asked == n
        finally:
            await creds.aclose()
        with pytest.raises(Refusal) as r:
            await usercred.opened(None, {"Authorization": "token t"})
        assert r.value.status == 401
        assert await usercred.opened(None, {"Authorization": "Bearer hge_x"}) is None

    asyncio.run(run())


# -- the Lab server extension's forward (hubgrid/gateway/), as the Chat page calls it --

async def test_the_lab_forwards_to_the_gateway_with_its_hub_token_and_streams(
        chat, tmp_path, monkeypatch):
    """A real Jupyter server with the extension (lab_fixtures), as bob's Lab:
    ``hubgrid/gateway/`` reaches the hub's gateway with the server's token;
    a streamed chat arrives as server-sent events."""
    from lab_fixtures import lab_server

    hub, e = chat
    api = hub.url + "/services/hubgrid/api/v1/"  # the gateway is found beside it
    async with lab_server(tmp_path, monkeypatch, user="bob", owner="bob", api_url=api,
                          api_token=hub.token("bob")) as lab:
        assert lab.app.web_app.settings["hubgrid_lab"].gateway_url == \
            hub.url + "/services/hubgrid-gateway/"
        resp, models = await lab.call("GET", "hubgrid/gateway/v1/models")
        assert resp.code == 200 and e["name"] in [m["id"] for m in models["data"]]
        resp, body = await lab.call("POST", "hubgrid/gateway/v1/chat/completions", json_body={
            "model": e["name"], "stream": True,
            "messages": [{"role": "user", "content": "streamed <b>words</b>"}]})
        assert resp.code == 200, body
        assert resp.headers["Content-Type"].startswith("text/event-stream"), (
            dict(resp.headers), body[:300])
        events = [line[len("data: "):] for line in body.decode().splitlines()
                  if line.startswith("data: ")]
        assert events[-1] == "[DONE]" and len(events) > 3
        words = "".join(json.loads(ev)["choices"][0]["delta"].get("content") or ""
                        for ev in events[:-1] if json.loads(ev)["choices"])
        assert words.split() == ["echo:", "streamed", "<b>words</b>"]
        resp, err = await lab.call("POST", "hubgrid/gateway/v1/chat/completions",
                                   json_body={"model": "nobody-has-this", "messages": []})
        assert resp.code == 404 and err["error"]["code"] == "model_not_found"
    # a visitor of bob's server may not use it (the calls act as bob)
    async with lab_server(tmp_path, monkeypatch, user="gina", owner="bob", api_url=api,
                          api_token=hub.token("bob")) as lab:
        resp, err = await lab.call("GET", "hubgrid/gateway/v1/models")
        assert resp.code == 403 and "only bob" in err["message"]


async def test_the_lab_forward_without_a_gateway_or_a_hub_token_answers_503(
        tmp_path, monkeypatch):
    from lab_fixtures import lab_server

    async with lab_server(tmp_path, monkeypatch, owner="alice", api_token="t",
                          api_url="http://127.0.0.1:9/elsewhere/") as lab:
        resp, err = await lab.call("GET", "hubgrid/gateway/v1/models")
        assert resp.code == 503 and "HUBGRID_GATEWAY_URL" in err["message"]
    async with lab_server(tmp_path, monkeypatch, owner="alice", keypair="a:b",
                          gateway_url="http://127.0.0.1:9/g/") as lab:
        resp, err = await lab.call("GET", "hubgrid/gateway/v1/models")
        assert resp.code == 503 and "hub token" in err["message"]
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_token="t",
                          gateway_url="http://127.0.0.1:9/g/") as lab:
        resp, err = await lab.call("GET", "hubgrid/gateway/v1/models")
        assert resp.code == 502
        resp, err = await lab.call("GET", "hubgrid/gateway/../api/me")
        assert resp.code in (400, 404)
        # a browser's call needs Jupyter's XSRF token, as every hubgrid/ call does
        from test_lab_server import login_by_cookie
        await login_by_cookie(lab)
        resp, err = await lab.call("POST", "hubgrid/gateway/v1/chat/completions",
                                   json_body={"model": "m"}, token=False, cookies=True)
        assert resp.code == 403 and "_xsrf" in err["message"]
