"""The gateway's auth edges, on the real thing: its tornado app in front of
real haproxy, replicas that record what reaches them (test_gateway.Recorder),
and a hub and service that count the questions they are asked (httpx's
MockTransport behind ``usercred.UserCreds``, the hub-token check on):

- a public endpoint takes any Bearer (``api_key="EMPTY"``) or none, and a
  Bearer that cannot be a hub token is sent to nobody;
- a table the gateway could not refresh for ``max_age`` seconds is trusted
  no more (an injected clock; and the real ``python -m gateway`` process
  once its service is gone);
- ``e/<id>/`` passes only the methods the endpoint declares (405 else);
- a hub token revoked at the hub is refused within the TTL, whatever the
  service still answers from its own cache (an injected clock);
- a disabled endpoint (deactivated domain, project or creator) takes no call.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from gateway import usercred
from gateway.access import Refusal
from gateway.app import State, make_app
from test_gateway import (EP1, EP2, EP3, HAPROXY, PREFIX, REPO, Recorder, Replicas,  # noqa: F401
                          free_port, gateway, needs_haproxy, real_doc, serve)

HUB_TOKEN = "0123456789abcdef" * 2  # what JupyterHub makes: 32 hex digits
OTHER_HUB_TOKEN = "f" * 32


class HubAndService:
    """A stand-in for the hub's ``GET /hub/api/user`` and the service's ``GET
    endpoints``: every question is recorded; ``revoked`` tokens the hub no
    longer knows, while the service still answers from its cache."""

    def __init__(self, opens: dict[str, list[str]]):
        self.opens = opens
        self.revoked: set[str] = set()
        self.asked: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        token = request.headers.get("authorization", "").partition(" ")[2]
        self.asked.append((request.url.host, token))
        if token not in self.opens:
            return httpx.Response(403 if request.url.host == "hub" else 401)
        if request.url.host == "hub":
            return httpx.Response(403) if token in self.revoked else httpx.Response(
                200, json={"kind": "user", "name": "bob"})
        return httpx.Response(200, json=[{"id": i} for i in self.opens[token]])

    def creds(self, clock=time.monotonic, ttl: float = 10.0) -> usercred.UserCreds:
        return usercred.UserCreds("http://service/api/v1", ttl=ttl, clock=clock,
                                  hub_api="http://hub/hub/api",
                                  http=httpx.AsyncClient(transport=httpx.MockTransport(self)))


def doc_with(**changes):
    """The test table with per-endpoint changes: ``{EP1: {...}}``."""
    def make(*a, **kw):
        d = real_doc(*a, **kw)
        d["endpoints"] = [dict(e, **changes.get(e["id"], {})) for e in d["endpoints"]]
        return d
    return make


@needs_haproxy
async def test_a_public_endpoint_takes_any_bearer_and_sends_no_implausible_one_anywhere(
        gateway):  # noqa: F811
    state, balancer, replicas, base = gateway
    hub = HubAndService({HUB_TOKEN: [EP1]})
    state.users = hub.creds()
    rec = Recorder(replicas.root / "pub.sock")
    try:
        d = doc_with(**{EP3: {"models": ["rec"], "replicas": [
            {"name": "rec", "target": rec.target}]}})()
        await serve(state, balancer, d)
        async with httpx.AsyncClient(base_url=base) as h:
            anyone = [{}, {"Authorization": "Bearer EMPTY"}, {"api-key": "EMPTY"},
                      {"Authorization": "Bearer sk-no-key-required"},
                      {"Authorization": "Bearer hge_unknown"},
                      {"Authorization": f"Bearer {OTHER_HUB_TOKEN}"},  # could be: not asked
                      {"Authorization": "token not-a-hub-token"}]
            for headers in anyone:
                r = await h.post(f"e/{EP3}/v1/chat/completions", headers=headers, json={})
                assert r.status_code == 200, (headers, r.text)
            assert hub.asked == []  # a public endpoint asks nobody
            for headers in anyone[:5]:
                r = await h.post("v1/chat/completions", headers=headers,
                                 json={"model": "open", "messages": []})
                assert r.status_code == 200, (headers, r.text)
                r = await h.get("v1/models", headers=headers)
                assert [m["id"] for m in r.json()["data"]] == ["open"], (headers, r.text)
            assert hub.asked == []  # none of those could be a hub token
            # one that could be is asked about (it may open more), and its
            # refusal leaves the public model usable
            r = await h.post("v1/chat/completions", json={"model": "open", "messages": []},
                             headers={"Authorization": f"Bearer {OTHER_HUB_TOKEN}"})
            assert r.status_code == 200, r.text
            assert {t for _, t in hub.asked} == {OTHER_HUB_TOKEN}
            # a private endpoint: 401 without asking anybody about EMPTY
            hub.asked.clear()
            r = await h.post(f"e/{EP1}/v1/x", headers={"Authorization": "Bearer EMPTY"})
            assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
            r = await h.post("v1/chat/completions", headers={"Authorization": "Bearer EMPTY"},
                             json={"model": "chat", "messages": []})
            assert r.status_code == 401
            assert hub.asked == []
            # a real hub token still opens its user's endpoints, as a Bearer too
            r = await h.get("v1/models", headers={"Authorization": f"Bearer {HUB_TOKEN}"})
            assert sorted(m["id"] for m in r.json()["data"]) == ["chat", "open"]
        assert len(rec.seen) == 7 + 5 + 1
    finally:
        rec.close()
        await state.users.aclose()


@needs_haproxy
async def test_a_table_not_refreshed_for_max_age_is_trusted_no_more(gateway):  # noqa: F811
    state, balancer, replicas, base = gateway
    now = [1000.0]
    state.clock, state.max_age = (lambda: now[0]), 30.0
    rec = Recorder(replicas.root / "stale.sock")
    try:
        await serve(state, balancer, doc_with(**{EP3: {"replicas": [
            {"name": "rec", "target": rec.target}]}})([("rec", rec.target)]))
        async with httpx.AsyncClient(base_url=base) as h:
            async def statuses():
                token = {"Authorization": "Bearer secret-one"}
                return [(await h.get(f"e/{EP1}/v1/models", headers=token)).status_code,
                        (await h.get(f"e/{EP3}/v1/models")).status_code,
                        (await h.get("v1/models", headers=token)).status_code]
            now[0] += 30.0  # as old as trusted
            assert await statuses() == [200, 200, 200]
            now[0] += 0.5  # older: every call refused, public ones too
            assert await statuses() == [503, 503, 503]
            r = await h.post("v1/embeddings", json={"model": "open", "input": "x"})
            err = r.json()["error"]
            assert r.status_code == 503 and err["code"] == "table_stale", err
            assert "30 s" in err["message"] and err["type"] == "unavailable"
            await state.set_table(state.table)  # a sync succeeded again
            assert await statuses() == [200, 200, 200]
        assert len(rec.seen) == 4  # e/ calls of the two good rounds
    finally:
        rec.close()


async def test_a_gateway_that_never_read_a_table_refuses_calls():
    state = State(lambda eid: Path("/nonexistent"))
    with pytest.raises(Refusal) as r:
        state.trusted()
    assert (r.value.status, r.value.code) == (503, "table_stale")


def test_the_real_gateway_stops_trusting_its_table_once_the_service_is_gone(tmp_path):
    """``python -m gateway`` syncing from a stand-in service: its token opens
    the endpoint (503 scaled_to_zero: it has no replica); once the service is gone the
    token keeps working until HUBGRID_GATEWAY_TABLE_MAX_AGE, then every call
    is refused, public ones too."""
    port, api_port = free_port(), free_port()
    secret = "hge_" + "s" * 20
    table = {"endpoints": [
        {"id": EP1, "name": "chat", "domain": "d", "project": "p", "public": False,
         "replicas_wanted": 0, "replicas": [], "models": ["m"], "health": {},
         "tokens": [{"id": "t", "sha256": hashlib.sha256(secret.encode()).hexdigest(),
                     "expires_at": "2999-01-01T00:00:00+00:00"}]},
        {"id": EP3, "name": "open", "domain": "d", "project": "p", "public": True,
         "replicas_wanted": 0, "replicas": [], "models": [], "health": {}, "tokens": []}]}
    service = subprocess.Popen([sys.executable, "-c", (
        "import json, sys\nfrom http.server import BaseHTTPRequestHandler, HTTPServer\n"
        f"TABLE = json.dumps({table!r}).encode()\n"
        "class H(BaseHTTPRequestHandler):\n"
        "    def log_message(self, *a): pass\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', len(TABLE))\n"
        "        self.end_headers(); self.wfile.write(TABLE)\n"
        "    def do_POST(self):\n"
        "        self.rfile.read(int(self.headers.get('Content-Length') or 0))\n"
        "        self.send_response(204); self.end_headers()\n"
        f"HTTPServer(('127.0.0.1', {api_port}), H).serve_forever()\n")])
    env = {**os.environ, "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}",
           "HUBGRID_API_URL": f"http://127.0.0.1:{api_port}/api/v1/",
           "HUBGRID_INTERNAL_TOKEN": "t" * 32,
           "HUBGRID_GATEWAY_RUN_DIR": f"/tmp/hubgrid-gwstale-{os.getpid()}",
           "HUBGRID_GATEWAY_SYNC_INTERVAL": "0.2", "HUBGRID_GATEWAY_TABLE_MAX_AGE": "2",
           "HUBGRID_GATEWAY_EXIT_WITH_PARENT": "0", "PYTHONPATH": str(REPO)}
    gw = subprocess.Popen([sys.executable, "-m", "gateway"], env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}{PREFIX}"

    def codes():
        try:
            return [httpx.get(url + f"e/{EP1}/v1/models", timeout=5,
                              headers={"Authorization": f"Bearer {secret}"}).json()["error"][
                                  "code"],
                    httpx.get(url + f"e/{EP3}/v1/models", timeout=5).json()["error"]["code"]]
        except (httpx.HTTPError, ValueError):
            return None

    try:
        deadline = time.monotonic() + 30
        while codes() != ["scaled_to_zero"] * 2:  # the token opens it
            assert time.monotonic() < deadline, codes()
            time.sleep(0.1)
        service.kill()
        service.wait()
        deadline = time.monotonic() + 30
        while (now := codes()) != ["table_stale", "table_stale"]:
            # trusted, then not (one sample's two calls may straddle the moment)
            assert now is None or set(now) <= {"scaled_to_zero", "table_stale"}, now
            assert time.monotonic() < deadline, "the stale table stayed trusted"
            time.sleep(0.1)
    finally:
        for p in (service, gw):
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", env["HUBGRID_GATEWAY_RUN_DIR"]], check=False)


@needs_haproxy
async def test_an_endpoints_own_url_passes_only_the_methods_it_declares(gateway):  # noqa: F811
    state, balancer, replicas, base = gateway
    rec = Recorder(replicas.root / "meth.sock")
    try:
        await serve(state, balancer, doc_with(**{
            EP3: {"replicas": [{"name": "rec", "target": rec.target}]},
            EP2: {"methods": ["GET", "POST", "delete"],
                  "replicas": [{"name": "rec", "target": rec.target}]}})())
        async with httpx.AsyncClient(base_url=base) as h:
            for method in ("GET", "POST"):
                r = await h.request(method, f"e/{EP3}/v1/models")
                assert r.status_code == 200 and r.json()["method"] == method
            for method in ("PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"):
                r = await h.request(method, f"e/{EP3}/admin/reset")
                assert r.status_code == 405, (method, r.text)
                assert r.headers["Allow"] == "GET, POST"
                if method != "HEAD":
                    err = r.json()["error"]
                    assert err["code"] == "method_not_allowed" and method in err["message"]
                    assert set(err) == {"message", "type", "param", "code"}
            # a private endpoint: who may not call it learns nothing of its methods
            r = await h.delete(f"e/{EP1}/admin")
            assert r.status_code == 401
            # one whose definition declares DELETE passes it, and no other
            token = {"Authorization": "Bearer secret-two"}
            r = await h.delete(f"e/{EP2}/v1/thing", headers=token)
            assert r.status_code == 200 and r.json()["method"] == "DELETE"
            r = await h.put(f"e/{EP2}/v1/thing", headers=token)
            assert r.status_code == 405 and r.headers["Allow"] == "DELETE, GET, POST"
        assert [m for m, _, _ in rec.seen] == ["GET", "POST", "DELETE"]
    finally:
        rec.close()


async def test_a_hub_token_revoked_at_the_hub_is_refused_within_the_ttl():
    """The service keeps its hub's answers for a while (here: it still says
    yes); the gateway asks the hub itself, so the bound is its TTL alone."""
    now = [0.0]
    hub = HubAndService({HUB_TOKEN: [EP1]})
    creds = hub.creds(clock=lambda: now[0], ttl=10.0)
    try:
        assert await creds.endpoints(HUB_TOKEN) == frozenset({EP1})
        assert [host for host, _ in hub.asked] == ["hub", "service"]
        hub.revoked.add(HUB_TOKEN)
        now[0] = 9.99  # the answer kept
        assert await creds.endpoints(HUB_TOKEN) == frozenset({EP1})
        now[0] = 10.0  # the TTL: asked again, and the hub says no
        with pytest.raises(Refusal) as r:
            await creds.endpoints(HUB_TOKEN)
        assert r.value.status == 401 and "invalid hub token" in r.value.message
        assert [host for host, _ in hub.asked] == ["hub", "service", "hub"]
        # nothing that cannot be a hub token is ever sent
        for token in ("EMPTY", "hge_" + "a" * 28, "x" * 33, "g" * 32):
            with pytest.raises(Refusal):
                await creds.endpoints(token)
        assert len(hub.asked) == 3
    finally:
        await creds.aclose()


def test_the_hubs_api_is_taken_from_the_environment(monkeypatch):
    monkeypatch.setenv("HUBGRID_API_URL", "http://127.0.0.1:1/api/v1/")
    monkeypatch.setenv("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api")
    creds = usercred.UserCreds.from_env()
    assert creds.hub_url == "http://127.0.0.1:8081/hub/api/user"
    asyncio.run(creds.aclose())


@needs_haproxy
async def test_a_disabled_endpoint_takes_no_call(gateway):  # noqa: F811
    state, balancer, replicas, base = gateway
    state.users = HubAndService({HUB_TOKEN: [EP1]}).creds()
    rec = Recorder(replicas.root / "dis.sock")
    off = {"disabled": "its project 'ml' is deactivated",
           "replicas": [{"name": "rec", "target": rec.target}]}
    try:
        await serve(state, balancer, doc_with(**{EP1: off, EP3: {**off, "disabled": "its "
                                                                 "creator 'x' is deactivated"}})())
        async with httpx.AsyncClient(base_url=base) as h:
            for headers in ({"Authorization": "Bearer secret-one"},
                            {"Authorization": f"token {HUB_TOKEN}"}):
                r = await h.get(f"e/{EP1}/v1/models", headers=headers)
                err = r.json()["error"]
                assert r.status_code == 403 and err["code"] == "endpoint_disabled", err
                assert "project 'ml' is deactivated" in err["message"]
                r = await h.get("v1/models", headers=headers)
                assert [m["id"] for m in r.json()["data"]] == [], r.text
            # public no more: a caller without a credential is refused as for
            # any private endpoint, and one with another's token learns nothing
            r = await h.get(f"e/{EP3}/v1/models")
            assert r.status_code == 401
            r = await h.get(f"e/{EP3}/v1/models", headers={"Authorization": "Bearer secret-two"})
            assert r.status_code == 404
        assert rec.seen == []
    finally:
        rec.close()
        await state.users.aclose()
