"""Endpoints' replicas on the real hub, proxy and Docker engine:
the serving controller starts them as named servers of the endpoint's
creator through the hub, the ledger admits them, the Docker spawner runs the
model definition's command in hubgrid/inference with the model folder
read-only at /models, and a real embeddings call answers on a replica's
socket. A killed replica is replaced, a PATCH scales down, a DELETE ends in
nothing left; the proxy never routes to a replica; a forged replica is
refused. The shared Docker hub (docker_fixtures.dock), one endpoint of the
smallest real model (all-MiniLM-L6-v2).
"""

from __future__ import annotations

import io
import math
import os
import signal
from pathlib import Path

import httpx
import pytest
import requests

from docker_fixtures import HOSTS
from hub_fixtures import _ok
from session_fixtures import allocations, eventually
from serving_fixtures import INFERENCE, REPO

SOCKETS = "/run/hubgrid/sessions"

@pytest.fixture(scope="module")
def serve(serving):
    """The shared group ``serve`` and bob's folder with the real model."""
    return serving.dock, serving.minilm


def endpoint(hub, eid: str) -> dict | None:
    """The endpoint as bob reads it; None once gone. While the service
    restarts, a stand-in that matches no state."""
    try:
        r = hub.call("GET", f"endpoints/{eid}", "bob")
    except requests.ConnectionError:
        r = None
    if r is not None and r.status_code == 404:
        return None
    if r is None or r.status_code in (502, 503, 504):
        return {"state": "(service restarting)", "running_replicas": None, "state_reason": "",
                "replicas_detail": []}
    assert r.status_code == 200, r.text
    return r.json()


def until_state(hub, eid: str, state: str, serving: int, timeout: float = 180) -> dict:
    seen = []

    def check():
        e = endpoint(hub, eid)
        seen.append((e["state"], e["running_replicas"], e["state_reason"]))
        return e if (e["state"], e["running_replicas"]) == (state, serving) else None

    found = eventually(check, timeout=timeout, interval=0.3)
    assert found, f"endpoint never {state} with {serving} serving; last: {seen[-3:]}"
    return found


def proxy_routes(hub) -> dict:
    """The routes of the hub's configurable-http-proxy (its own API, with
    the token the hub gave the proxy process)."""
    pid = int((hub.state / "proxy.pid").read_text())
    env = dict(x.split("=", 1) for x in
               Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if "=" in x)
    port = hub.ports["HUBGRID_PROXY_API_PORT"]
    r = requests.get(f"http://127.0.0.1:{port}/api/routes", timeout=10,
                     headers={"Authorization": f"token {env['CONFIGPROXY_AUTH_TOKEN']}"})
    assert r.status_code == 200, r.text
    return r.json()


def embeddings(socket: str, texts: list[str]) -> list[list[float]]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=socket), base_url="http://replica",
                      timeout=30) as h:
        r = h.post("/v1/embeddings", json={"model": "all-minilm-l6-v2", "input": texts})
    assert r.status_code == 200, r.text
    return [d["embedding"] for d in r.json()["data"]]


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def replica_allocations(hub, eid: str, state: str = "allocated") -> list[dict]:
    return [a for a in allocations(hub, "bob", state) if a.get("endpoint") == eid]


def test_an_endpoint_runs_heals_scales_and_goes(serve):
    dock, folder = serve
    hub = dock.hub
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "emb", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "512M"}, "replicas": 2}), 201)
    eid = e["id"]
    running = until_state(hub, eid, "running", 2)
    names = sorted(r["name"] for r in running["replicas_detail"])
    assert names == [f"ep-emb-{eid[:8]}-0", f"ep-emb-{eid[:8]}-1"]
    assert {r["state"] for r in running["replicas_detail"]} == {"serving"}
    assert {r["node"] for r in running["replicas_detail"]} == {"serve-a"}

    # each replica: a named server of bob, an inference allocation of the endpoint
    held = replica_allocations(hub, eid)
    assert sorted(a["server_name"] for a in held) == names
    assert {a["session_type"] for a in held} == {"inference"}
    assert held[0]["mounts"] == [{"folder": folder, "name": "minilm", "mode": "ro"}]
    servers = hub.hub_call("GET", "users/bob").json()["servers"]
    assert {n for n in servers if n.startswith("ep-")} == set(names)

    # the model answers on a replica's socket: a paraphrase ranks above the unrelated
    a = held[0]
    vecs = embeddings(f"{SOCKETS}/{a['id']}/jupyter.sock",
                      ["A man is playing a guitar.", "Someone plays an instrument.",
                       "The stock market fell sharply today."])
    assert len(vecs[0]) == 384
    assert cosine(vecs[0], vecs[1]) > cosine(vecs[0], vecs[2]) + 0.2

    # /models is the model folder, read-only; no hub token reaches the replica
    url, c = dock.container(a["id"])
    info = dock.engines[url].inspect_container(c["Id"])
    (models,) = [m for m in info["Mounts"] if m["Destination"] == "/models"]
    assert models["RW"] is False
    cl = dock.engines[url]
    ex = cl.exec_create(c["Id"], ["sh", "-c", "touch /models/x"])
    out = cl.exec_start(ex["Id"]).decode()
    assert cl.exec_inspect(ex["Id"])["ExitCode"] != 0 and "Read-only" in out, out
    env = dict(x.split("=", 1) for x in info["Config"]["Env"])
    assert not [k for k in env if k.startswith("JUPYTERHUB_")], sorted(env)
    assert env["HUBGRID_SERVICE_SOCKET"] == "/run/hubgrid/jupyter.sock"

    # the proxy has no route to any replica (it has the hub's: the check is real)
    routes = proxy_routes(hub)
    assert any(d.get("hub") for d in routes.values()), routes
    assert [r for r, d in routes.items()
            if "/ep-" in r or str(d.get("server_name", "")).startswith("ep-")] == [], routes

    # a killed replica: degraded, replaced under its name, running again
    killed = held[1]
    url, c = dock.container(killed["id"])
    dock.engines[url].kill(c["Id"])
    until_state(hub, eid, "degraded", 1)
    again = until_state(hub, eid, "running", 2)
    assert sorted(r["name"] for r in again["replicas_detail"]) == names
    now_held = replica_allocations(hub, eid)
    assert killed["id"] not in {x["id"] for x in now_held}
    assert [x for x in allocations(hub, "bob") if x["id"] == killed["id"]][0]["state"] \
        == "released"

    # PATCH to 1: one stops (its container goes), the endpoint runs with one
    _ok(hub.call("PATCH", f"endpoints/{eid}", "bob", json={"replicas": 1}), 200)
    one = eventually(lambda: (lambda x: x if len(x["replicas_detail"]) == 1
                              and x["state"] == "running" else None)(endpoint(hub, eid)),
                     timeout=120, interval=0.3)
    assert one and one["running_replicas"] == 1, endpoint(hub, eid)
    assert len(replica_allocations(hub, eid)) == 1
    gone = {x["id"] for x in now_held} - {x["id"] for x in replica_allocations(hub, eid)}
    assert eventually(lambda: not [c for i in gone for c in dock.containers(allocation=i)],
                      timeout=60)

    # DELETE: terminating, then gone: no replica, allocation or container left
    last = replica_allocations(hub, eid)
    r = hub.call("DELETE", f"endpoints/{eid}", "bob")
    assert r.status_code == 204, r.text
    after = endpoint(hub, eid)
    assert after is None or after["state"] == "terminating"
    assert eventually(lambda: endpoint(hub, eid) is None, timeout=120, interval=0.3)
    assert replica_allocations(hub, eid) == []
    assert [x["state"] for x in allocations(hub, "bob") if x["id"] == last[0]["id"]] \
        == ["released"]
    assert eventually(lambda: not dock.containers(allocation=last[0]["id"]), timeout=60)
    servers = hub.hub_call("GET", "users/bob?include_stopped_servers=1").json()["servers"]
    assert [n for n in servers if n.startswith(f"ep-emb-{eid[:8]}")] == []


def test_a_forged_replica_is_refused(serve):
    dock, folder = serve
    hub = dock.hub
    e = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "idle", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "512M"}, "replicas": 0}), 201)
    options = {"session_type": "inference", "endpoint": e["id"], "project": "ml",
               "resource_group": "serve", "image": INFERENCE, "cpu": "0.5", "mem": "512M"}
    # someone else's endpoint: refused as if it did not exist
    r = hub.hub_call("POST", "users/alice/servers/forged", user="alice",
                     json={"user_options": options})
    assert r.status_code >= 400 and "no endpoint of yours" in r.text, r.text
    # its creator, with other slots than the endpoint's
    r = hub.hub_call("POST", "users/bob/servers/bigger", user="bob",
                     json={"user_options": {**options, "cpu": "2"}})
    assert r.status_code >= 400 and "not a replica of endpoint 'idle'" in r.text, r.text
    assert "slots" in r.text
    # nothing was left held
    assert [a for a in allocations(hub, "alice") + allocations(hub, "bob")
            if a.get("endpoint") == e["id"] and a["state"] in ("pending", "allocated")] == []
    # an inference session through the public API: refused, it needs its endpoint
    r = hub.call("POST", "allocations", "bob", json={
        "project": "ml", "resource_group": "serve", "slots": {"cpu": "1"},
        "session_type": "inference"})
    assert r.status_code in (400, 422) and "replica of an endpoint" in r.text, r.text
    _ok(hub.call("DELETE", f"endpoints/{e['id']}", "bob"), 204)


def _restart_service(hub) -> None:
    """Kill the service (SIGKILL: no clean-up); the hub starts it again."""
    pid_file = hub.state / "hubgrid-service.pid"
    pid = int(pid_file.read_text())
    os.kill(pid, signal.SIGKILL)
    assert eventually(lambda: pid_file.exists() and pid_file.read_text().strip()
                      and int(pid_file.read_text()) != pid, timeout=60), "not restarted"


def test_a_scale_and_a_delete_finish_across_a_restart_of_the_service(serve):
    dock, folder = serve
    hub = dock.hub
    eid = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "again", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "512M"}, "replicas": 1}),
        201)["id"]
    until_state(hub, eid, "running", 1)
    _ok(hub.call("PATCH", f"endpoints/{eid}", "bob", json={"replicas": 2}), 200)
    _restart_service(hub)  # whatever the pass had done: the next service finishes it
    until_state(hub, eid, "running", 2)
    assert len(replica_allocations(hub, eid)) == 2  # no replica started twice
    held = {a["id"] for a in replica_allocations(hub, eid)}
    assert hub.call("DELETE", f"endpoints/{eid}", "bob").status_code == 204
    _restart_service(hub)
    assert eventually(lambda: endpoint(hub, eid) is None, timeout=120, interval=0.3)
    assert replica_allocations(hub, eid) == []
    assert eventually(lambda: not [c for i in held for c in dock.containers(allocation=i)],
                      timeout=60)


@pytest.fixture
def tcp_image(serve):
    """hubgrid/inference without its socket label: its servers are taken for
    TCP-only ones (as vLLM), so replicas run under hubgrid-service-bridge."""
    dock, _ = serve
    client = dock.engines[HOSTS[0]]
    name = "hubgrid/inference-tcp:test"
    dockerfile = f'FROM {INFERENCE}\nLABEL ai.hubgrid.inference.unix-socket="0"\n'.encode()
    for _ in client.build(fileobj=io.BytesIO(dockerfile), tag=name, rm=True):
        pass
    try:
        _ok(dock.hub.call("POST", "images/scan", "admin"), 200)
        yield name
    finally:
        client.remove_image(name, force=True)


def test_a_server_on_tcp_only_is_bridged_and_pre_start_actions_run(serve, tcp_image):
    dock, _ = serve
    hub = dock.hub
    folder = _ok(hub.call("POST", "vfolders", "bob", json={"name": "chat"}), 201)["id"]
    _ok(hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", "bob",
                 data=(REPO / "examples/models/echo-chat/model-definition.yaml").read_bytes()),
        201)
    eid = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "chat", "project": "ml", "resource_group": "serve", "image": tcp_image,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "512M"}, "replicas": 1}),
        201)["id"]
    until_state(hub, eid, "running", 1)
    (a,) = replica_allocations(hub, eid)
    assert a["service"]["unix_socket"] is False
    url, c = dock.container(a["id"])
    info = dock.engines[url].inspect_container(c["Id"])
    assert info["Config"]["Cmd"][:6] == ["hubgrid-prestart", "--", "hubgrid-service-bridge",
                                         "/run/hubgrid/jupyter.sock", "8000", "--"]
    assert not [e for e in info["Config"]["Env"] if e.startswith("HUBGRID_SERVICE_SOCKET=")]
    # its definition's pre-start action (log) ran in the replica, before the server
    assert info["Config"]["Entrypoint"] == ["/usr/local/bin/hubgrid-session"]
    logs = dock.engines[url].logs(c["Id"]).decode(errors="replace")
    assert "hubgrid: pre-start: hubgrid-echo-chat is a stand-in, not a language model" \
        in logs, logs
    with httpx.Client(transport=httpx.HTTPTransport(uds=f"{SOCKETS}/{a['id']}/jupyter.sock"),
                      base_url="http://replica", timeout=30) as h:
        r = h.post("/v1/chat/completions", json={
            "model": "echo-chat", "messages": [{"role": "user", "content": "over the bridge"}]})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "echo: over the bridge"
    assert hub.call("DELETE", f"endpoints/{eid}", "bob").status_code == 204
    assert eventually(lambda: endpoint(hub, eid) is None, timeout=120, interval=0.3)


def test_a_replica_that_cannot_start_fails_the_endpoint_with_the_reason(serve):
    dock, _ = serve
    hub = dock.hub
    folder = _ok(hub.call("POST", "vfolders", "bob", json={"name": "broken"}), 201)["id"]
    definition = (b"models:\n  - name: broken\n    model_path: /models\n    service:\n"
                  b"      start_command: echo no model here >&2; exit 3\n"
                  b"      shell: /bin/sh\n      port: 8000\n")
    _ok(hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", "bob",
                 data=definition), 201)
    eid = _ok(hub.call("POST", "endpoints", "bob", json={
        "name": "broken", "project": "ml", "resource_group": "serve", "image": INFERENCE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "512M"}, "replicas": 1}),
        201)["id"]
    why = "the session's server exited with code 3 before it answered"
    failed = eventually(lambda: (lambda e: e if e["state"] == "failed" else None)(
        endpoint(hub, eid)), timeout=120, interval=0.3)
    assert failed, endpoint(hub, eid)
    assert failed["state_reason"] == f"a replica failed to start: {why}"
    assert failed["running_replicas"] == 0
    assert replica_allocations(hub, eid) == []  # nothing held, nothing retried
    last = eventually(lambda: [r for r in endpoint(hub, eid)["replicas_detail"]
                               if r["state"] == "failed"], timeout=30)
    assert last and last[0]["reason"] == f"the server failed to start: {why}", last
    # asked again (PATCH, even the same count): it tries anew, and fails again
    again = _ok(hub.call("PATCH", f"endpoints/{eid}", "bob", json={"replicas": 1}), 200)
    assert again["state"] == "provisioning" and again["state_reason"] == ""
    assert eventually(lambda: endpoint(hub, eid)["state"] == "failed", timeout=120,
                      interval=0.3)
    assert len([a for a in allocations(hub, "bob", "released") if a.get("endpoint") == eid]) == 2
    assert hub.call("DELETE", f"endpoints/{eid}", "bob").status_code == 204
    assert eventually(lambda: endpoint(hub, eid) is None, timeout=120, interval=0.3)
