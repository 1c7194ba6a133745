"""Scaling an endpoint up against its creator's limits, through the service's
real app on SQLite and PostgreSQL: each session counts once (a replica that
runs is in what the limits leave already, not again among the replicas
asked for), refusals give the exact numbers and say whose limits they are
(the creator's, when an admin scales); and the rule (``serving.fit``)
with plain data.

The world is test_endpoints.py's: alice a member of acme/ml with the
``default`` policy, ada the admin of acme, a group ``infer`` of one node
with 4 CPUs that runs every session type.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from quota_service.serving import fit
from service_app import served  # noqa: F401
from test_endpoints import IMAGE, env  # noqa: F401


async def lab(env):  # noqa: F811
    """alice's own Lab: one interactive session of 1 CPU."""
    return await env.ok("POST", "internal/allocations", "internal", 201, {
        "user": "alice", "project": "ml", "resource_group": "infer",
        "slots": {"cpu": "1", "mem": "1G"}})


async def replica(env, ep, n):  # noqa: F811
    """A replica's allocation, asked for as the serving controller's spawns ask."""
    return await env.ok("POST", "internal/allocations", "internal", 201, {
        "user": "alice", "endpoint": ep["id"], "project": "ml", "resource_group": "infer",
        "image": IMAGE, "slots": ep["slots"], "session_type": "inference",
        "server_name": f"ep-{ep['name']}-{n}"})


async def running(env, sessions=None, cpu=None):  # noqa: F811
    """alice's Lab and an endpoint of hers with its one replica admitted,
    under a policy of at most ``sessions`` sessions and ``cpu`` CPUs."""
    policy = {"max_concurrent_sessions": sessions, "unspecified_limited": False,
              "total_resource_slots": {} if cpu is None else {"cpu": cpu}}
    env.set_policy(**policy)
    await lab(env)
    ep = await env.ok("POST", "endpoints", "alice", 201, env.body(replicas=1))
    await replica(env, ep, 0)
    return ep


#: who scales alice's endpoint, and whose limits a refusal names: hers, also
#: when ada (admin of acme, no sessions of her own) scales it
CALLERS = pytest.mark.parametrize("caller, whose", [
    ("alice", "your limits"), ("ada", "the limits of alice (the endpoint's creator)")])


@CALLERS
async def test_scaling_up_within_the_session_limit_counts_the_running_replica_once(
        env, caller, whose):  # noqa: F811
    """3 sessions at most; the Lab and one replica hold 2: a second replica
    is the third session, and fits."""
    ep = await running(env, sessions=3)
    got = await env.ok("PATCH", f"endpoints/{ep['id']}", caller, 200, {"replicas": 2})
    assert got["replicas"] == 2


@CALLERS
async def test_scaling_past_the_session_limit_is_refused_with_the_exact_numbers(
        env, caller, whose):  # noqa: F811
    ep = await running(env, sessions=3)
    r, data = await env.call("PATCH", f"endpoints/{ep['id']}", caller, {"replicas": 3})
    assert r.code == 422, data
    said = (f"3 replicas with 1 running or queued already are 2 more sessions: {whose} "
            "leave room for 1 more")
    assert data["detail"] == [{"field": "replicas", "message": said}]
    assert data["message"] == f"replicas: {said}"
    assert (await env.ok("GET", f"endpoints/{ep['id']}", "alice", 200))["replicas"] == 1


async def test_replicas_asked_for_and_not_yet_admitted_count_as_new(env):  # noqa: F811
    """At 2 replicas with only one admitted, a third is 2 new sessions: the
    one still to start and the new one."""
    ep = await running(env, sessions=4)
    await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200, {"replicas": 2})
    await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200, {"replicas": 3})
    r, data = await env.call("PATCH", f"endpoints/{ep['id']}", "alice", {"replicas": 4})
    assert r.code == 422, data
    assert data["detail"][0]["message"] == (
        "4 replicas with 1 running or queued already are 3 more sessions: your limits leave "
        "room for 2 more")


async def test_slots_count_the_running_replica_once(env):  # noqa: F811
    """3 CPUs at most; the Lab and the replica hold 2 (1 each)."""
    ep = await running(env, cpu="3")
    assert (await env.ok("PATCH", f"endpoints/{ep['id']}", "alice", 200,
                         {"replicas": 2}))["replicas"] == 2
    r, data = await env.call("PATCH", f"endpoints/{ep['id']}", "alice", {"replicas": 3})
    assert r.code == 422, data
    assert data["detail"] == [{"field": "slots.cpu", "message":
                               "2 more (of 3) x 1 = 2: your limits leave 1"}]


# -- the rule with plain data ------------------------------------------------------------

def test_held_replicas_are_not_counted_again():
    slots = {"cpu": Decimal(1)}
    left = {"cpu": Decimal(1)}
    assert fit.problems(slots, 2, left, 1, held=1) == []
    assert fit.problems(slots, 2, left, 1) == [
        {"field": "replicas",
         "message": "2 replicas are 2 sessions: your limits leave room for 1 more"},
        {"field": "slots.cpu", "message": "2 x 1 = 2: your limits leave 1"}]
    # scaling down or to what runs asks for nothing new
    assert fit.problems(slots, 1, {"cpu": Decimal(0)}, 0, held=2) == []
    assert fit.problems(slots, 3, left, 0, held=2, whose="the limits of carol") == [
        {"field": "replicas", "message": "3 replicas with 2 running or queued already are "
         "1 more session: the limits of carol leave room for 0 more"}]


def test_whose_limits_names_the_creator_unless_they_ask():
    assert fit.whose_limits("carol", "carol") == "your limits"
    assert fit.whose_limits("carol", None) == "your limits"
    assert fit.whose_limits("carol", "admin") == (
        "the limits of carol (the endpoint's creator)")
