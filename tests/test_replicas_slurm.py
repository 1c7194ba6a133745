"""Endpoints' replicas as jobs of the real single-node Slurm, through
the real hub, its proxy and its gateway (real haproxy): the serving
controller starts each replica as a named server of the endpoint's creator,
the ledger admits it, the Slurm spawner submits a job that runs the model
definition's command in namespaces of its own (hubgrid-replica: the model
folder read-only at /models, its own loopback, a Unix socket the gateway
reaches). The server is the echo-chat stand-in (standard library only): the
node's Python has no onnxruntime for the embeddings server. A call answers
through the gateway; a cancelled job is replaced; a PATCH scales down; a
DELETE leaves no job. The Slurm hub every Slurm module shares
(tests/slurm_fixtures.py).
"""

from __future__ import annotations

import os
import subprocess

import pytest
import requests

from hub_fixtures import _ok, require
from session_fixtures import allocations, eventually, hub_log
from slurm_fixtures import PARTITION, jobs, new_user
from test_replicas_docker import proxy_routes
from test_socket_attacks import node_socket  # noqa: F401 - a fixture

GATEWAY = "/services/hubgrid-gateway/"
#: a registry entry for the nodes' model servers (no container on Slurm):
#: images/inference's, installed on the node (jupyterhub_config.py: replica_path)
IMAGE = "hubgrid/inference:latest"
SOCKETS = "/run/hubgrid/slurm-replicas"
PINS = "/run/hubgrid/replica-pins"
#: echo-chat, with pre-start actions that report what the replica may do
DEFINITION = """\
models:
  - name: echo-chat
    model_path: /models
    service:
      pre_start_actions:
        - action: log
          args:
            body: a stand-in on Slurm
        - action: run_command
          args:
            command:
              - /bin/sh
              - -c
              - >-
                touch /models/probe 2>/dev/null || echo "probe: models read-only";
                touch /probe 2>/dev/null || echo "probe: root read-only";
                echo "probe: tmp $(echo ok > /tmp/x && cat /tmp/x)";
                echo "probe: hub variables $(env | grep -c '^JUPYTERHUB_')";
                echo "probe: uid $(id -u)";
                echo "probe: definition $(head -c 6 /models/model-definition.yaml)"
      start_command: exec hubgrid-echo-chat --model-name echo-chat --port 8000
      shell: /bin/sh
      port: 8000
      health_check:
        path: /health
        interval: 2
        max_retries: 2
"""


@pytest.fixture(scope="module")
def slurm_serving(slurm_hub):
    """A user of the shared Slurm hub with a model folder of the stand-in,
    and the registry entry of the nodes' model servers."""
    require("a /models mount point on the Slurm node", os.path.isdir("/models"),
            "scripts/start-slurm.sh makes it (docs/serving.md, Replicas on Slurm)")
    hub = slurm_hub
    r = hub.call("POST", "images", "admin", json={"name": IMAGE, "labels": {
        "ai.hubgrid.inference-image": "1", "ai.hubgrid.inference.unix-socket": "1"}})
    assert r.status_code in (201, 409), r.text
    user = new_user(hub)
    [project] = _ok(hub.call("GET", f"users/{user}", "admin"), 200)["projects"]
    folder = _ok(hub.call("POST", "vfolders", user, json={"name": "echo"}), 201)["id"]
    _ok(hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", user,
                 data=DEFINITION.encode()), 201)
    yield hub, user, project, folder
    # a test that failed half way: its endpoints go (their jobs and sockets with them)
    for left in _ok(hub.call("GET", "endpoints", user), 200):
        hub.call("DELETE", f"endpoints/{left['id']}", user)
        eventually(lambda: endpoint(hub, user, left["id"]) is None, timeout=120)


def endpoint(hub, user, eid) -> dict | None:
    r = hub.call("GET", f"endpoints/{eid}", user)
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    return r.json()


def until_state(hub, user, eid, state, serving, timeout=180) -> dict:
    seen = []

    def check():
        e = endpoint(hub, user, eid)
        seen.append((e["state"], e["running_replicas"], e["state_reason"]))
        return e if (e["state"], e["running_replicas"]) == (state, serving) else None

    found = eventually(check, timeout=timeout, interval=0.5)
    assert found, f"never {state} with {serving}; last: {seen[-3:]}\n{hub_log(hub)}"
    return found


def healthy(hub, user, eid, up: int) -> dict | None:
    def check():
        h = (endpoint(hub, user, eid) or {}).get("health") or {}
        ok = (h.get("status"), h.get("replicas_up"), h.get("reachable")) == ("healthy", up, True)
        return h if ok and {r["check"] for r in h["replicas"]} == {"L7OK"} else None
    return eventually(check, timeout=60, interval=0.5)


def replica_allocations(hub, user, eid) -> list[dict]:
    return [a for a in allocations(hub, user, "allocated") if a.get("endpoint") == eid]


def chat(hub, token: str, text: str) -> requests.Response:
    return requests.post(hub.url + GATEWAY + "v1/chat/completions", timeout=30,
                         headers={"Authorization": f"Bearer {token}"},
                         json={"model": "echo", "messages": [{"role": "user", "content": text}]})


def answers(hub, token: str, text: str) -> bool:
    r = chat(hub, token, text)
    return r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == f"echo: {text}"


def test_a_slurm_endpoint_serves_heals_scales_and_goes(slurm_serving):
    hub, user, project, folder = slurm_serving
    e = _ok(hub.call("POST", "endpoints", user, json={
        "name": "echo", "project": project, "resource_group": "default", "image": IMAGE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "256M"}, "replicas": 2}), 201)
    eid = e["id"]
    running = until_state(hub, user, eid, "running", 2)
    names = sorted(r["name"] for r in running["replicas_detail"])
    assert names == [f"ep-echo-{eid[:8]}-0", f"ep-echo-{eid[:8]}-1"]

    # each replica: an inference allocation and a Slurm job that names it
    held = replica_allocations(hub, user, eid)
    assert sorted(a["server_name"] for a in held) == names
    assert {a["session_type"] for a in held} == {"inference"}
    running_jobs = jobs(f"hubgrid-{user}")
    assert sorted(j["comment"] for j in running_jobs) == sorted(
        f"hubgrid-allocation={a['id']}" for a in held)
    # accounted like any Slurm session: the group's partition, whole CPUs, the memory
    assert {(j["state"], j["partition"], j["cpus"], j["memory"]) for j in running_jobs} == {
        ("RUNNING", PARTITION, "1", "256M")}
    for a in held:  # its socket, pinned where the gateway's haproxy connects
        assert os.path.exists(f"{SOCKETS}/{a['id']}/jupyter.sock")
        assert os.path.samefile(f"{SOCKETS}/{a['id']}/jupyter.sock", f"{PINS}/{a['id']}.sock")
    # the hub's proxy has no route to a replica (a model server has no login)
    routes = proxy_routes(hub)
    assert any(d.get("hub") for d in routes.values()), routes
    assert [r for r in routes if "/ep-" in r] == [], routes

    # what the replica could do, from its pre-start action, in its log
    log = _ok_text(hub.call("GET", f"allocations/{held[0]['id']}/logs", user))
    for line in ("hubgrid: pre-start: a stand-in on Slurm", "probe: models read-only",
                 "probe: root read-only", "probe: tmp ok", "probe: hub variables 0",
                 "probe: uid 1000",
                 "probe: definition models"):
        assert line in log, log

    # a call through the gateway with a token of the endpoint
    token = _ok(hub.call("POST", f"endpoints/{eid}/tokens", user,
                         json={"expires_in_days": 1}), 201)["token"]
    assert eventually(lambda: answers(hub, token, "hello slurm"), timeout=60, interval=0.5), \
        chat(hub, token, "hello slurm").text
    # the gateway's haproxy probes both sockets as the definition says
    assert healthy(hub, user, eid, 2), endpoint(hub, user, eid)["health"]

    # a cancelled job: the controller starts another under the same name
    killed = held[0]
    [job] = [j for j in running_jobs if j["comment"] == f"hubgrid-allocation={killed['id']}"]
    subprocess.run(["scancel", job["id"]], check=True)
    assert eventually(lambda: killed["id"] not in {a["id"] for a in replica_allocations(
        hub, user, eid)} and len(replica_allocations(hub, user, eid)) == 2, timeout=120), \
        hub_log(hub)
    until_state(hub, user, eid, "running", 2)
    assert eventually(lambda: len([j for j in jobs(f"hubgrid-{user}")
                                   if j["state"] == "RUNNING"]) == 2, timeout=60)
    assert job["id"] not in {j["id"] for j in jobs(f"hubgrid-{user}")}
    assert not os.path.exists(f"{SOCKETS}/{killed['id']}")  # its directory went with it
    assert eventually(lambda: answers(hub, token, "again"), timeout=60, interval=0.5)

    # scale down: one job left
    _ok(hub.call("PATCH", f"endpoints/{eid}", user, json={"replicas": 1}), 200)
    until_state(hub, user, eid, "running", 1)
    assert eventually(lambda: len(jobs(f"hubgrid-{user}")) == 1, timeout=60)
    assert answers(hub, token, "one left")

    # delete: no endpoint, job, allocation or socket left
    before = {a["id"] for a in allocations(hub, user)}
    r = hub.call("DELETE", f"endpoints/{eid}", user)
    assert r.status_code in (202, 204), r.text
    assert eventually(lambda: endpoint(hub, user, eid) is None, timeout=120), hub_log(hub)
    assert eventually(lambda: jobs(f"hubgrid-{user}") == [], timeout=60)
    assert replica_allocations(hub, user, eid) == []
    assert [a for a in allocations(hub, user) if a["state"] in ("pending", "allocated")] == []
    assert not [a for a in before if os.path.exists(f"{SOCKETS}/{a}")]
    listing = _ok_text(hub.call("GET", f"vfolders/{folder}/files", user))
    assert "model-definition.yaml" in listing and "probe" not in listing  # nothing written


def test_a_replica_whose_command_is_missing_fails_the_endpoint_with_its_reason(slurm_serving):
    hub, user, project, _ = slurm_serving
    folder = _ok(hub.call("POST", "vfolders", user, json={"name": "broken"}), 201)["id"]
    _ok(hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", user,
                 data=DEFINITION.replace("exec hubgrid-echo-chat", "exec no-such-server")
                 .encode()), 201)
    eid = _ok(hub.call("POST", "endpoints", user, json={
        "name": "broken", "project": project, "resource_group": "default", "image": IMAGE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "256M"}, "replicas": 1}), 201)["id"]
    try:
        failed = until_state(hub, user, eid, "failed", 0)
        # the job's own last word: the shell's, on the command it could not run
        assert failed["state_reason"].startswith(
            "a replica failed to start: the replica's job ended before its server answered: "
            "/bin/sh: 1: exec: no-such-server: "), failed
        assert eventually(lambda: jobs(f"hubgrid-{user}") == [], timeout=60)
        assert replica_allocations(hub, user, eid) == []
    finally:
        hub.call("DELETE", f"endpoints/{eid}", user)
        assert eventually(lambda: endpoint(hub, user, eid) is None, timeout=120)


def _ok_text(r) -> str:
    assert r.status_code == 200, r.text
    return r.text


def test_a_replica_that_swaps_its_socket_for_a_link_serves_nothing_of_the_node(
        slurm_serving, node_socket):  # noqa: F811
    """The replica's own uid, in its own socket directory (the one the job
    binds in, the same directory on the node): its socket becomes a link to
    a socket of the node. The gateway's haproxy and the hub connect to the
    pin only; the hub's poll cancels the job and the endpoint starts another."""
    hub, user, project, folder = slurm_serving
    eid = _ok(hub.call("POST", "endpoints", user, json={
        "name": "swap", "project": project, "resource_group": "default", "image": IMAGE,
        "model_folder": folder, "slots": {"cpu": "0.5", "mem": "256M"}, "replicas": 1}), 201)["id"]
    try:
        until_state(hub, user, eid, "running", 1)
        [a] = replica_allocations(hub, user, eid)
        own = f"{SOCKETS}/{a['id']}"
        pin = os.lstat(f"{PINS}/{a['id']}.sock")  # where haproxy and the hub connect
        assert (pin.st_ino, pin.st_uid) == (os.lstat(f"{own}/jupyter.sock").st_ino, 1000)
        token = _ok(hub.call("POST", f"endpoints/{eid}/tokens", user,
                             json={"expires_in_days": 1}), 201)["token"]
        health = f"{hub.url}{GATEWAY}e/{eid}/health"
        auth = {"Authorization": f"Bearer {token}"}
        assert eventually(lambda: requests.get(health, headers=auth, timeout=30).status_code
                          == 200, timeout=60, interval=0.5)
        subprocess.run(["setpriv", "--reuid", "1000", "--regid", "100", "--clear-groups",
                        "sh", "-c", f"ln -s {node_socket.path} {own}/x && "
                        f"mv -T {own}/x {own}/jupyter.sock"], check=True)
        for _ in range(3):
            r = requests.get(health, headers=auth, timeout=30)
            assert "node-api" not in r.text, r.text
        assert eventually(lambda: a["id"] not in {x["id"] for x in replica_allocations(
            hub, user, eid)}, timeout=90), "the hub kept a replica whose socket became a link"
        assert not os.path.lexists(f"{PINS}/{a['id']}.sock")
        assert node_socket.connections == 0
    finally:
        hub.call("DELETE", f"endpoints/{eid}", user)
        assert eventually(lambda: endpoint(hub, user, eid) is None, timeout=120)
