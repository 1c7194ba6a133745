"""Endpoints of model serving and their bearer tokens
over HTTP, through the service's real app (tests/service_app.py) on SQLite
and PostgreSQL: validate-before-create and each problem it finds, create,
list, get, change, delete, tokens (shown once, only the hash kept, expiry,
revoke), the access log; and the pure rules (``serving.tokens``,
``serving.fit``) with plain data.

The world (tests/conftest.py): alice is a member of acme/ml, bob of no
project, ada the domain admin of acme, root a superadmin (of acme, in no
project), gina a user of globex.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from quota_service.core.models import Project, ResourcePolicy
from quota_service.core.servingmodels import Endpoint, EndpointToken
from quota_service.serving import endpoints as manager
from quota_service.serving import fit, tokens
import serving_world
from service_app import served  # noqa: F401
# INFERENCE_LABEL: for the modules that import this one's fixture
from serving_world import CHAT, IMAGE, INFERENCE_LABEL, ServingEnv, infer_world, uniq  # noqa: F401

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
#: the one node of the group ``infer``: 4 CPUs, 8 GiB, 2 GPUs
NODE = {**serving_world.NODE, "devices": [{"index": i, "model": "T4"} for i in range(2)]}


class Env(ServingEnv):
    """The served service with a resource group ``infer`` granted to acme
    (one node, ``NODE``), the inference image (every domain) and globex's
    own image, and alice's model folder holding the echo-chat definition."""

    def folder_dir(self, folder_id: str) -> Path:
        return self.served.svc.vfolder_hosts_resolved["local"].folder_dir(folder_id)

    def body(self, **changes) -> dict:
        return {"name": uniq("ep"), "project": "ml", "resource_group": "infer", "image": IMAGE,
                "model_folder": self.folder, "slots": {"cpu": "1", "mem": "1G"},
                "replicas": 1} | changes

    def set_policy(self, **fields) -> None:
        with self.world.tx() as s:
            pol = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == "default"))
            for key, value in fields.items():
                setattr(pol, key, value)

    def count(self, model, *where) -> int:
        return self.world.count(model, *where)


@pytest.fixture
async def env(served):  # noqa: F811
    e = Env(served)
    group = await infer_world(e, NODE, ({"name": "globex/only:1", "domains": ["globex"]},))
    assert "inference" in group["session_types"]  # the default: every type
    e.folder = await e.folder_with("alice", CHAT)
    return e


async def make(env: Env, **changes) -> dict:
    return await env.ok("POST", "endpoints", "alice", 201, env.body(**changes))


# -- validate before create ------------------------------------------------------

async def test_a_good_endpoint_validates_with_its_definition_and_nothing_is_written(env):
    data = await env.ok("POST", "endpoints/validate", "alice", 200, env.body())
    assert data["ok"] is True and data["problems"] == []
    [model] = data["definition"]["models"]
    assert model["name"] == "echo-chat" and model["servable"] is True
    assert isinstance(model["port"], int)
    assert env.count(Endpoint) == 0


async def problems_of(env: Env, body: dict, user: str = "alice") -> list[dict]:
    data = await env.ok("POST", "endpoints/validate", user, 200, body)
    assert data["ok"] is False
    return data["problems"]


async def test_a_name_taken_in_the_project_is_a_problem(env):
    first = await make(env)
    assert await problems_of(env, env.body(name=first["name"])) == [
        {"field": "name", "message": f"project 'ml' has an endpoint named {first['name']!r}"}]


async def test_a_group_the_caller_may_not_use_reads_as_one_that_does_not_exist(env):
    await env.ok("POST", "resource-groups", "root", 201, {"name": "globex-only"})
    await env.ok("PUT", "resource-groups/globex-only/grants", "root", 201, {"domain": "globex"})
    hidden = await problems_of(env, env.body(resource_group="globex-only"))
    missing = await problems_of(env, env.body(resource_group="nowhere"))
    assert [p["field"] for p in hidden] == ["resource_group"]
    assert hidden[0]["message"].replace("globex-only", "X") == \
        missing[0]["message"].replace("nowhere", "X")


@pytest.mark.parametrize("image", ["globex/only:1", "never/registered:1"])
async def test_an_image_not_registered_or_not_allowed_for_the_domain_is_a_problem(env, image):
    assert [p["field"] for p in await problems_of(env, env.body(image=image))] == ["image"]


async def test_a_replica_below_the_images_minimum_is_a_problem_per_slot(env):
    await env.ok("PATCH", f"images/{IMAGE.replace('/', '%2F')}", "root", 200,
                 {"min_slots": {"cpu": "2", "mem": "512M"}})
    [p] = await problems_of(env, env.body())
    assert p["field"] == "slots.cpu" and "needs at least cpu 2" in p["message"]


async def test_an_image_that_runs_no_inference_sessions_is_a_problem(env):
    """A Jupyter session image (marked as one, or added without a marker)
    runs no replica."""
    await env.ok("POST", "images", "root", 201,
                 {"name": "hubgrid/lab:1", "labels": {"ai.hubgrid.session-image": "1"}})
    [p] = await problems_of(env, env.body(image="hubgrid/lab:1"))
    assert p == {"field": "image", "message": "image hubgrid/lab:1 does not run inference "
                 "sessions (it runs: batch, interactive)"}


async def test_a_group_that_does_not_run_inference_sessions_is_a_problem(env):
    await env.ok("POST", "resource-groups", "root", 201,
                 {"name": "batch-only", "session_types": ["batch"]})
    await env.ok("PUT", "resource-groups/batch-only/grants", "root", 201, {"domain": "acme"})
    [p] = await problems_of(env, env.body(resource_group="batch-only"))
    assert p == {"field": "resource_group", "message": "resource group batch-only does not "
                 "run inference sessions (it runs: batch)"}


async def test_a_replica_no_node_could_hold_is_a_problem_with_the_largest_nodes_capacity(env):
    problems = await problems_of(env, env.body(slots={"cpu": "6", "mem": "1G", "gpu": "3"}))
    assert problems == [
        {"field": "slots.cpu", "message": "one replica asks for cpu 6; the largest node of "
         "resource group infer has 4"},
        {"field": "slots.gpu", "message": "one replica asks for gpu 3; the largest node of "
         "resource group infer has 2"}]
    r, data = await env.call("POST", "endpoints", "alice",
                             env.body(slots={"cpu": "1", "gpu": "3"}))
    assert r.code == 422 and [p["field"] for p in data["detail"]] == ["slots.gpu"]
    assert env.count(Endpoint) == 0


async def test_a_group_without_nodes_is_a_problem(env):
    await env.ok("POST", "resource-groups", "root", 201, {"name": "empty"})
    await env.ok("PUT", "resource-groups/empty/grants", "root", 201, {"domain": "acme"})
    assert await problems_of(env, env.body(resource_group="empty")) == [
        {"field": "resource_group", "message": "resource group empty has no nodes: no "
         "replica can run there"}]


async def test_replicas_beyond_the_groups_capacity_are_a_warning_not_a_refusal(env):
    """The user trial's case: many replicas of GPUs on a small cluster, with
    no limit in the policy. Replicas beyond the group wait in the queue."""
    body = env.body(replicas=5, slots={"cpu": "0.5", "mem": "3G", "gpu": "1"})
    data = await env.ok("POST", "endpoints/validate", "alice", 200, body)
    assert data["ok"] is True and data["problems"] == []
    assert data["warnings"] == [
        {"field": "slots.gpu", "message": "5 x 1 = 5: resource group infer has 2 in all; "
         "the replicas that do not fit wait in the queue"},
        {"field": "slots.mem", "message": "5 x 3 GiB = 15 GiB: resource group infer has "
         "8 GiB in all; the replicas that do not fit wait in the queue"}]
    made = await env.ok("POST", "endpoints", "alice", 201, body)
    assert made["warnings"] == data["warnings"] and made["replicas"] == 5
    fits = await env.ok("POST", "endpoints/validate", "alice", 200, env.body(replicas=2))
    assert fits["warnings"] == []


async def test_a_replica_only_a_drained_node_holds_is_a_warning(env):
    await env.ok("PATCH", "nodes/infer-1", "root", 200, {"schedulable": False})
    data = await env.ok("POST", "endpoints/validate", "alice", 200, env.body())
    assert data["ok"] is True and data["warnings"] == [
        {"field": "resource_group", "message": "one replica fits only nodes of resource "
         "group infer that take no new sessions now (infer-1): replicas wait in the queue "
         "until one does"}]


async def test_a_folder_the_caller_may_not_read_is_a_problem_named_as_missing(env):
    bobs = await env.folder_with("bob", CHAT)
    for folder in (bobs, uuid.uuid4().hex):
        [p] = await problems_of(env, env.body(model_folder=folder))
        assert p["field"] == "model_folder" and "not found" in p["message"]


async def test_a_folder_without_a_definition_is_a_problem(env):
    folder = await env.folder_with("alice", None)
    [p] = await problems_of(env, env.body(model_folder=folder))
    assert p["field"] == "model_folder" and "no model-definition.yaml" in p["message"]


async def test_a_definition_that_is_a_link_is_not_followed(env, tmp_path):
    folder = await env.folder_with("alice", None)
    outside = tmp_path / "elsewhere.yaml"
    outside.write_bytes(CHAT)
    os.symlink(outside, env.folder_dir(folder) / "model-definition.yaml")
    [p] = await problems_of(env, env.body(model_folder=folder))
    assert p["field"] == "model_folder" and "not a regular file" in p["message"]


async def test_the_definitions_problems_are_listed_with_their_field_paths(env):
    bad = b"models:\n  - name: m\n    model_path: /models\n    service:\n" \
          b"      start_command: [serve]\n      port: '8000'\n  - name: n\n"
    folder = await env.folder_with("alice", bad)
    fields = {p["field"] for p in await problems_of(env, env.body(model_folder=folder))}
    assert fields == {"model-definition.yaml:models[0].service.port",
                      "model-definition.yaml:models[1].model_path"}


async def test_a_definition_with_nothing_to_serve_is_a_problem(env):
    folder = await env.folder_with("alice", b"models:\n  - name: m\n    model_path: /models\n")
    [p] = await problems_of(env, env.body(model_folder=folder))
    assert p["field"] == "model-definition.yaml" and "no model has a service" in p["message"]


async def test_replicas_past_the_callers_limits_are_problems_per_slot_and_sessions(env):
    env.set_policy(total_resource_slots={"cpu": "2"}, max_concurrent_sessions=2)
    assert (await env.ok("POST", "endpoints/validate", "alice", 200,
                         env.body(replicas=2)))["ok"] is True
    problems = await problems_of(env, env.body(replicas=3))
    assert [p["field"] for p in problems] == ["replicas", "slots.cpu"]
    assert problems[1]["message"] == "3 x 1 = 3: your limits leave 2"


async def test_public_asked_by_a_member_who_is_no_admin_is_a_problem(env):
    [p] = await problems_of(env, env.body(public=True))
    assert p["field"] == "public"


async def test_an_inactive_project_is_a_problem(env):
    with env.world.tx() as s:
        s.scalar(sa.select(Project).where(Project.name == "ml")).active = False
    assert [p["field"] for p in await problems_of(env, env.body())] == ["project"]


@pytest.mark.parametrize("user, status", [("gina", 404), ("bob", 404), ("ada", 403),
                                          ("root", 403)])
async def test_a_project_one_is_no_member_of_is_refused_not_listed(env, user, status):
    for path in ("endpoints/validate", "endpoints"):
        r, data = await env.call("POST", path, user, env.body())
        assert r.code == status, data
    assert env.count(Endpoint) == 0


async def test_bad_bodies_are_refused_before_anything_is_read(env):
    for body in (env.body(replicas=-1), env.body(replicas=65), env.body(slots={}),
                 env.body(slots={"cpu": "-1"}), env.body(slots={"gpu": "1", "gpu.shares": "0.5"}), env.body(name="Bad Name"), env.body(extra=1)):
        r, data = await env.call("POST", "endpoints", "alice", body)
        assert r.code == 422 and data["message"], (body, data)
    assert env.count(Endpoint) == 0


# -- create, list, get, change, delete ----------------------------------------------

async def test_create_refuses_with_the_same_problems_as_validate_and_writes_nothing(env):
    body = env.body(image="never/registered:1", replicas=2, public=True)
    checked = await problems_of(env, body)
    r, data = await env.call("POST", "endpoints", "alice", body)
    assert r.code == 422 and data["detail"] == checked
    assert {p["field"] for p in checked} == {"image", "public"}
    assert env.count(Endpoint) == 0


async def test_a_created_endpoint_is_provisioning_with_no_replica_running(env):
    r, data = await env.call("POST", "endpoints", "alice", env.body(replicas=2))
    assert r.code == 201, data
    assert r.headers["Location"].endswith(f"endpoints/{data['id']}")
    assert data["state"] == "provisioning" and data["running_replicas"] == 0
    assert (data["domain"], data["project"], data["resource_group"]) == ("acme", "ml", "infer")
    assert data["model_folder"]["id"] == env.folder and data["slots"] == {
        "cpu": "1", "mem": "1073741824"}
    assert data["created_by"] == "alice" and data["public"] is False
    [entry] = env.audit("endpoint.create")
    assert entry.target == data["id"] and entry.domain == "acme" and entry.outcome == "success"


async def test_an_admin_makes_a_member_made_endpoint_public_at_create_only_as_member(env):
    """ada is no member: she cannot create; public=true at create needs an
    admin who is a member."""
    await env.ok("PUT", "domains/acme/projects/ml/members/ada", "root", 201)
    data = await env.ok("POST", "endpoints", "ada", 201, env.body(public=True))
    assert data["public"] is True


async def test_each_caller_lists_and_reads_only_the_endpoints_they_may_see(env):
    ep = await make(env)
    for user, seen in (("alice", True), ("ada", True), ("root", True), ("bob", False),
                       ("gina", False), ("gus", False)):
        listed = await env.ok("GET", "endpoints", user, 200)
        assert [e["id"] for e in listed] == ([ep["id"]] if seen else []), user
        r, _ = await env.call("GET", f"endpoints/{ep['id']}", user)
        assert r.code == (200 if seen else 404), user
    assert await env.ok("GET", "endpoints?project=web", "ada", 200) == []
    assert [e["id"] for e in await env.ok("GET", "endpoints?project=ml", "ada", 200)] == [ep["id"]]


async def test_change_replicas_within_limits_and_public_only_as_an_admin(env):
    ep = await make(env)
    path = f"endpoints/{ep['id']}"
    assert (await env.ok("PATCH", path, "alice", 200, {"replicas": 3}))["replicas"] == 3
    env.set_policy(total_resource_slots={"cpu": "4"})
    r, data = await env.call("PATCH", path, "alice", {"replicas": 5})
    assert r.code == 422 and data["detail"][0]["field"] == "slots.cpu"
    assert (await env.ok("PATCH", path, "alice", 200, {"replicas": 0}))["replicas"] == 0
    r, data = await env.call("PATCH", path, "alice", {"public": True})
    assert r.code == 403, data
    assert (await env.ok("PATCH", path, "ada", 200, {"public": True}))["public"] is True
    r, _ = await env.call("PATCH", path, "bob", {"replicas": 1})
    assert r.code == 404
    assert {e.outcome for e in env.audit("endpoint.update")} == {"success", "invalid", "denied"}


async def test_another_member_uses_an_endpoint_but_only_its_creator_and_admins_change_it(env):
    """bob joins ml: he sees alice's endpoint and makes and revokes its
    tokens, but scaling or deleting it is 403 with the reason; ada (admin
    of acme, no member) and root may."""
    await env.ok("PUT", "domains/acme/projects/ml/members/bob", "root", 201)
    ep = await make(env)
    path = f"endpoints/{ep['id']}"
    assert (await env.ok("GET", path, "bob", 200))["id"] == ep["id"]
    for method, body in (("PATCH", {"replicas": 2}), ("PATCH", {"public": True}),
                         ("DELETE", None)):
        r, data = await env.call(method, path, "bob", body)
        assert r.code == 403, (method, data)
        assert data["message"] == ("only the endpoint's creator (alice) or an admin of domain "
                                   "'acme' may change or delete it")
    token = await env.ok("POST", f"{path}/tokens", "bob", 201, {"expires_in_days": 1})
    await env.ok("DELETE", f"{path}/tokens/{token['id']}", "bob", 204)
    mine = await env.ok("POST", f"{path}/tokens", "alice", 201, {"expires_in_days": 1})
    await env.ok("DELETE", f"{path}/tokens/{mine['id']}", "bob", 204)
    assert (await env.ok("PATCH", path, "alice", 200, {"replicas": 2}))["replicas"] == 2
    assert (await env.ok("PATCH", path, "ada", 200, {"replicas": 3}))["replicas"] == 3
    assert (await env.ok("PATCH", path, "root", 200, {"replicas": 1}))["replicas"] == 1
    assert env.count(Endpoint) == 1
    await env.ok("DELETE", path, "ada", 204)
    other = await make(env)
    await env.ok("DELETE", f"endpoints/{other['id']}", "root", 204)
    assert env.count(Endpoint) == 0
    assert [e.outcome for e in env.audit("endpoint.delete")] == [
        "denied", "success", "success"]


async def test_delete_removes_the_endpoint_and_its_tokens(env):
    ep = await make(env)
    await env.ok("POST", f"endpoints/{ep['id']}/tokens", "alice", 201, {"expires_in_days": 7})
    r, _ = await env.call("DELETE", f"endpoints/{ep['id']}", "gina")
    assert r.code == 404
    await env.ok("DELETE", f"endpoints/{ep['id']}", "alice", 204)
    r, _ = await env.call("GET", f"endpoints/{ep['id']}", "alice")
    assert r.code == 404
    assert env.count(Endpoint) == 0 and env.count(EndpointToken) == 0
    assert [e.outcome for e in env.audit("endpoint.delete")] == ["denied", "success"]


# -- tokens ---------------------------------------------------------------------------

async def test_a_token_is_shown_once_and_only_its_hash_is_kept(env):
    ep = await make(env)
    path = f"endpoints/{ep['id']}/tokens"
    made = await env.ok("POST", path, "alice", 201, {"expires_in_days": 7})
    secret = made["token"]
    assert secret.startswith("hge_") and len(secret) > 40
    assert made["state"] == "active" and made["created_by"] == "alice"
    with env.world.session_factory() as s:
        row = s.get(EndpointToken, made["id"])
        assert row.token_hash == hashlib.sha256(secret.encode()).hexdigest()
        assert secret not in repr({c.name: getattr(row, c.name)
                                   for c in EndpointToken.__table__.columns})
    listed = await env.ok("GET", path, "alice", 200)
    assert [t["id"] for t in listed] == [made["id"]] and "token" not in listed[0]
    assert secret not in repr(listed)
    [entry] = env.audit("endpoint-token.create")
    assert entry.target == f"{ep['id']}:{made['id']}" and secret not in entry.target


async def test_members_and_admins_make_tokens_others_do_not_find_the_endpoint(env):
    ep = await make(env)
    path = f"endpoints/{ep['id']}/tokens"
    for user, status in (("alice", 201), ("ada", 201), ("root", 201), ("bob", 404),
                         ("gina", 404)):
        r, data = await env.call("POST", path, user, {"expires_in_days": 1})
        assert r.code == status, (user, data)


@pytest.mark.parametrize("days", [0, 91, None])
async def test_an_expiry_is_required_and_at_most_the_admins_maximum(env, days):
    ep = await make(env)
    r, data = await env.call("POST", f"endpoints/{ep['id']}/tokens", "alice",
                             {} if days is None else {"expires_in_days": days})
    assert r.code == 422 and data["message"], data
    assert env.count(EndpointToken) == 0


async def test_the_admins_maximum_is_a_setting(env):
    env.served.svc.endpoint_token_max_days = 7
    ep = await make(env)
    r, data = await env.call("POST", f"endpoints/{ep['id']}/tokens", "alice",
                             {"expires_in_days": 8})
    assert r.code == 422 and "at most 7" in data["message"]


async def test_a_token_expires_and_a_revoked_one_stays_revoked(env, monkeypatch):
    monkeypatch.setattr(env.served.svc, "clock", lambda: T0)
    ep = await make(env)
    other = await make(env)
    path = f"endpoints/{ep['id']}/tokens"
    short = await env.ok("POST", path, "alice", 201, {"expires_in_days": 1})
    long = await env.ok("POST", path, "alice", 201, {"expires_in_days": 30})

    def resolve(token, at, endpoint=None):
        with env.world.session_factory() as s:
            return manager.resolve_token(s, token, at, endpoint)

    assert resolve(short["token"], T0, ep["id"]) == tokens.Verdict(ep["id"], short["id"], None)
    later = T0 + dt.timedelta(days=2)
    assert resolve(short["token"], later).reason == tokens.EXPIRED
    assert resolve(long["token"], later, other["id"]).reason == tokens.OTHER_ENDPOINT
    assert resolve("hge_" + "x" * 43, later).reason == tokens.UNKNOWN
    monkeypatch.setattr(env.served.svc, "clock", lambda: later)
    states = {t["id"]: t["state"] for t in await env.ok("GET", path, "alice", 200)}
    assert states == {short["id"]: "expired", long["id"]: "active"}

    r, _ = await env.call("DELETE", f"{path}/{long['id']}", "gina")
    assert r.code == 404
    r, _ = await env.call("DELETE", f"endpoints/{other['id']}/tokens/{long['id']}", "alice")
    assert r.code == 404  # a token is revoked through its own endpoint only
    await env.ok("DELETE", f"{path}/{long['id']}", "alice", 204)
    await env.ok("DELETE", f"{path}/{long['id']}", "alice", 204)  # again: nothing changes
    assert resolve(long["token"], later, ep["id"]).reason == tokens.REVOKED
    listed = {t["id"]: t for t in await env.ok("GET", path, "alice", 200)}
    assert listed[long["id"]]["state"] == "revoked" and listed[long["id"]]["revoked_at"]
    r, _ = await env.call("DELETE", f"{path}/{uuid.uuid4().hex}", "alice")
    assert r.code == 404
    assert [e.outcome for e in env.audit("endpoint-token.revoke")] == [
        "denied", "invalid", "success", "success", "invalid"]


# -- the pure rules -----------------------------------------------------------------

def stored(token: str, endpoint: str = "e1", *, expires=T0 + dt.timedelta(days=1),
           revoked=None, id_: str = "t1") -> tokens.StoredToken:
    return tokens.StoredToken(id_, endpoint, tokens.hash_token(token), expires, revoked)


@pytest.mark.parametrize("row, endpoint, verdict", [
    (stored("a"), "e1", tokens.Verdict("e1", "t1", None)),
    (stored("a"), None, tokens.Verdict("e1", "t1", None)),
    (stored("a"), "e2", tokens.Verdict(None, "t1", tokens.OTHER_ENDPOINT)),
    (stored("a", expires=T0), "e1", tokens.Verdict("e1", "t1", tokens.EXPIRED)),
    (stored("a", revoked=T0), "e1", tokens.Verdict("e1", "t1", tokens.REVOKED)),
    (stored("a", expires=T0, revoked=T0), "e1", tokens.Verdict("e1", "t1", tokens.REVOKED)),
    (stored("b"), "e1", tokens.Verdict(None, None, tokens.UNKNOWN)),
], ids=["ok", "ok-any-endpoint", "other-endpoint", "expired-at-its-instant", "revoked",
        "revoked-outranks-expired", "unknown"])
def test_the_token_check_says_which_endpoint_or_why_not(row, endpoint, verdict):
    got = tokens.check("a", T0, [stored("z", id_="t0"), row], endpoint)
    assert got == verdict and got.ok == (verdict.reason is None)


def test_new_tokens_differ_and_expiry_stays_within_the_maximum():
    assert tokens.new_token() != tokens.new_token()
    assert tokens.expiry(T0, 90, 90) == T0 + dt.timedelta(days=90)
    for days in (0, 91):
        with pytest.raises(ValueError):
            tokens.expiry(T0, days, 90)


def test_fit_counts_every_replica_against_what_is_left():
    slots = {"cpu": Decimal(2), "mem": Decimal(2**30)}
    left = {"cpu": Decimal(5), "mem": None}
    assert fit.problems(slots, 2, left, None) == []
    assert fit.problems(slots, 3, left, 3) == [
        {"field": "slots.cpu", "message": "3 x 2 = 6: your limits leave 5"}]
    assert [p["field"] for p in fit.problems(slots, 0, {"cpu": Decimal(0)}, 0)] == []
    assert [p["field"] for p in fit.problems(slots, 1, {"cpu": Decimal(0)}, 0)] == [
        "replicas", "slots.cpu"]
