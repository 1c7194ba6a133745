"""The serving gateway end to end: through the real hub, its
configurable-http-proxy and the gateway the hub runs (hubgrid-gateway, with
real haproxy), to replicas of a real model (all-MiniLM-L6-v2) that the
serving controller started on the real Docker engine. The openai client
calls embeddings with an endpoint token; a killed replica costs no call,
the endpoint reads degraded but reachable, then healthy once replaced;
tokens that are wrong, revoked or another endpoint's are refused. The
shared Docker hub (docker_fixtures.dock)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
import requests

from hub_fixtures import _ok
from session_fixtures import eventually
from serving_fixtures import INFERENCE
from test_replicas_docker import endpoint, until_state

GATEWAY = "/services/hubgrid-gateway/"
TEXTS = ["A man is playing a guitar.", "Someone plays an instrument."]


@pytest.fixture(scope="module")
def served(serving):
    """An endpoint of two replicas of the real model running in the shared
    group ``serve``, with a token."""
    dock, hub, folder = serving.dock, serving.hub, serving.minilm
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "emb", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "512M"}, "replicas": 2}), 201)
    token = _ok(hub.call("POST", f"endpoints/{e['id']}/tokens", "bob",
                         json={"expires_in_days": 1}), 201)
    until_state(hub, e["id"], "running", 2)
    yield dock, e, token
    hub.call("DELETE", f"endpoints/{e['id']}", "bob")
    eventually(lambda: endpoint(hub, e["id"]) is None, timeout=120, interval=0.5)


def healthy(hub, eid, status, up):
    def check():
        h = (endpoint(hub, eid) or {}).get("health") or {}
        return h if (h.get("status"), h.get("replicas_up")) == (status, up) else None
    found = eventually(check, timeout=90, interval=0.3)
    assert found, (endpoint(hub, eid) or {}).get("health")
    return found


def test_the_openai_client_reaches_replicas_through_the_gateway_and_a_kill_costs_no_call(served):
    dock, e, token = served
    hub = dock.hub
    with openai.OpenAI(base_url=hub.url + GATEWAY + "v1", api_key=token["token"],
                       max_retries=0, timeout=60) as client:
        through_the_gateway(client, dock, hub, e, token)


def through_the_gateway(client, dock, hub, e, token):
    # the gateway routes the endpoint once its replicas serve (its sync: ~2 s)
    assert eventually(lambda: [m.id for m in client.models.list().data] == ["emb"],
                      timeout=60, interval=0.5)
    h = healthy(hub, e["id"], "healthy", 2)
    assert h["reachable"] is True
    # the definition's probe (GET /health, expected 200) passes on both
    assert eventually(lambda: {r["check"] for r in endpoint(hub, e["id"])["health"][
        "replicas"]} == {"L7OK"}, timeout=60, interval=0.5)
    got = client.embeddings.create(model="emb", input=TEXTS)
    assert [len(d.embedding) for d in got.data] == [384, 384]
    # the endpoint's own URL, with the token; the caller's token stays at the gateway
    r = requests.post(hub.url + GATEWAY + f"e/{e['id']}/v1/embeddings", timeout=60,
                      headers={"Authorization": f"Bearer {token['token']}"},
                      json={"model": "all-minilm-l6-v2", "input": "one"})
    assert r.status_code == 200 and len(r.json()["data"][0]["embedding"]) == 384

    # kill one replica's container: every call still answers, from the other.
    # The node takes no new session meanwhile (drained), so its replacement
    # waits in the queue and the endpoint reads degraded but reachable for as
    # long as we look; undrained, the controller's replacement serves
    held = [a for a in dock.hub.call("GET", "allocations?state=allocated", "bob").json()
            if a.get("endpoint") == e["id"]]
    url, c = dock.container(held[0]["id"])
    _ok(hub.call("PATCH", "nodes/serve-a", "admin", json={"schedulable": False}), 200)
    try:
        dock.engines[url].kill(c["Id"])
        answers = [client.embeddings.create(model="emb", input=f"after {i}") for i in range(10)]
        assert all(len(a.data[0].embedding) == 384 for a in answers)
        h = healthy(hub, e["id"], "degraded", 1)
        assert h["reachable"] is True and h["replicas_wanted"] == 2
        until_state(hub, e["id"], "degraded", 1)
        assert client.embeddings.create(model="emb", input="degraded").data[0].embedding
    finally:
        _ok(hub.call("PATCH", "nodes/serve-a", "admin", json={"schedulable": True}), 200)
    until_state(hub, e["id"], "running", 2)
    healthy(hub, e["id"], "healthy", 2)
    assert client.embeddings.create(model="emb", input="healed").data[0].embedding
    # every call counted for the endpoint
    calls = endpoint(hub, e["id"])["health"]["calls"]
    assert eventually(lambda: endpoint(hub, e["id"])["health"]["calls"].get("2xx", 0) >= 14,
                      timeout=30), calls


def test_tokens_wrong_revoked_or_of_another_endpoint_are_refused(served):
    dock, e, token = served
    hub = dock.hub
    url = hub.url + GATEWAY + "v1/embeddings"
    body = {"model": "emb", "input": "x"}
    r = requests.post(url, json=body, timeout=30)
    assert r.status_code == 401 and "token" in r.json()["error"]["message"]
    r = requests.post(url, json=body, timeout=30, headers={"Authorization": "Bearer hge_nope"})
    assert r.status_code == 401 and "unknown or revoked" in r.json()["error"]["message"]
    # a token of another endpoint (no replica needed) opens only its own
    other = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "other", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": e["model_folder"]["id"], "slots": {"cpu": "0.5", "mem": "512M"},
        "replicas": 0}), 201)
    theirs = _ok(hub.call("POST", f"endpoints/{other['id']}/tokens", "bob",
                          json={"expires_in_days": 1}), 201)

    def status(path, secret):
        return requests.post(hub.url + GATEWAY + path, json=body, timeout=30,
                             headers={"Authorization": f"Bearer {secret}"}).status_code
    # the other endpoint's token, once the gateway knows it (it opens its own
    # endpoint: 503, no replica), learns nothing of this one: 404 as for no id
    assert eventually(lambda: status(f"e/{other['id']}/v1/embeddings", theirs["token"]) == 503,
                      timeout=30, interval=0.5)
    r = requests.post(hub.url + GATEWAY + f"e/{e['id']}/v1/embeddings", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {theirs['token']}"})
    assert r.status_code == 404 and r.json()["error"]["message"]
    assert status(f"e/{'0' * 32}/v1/embeddings", theirs["token"]) == 404
    assert status("v1/embeddings", theirs["token"]) == 404  # emb is not its model
    # revoked: refused at the gateway's next sync (docs: "within about 2 s").
    # Each sync reads the table, then reports; two reports after the revoke
    # mean a whole sync began after it, so the token must be refused by then
    mine = _ok(hub.call("POST", f"endpoints/{e['id']}/tokens", "bob",
                        json={"expires_in_days": 1}), 201)
    assert eventually(lambda: status("v1/embeddings", mine["token"]) == 200, timeout=30)
    _ok(hub.call("DELETE", f"endpoints/{e['id']}/tokens/{mine['id']}", "bob"), 204)
    reports = {reported_at(hub, e["id"])}
    assert eventually(lambda: reports.add(reported_at(hub, e["id"])) or len(reports) >= 3,
                      timeout=10, interval=0.1), reports  # two sync intervals and a margin
    assert status("v1/embeddings", mine["token"]) == 401
    _ok(hub.call("DELETE", f"endpoints/{other['id']}", "bob"), 204)


def reported_at(hub, eid) -> str | None:
    """When the gateway last reported (it does after each sync)."""
    return ((endpoint(hub, eid) or {}).get("health") or {}).get("reported_at")


def test_an_endpoints_own_url_passes_get_and_post_only(served):
    """The all-MiniLM-L6-v2 definition declares no methods: e/<id>/ passes
    GET and POST to the replica, and refuses the rest itself, OpenAI-shaped."""
    dock, e, token = served
    url = dock.hub.url + GATEWAY + f"e/{e['id']}/v1/models"
    auth = {"Authorization": f"Bearer {token['token']}"}
    assert eventually(lambda: requests.get(url, headers=auth, timeout=30).status_code == 200,
                      timeout=60, interval=0.5)
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS"):
        r = requests.request(method, url, headers=auth, timeout=30)
        assert r.status_code == 405 and r.headers["Allow"] == "GET, POST", (method, r.text)
        assert r.json()["error"]["code"] == "method_not_allowed"
    # anonymously, a private endpoint's methods are not told either
    assert requests.delete(url, timeout=30).status_code == 401


def test_load_scales_out_quiet_scales_to_zero_and_the_next_call_starts_a_replica(serving):
    """Autoscaling on the real path: calls through the gateway drive the rules;
    a step over the bound is clamped and recorded, the quiet takes it back to
    zero after each cooldown, and a call then wakes it (a cold start) and gets
    its answer."""
    hub = serving.hub
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "auto", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": serving.echo, "slots": {"cpu": "0.5", "mem": "256M"},
        "replicas": 1}), 201)
    eid = e["id"]
    try:
        token = _ok(hub.call("POST", f"endpoints/{eid}/tokens", "bob",
                             json={"expires_in_days": 1}), 201)["token"]
        until_state(hub, eid, "running", 1)
        stop = threading.Event()
        answered: list[int] = []

        def load():
            with openai.OpenAI(base_url=hub.url + GATEWAY + "v1", api_key=token,
                               max_retries=0, timeout=60) as c:
                while not stop.is_set():
                    a = c.chat.completions.create(model="auto", messages=[
                        {"role": "user", "content": "busy"}])
                    assert a.choices[0].message.content == "echo: busy"
                    answered.append(1)

        with ThreadPoolExecutor(2) as pool:
            loads = [pool.submit(load) for _ in range(2)]
            assert eventually(lambda: len(answered) >= 20, timeout=60, interval=0.2)
            # out: more than 3 calls a second per replica -> +2, clamped to max 2;
            # in: under 0.5 a second -> -1 each 6 s, down to zero
            _ok(hub.call("PATCH", f"endpoints/{eid}", "bob", json={"autoscaling": [
                {"metric": "requests_per_second", "comparator": "gt", "threshold": "3",
                 "step": 2, "cooldown": 0, "min_replicas": 0, "max_replicas": 2},
                {"metric": "requests_per_second", "comparator": "lt", "threshold": "0.5",
                 "step": -1, "cooldown": 6, "min_replicas": 0, "max_replicas": 2}]}), 200)
            out = until_state(hub, eid, "running", 2, timeout=120)
            stop.set()
            for f in loads:
                f.result()
        clamped = [ev for ev in out["scaling_events"] if ev["outcome"] == "clamped"]
        assert clamped and (clamped[0]["replicas_before"], clamped[0]["replicas_after"]) == (1, 2)
        assert "clamped to max_replicas 2" in clamped[0]["reason"]
        # quiet: 2 -> 1 -> 0, a cooldown apart; nothing of it left running
        zero = until_state(hub, eid, "running", 0, timeout=120)
        assert zero["replicas"] == 0 and not zero["replicas_detail"]
        ins = [ev for ev in zero["scaling_events"] if ev["outcome"] == "scaled"
               and ev["rule"] == 1]
        assert [(ev["replicas_before"], ev["replicas_after"]) for ev in ins][-2:] == [
            (2, 1), (1, 0)]
        assert dt.datetime.fromisoformat(ins[-1]["at"]) - dt.datetime.fromisoformat(
            ins[-2]["at"]) >= dt.timedelta(seconds=6)
        # the next call starts a replica and is held until it answers
        time.sleep(2.5)  # the gateway's table says zero by now
        with openai.OpenAI(base_url=hub.url + GATEWAY + "v1", api_key=token,
                           max_retries=0, timeout=180) as c:
            a = c.chat.completions.create(model="auto", messages=[
                {"role": "user", "content": "wake up"}])
        assert a.choices[0].message.content == "echo: wake up"
        # (the quiet rule may have taken it back to zero since: 6 s after the wake)
        [wake] = [ev for ev in endpoint(hub, eid)["scaling_events"] if ev["outcome"] == "wake"]
        assert (wake["replicas_before"], wake["replicas_after"]) == (0, 1)
    finally:
        hub.call("DELETE", f"endpoints/{eid}", "bob")
        eventually(lambda: endpoint(hub, eid) is None, timeout=120, interval=0.5)
