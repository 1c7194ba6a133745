"""Allocations as sessions: the image they run, their server, command, apps,
exit code and end -- on SQLite and PostgreSQL, through the ledger verbs the
service runs (tests/ledger_world.py). The world: alice in acme/ml, gina in
globex/lab; a group "gpu" of one node granted to acme and globex.
"""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.core import db
from quota_service.scheduling import ledger
from quota_service.sessions import registry
from quota_service.core.errors import Invalid
from quota_service.core.models import Allocation
from quota_service.core.schemas import AllocationCreate, ImageCreate, parse

SLOTS = {"cpu": "1", "mem": "1G"}
LAB = "jupyterlab:http:lab,terminal:http:lab/terminals/1"


@pytest.fixture
def gpu(cluster):
    cluster.add_group("gpu", {"node-1": ("A100",)}, domains=("acme", "globex"))
    return cluster


def add_image(cluster, name="hubgrid/base:1", **fields):
    fields.setdefault("labels", {"ai.hubgrid.resource.min.cpu": "0.5",
                                 "ai.hubgrid.service-ports": LAB})
    with cluster.world.tx() as s:
        registry.create_image(s, cluster.principal("root"),
                              parse(ImageCreate, {"name": name, **fields}), cluster.now)


def ask(cluster, user="alice", project="ml", slots=SLOTS, **fields) -> dict:
    return cluster.submit(user, project, "gpu", slots=slots, **fields)


def release(cluster, alloc_id, exit_code=None, reason="stopped",
            base_url="/") -> dict:
    with db.ledger_transaction(cluster.world.session_factory) as s:
        return ledger.release_allocation(s, ledger.get_allocation(s, alloc_id), cluster.now,
                                         reason, exit_code, base_url)


def refused(cluster, **fields) -> Invalid:
    before = cluster.count()
    with pytest.raises(Invalid) as e:
        ask(cluster, **fields)
    assert cluster.count() == before
    return e.value


# ---------------------------------------------------------------- what a session is

def test_a_session_with_an_image_knows_its_server_and_apps(gpu):
    add_image(gpu)
    a = ask(gpu, image="hubgrid/base:1", server_name="gpu-1")
    assert (a["state"], a["image"], a["server_name"], a["command"]) == (
        "allocated", "hubgrid/base:1", "gpu-1", None)
    assert a["apps"] == [{"name": "jupyterlab", "url": "/user/alice/gpu-1/lab"},
                         {"name": "terminal", "url": "/user/alice/gpu-1/lab/terminals/1"}]
    assert (a["exit_code"], a["ended_at"], a["log_purged_at"]) == (None, None, None)
    assert gpu.get(a["id"])["apps"] == a["apps"]


def test_the_apps_of_the_default_server_under_the_hubs_base_url(gpu):
    add_image(gpu)
    a = ask(gpu, image="hubgrid/base:1")
    with gpu.world.session_factory() as s:
        model = ledger.allocation_model(s, s.get(Allocation, a["id"]), "/jhub/")
    assert a["server_name"] == ""
    assert [app["url"] for app in model["apps"]] == ["/jhub/user/alice/lab",
                                                     "/jhub/user/alice/lab/terminals/1"]


def test_a_session_without_an_image_has_no_apps(gpu):
    a = ask(gpu)
    assert (a["image"], a["apps"], a["server_name"]) == (None, [], "")


def test_a_pending_or_released_session_has_no_apps(gpu):
    add_image(gpu)
    gpu.set_project("acme", "ml", slots={"cpu": "1"})
    running = ask(gpu, image="hubgrid/base:1")
    waiting = ask(gpu, image="hubgrid/base:1")
    assert waiting["state"] == "pending" and waiting["apps"] == []
    assert release(gpu, running["id"])["apps"] == []


def test_the_apps_follow_the_registry_and_vanish_with_the_image(gpu):
    add_image(gpu)
    a = ask(gpu, image="hubgrid/base:1")
    with gpu.world.tx() as s:
        registry.delete_image(s, gpu.principal("root"), "hubgrid/base:1")
    assert gpu.get(a["id"])["apps"] == []
    assert gpu.get(a["id"])["image"] == "hubgrid/base:1"


def test_a_batch_session_keeps_its_command(gpu):
    a = ask(gpu, session_type="batch", command="python train.py --epochs 3")
    assert (a["session_type"], a["command"]) == ("batch", "python train.py --epochs 3")


# ---------------------------------------------------------------- image admission

def test_an_unknown_image_is_refused_and_nothing_is_written(gpu):
    e = refused(gpu, image="nosuch/image:1")
    assert e.message == "unknown image 'nosuch/image:1'"
    assert e.detail[0]["code"] == "image"


def test_an_image_of_another_domain_is_refused_as_if_unknown(gpu):
    add_image(gpu, "globex/only:1", domains=["globex"])
    assert refused(gpu, image="globex/only:1").message == "unknown image 'globex/only:1'"
    assert ask(gpu, user="gina", project="lab", image="globex/only:1")["state"] == "allocated"


def test_a_domains_allow_list_refuses_images_it_does_not_name(gpu):
    add_image(gpu, "every/one:1")
    gpu.set_domain("acme", allowed_images=["other/image:1"])
    assert refused(gpu, image="every/one:1").message == "unknown image 'every/one:1'"


def test_a_request_below_the_images_minimum_is_refused_with_the_numbers(gpu):
    add_image(gpu)
    e = refused(gpu, image="hubgrid/base:1", slots={"cpu": "0.25", "mem": "1G"})
    assert e.message == "image hubgrid/base:1 needs at least cpu 0.5 (requested 0.25)"


def test_a_dry_run_explains_an_image_refusal(gpu):
    add_image(gpu)
    dry = ask(gpu, image="hubgrid/base:1", slots={"cpu": "0.25"}, dry_run=True)
    assert dry["verdict"] == "refuse"
    assert [r["text"] for r in dry["reasons"]] == [
        "image hubgrid/base:1 needs at least cpu 0.5 (requested 0.25)"]


def test_a_queued_session_whose_image_was_removed_is_cancelled(gpu):
    add_image(gpu)
    gpu.set_project("acme", "ml", slots={"cpu": "1"})
    running = ask(gpu, image="hubgrid/base:1")
    waiting = ask(gpu, image="hubgrid/base:1")
    with gpu.world.tx() as s:
        registry.delete_image(s, gpu.principal("root"), "hubgrid/base:1")
    release(gpu, running["id"])
    assert gpu.schedule("gpu") == []
    after = gpu.get(waiting["id"])
    assert (after["state"], after["release_reason"]) == (
        "cancelled", "unknown image 'hubgrid/base:1'")


@pytest.mark.parametrize("fields, words", [
    ({"session_type": "batch"}, "a batch session needs a command"),
    ({"session_type": "batch", "command": " \n"}, "a batch session needs a command"),
    ({"command": "ls"}, "only batch sessions take a command"),
    ({"command": ""}, "only batch sessions take a command"),
    ({"session_type": "batch", "command": "x" * 4097}, "at most 4096 characters"),
    ({"server_name": "a/b"}, "server_name"),
    ({"server_name": ".."}, "must not be only dots"),
    ({"server_name": "x" * 256}, "server_name"),
    ({"image": "Hub/Base:1"}, "image: Value error, image name 'Hub/Base:1'"),
    ({"image": "hubgrid/base"}, "needs a tag"),
])
def test_session_fields_are_checked_before_anything_is_read(fields, words):
    with pytest.raises(Invalid, match=words.replace("(", r"\(")):
        parse(AllocationCreate, {"project": "ml", "resource_group": "gpu", "slots": SLOTS,
                                 **fields})


# ---------------------------------------------------------------- the end of a session

def test_release_records_the_exit_code_and_the_end_exactly_once(gpu):
    a = ask(gpu, session_type="batch", command="false")
    gpu.now += dt.timedelta(minutes=5)
    first = release(gpu, a["id"], exit_code=1)
    assert (first["state"], first["exit_code"]) == ("released", 1)
    assert first["ended_at"] == first["released_at"] == gpu.now.isoformat()
    gpu.now += dt.timedelta(minutes=5)
    again = release(gpu, a["id"], exit_code=0, reason="again")
    assert again == first


def test_a_release_without_an_exit_code_leaves_it_unknown(gpu):
    a = release(gpu, ask(gpu)["id"])
    assert a["exit_code"] is None and a["ended_at"] == a["released_at"]


def test_a_cancelled_request_never_ran_so_it_has_no_end_and_no_exit_code(gpu):
    gpu.set_project("acme", "ml", slots={"cpu": "1"})
    ask(gpu)
    waiting = ask(gpu)
    a = release(gpu, waiting["id"], exit_code=3)
    assert (a["state"], a["exit_code"], a["ended_at"]) == ("cancelled", None, None)
    assert a["released_at"] == gpu.now.isoformat()


def test_reconciling_with_the_hub_ends_a_session_without_an_exit_code(gpu):
    a = gpu.submit("alice", "ml", "gpu", slots=SLOTS)
    with db.ledger_transaction(gpu.world.session_factory) as s:
        s.get(Allocation, a["id"]).origin = "hub"
    later = gpu.now + dt.timedelta(hours=1)
    with db.ledger_transaction(gpu.world.session_factory) as s:
        assert ledger.reconcile_hub(s, frozenset(), later, 60, later) == [a["id"]]
    after = gpu.get(a["id"])
    assert (after["state"], after["exit_code"], after["ended_at"]) == (
        "released", None, later.isoformat())


# ---------------------------------------------------------------- the spawn form's choices

def choices(cluster, user):
    with cluster.world.tx() as s:
        return ledger.spawn_choices(s, user)


def test_spawn_choices_offer_only_what_the_user_may_use_and_what_remains(gpu):
    gpu.add_group("globex-only", {"g-1": ()}, domains=("globex",))
    gpu.add_group("retired", {"r-1": ()}, domains=("acme",))
    gpu.set_group("retired", active=False)
    gpu.set_policy("default", total_resource_slots={"cpu": 8, "gpu": 1})
    gpu.set_project("acme", "ml", slots={"cpu": 4}, max_concurrent_sessions=3)
    add_image(gpu)
    add_image(gpu, "globex/only:1", domains=["globex"])
    ask(gpu, slots={"cpu": "1", "mem": "1G", "gpu.shares": "0.25"})

    got = choices(gpu, "alice")
    assert (got["user"], got["domain"], got["domain_admin"]) == ("alice", "acme", False)
    [ml] = got["projects"]
    assert ml["name"] == "ml"
    assert [g["name"] for g in ml["resource_groups"]] == ["gpu"]
    assert ml["remaining"] == {"cpu": "3", "mem": None, "gpu": "0.75", "gpu.shares": "0.75"}
    assert ml["sessions_left"] == 2
    assert got["images"] == [{"name": "hubgrid/base:1", "min_slots": {"cpu": "0.5"}}]

    gina = choices(gpu, "gina")
    assert [p["name"] for p in gina["projects"]] == ["lab"]
    assert [g["name"] for g in gina["projects"][0]["resource_groups"]] == ["globex-only", "gpu"]
    assert gina["projects"][0]["remaining"]["cpu"] == "8"  # alice's session is not hers
    assert [i["name"] for i in gina["images"]] == ["globex/only:1", "hubgrid/base:1"]


def test_spawn_choices_leave_out_inactive_projects_and_refuse_unknown_users(gpu):
    gpu.set_project("acme", "ml", active=False)
    assert choices(gpu, "alice")["projects"] == []
    assert choices(gpu, "bob")["projects"] == []
    ada = choices(gpu, "ada")  # acme's admin, in no project: the form tells her to make one
    assert (ada["projects"], ada["domain_admin"]) == ([], True)
    assert choices(gpu, "gus")["domain_admin"] and not choices(gpu, "bob")["domain_admin"]
    from quota_service.core.errors import Denied
    with pytest.raises(Denied):
        choices(gpu, "nobody")
