"""A Model Store deploy on the real hub, proxy and Docker engine:
the superadmin publishes a model folder of their own (the echo-chat
stand-in) to acme; bob, who cannot read that folder, checks and deploys
it in one call into acme/ml on the shared inference group; its replica
serves with the published folder read-only at /models (no copy made), and
bob still cannot list, read or download the folder. Unpublishing waits
for the endpoint to go. The shared Docker hub and group
(tests/serving_fixtures.py: ``serving``).
"""

from __future__ import annotations

import uuid

import httpx

from hub_fixtures import _ok
from serving_fixtures import INFERENCE, model_folder
from session_fixtures import eventually
from test_replicas_docker import SOCKETS, endpoint, replica_allocations, until_state


def test_bob_deploys_a_published_model_he_cannot_otherwise_read(serving):
    hub, dock = serving.hub, serving.dock
    name = f"store-echo-{uuid.uuid4().hex[:6]}"
    folder = model_folder(hub, "admin", name, "echo-chat", {})
    folders_before = {f["id"] for f in _ok(hub.call("GET", "vfolders", "admin"), 200)}
    assert hub.call("GET", f"vfolders/{folder}", "bob").status_code == 404
    entry = _ok(hub.call("POST", "model-store", "admin", json={
        "folder": folder, "image": INFERENCE, "domain": "acme", "name": name}), 201)
    assert entry["card"]["title"] == "Echo chat (stand-in)"
    assert entry["id"] in {x["id"] for x in _ok(hub.call("GET", "model-store", "bob"), 200)}

    body = {"project": "ml", "resource_group": "serve", "name": name}
    check = _ok(hub.call("POST", f"model-store/{entry['id']}/check", "bob", json=body), 200)
    assert check["ok"] is True, check
    e = _ok(hub.call("POST", f"model-store/{entry['id']}/deploy", "bob", json=body), 201)
    eid = e["id"]
    try:
        assert e["store_model"] == entry["id"] and e["model_folder"]["id"] == folder
        until_state(hub, eid, "running", 1)
        [a] = replica_allocations(hub, eid)
        assert a["mounts"] == [{"folder": folder, "name": name, "mode": "ro"}]

        # the stand-in answers on the replica's socket
        with httpx.Client(transport=httpx.HTTPTransport(uds=f"{SOCKETS}/{a['id']}/jupyter.sock"),
                          base_url="http://replica", timeout=30) as h:
            r = h.post("/v1/chat/completions", json={
                "model": "echo-chat", "messages": [{"role": "user", "content": "hello store"}]})
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "echo: hello store"

        # /models is the published folder itself, read-only
        url, c = dock.container(a["id"])
        cl = dock.engines[url]
        info = cl.inspect_container(c["Id"])
        (models,) = [m for m in info["Mounts"] if m["Destination"] == "/models"]
        assert models["RW"] is False and folder in models["Source"]
        ex = cl.exec_create(c["Id"], ["sh", "-c", "touch /models/x"])
        out = cl.exec_start(ex["Id"]).decode()
        assert cl.exec_inspect(ex["Id"])["ExitCode"] != 0 and "Read-only" in out, out

        # no clone, and bob still has no access of his own
        assert {f["id"] for f in _ok(hub.call("GET", "vfolders", "admin"), 200)} \
            == folders_before
        assert folder not in {f["id"] for f in _ok(hub.call("GET", "vfolders", "bob"), 200)}
        for path in (f"vfolders/{folder}", f"vfolders/{folder}/files",
                     f"vfolders/{folder}/download?path=model-definition.yaml"):
            assert hub.call("GET", path, "bob").status_code == 404, path

        r = hub.call("DELETE", f"model-store/{entry['id']}", "admin")
        assert r.status_code == 409 and f"acme/ml/{name}" in r.json()["message"], r.text
    finally:
        hub.call("DELETE", f"endpoints/{eid}", "bob")
        assert eventually(lambda: endpoint(hub, eid) is None, timeout=120, interval=0.3)
    assert hub.call("DELETE", f"model-store/{entry['id']}", "admin").status_code == 204
