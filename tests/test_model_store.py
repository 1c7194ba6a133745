"""The Model Store over HTTP, through the service's real app
(tests/service_app.py) on SQLite and PostgreSQL: publishing a model folder
(who may, to which scope, every problem that refuses it), the cards each
caller sees, changing and unpublishing an entry, the check and the deploy
of an entry as an endpoint over the published folder (no clone, no other
access to the folder), the replicas' reach of the folder, the access log;
and the card's rules (``serving.storecard``) with plain data.

The world (tests/conftest.py): alice is a member of acme/ml, bob of no
project, ada the domain admin of acme, root a superadmin (of acme, in no
project), gus the domain admin of globex, gina a user of globex/lab.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
import sqlalchemy as sa

from quota_service.core.foldermodels import VFolder
from quota_service.core.models import ResourcePolicy
from quota_service.core.servingmodels import Endpoint
from quota_service.core.storemodels import StoreDeployment, StoreModel
from quota_service.serving import modeldef, store, storecard
from service_app import served  # noqa: F401
from serving_world import CHAT, IMAGE, INFERENCE_LABEL, ServingEnv, infer_world, uniq

BARE = (b"models:\n  - name: bare\n    model_path: /models\n    service:\n"
        b"      start_command: [serve]\n      port: 8000\n")


class Env(ServingEnv):
    """The served service with a resource group ``infer`` granted to acme,
    the inference image (every domain), a Jupyter image, globex's own
    inference image, and ada's model folder holding the echo-chat
    definition (alice and bob cannot read it)."""

    async def publish(self, user="root", status=201, **changes):
        body = {"folder": self.folder, "image": IMAGE} | changes
        return await self.ok("POST", "model-store", user, status, body)

    def deploy_body(self, **changes) -> dict:
        return {"project": "ml", "resource_group": "infer", "name": uniq("ep")} | changes


@pytest.fixture
async def env(served):  # noqa: F811
    e = Env(served)
    await infer_world(e, images=({"name": "hubgrid/base:latest"},
                                 {"name": "globex/infer:1", "domains": ["globex"],
                                  "labels": INFERENCE_LABEL}))
    e.folder = await e.folder_with("ada", CHAT)
    return e


# -- publish ----------------------------------------------------------------------

async def test_a_superadmin_publishes_to_every_domain_with_the_card_and_slots_of_the_metadata(env):
    entry = await env.publish("root")
    assert entry["domain"] is None and entry["image"] == IMAGE
    assert entry["published_by"] == "root" and entry["published_at"]
    # min_resource: cpu 0.5, mem 256M
    assert entry["slots"] == {"cpu": "0.5", "mem": str(256 * 2**20)}
    card = entry["card"]
    assert card["title"] == "Echo chat (stand-in)" and card["model"] == "echo-chat"
    assert card["task"] == "text-generation" and card["license"] == "BSD-3-Clause"
    assert card["label"] == ["chat", "stand-in", "cpu"] and card["framework"] == ["python"]
    assert card["version"] == "1.0" and card["min_resource"] == {"cpu": "0.5", "mem": "256M"}
    assert entry["folder"]["id"] == env.folder and entry["folder"]["available"] is True
    # gina of globex sees an entry of every domain
    assert [x["id"] for x in await env.ok("GET", "model-store", "gina", 200)] == [entry["id"]]
    got = await env.ok("GET", f"model-store/{entry['id']}", "gina", 200)
    assert got["card"] == card and got["can_manage"] is False
    assert (await env.ok("GET", f"model-store/{entry['id']}", "root", 200))["can_manage"]


async def test_a_domain_admin_publishes_to_their_domain_seen_only_there(env):
    entry = await env.publish("ada", domain="acme", slots={"cpu": "1", "mem": "1G"},
                              name="echo")
    assert entry["domain"] == "acme" and entry["name"] == "echo"
    assert entry["slots"] == {"cpu": "1", "mem": str(2**30)}  # given slots win
    for user in ("alice", "bob", "ada", "root"):
        assert [x["id"] for x in await env.ok("GET", "model-store", user, 200)] == [entry["id"]]
    for user in ("gina", "gus"):
        assert await env.ok("GET", "model-store", user, 200) == []
        await env.ok("GET", f"model-store/{entry['id']}", user, 404)
    assert (await env.ok("GET", f"model-store/{entry['id']}", "ada", 200))["can_manage"]
    assert not (await env.ok("GET", f"model-store/{entry['id']}", "alice", 200))["can_manage"]
    [log] = env.audit("store-model.create")
    assert log.outcome == "success" and log.target == entry["id"] and log.domain == "acme"


async def test_who_may_publish_where(env):
    assert "superadmin" in (await env.publish("ada", 403))["message"]
    await env.publish("ada", 403, domain="globex")
    await env.publish("alice", 403, domain="acme")
    await env.publish("gus", 403, domain="acme")
    await env.publish("ada", 404, domain="nowhere")
    denied = env.audit("store-model.create")
    assert denied and all(x.outcome == "denied" for x in denied)


async def test_a_folder_the_publisher_cannot_read_is_refused(env):
    ginas = await env.folder_with("gina", CHAT)
    data = await env.publish("ada", 422, domain="acme", folder=ginas)
    assert data["detail"][0]["field"] == "folder"
    data = await env.publish("ada", 422, domain="acme", folder="0" * 32)
    assert data["detail"][0]["field"] == "folder"


async def test_every_problem_of_the_definition_image_and_slots_refuses_with_its_field(env):
    empty = await env.folder_with("ada", None)
    data = await env.publish("root", 422, folder=empty)
    assert [x["field"] for x in data["detail"]] == ["folder"]
    assert "model-definition.yaml" in data["detail"][0]["message"]
    bad = await env.folder_with("ada", b"models:\n  - name: x\n    model_path: /etc\n")
    data = await env.publish("root", 422, folder=bad)
    assert "model-definition.yaml:models[0].model_path" in [x["field"] for x in data["detail"]]
    bare = await env.folder_with("ada", BARE)
    data = await env.publish("root", 422, folder=bare)
    assert [x["field"] for x in data["detail"]] == ["slots"]
    assert "min_resource" in data["detail"][0]["message"]
    odd = await env.folder_with("ada", CHAT.replace(b"cpu: 0.5", b"cpu: 0.0001"))
    data = await env.publish("root", 422, folder=odd)
    assert data["detail"][0]["field"] == "model-definition.yaml:models[0].metadata.min_resource"
    data = await env.publish("root", 422, image="no/such:1")
    assert [x["field"] for x in data["detail"]] == ["image"]
    data = await env.publish("root", 422, image="hubgrid/base:latest")
    assert "does not run inference" in data["detail"][0]["message"]
    # globex's own image cannot serve every domain, nor acme
    await env.publish("root", 422, image="globex/infer:1")
    await env.publish("ada", 422, image="globex/infer:1", domain="acme")
    await env.ok("PATCH", f"images/{IMAGE.replace('/', '%2F')}", "root", 200,
                 {"min_slots": {"cpu": "1"}})
    data = await env.publish("root", 422)
    assert [x["field"] for x in data["detail"]] == ["slots.cpu"]
    await env.publish("root", 201, slots={"cpu": "1", "mem": "1G"})
    assert env.world.count(StoreModel) == 1


async def test_a_folder_is_published_once_per_scope_and_a_name_must_be_usable(env):
    await env.publish("root")
    data = await env.publish("root", 409)
    assert "already published to every domain" in data["message"]
    await env.publish("ada", 201, domain="acme")  # another scope
    odd = await env.folder_with("ada", CHAT, name="My.Model")
    data = await env.publish("root", 422, folder=odd)
    assert data["detail"][0]["field"] == "name"
    await env.publish("root", 201, folder=odd, name="my-model")


# -- change and unpublish -----------------------------------------------------------

async def test_admins_of_its_scope_change_an_entry_and_its_card_is_read_again(env):
    entry = await env.publish("ada", domain="acme")
    await env.ok("PATCH", f"model-store/{entry['id']}", "alice", 403, {"name": "x"})
    await env.ok("PATCH", f"model-store/{entry['id']}", "gus", 404, {"name": "x"})
    await env.put("ada", env.folder, CHAT.replace(b"Echo chat (stand-in)", b"Echo v2"))
    got = await env.ok("PATCH", f"model-store/{entry['id']}", "ada", 200,
                       {"name": "echo2", "slots": {"cpu": "2", "mem": "2G"}})
    assert got["card"]["title"] == "Echo v2" and got["name"] == "echo2"
    assert got["slots"] == {"cpu": "2", "mem": str(2 * 2**30)}
    data = await env.ok("PATCH", f"model-store/{entry['id']}", "root", 422,
                        {"image": "hubgrid/base:latest"})
    assert data["detail"][0]["field"] == "image"
    assert (await env.ok("GET", f"model-store/{entry['id']}", "alice", 200))["name"] == "echo2"
    [log] = [x for x in env.audit("store-model.update") if x.outcome == "success"]
    assert log.actor == "ada" and log.domain == "acme"


async def test_unpublishing_is_refused_while_endpoints_use_it_and_leaves_the_folder(env):
    entry = await env.publish("root")
    ep = await env.ok("POST", f"model-store/{entry['id']}/deploy", "alice", 201,
                      env.deploy_body(name="echo-one"))
    await env.ok("DELETE", f"model-store/{entry['id']}", "ada", 403)
    await env.ok("DELETE", f"model-store/{entry['id']}", "alice", 403)
    data = await env.ok("DELETE", f"model-store/{entry['id']}", "root", 409)
    assert data["detail"] == ["acme/ml/echo-one"] and "delete them first" in data["message"]
    await env.ok("DELETE", f"endpoints/{ep['id']}", "alice", 204)
    assert env.world.count(StoreDeployment) == 0  # gone with its endpoint
    await env.ok("DELETE", f"model-store/{entry['id']}", "root", 204)
    assert await env.ok("GET", "model-store", "alice", 200) == []
    assert env.world.count(VFolder, VFolder.id == env.folder) == 1
    [log] = [x for x in env.audit("store-model.delete") if x.outcome == "success"]
    assert log.target == entry["id"]


# -- check and deploy -------------------------------------------------------------

async def test_the_check_says_ok_and_writes_nothing(env):
    entry = await env.publish("root")
    data = await env.ok("POST", f"model-store/{entry['id']}/check", "alice", 200,
                        env.deploy_body(name="chk"))
    assert data["ok"] is True and data["problems"] == []
    assert data["definition"]["models"][0]["name"] == "echo-chat"
    assert data["endpoint"] == {"name": "chk", "project": "ml", "resource_group": "infer",
                                "image": IMAGE, "slots": entry["slots"], "replicas": 1}
    assert env.world.count(Endpoint) == 0
    assert env.audit("store-model.check") == []  # a question: only denials are logged


async def test_the_check_names_each_problem_by_field(env):
    entry = await env.publish("root")
    path = f"model-store/{entry['id']}/check"
    data = await env.ok("POST", path, "alice", 200, env.deploy_body(resource_group="nope"))
    assert data["ok"] is False
    assert [x["field"] for x in data["problems"]] == ["resource_group"]
    with env.world.tx() as s:
        pol = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == "default"))
        pol.total_resource_slots = {"cpu": "0.25"}
    data = await env.ok("POST", path, "alice", 200, env.deploy_body())
    assert [x["field"] for x in data["problems"]] == ["slots.cpu"]
    assert "your limits leave" in data["problems"][0]["message"]
    # a deploy refuses with the same problems, and makes nothing
    data = await env.ok("POST", f"model-store/{entry['id']}/deploy", "alice", 422,
                        env.deploy_body())
    assert [x["field"] for x in data["detail"]] == ["slots.cpu"]
    assert env.world.count(Endpoint) == 0


async def test_who_may_check_and_deploy(env):
    entry = await env.publish("ada", domain="acme")
    path = f"model-store/{entry['id']}"
    # bob sees the entry but not project ml (a member of none): 404, as endpoints
    await env.ok("POST", f"{path}/check", "bob", 404, env.deploy_body())
    await env.ok("POST", f"{path}/deploy", "bob", 404, env.deploy_body())
    # ada administers acme but is no member: replicas run under a member's quota
    for user in ("ada", "root"):
        await env.ok("POST", f"{path}/check", user, 403, env.deploy_body())
        await env.ok("POST", f"{path}/deploy", user, 403, env.deploy_body())
    # gina does not see the entry at all
    await env.ok("POST", f"{path}/check", "gina", 404, env.deploy_body(project="lab"))
    await env.ok("POST", f"{path}/deploy", "gina", 404, env.deploy_body(project="lab"))
    await env.ok("POST", f"{path}/check", "alice", 404, env.deploy_body(project="lab"))
    assert [x.outcome for x in env.audit("store-model.check")] == ["denied"] * 5
    assert env.world.count(Endpoint) == 0


async def test_a_deploy_mounts_the_published_folder_without_other_access_to_it(env):
    entry = await env.publish("root")
    ep = await env.ok("POST", f"model-store/{entry['id']}/deploy", "alice", 201,
                      env.deploy_body(name="echo", replicas=2))
    assert ep["model_folder"]["id"] == env.folder and ep["store_model"] == entry["id"]
    assert ep["slots"] == entry["slots"] and ep["replicas"] == 2 and ep["image"] == IMAGE
    assert ep["created_by"] == "alice" and ep["state"] == "provisioning"
    assert (await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200))["store_model"] == \
        entry["id"]
    # no clone: the folders are ada's one and no other
    assert env.world.count(VFolder) == 1
    # alice still cannot see, list, download or use the folder herself
    await env.ok("GET", f"vfolders/{env.folder}", "alice", 404)
    await env.ok("GET", f"vfolders/{env.folder}/files", "alice", 404)
    await env.ok("GET", f"vfolders/{env.folder}/download?path=model-definition.yaml",
                 "alice", 404)
    assert env.folder not in [f["id"] for f in await env.ok("GET", "vfolders", "alice", 200)]
    data = await env.ok("POST", "endpoints/validate", "alice", 200, {
        "name": uniq("ep"), "project": "ml", "resource_group": "infer", "image": IMAGE,
        "model_folder": env.folder, "slots": {"cpu": "1", "mem": "1G"}})
    assert [x["field"] for x in data["problems"]] == ["model_folder"]
    # nor mount it in a session of her own (the hub asks for her)
    r, refused = await env.call("POST", "internal/allocations", "internal", {
        "user": "alice", "project": "ml", "resource_group": "infer",
        "slots": {"cpu": "1", "mem": "1G"}, "vfolders": [env.folder]})
    assert r.code == 422 and "you may mount" in refused["message"], refused
    [log] = env.audit("store-model.deploy")
    assert log.outcome == "success" and log.target == f"{entry['id']}:{ep['id']}"
    # the name is taken now: a second deploy of that name is refused by field
    data = await env.ok("POST", f"model-store/{entry['id']}/deploy", "alice", 422,
                        env.deploy_body(name="echo"))
    assert [x["field"] for x in data["detail"]] == ["name"]
    # the entry's own name is the default
    ep2 = await env.ok("POST", f"model-store/{entry['id']}/deploy", "alice", 201,
                       {"project": "ml", "resource_group": "infer"})
    assert ep2["name"] == entry["name"]


async def test_a_replica_reaches_the_folder_through_the_publication_only(env):
    entry = await env.publish("ada", domain="acme")
    ep = await env.ok("POST", f"model-store/{entry['id']}/deploy", "alice", 201,
                      env.deploy_body())
    own = await env.folder_with("alice", CHAT)
    mine = await env.ok("POST", "endpoints", "alice", 201, {
        "name": uniq("ep"), "project": "ml", "resource_group": "infer", "image": IMAGE,
        "model_folder": own, "slots": {"cpu": "1", "mem": "1G"}})
    hosts = env.served.svc.vfolder_hosts_resolved
    alice = env.world.principal("alice")
    with env.world.tx() as s:
        acc = store.replica_folder(s, alice, s.get(Endpoint, ep["id"]), hosts)
        assert acc.folder_id == env.folder and acc.perm == "ro"
        assert store.replica_folder(s, alice, s.get(Endpoint, mine["id"]), hosts).perm == "wd"
        # an endpoint not deployed from the store that names the folder gets nothing
        s.execute(sa.delete(StoreDeployment))
        with pytest.raises(Exception, match="not found"):
            store.replica_folder(s, alice, s.get(Endpoint, ep["id"]), hosts)
        s.rollback()


async def test_a_published_folder_in_the_trash_refuses_the_deploy(env):
    entry = await env.publish("root")
    await env.ok("DELETE", f"vfolders/{env.folder}", "ada", 204)
    got = await env.ok("GET", f"model-store/{entry['id']}", "alice", 200)
    assert got["folder"]["available"] is False
    data = await env.ok("POST", f"model-store/{entry['id']}/check", "alice", 200,
                        env.deploy_body())
    [problem] = data["problems"]
    assert problem["field"] == "model_folder" and "gone" in problem["message"]
    await env.ok("PATCH", f"model-store/{entry['id']}", "root", 409, {"name": "x"})


async def test_an_unknown_entry_is_404_for_everyone(env):
    for path in ("model-store/nope", "model-store/" + "0" * 32):
        await env.ok("GET", path, "root", 404)
        await env.ok("POST", path + "/check", "alice", 404, env.deploy_body())
        await env.ok("DELETE", path, "root", 404)


# -- the card's rules (pure) --------------------------------------------------------

def test_the_card_is_the_served_models_metadata():
    d = modeldef.parse(b"""models:
  - name: weights
    model_path: /models
  - name: served
    model_path: /models/m
    service: {start_command: [x], port: 80}
    metadata: {title: T, version: 3, label: [a], min_resource: {cpu: 2, cuda.shares: 0.5}}
""")
    card = storecard.card(d)
    assert card["model"] == "served" and card["title"] == "T" and card["version"] == "3"
    assert card["label"] == ["a"] and card["framework"] == [] and card["description"] is None
    assert card["min_resource"] == {"cpu": "2", "cuda.shares": "0.5"}
    slots, problems = storecard.default_slots(d)
    assert problems == [] and slots == {"cpu": Decimal(2), "gpu.shares": Decimal("0.5")}


def test_default_slots_none_without_min_resource_and_problems_by_field():
    d = modeldef.parse(BARE)
    assert storecard.default_slots(d) == (None, [])
    assert storecard.card(d)["min_resource"] is None
    d = modeldef.parse(BARE + b"    metadata: {min_resource: {tpu: 1}}\n")
    slots, [problem] = storecard.default_slots(d)
    assert slots is None and "unknown slot 'tpu'" in problem["message"]
    assert problem["field"] == "model-definition.yaml:models[0].metadata.min_resource"
    d = modeldef.parse(BARE + b"    metadata: {min_resource: {cpu: 0}}\n")
    assert storecard.default_slots(d)[1][0]["message"].startswith("asks for nothing")
