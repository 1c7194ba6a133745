"""The scheduler page's endpoints: a resource group's pending queue in the
scheduler's order, an admin's change of a request's priority or place, and
its cancellation. The move rule is tested as data
(``scheduling.queueadmin``); the endpoints through the real tornado app."""

from __future__ import annotations

import datetime as dt

import pytest

from ledger_world import T0, Cluster
from quota_service.core.errors import Conflict, Invalid
from quota_service.scheduling import queueadmin
from quota_service.scheduling.queueadmin import Queued, Target
from service_app import served  # noqa: F401

S = dt.timedelta(seconds=1)


def q(i, sec, priority=0, movable=True):
    return Queued(i, T0 + sec * S, priority, 1, movable)


def moved(policy, queue, moving, target):
    keys = queueadmin.move(policy, queue, moving, target)
    after = [Queued(x.id, keys.get(x.id, x.key), x.priority, x.user_id, x.movable) for x in queue]
    return [x.id for x in queueadmin.current_order(policy, after)], keys


def test_a_request_moves_to_the_front_and_only_the_places_between_change():
    queue = [q("a", 1), q("b", 2), q("c", 3), q("d", 4)]
    order, keys = moved("fifo", queue, "c", Target(position=0))
    assert order == ["c", "a", "b", "d"]
    assert set(keys) == {"a", "b", "c"}  # d keeps its place and time


def test_before_and_after_another_request():
    queue = [q("a", 1), q("b", 2), q("c", 3), q("d", 4)]
    assert moved("fifo", queue, "a", Target(before="d"))[0] == ["b", "c", "a", "d"]
    assert moved("fifo", queue, "a", Target(after="d"))[0] == ["b", "c", "d", "a"]
    assert moved("fifo", queue, "b", Target(position=99))[0] == ["a", "c", "d", "b"]


def test_a_domain_admins_move_leaves_other_domains_requests_in_their_places():
    # x and y are another domain's: they keep positions 1 and 3
    queue = [q("a", 1), q("x", 2, movable=False), q("b", 3), q("y", 4, movable=False),
             q("c", 5)]
    order, keys = moved("fifo", queue, "c", Target(position=0))
    assert order == ["c", "x", "a", "y", "b"]
    assert "x" not in keys and "y" not in keys
    with pytest.raises(Invalid, match="may move"):
        queueadmin.move("fifo", queue, "c", Target(before="x"))


def test_equal_times_are_spread_so_the_wanted_order_holds():
    queue = [q("a", 1), q("b", 1), q("c", 1)]
    order, _ = moved("fifo", queue, "c", Target(position=0))
    assert order == ["c", "a", "b"]


def test_in_a_priority_queue_a_request_moves_among_its_priority():
    queue = [q("h1", 5, priority=9), q("a", 1), q("b", 2), q("c", 3)]
    order, keys = moved("priority", queue, "c", Target(position=0))
    assert order == ["h1", "c", "a", "b"] and "h1" not in keys
    with pytest.raises(Invalid, match="priority"):
        queueadmin.move("priority", queue, "c", Target(before="h1"))


def test_a_drf_queue_cannot_be_ordered_by_hand():
    with pytest.raises(Conflict, match="drf"):
        queueadmin.move("drf", [q("a", 1), q("b", 2)], "b", Target(position=0))


def test_a_target_is_needed_once():
    with pytest.raises(Invalid):
        queueadmin.move("fifo", [q("a", 1), q("b", 2)], "b", Target())
    with pytest.raises(Invalid, match="itself"):
        queueadmin.move("fifo", [q("a", 1), q("b", 2)], "b", Target(before="b"))


# --- through the service ---------------------------------------------------------------

@pytest.fixture
def queued(served):  # noqa: F811
    """gpu: one node of 2 cores, full (alice's running session); pending, in
    this order: alice a1, gina g1, alice a2, bob b1 (acme/web)."""
    c = Cluster(served.world)
    c.add_group("gpu", {"n1": ()}, cpu="2", domains=("acme", "globex"))
    c.join("bob", "acme", "web")
    c.submit("alice", "ml", "gpu", slots={"cpu": "2"})
    ids = {}
    for name, (user, project) in {"a1": ("alice", "ml"), "g1": ("gina", "lab"),
                                  "a2": ("alice", "ml"), "b1": ("bob", "web")}.items():
        r = c.submit(user, project, "gpu", slots={"cpu": "1"})
        assert r["state"] == "pending", r
        ids[name] = r["id"]
    served.svc.clock = lambda: c.now + S
    served.ids = ids
    return served


async def queue_of(srv, who):
    resp, body = await srv.call("GET", "resource-groups/gpu/queue", who)
    assert resp.code == 200, body
    return body


async def test_the_queue_in_order_with_other_domains_as_bare_places(queued):
    ids = queued.ids
    full = await queue_of(queued, "root")
    assert [e["id"] for e in full["entries"]] == [ids["a1"], ids["g1"], ids["a2"], ids["b1"]]
    assert full["entries"][0]["waits_for"] == "capacity" and full["entries"][0]["reasons"]
    ada = await queue_of(queued, "ada")
    assert ada["entries"][1] == {"position": 1, "visible": False}
    assert ada["hidden"] == 1 and ada["pending"] == 4
    assert [e.get("user") for e in ada["entries"]] == ["alice", None, "alice", "bob"]
    assert [e.get("server_name") for e in ada["entries"]] == ["", None, "", ""]
    gus = await queue_of(queued, "gus")
    assert [e.get("id") for e in gus["entries"]] == [None, ids["g1"], None, None]
    for who, code in (("alice", 403), ("gina", 403)):
        resp, body = await queued.call("GET", "resource-groups/gpu/queue", who)
        assert resp.code == code and body["message"], body


async def test_a_domain_admin_moves_their_request_and_the_access_log_has_before_and_after(queued):
    ids = queued.ids
    resp, body = await queued.call("PATCH", f"resource-groups/gpu/queue/{ids['b1']}", "ada",
                                   json_body={"position": 0})
    assert resp.code == 200, body
    assert body["position"] == 0
    order = [e.get("id") for e in (await queue_of(queued, "root"))["entries"]]
    assert order == [ids["b1"], ids["g1"], ids["a1"], ids["a2"]]  # gina's place kept
    resp, log = await queued.call("GET", "audit?action=queue.change", "ada")
    assert log["entries"][0]["detail"] == "priority 0 -> 0; position 3 -> 0 of 4 in gpu"
    assert log["entries"][0]["outcome"] == "success"


async def test_other_domains_requests_are_not_found_and_users_are_refused(queued):
    ids = queued.ids
    for who, target, code in (("ada", "g1", 404), ("gus", "a1", 404), ("alice", "a1", 403),
                              ("gina", "g1", 403)):
        resp, body = await queued.call("PATCH", f"resource-groups/gpu/queue/{ids[target]}", who,
                                       json_body={"priority": 5})
        assert resp.code == code, (who, body)
    resp, body = await queued.call("PATCH", f"resource-groups/gpu/queue/{ids['a1']}", "root",
                                   json_body={"before": ids["g1"], "after": ids["a2"]})
    assert resp.code == 422 and "at most one" in body["message"], body


async def test_priority_change_and_cancel_by_a_superadmin(queued):
    ids = queued.ids
    resp, body = await queued.call("PATCH", f"resource-groups/gpu/queue/{ids['a2']}", "root",
                                   json_body={"priority": 9})
    assert resp.code == 200 and body["priority"] == 9, body
    resp, body = await queued.call("DELETE", f"resource-groups/gpu/queue/{ids['g1']}", "root")
    assert resp.code == 204, body
    resp, body = await queued.call("GET", f"allocations/{ids['g1']}", "root")
    assert body["state"] == "cancelled" and "root" in body["release_reason"]
    resp, body = await queued.call("DELETE", f"resource-groups/gpu/queue/{ids['g1']}", "root")
    assert resp.code == 409 and "not pending" in body["message"]
    resp, log = await queued.call("GET", "audit?action=queue.cancel&outcome=success", "root")
    assert "was position 1 of 4" in log["entries"][0]["detail"]
    assert log["entries"][0]["domain"] == "globex"
    resp, body = await queued.call("PATCH", f"resource-groups/gpu/queue/{ids['a2']}", "root",
                                   json_body={})
    assert resp.code == 422 and "priority" in body["message"]
