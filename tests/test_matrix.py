"""Every endpoint x every kind of caller, through the real hub and proxy.

Callers: anonymous; alice (user of acme, member of acme/ml); gina (user of
globex); ada (domain admin of acme); gus (domain admin of globex); admin
(superadmin); and a keypair of each of those. Targets live in acme. A
keypair acts exactly as its owner, so each expectation is checked for both
credentials.
"""

from __future__ import annotations

import itertools
import uuid
from urllib.parse import quote

import pytest

from hub_fixtures import hub, world  # noqa: F401

USERS = ("alice", "gina", "ada", "gus", "admin")
CALLERS = ("anonymous",) + USERS + tuple(f"keypair:{u}" for u in USERS)


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- setups: make a fresh target per call (as admin), return path parts -----

def tmp_domain(w):
    name = uniq("dom")
    assert w.hub.call("POST", "domains", "admin", json={"name": name}).status_code == 201
    return {"domain": name}


def tmp_project(w):
    name = uniq("prj")
    r = w.hub.call("POST", "domains/acme/projects", "admin", json={"name": name})
    assert r.status_code == 201
    return {"project": name}


def tmp_user(w):
    name = uniq("usr")
    r = w.hub.call("POST", "users", "admin", json={"name": name, "domain": "acme"})
    assert r.status_code == 201
    return {"user": name}


def tmp_member(w):
    parts = tmp_user(w)
    r = w.hub.call("PUT", f"domains/acme/projects/ml/members/{parts['user']}", "admin")
    assert r.status_code == 201
    return parts


def tmp_alice_key(w):
    r = w.hub.call("POST", "keypairs", "admin", json={"user": "alice"})
    assert r.status_code == 201
    return {"key": r.json()["access_key"]}


def alice_key(w):
    return {"key": w.keypairs["alice"].split()[1].split(":")[0]}


def nothing(w):
    return {}


def admin_is_the_last_superadmin(w):
    """The rows that try to take the last superadmin away: make sure it is."""
    users = w.hub.call("GET", "users", "admin").json()
    assert [u["name"] for u in users if u["role"] == "superadmin" and u["active"]] == ["admin"]
    return {}


def tmp_policy(w):
    name = uniq("pol")
    assert w.hub.call("POST", "resource-policies", "admin", json={"name": name}).status_code == 201
    return {"policy": name}


def tmp_group(w):
    name = uniq("rg")
    assert w.hub.call("POST", "resource-groups", "admin", json={"name": name}).status_code == 201
    r = w.hub.call("PUT", f"resource-groups/{name}/grants", "admin", json={"domain": "acme"})
    assert r.status_code == 201
    return {"group": name}


def tmp_node(w):
    name = uniq("node")
    r = w.hub.call("POST", "nodes", "admin", json={
        "name": name, "resource_group": "acme-gpu", "capacity": {"cpu": "1", "mem": "1G"},
        "schedulable": False})
    assert r.status_code == 201
    return {"node": name}


SESSION = {"project": "ml", "resource_group": "acme-gpu", "slots": {"cpu": "1", "mem": "1G"}}


def alice_allocation(w):
    r = w.hub.call("POST", "allocations", "alice", json=SESSION)
    assert r.status_code == 201, r.text
    return {"allocation": r.json()["id"]}


def alice_pending(w):
    """alice's request waiting in a fresh group (granted to acme) whose only
    node her first request fills."""
    group = tmp_group(w)["group"]
    r = w.hub.call("POST", "nodes", "admin", json={
        "name": uniq("node"), "resource_group": group, "capacity": {"cpu": "1", "mem": "1G"}})
    assert r.status_code == 201, r.text
    session = {**SESSION, "resource_group": group}
    assert w.hub.call("POST", "allocations", "alice", json=session).status_code == 201
    r = w.hub.call("POST", "allocations", "alice", json=session)
    assert r.status_code == 202, r.text
    return {"group": group, "allocation": r.json()["id"]}


def alice_keepable_allocation(w):
    """alice's allocation started with a keypair whose policy allows a keep."""
    pol = uniq("keep")
    r = w.hub.call("POST", "resource-policies", "admin",
                   json={"name": pol, "keep_extension": 600, "max_keeps": 100})
    assert r.status_code == 201, r.text
    r = w.hub.call("POST", "keypairs", "admin", json={"user": "alice", "resource_policy": pol})
    assert r.status_code == 201, r.text
    kp = r.json()
    r = w.hub.call("POST", "allocations", f"Keypair {kp['access_key']}:{kp['secret_key']}",
                   json=SESSION)
    assert r.status_code == 201, r.text
    return {"allocation": r.json()["id"]}


def tmp_image(w):
    """An image only acme may use, by its URL-encoded and its raw name."""
    name = f"matrix/{uniq('img')}:1"
    r = w.hub.call("POST", "images", "admin", json={"name": name, "domains": ["acme"]})
    assert r.status_code == 201, r.text
    return {"image": quote(name, safe=""), "raw_image": name}


def alice_folder(w):
    """A folder of alice's (the full vfolder matrix is in tests/test_vfolder_api.py)."""
    r = w.hub.call("POST", "vfolders", "alice", json={"name": uniq("data")})
    assert r.status_code == 201, r.text
    return {"folder": r.json()["id"]}


def alice_folder_with_a_file(w):
    """alice's folder holding f.txt (the files API's full matrix is in tests/test_files_api.py)."""
    parts = alice_folder(w)
    r = w.hub.call("PUT", f"vfolders/{parts['folder']}/upload?path=f.txt", "alice", data=b"hello")
    assert r.status_code == 201, r.text
    return parts


def alice_tus_upload(w):
    """A resumable upload alice started in her folder (5 bytes, none sent)."""
    parts = alice_folder(w)
    r = w.hub.call("POST", f"vfolders/{parts['folder']}/tus", "alice", headers={
        **TUS, "Upload-Length": "5", "Upload-Metadata": "path dC50eHQ="})  # "t.txt"
    assert r.status_code == 201, r.text
    return {**parts, "upload": r.headers["Location"].rstrip("/").rsplit("/", 1)[1]}


TUS = {"Tus-Resumable": "1.0.0"}


def alice_trashed_folder(w):
    parts = alice_folder(w)
    assert w.hub.call("DELETE", f"vfolders/{parts['folder']}", "alice").status_code == 204
    return parts


def alice_shared_folder(w):
    """alice's folder shared with ada (ro), and ada's accepted invitation."""
    parts = alice_folder(w)
    r = w.hub.call("POST", f"vfolders/{parts['folder']}/invitations", "alice",
                   json={"user": "ada", "permission": "ro"})
    assert r.status_code == 201, r.text
    return {**parts, "invitation": r.json()["id"]}


def alice_invites_ada(w):
    return alice_shared_folder(w)


def alice_shares_with_ada(w):
    parts = alice_shared_folder(w)
    r = w.hub.call("POST", f"invitations/{parts['invitation']}/accept", "ada")
    assert r.status_code == 200, r.text
    return parts


#: the model folder of the serving rows: per hub, and the one
#: ``serving_ready`` readied last (what ``endpoint_body`` names)
SERVING: dict[str, str] = {}
MODEL_DEFINITION = (b"models:\n  - name: m\n    model_path: /models\n    service:\n"
                    b"      start_command: [serve]\n      port: 8000\n")


def serving_ready(w):
    """An image every domain may use, and alice's model folder holding a
    definition (made once per world; the full endpoint tests are in
    tests/test_endpoints.py)."""
    folder = SERVING.get(w.hub.url)
    if folder is None:
        r = w.hub.call("POST", "images", "admin", json={
            "name": "matrix/inference:1", "labels": {"ai.hubgrid.inference-image": "1"}})
        assert r.status_code == 201, r.text
        folder = alice_folder(w)["folder"]
        r = w.hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", "alice",
                       data=MODEL_DEFINITION)
        assert r.status_code == 201, r.text
        SERVING[w.hub.url] = folder
    SERVING["folder"] = folder
    return {}


def endpoint_body():
    return {"name": uniq("ep"), "project": "ml", "resource_group": "acme-gpu",
            "image": "matrix/inference:1", "model_folder": SERVING["folder"],
            "slots": {"cpu": "1", "mem": "1G"}}


def alice_endpoint(w):
    serving_ready(w)
    r = w.hub.call("POST", "endpoints", "alice", json=endpoint_body())
    assert r.status_code == 201, r.text
    return {"endpoint": r.json()["id"]}


def mates_endpoint(w):
    """An endpoint of acme/ml made by ``mate``, a member of ml besides alice
    (not a caller): alice uses it but may not scale or delete it."""
    serving_ready(w)
    mate = SERVING.get(f"mate {w.hub.url}")
    if mate is None:
        mate = uniq("mate")
        r = w.hub.call("POST", "users", "admin", json={"name": mate, "domain": "acme"})
        assert r.status_code == 201, r.text
        r = w.hub.call("PUT", f"domains/acme/projects/ml/members/{mate}", "admin")
        assert r.status_code == 201, r.text
        folder = w.hub.call("POST", "vfolders", mate, json={"name": uniq("model")}).json()["id"]
        r = w.hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", mate,
                       data=MODEL_DEFINITION)
        assert r.status_code == 201, r.text
        SERVING[f"mate {w.hub.url}"] = mate
        SERVING[f"mate-folder {w.hub.url}"] = folder
    r = w.hub.call("POST", "endpoints", mate, json={
        **endpoint_body(), "model_folder": SERVING[f"mate-folder {w.hub.url}"]})
    assert r.status_code == 201, r.text
    return {"endpoint": r.json()["id"]}


def alice_endpoint_token(w):
    parts = alice_endpoint(w)
    r = w.hub.call("POST", f"endpoints/{parts['endpoint']}/tokens", "alice",
                   json={"expires_in_days": 1})
    assert r.status_code == 201, r.text
    return {**parts, "token": r.json()["id"]}


def alice_chat(w):
    """A conversation of alice's: hers alone, whatever the caller's role."""
    r = w.hub.call("POST", "chats", "alice", json={
        "title": "mine", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 201, r.text
    return {"chat": r.json()["id"]}


def store_folder(w):
    """A fresh folder of alice's holding a definition, for the Model Store
    rows (``SERVING["store-folder"]``: what ``store_publish_body`` names)."""
    serving_ready(w)
    folder = alice_folder(w)["folder"]
    r = w.hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", "alice",
                   data=MODEL_DEFINITION)
    assert r.status_code == 201, r.text
    SERVING["store-folder"] = folder
    return {}


def store_publish_body():
    return {"folder": SERVING["store-folder"], "image": "matrix/inference:1",
            "domain": "acme", "slots": {"cpu": "1", "mem": "1G"}}


def acme_store_model(w):
    """alice's folder published to acme by the superadmin (the full Model
    Store tests are in tests/test_model_store.py)."""
    store_folder(w)
    r = w.hub.call("POST", "model-store", "admin", json=store_publish_body())
    assert r.status_code == 201, r.text
    return {"model": r.json()["id"]}


def shared_store_model(w):
    """One entry of ``acme_store_model``'s per hub, for the rows that leave
    it in place (read, rename, check, deploy)."""
    key = f"store-model {w.hub.url}"
    if key not in SERVING:
        SERVING[key] = acme_store_model(w)["model"]
    return {"model": SERVING[key]}


def store_deploy_body():
    return {"project": "ml", "resource_group": "acme-gpu", "name": uniq("ep")}


A, G, DA, DG, SA = "alice", "gina", "ada", "gus", "admin"


def expect(default: int, **by_user: int) -> dict[str, int]:
    return {u: by_user.get(u, default) for u in USERS}


# (id, method, path template, body, setup, expected status per user)
CASES = [
    ("me", "GET", "me", None, nothing, expect(200)),
    ("list-domains", "GET", "domains", None, nothing, expect(200)),
    ("create-domain", "POST", "domains", lambda: {"name": uniq("d")}, nothing,
     expect(403, admin=201)),
    ("get-domain", "GET", "domains/acme", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-domain", "PATCH", "domains/acme", {"description": "ACME"}, nothing,
     expect(404, alice=403, ada=403, admin=200)),
    ("delete-domain", "DELETE", "domains/{domain}", None, tmp_domain,
     expect(404, admin=204)),
    ("list-projects", "GET", "projects", None, nothing, expect(200)),
    ("list-domain-projects", "GET", "domains/acme/projects", None, nothing, expect(200)),
    ("create-project", "POST", "domains/acme/projects", lambda: {"name": uniq("p")}, nothing,
     expect(404, alice=403, ada=201, admin=201)),
    ("get-project", "GET", "domains/acme/projects/ml", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-project", "PATCH", "domains/acme/projects/ml", {"description": "ML"}, nothing,
     expect(404, alice=403, ada=200, admin=200)),
    ("delete-project", "DELETE", "domains/acme/projects/{project}", None, tmp_project,
     expect(404, ada=204, admin=204)),
    ("list-members", "GET", "domains/acme/projects/ml/members", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("add-member", "PUT", "domains/acme/projects/ml/members/{user}", None, tmp_user,
     expect(404, alice=403, ada=201, admin=201)),
    ("remove-member", "DELETE", "domains/acme/projects/ml/members/{user}", None, tmp_member,
     expect(404, alice=403, ada=204, admin=204)),
    ("list-users", "GET", "users", None, nothing, expect(403, ada=200, gus=200, admin=200)),
    ("create-user", "POST", "users", lambda: {"name": uniq("u"), "domain": "acme"}, nothing,
     expect(404, alice=403, ada=201, admin=201)),
    ("get-user", "GET", "users/alice", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-user", "PATCH", "users/{user}", {"active": False}, tmp_user,
     expect(404, ada=200, admin=200)),
    ("demote-last-superadmin", "PATCH", "users/admin", {"role": "user"},
     admin_is_the_last_superadmin, expect(404, admin=409)),
    ("deactivate-last-superadmin", "PATCH", "users/admin", {"active": False},
     admin_is_the_last_superadmin, expect(404, admin=409)),
    ("delete-user", "DELETE", "users/{user}", None, tmp_user,
     expect(404, ada=204, admin=204)),
    ("list-keypairs", "GET", "keypairs", None, nothing, expect(200)),
    ("create-keypair", "POST", "keypairs", {}, nothing, expect(201)),
    ("get-keypair", "GET", "keypairs/{key}", None, alice_key,
     expect(404, alice=200, ada=200, admin=200)),
    ("deactivate-keypair", "PATCH", "keypairs/{key}", {"active": False}, tmp_alice_key,
     expect(404, alice=200, ada=200, admin=200)),
    ("reactivate-keypair", "PATCH", "keypairs/{key}", {"active": True}, tmp_alice_key,
     expect(404, alice=403, ada=200, admin=200)),
    ("delete-keypair", "DELETE", "keypairs/{key}", None, tmp_alice_key,
     expect(404, alice=204, ada=204, admin=204)),
    ("read-audit", "GET", "audit", None, nothing, expect(403, ada=200, gus=200, admin=200)),
    # the admin pages (tests/test_admin_*.py check what each sees)
    ("export-audit-csv", "GET", "audit?format=csv&action=user.create", None, nothing,
     expect(403, ada=200, gus=200, admin=200)),
    ("search-users", "GET", "users?q=a&role=user&active=true", None, nothing,
     expect(403, ada=200, gus=200, admin=200)),
    # gus's row names acme: refused in the report, the request itself answers 200
    ("bulk-add-users", "POST", "users/bulk",
     lambda: {"users": [{"name": uniq("bulk"), "domain": "acme"}]}, nothing,
     expect(403, ada=200, gus=200, admin=200)),
    ("read-queue", "GET", "resource-groups/acme-gpu/queue", None, nothing,
     expect(404, alice=403, ada=200, admin=200)),
    ("change-queued", "PATCH", "resource-groups/{group}/queue/{allocation}",
     {"priority": 5, "position": 0}, alice_pending, expect(404, alice=403, ada=200, admin=200)),
    ("cancel-queued", "DELETE", "resource-groups/{group}/queue/{allocation}", None,
     alice_pending, expect(404, alice=403, ada=204, admin=204)),
    ("node-sessions", "GET", "nodes/acme-node/sessions", None, nothing,
     expect(404, alice=403, ada=200, admin=200)),
    ("nodes-sessions", "GET", "node-sessions?names=acme-node", None, nothing,
     expect(404, alice=403, ada=200, admin=200)),
    ("domain-totals", "GET", "domains/acme/totals", None, nothing,
     expect(404, alice=403, ada=200, admin=200)),
    ("list-policies", "GET", "resource-policies", None, nothing, expect(200)),
    ("create-policy", "POST", "resource-policies", lambda: {"name": uniq("p")}, nothing,
     expect(403, admin=201)),
    ("get-policy", "GET", "resource-policies/default", None, nothing, expect(200)),
    ("update-policy", "PATCH", "resource-policies/{policy}", {"max_concurrent_sessions": 3},
     tmp_policy, expect(404, ada=403, gus=403, admin=200)),
    ("clear-policy-limit", "PATCH", "resource-policies/{policy}",
     {"clear": ["max_concurrent_sessions"]}, tmp_policy, expect(404, ada=403, gus=403, admin=200)),
    ("delete-policy", "DELETE", "resource-policies/{policy}", None, tmp_policy,
     expect(404, ada=403, gus=403, admin=204)),
    ("list-presets", "GET", "resource-presets", None, nothing, expect(200)),
    ("list-groups", "GET", "resource-groups", None, nothing, expect(200)),
    ("create-group", "POST", "resource-groups", lambda: {"name": uniq("g")}, nothing,
     expect(403, admin=201)),
    ("get-group", "GET", "resource-groups/acme-gpu", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-group", "PATCH", "resource-groups/acme-gpu", {"description": "A"}, nothing,
     expect(404, alice=403, ada=403, admin=200)),
    ("delete-group", "DELETE", "resource-groups/{group}", None, tmp_group,
     expect(404, alice=403, ada=403, admin=204)),
    ("grant-group", "PUT", "resource-groups/{group}/grants", {"user": "alice"}, tmp_group,
     expect(404, alice=403, ada=403, admin=201)),
    ("revoke-group", "DELETE", "resource-groups/{group}/grants", {"domain": "acme"}, tmp_group,
     expect(404, alice=403, ada=403, admin=204)),
    ("list-nodes", "GET", "nodes", None, nothing, expect(200)),
    ("create-node", "POST", "nodes", lambda: {"name": uniq("n"), "resource_group": "acme-gpu",
                                              "capacity": {"cpu": "1"}}, nothing,
     expect(403, admin=201)),
    ("get-node", "GET", "nodes/acme-node", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-node", "PATCH", "nodes/{node}", {"backend_url": "tcp://127.0.0.1:1"}, tmp_node,
     expect(404, alice=403, ada=403, admin=200)),
    ("delete-node", "DELETE", "nodes/{node}", None, tmp_node,
     expect(404, alice=403, ada=403, admin=204)),
    ("create-allocation", "POST", "allocations", SESSION, nothing, expect(404, alice=201)),
    ("dry-run-allocation", "POST", "allocations/dry-run", SESSION, nothing, expect(404, alice=200)),
    ("list-allocations", "GET", "allocations", None, nothing, expect(200)),
    ("get-allocation", "GET", "allocations/{allocation}", None, alice_allocation,
     expect(404, alice=200, ada=200, admin=200)),
    ("release-allocation", "DELETE", "allocations/{allocation}", None, alice_allocation,
     expect(404, alice=204, ada=204, admin=204)),
    ("read-allocation-log", "GET", "allocations/{allocation}/logs", None, alice_allocation,
     expect(404, alice=200, ada=200, admin=200)),
    ("stop-allocation", "POST", "allocations/{allocation}/stop", None, alice_allocation,
     expect(404, alice=200, ada=200, admin=200)),
    # a session's own face: whoever may see the session
    ("allocation-history", "GET", "allocations/{allocation}/history", None, alice_allocation,
     expect(404, alice=200, ada=200, admin=200)),
    ("allocation-usage", "GET", "allocations/{allocation}/usage", None, alice_allocation,
     expect(404, alice=200, ada=200, admin=200)),
    # folders mounted into a running session: whoever sees it reads them; its
    # owner alone mounts one (this session's spawner never said it can: 409)
    ("allocation-mounts", "GET", "allocations/{allocation}/mounts", None, alice_allocation,
     expect(404, alice=200, ada=200, admin=200)),
    ("mount-now", "POST", "allocations/{allocation}/mounts", {"folder": "data"},
     alice_allocation, expect(404, alice=409, ada=403, admin=403)),
    # idle reclamation: a session's own report and "keep it" are its owner's only
    ("report-activity", "POST", "allocations/{allocation}/activity",
     {"kernels": 1, "busy_kernels": 1}, alice_allocation,
     expect(404, alice=200, ada=403, admin=403)),
    ("keep-allocation", "POST", "allocations/{allocation}/keep", None,
     alice_keepable_allocation, expect(404, alice=200, ada=403, admin=403)),
    ("list-reclaim-events", "GET", "reclaim/events?kind=reclaimed", None, nothing, expect(200)),
    # usage: everyone reads what they may see (tests/test_usage_api.py checks the rows)
    ("read-usage", "GET", "usage?start=2026-01-01&end=2026-02-01", None, nothing, expect(200)),
    ("read-usage-csv", "GET", "usage?by=project&series=daily&format=csv", None, nothing,
     expect(200)),
    ("read-usage-of-a-user", "GET", "usage?user=alice", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("read-usage-of-a-domain", "GET", "usage?domain=acme&by=domain", None, nothing,
     expect(404, alice=200, ada=200, admin=200)),
    ("read-usage-backwards", "GET", "usage?start=2026-02-01&end=2026-01-01", None, nothing,
     expect(400)),
    ("list-images", "GET", "images", None, nothing, expect(200)),
    ("create-image", "POST", "images", lambda: {"name": f"matrix/{uniq('i')}:1"}, nothing,
     expect(403, admin=201)),
    ("get-image", "GET", "images/{image}", None, tmp_image,
     expect(404, alice=200, ada=200, admin=200)),
    ("get-image-by-raw-path", "GET", "images/{raw_image}", None, tmp_image,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-image", "PATCH", "images/{image}", {"domains": []}, tmp_image,
     expect(404, alice=403, ada=403, admin=200)),
    ("delete-image", "DELETE", "images/{raw_image}", None, tmp_image,
     expect(404, alice=403, ada=403, admin=204)),
    ("scan-images", "POST", "images/scan", {}, nothing, expect(403, admin=200)),
    # reconcile: a dry run reads; a repair of an empty list repairs nothing (a
    # full repair would act on real sessions, which this module never starts)
    ("reconcile-dry-run", "GET", "reconcile", None, nothing, expect(403, admin=200)),
    ("reconcile-repair", "POST", "reconcile", {"differences": []}, nothing,
     expect(403, admin=200)),
    ("list-vfolder-hosts", "GET", "vfolder-hosts", None, nothing, expect(200)),
    ("list-vfolders", "GET", "vfolders", None, nothing, expect(200)),
    ("create-vfolder", "POST", "vfolders", lambda: {"name": uniq("v")}, nothing, expect(201)),
    ("create-spoofing-vfolder", "POST", "vfolders", {"name": "\u202egnp.txt"}, nothing,
     expect(422)),
    ("get-vfolder", "GET", "vfolders/{folder}", None, alice_folder,
     expect(404, alice=200, ada=200, admin=200)),
    ("rename-vfolder", "PATCH", "vfolders/{folder}", lambda: {"name": uniq("r")}, alice_folder,
     expect(404, alice=200, ada=200, admin=200)),
    ("trash-vfolder", "DELETE", "vfolders/{folder}", None, alice_folder,
     expect(404, alice=204, ada=204, admin=204)),
    ("restore-vfolder", "POST", "vfolders/{folder}/restore", None, alice_trashed_folder,
     expect(404, alice=200, ada=200, admin=200)),
    ("purge-vfolder", "POST", "vfolders/{folder}/purge", None, alice_trashed_folder,
     expect(404, alice=204, ada=204, admin=204)),
    ("invite-to-vfolder", "POST", "vfolders/{folder}/invitations",
     {"user": "ada", "permission": "ro"}, alice_folder,
     expect(404, alice=201, ada=422, admin=201)),
    ("list-vfolder-shares", "GET", "vfolders/{folder}/shares", None, alice_folder,
     expect(404, alice=200, ada=200, admin=200)),
    ("revoke-vfolder-share", "DELETE", "vfolders/{folder}/shares/ada", None,
     alice_shares_with_ada, expect(404, alice=204, ada=204, admin=204)),
    ("list-invitations", "GET", "invitations", None, nothing, expect(200)),
    ("accept-invitation", "POST", "invitations/{invitation}/accept", None, alice_invites_ada,
     expect(404, alice=403, ada=200, admin=403)),
    ("reject-invitation", "POST", "invitations/{invitation}/reject", None, alice_invites_ada,
     expect(404, alice=403, ada=200, admin=403)),
    ("cancel-invitation", "DELETE", "invitations/{invitation}", None, alice_invites_ada,
     expect(404, alice=204, ada=204, admin=204)),
    ("list-vfolder-files", "GET", "vfolders/{folder}/files", None, alice_folder_with_a_file,
     expect(404, alice=200, ada=200, admin=200)),
    ("download-vfolder-file", "GET", "vfolders/{folder}/download?path=f.txt", None,
     alice_folder_with_a_file, expect(404, alice=200, ada=200, admin=200)),
    ("upload-vfolder-file", "PUT", "vfolders/{folder}/upload?path=new.txt", {"x": 1},
     alice_folder, expect(404, alice=201, ada=201, admin=201)),
    ("mkdir-in-vfolder", "POST", "vfolders/{folder}/mkdir", {"path": "d"}, alice_folder,
     expect(404, alice=201, ada=201, admin=201)),
    ("move-in-vfolder", "POST", "vfolders/{folder}/move", {"src": "f.txt", "dst": "g.txt"},
     alice_folder_with_a_file, expect(404, alice=200, ada=200, admin=200)),
    ("delete-vfolder-file", "DELETE", "vfolders/{folder}/files?path=f.txt", None,
     alice_folder_with_a_file, expect(404, alice=204, ada=204, admin=204)),
    ("tus-discovery", "OPTIONS", "vfolders/{folder}/tus", None, alice_folder, expect(204)),
    ("tus-create", "POST", "vfolders/{folder}/tus", None, alice_folder,
     expect(404, alice=201, ada=201, admin=201),
     {**TUS, "Upload-Length": "3", "Upload-Metadata": "path dS50eHQ="}),
    # an upload is its creator's: nobody else may see or resume it
    ("tus-offset", "HEAD", "vfolders/{folder}/tus/{upload}", None, alice_tus_upload,
     expect(404, alice=200), TUS),
    ("tus-append", "PATCH", "vfolders/{folder}/tus/{upload}", None, alice_tus_upload,
     expect(404, alice=204),
     {**TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"}),
    ("tus-terminate", "DELETE", "vfolders/{folder}/tus/{upload}", None, alice_tus_upload,
     expect(404, alice=204), TUS),
    # model serving: members create; members and admins of the
    # domain see and give tokens; its creator and admins change and delete
    # it; public is for admins
    ("list-endpoints", "GET", "endpoints", None, nothing, expect(200)),
    ("validate-endpoint", "POST", "endpoints/validate", endpoint_body, serving_ready,
     expect(404, alice=200, ada=403)),
    ("create-endpoint", "POST", "endpoints", endpoint_body, serving_ready,
     expect(404, alice=201, ada=403)),
    ("get-endpoint", "GET", "endpoints/{endpoint}", None, alice_endpoint,
     expect(404, alice=200, ada=200, admin=200)),
    ("scale-endpoint", "PATCH", "endpoints/{endpoint}", {"replicas": 2}, alice_endpoint,
     expect(404, alice=200, ada=200, admin=200)),
    ("make-endpoint-public", "PATCH", "endpoints/{endpoint}", {"public": True}, alice_endpoint,
     expect(404, alice=403, ada=200, admin=200)),
    ("delete-endpoint", "DELETE", "endpoints/{endpoint}", None, alice_endpoint,
     expect(404, alice=204, ada=204, admin=204)),
    # another member's endpoint: alice uses it (tokens), its creator and admins change it
    ("scale-members-endpoint", "PATCH", "endpoints/{endpoint}", {"replicas": 2},
     mates_endpoint, expect(404, alice=403, ada=200, admin=200)),
    ("delete-members-endpoint", "DELETE", "endpoints/{endpoint}", None, mates_endpoint,
     expect(404, alice=403, ada=204, admin=204)),
    ("create-members-endpoint-token", "POST", "endpoints/{endpoint}/tokens",
     {"expires_in_days": 1}, mates_endpoint, expect(404, alice=201, ada=201, admin=201)),
    ("list-endpoint-tokens", "GET", "endpoints/{endpoint}/tokens", None, alice_endpoint,
     expect(404, alice=200, ada=200, admin=200)),
    ("create-endpoint-token", "POST", "endpoints/{endpoint}/tokens", {"expires_in_days": 1},
     alice_endpoint, expect(404, alice=201, ada=201, admin=201)),
    ("revoke-endpoint-token", "DELETE", "endpoints/{endpoint}/tokens/{token}", None,
     alice_endpoint_token, expect(404, alice=204, ada=204, admin=204)),
    # chat history: each user's own; another's conversation is 404 to everyone
    ("list-chats", "GET", "chats", None, nothing, expect(200)),
    ("create-chat", "POST", "chats", {"title": "t"}, nothing, expect(201)),
    ("get-chat", "GET", "chats/{chat}", None, alice_chat, expect(404, alice=200)),
    ("rename-chat", "PATCH", "chats/{chat}", {"title": "new"}, alice_chat,
     expect(404, alice=200)),
    ("delete-chat", "DELETE", "chats/{chat}", None, alice_chat, expect(404, alice=204)),
    ("append-to-chat", "POST", "chats/{chat}/messages",
     {"messages": [{"role": "assistant", "content": "hello"}]}, alice_chat,
     expect(404, alice=200)),
    # the Model Store: admins of the scope publish, change and
    # unpublish; who sees an entry checks and deploys it into a project of theirs
    ("list-store-models", "GET", "model-store", None, nothing, expect(200)),
    ("publish-store-model", "POST", "model-store", store_publish_body, store_folder,
     expect(403, ada=201, admin=201)),
    ("get-store-model", "GET", "model-store/{model}", None, shared_store_model,
     expect(404, alice=200, ada=200, admin=200)),
    ("update-store-model", "PATCH", "model-store/{model}", {"name": "renamed"},
     shared_store_model, expect(404, alice=403, ada=200, admin=200)),
    ("unpublish-store-model", "DELETE", "model-store/{model}", None, acme_store_model,
     expect(404, alice=403, ada=204, admin=204)),
    ("check-store-model", "POST", "model-store/{model}/check", store_deploy_body,
     shared_store_model, expect(404, alice=200, ada=403)),
    ("deploy-store-model", "POST", "model-store/{model}/deploy", store_deploy_body,
     shared_store_model, expect(404, alice=201, ada=403)),
    ("openapi", "GET", "openapi.json", None, nothing, expect(200)),
    # Prometheus: superadmins (and hub tokens with read:metrics, tests/test_metrics.py)
    ("metrics", "GET", "metrics", None, nothing, expect(403, admin=200)),
    # a verb tornado never serves: 405 (with Allow) before anybody is asked who they are
    ("trace-domains", "TRACE", "domains", None, nothing, expect(405)),
    ("internal-login", "POST", "internal/login",
     {"username": "alice", "success": True}, nothing, expect(401)),
    ("internal-identity", "GET", "internal/identity/alice", None, nothing, expect(401)),
    ("internal-sync", "POST", "internal/sync", {}, nothing, expect(401)),
    ("internal-spawn-choices", "GET", "internal/spawn-choices/alice", None, nothing,
     expect(401)),
    ("internal-allocate", "POST", "internal/allocations", {**SESSION, "user": "alice"}, nothing,
     expect(401)),
    ("internal-get-allocation", "GET", "internal/allocations/{allocation}", None,
     alice_allocation, expect(401)),
    ("internal-release", "DELETE", "internal/allocations/{allocation}?exit_code=0", None,
     alice_allocation, expect(401)),
    ("internal-append-log", "POST", "internal/allocations/{allocation}/logs", None,
     alice_allocation, expect(401)),
    ("internal-allocation-mounts", "GET", "internal/allocations/{allocation}/mounts", None,
     alice_allocation, expect(401)),
    ("internal-live-mounts-on", "PUT", "internal/allocations/{allocation}/mounts",
     {"live_mounts": True}, alice_allocation, expect(401)),
    # the serving gateway's: its route table (tokens' hashes) and its reports
    ("internal-serving-routes", "GET", "internal/serving/routes", None, nothing, expect(401)),
    ("internal-serving-report", "POST", "internal/serving/report",
     {"replicas": [], "calls": []}, nothing, expect(401)),
    ("internal-serving-wake", "POST", "internal/serving/wake", {"endpoint": "0" * 32}, nothing,
     expect(401)),
]

PUBLIC = {"openapi": 200, "tus-discovery": 204, "trace-domains": 405}


def _auth(world, caller):
    if caller == "anonymous":
        return None
    if caller.startswith("keypair:"):
        return world.keypairs[caller.split(":", 1)[1]]
    return caller


@pytest.mark.parametrize(
    "case,caller",
    list(itertools.product(CASES, CALLERS)),
    ids=[f"{c[0]}-{who}" for c, who in itertools.product(CASES, CALLERS)],
)
def test_endpoint_answers_each_caller_as_the_rules_say(world, case, caller):  # noqa: F811
    _id, method, template, body, setup, expected, *headers = case
    path = template.format(**setup(world))
    if callable(body):
        body = body()
    owner = caller.split(":", 1)[-1]
    want = expected[owner] if caller != "anonymous" else PUBLIC.get(_id, 401)
    r = world.hub.call(method, path, _auth(world, caller), json=body,
                       headers=dict(headers[0]) if headers else {})
    assert r.status_code == want, f"{method} {path} as {caller}: {r.status_code} {r.text[:300]}"
    if r.status_code >= 400 and method != "HEAD":  # a HEAD answer has no body
        err = r.json()
        assert err["status"] == want and err["message"], err


def test_listings_show_only_what_the_caller_may_see(world):  # noqa: F811
    hub = world.hub
    assert [d["name"] for d in hub.call("GET", "domains", "gina").json()] == ["globex"]
    assert {d["name"] for d in hub.call("GET", "domains", "admin").json()} >= {"acme", "globex", "default"}
    assert [p["name"] for p in hub.call("GET", "projects", "alice").json()] == ["ml"]
    assert hub.call("GET", "domains/acme/projects", "gina").json() == []
    ada_users = {u["domain"] for u in hub.call("GET", "users", "ada").json()}
    assert ada_users == {"acme"}
    assert hub.call("GET", "users?domain=globex", "ada").status_code == 404
    gus_log = hub.call("GET", "audit?limit=500", "gus").json()["entries"]
    assert gus_log and all(e["domain"] == "globex" for e in gus_log)


def test_a_superadmins_work_in_a_domain_reaches_only_that_domains_admins(world):  # noqa: F811
    """admin (superadmin of default) acts in acme: a domain admin of default
    reads none of it, keypair access keys included; acme's admin reads it all."""
    hub = world.hub
    dora = uniq("dora")
    r = hub.call("POST", "users", "admin", json={"name": dora, "domain": "default",
                                                 "role": "domain-admin"})
    assert r.status_code == 201, r.text
    newbie = uniq("newbie")
    assert hub.call("POST", "users", "admin", json={"name": newbie, "domain": "acme"}
                    ).status_code == 201
    key = hub.call("POST", "keypairs", "admin", json={"user": newbie}).json()["access_key"]
    folder = hub.call("POST", "vfolders", "admin", json={"name": uniq("f"), "project": "acme/ml"})
    assert folder.status_code == 201, folder.text

    def log(reader):
        return hub.call("GET", "audit?user=admin&limit=500", reader).json()["entries"]

    assert eventually_has(lambda: [e for e in log("ada") if key in e["target"]])
    dora_log = log(dora)
    assert all(e["domain"] == "default" for e in dora_log)
    assert not any(key in e["target"] or newbie in e["target"] for e in dora_log)


def eventually_has(check, timeout=15.0):
    import session_fixtures

    return session_fixtures.eventually(check, timeout, 0.2)


def test_denials_are_in_the_access_log(world):  # noqa: F811
    hub = world.hub
    assert hub.call("GET", "domains/acme", "gina").status_code == 404
    assert hub.call("POST", "domains", "ada", json={"name": uniq("x")}).status_code == 403
    log = hub.call("GET", "audit?user=gina&outcome=denied", "admin").json()["entries"]
    assert any(e["target"] == "acme" and e["status"] == 404 for e in log)
    log = hub.call("GET", "audit?user=ada&action=domain.create", "admin").json()["entries"]
    assert log and log[0]["outcome"] == "denied" and log[0]["source"] == "127.0.0.1"


def test_every_documented_operation_has_a_case_in_the_matrix():
    """A new endpoint cannot be served without being checked above."""
    import re
    from collections import defaultdict

    from quota_service.api.openapi import document

    cases = [(method, template.format_map(defaultdict(lambda: "x")).split("?")[0])
             for _id, method, template, *_ in CASES]
    missing = []
    for path, item in document("/", "cookie").get("paths").items():
        pattern = "[^?]+".join(map(re.escape, re.split(r"\{[a-z_-]+\}", path.lstrip("/"))))
        for verb in item:
            if not any(m == verb.upper() and re.fullmatch(pattern, p) for m, p in cases):
                missing.append(f"{verb.upper()} {path}")
    assert missing == []
