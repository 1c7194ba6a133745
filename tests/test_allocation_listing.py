"""Listing allocations (``GET allocations``): whose each caller sees, the
state, user and limit filters, all in the query
(quota_service/scheduling/listing.py), through the service's real app on
SQLite and PostgreSQL. alice (acme/ml) and gina (globex/lab) hold sessions;
ada administers acme, gus globex, root is superadmin, bob is another acme user.
"""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.scheduling.listing import parse_states
from service_app import served  # noqa: F401


@pytest.fixture
def sessions(cluster) -> dict[str, list[str]]:
    """alice: 4 sessions (the first two released), gina: 1; in the order made."""
    cluster.add_group("gpu", {"node-1": ()}, domains=("acme", "globex"))
    made = {"alice": [], "gina": []}
    for user, project in [("alice", "ml")] * 4 + [("gina", "lab")]:
        made[user].append(cluster.submit(user, project, "gpu", slots={"cpu": "1"})["id"])
    for alloc_id in made["alice"][:2]:
        cluster.release("alice", alloc_id)
    return made


async def listed(served, caller: str, query: str = "") -> tuple[list[str], int]:  # noqa: F811
    resp, data = await served.call("GET", f"allocations{query}", caller)
    assert resp.code == 200, data
    return [a["id"] for a in data], int(resp.headers["X-Total-Count"])


@pytest.mark.parametrize("caller, whose", [
    ("root", ("alice", "gina")), ("ada", ("alice",)), ("gus", ("gina",)),
    ("alice", ("alice",)), ("gina", ("gina",)), ("bob", ()),
])
async def test_each_caller_lists_whose_sessions_the_rules_say(served, sessions, caller, whose):  # noqa: F811
    expected = [i for user in ("alice", "gina") if user in whose for i in sessions[user]]
    got, total = await listed(served, caller)
    assert sorted(got) == sorted(expected) and total == len(expected)
    # asking for another user's narrows, and never widens
    got, _ = await listed(served, caller, "?user=gina")
    assert got == (sessions["gina"] if "gina" in whose else [])


async def test_states_narrow_one_or_several(served, sessions):  # noqa: F811
    alice = sessions["alice"]
    assert await listed(served, "alice", "?state=released") == (alice[:2], 2)
    assert await listed(served, "alice", "?state=allocated") == (alice[2:], 2)
    assert await listed(served, "alice", "?state=released,cancelled") == (alice[:2], 2)
    assert await listed(served, "alice", "?state=pending") == ([], 0)


async def test_a_limit_keeps_those_that_began_or_ended_last_and_counts_them_all(
        served, cluster, sessions):  # noqa: F811
    a0, a1, a2, a3 = sessions["alice"]  # a0 and a1 ended after every start
    assert await listed(served, "alice", "?limit=3") == ([a0, a1, a3], 4)
    assert await listed(served, "alice", "?limit=1&state=released") == ([a1], 2)
    assert await listed(served, "root", "?limit=2") == ([a1, sessions["gina"][0]], 5)
    assert await listed(served, "alice", "?limit=100") == ([a0, a1, a2, a3], 4)
    cluster.now += dt.timedelta(seconds=5)
    cluster.release("alice", a2)  # the oldest running one ends: now it is the newest
    assert await listed(served, "alice", "?limit=1") == ([a2], 4)


@pytest.mark.parametrize("query, message", [
    ("?state=running", "state: 'running' is not one of pending, allocated, released, cancelled"),
    ("?state=released,<b>", "state: '<b>' is not one of"),
    ("?limit=0", "limit: must be an integer from 1 to 100000"),
    ("?limit=x", "limit: must be an integer from 1 to 100000"),
])
async def test_a_bad_filter_is_a_400_that_says_why(served, sessions, query, message):  # noqa: F811
    resp, data = await served.call("GET", f"allocations{query}", "alice")
    assert resp.code == 400 and data["message"].startswith(message)


def test_states_are_read_once_each_in_order():
    assert parse_states(None) is None and parse_states("") is None
    assert parse_states("allocated, pending,allocated") == ("allocated", "pending")
