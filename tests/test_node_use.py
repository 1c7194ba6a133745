"""What a node holds, as every caller who sees its group reads it
(``GET nodes``): slots in use and the share taken of each GPU, exact, and
never whose -- the Lab Summary's GPU map is drawn from it."""

from __future__ import annotations

import pytest

from quota_service.core.errors import Hidden
from quota_service.core.db import transaction
from quota_service.scheduling import inventory


@pytest.fixture
def solo(cluster):
    """One node of two A100s in group "solo", granted to domain acme."""
    cluster.add_group("solo", {"solo-1": ("A100", "A100")})
    return cluster


def nodes_as(cluster, user: str) -> list[dict]:
    with transaction(cluster.world.session_factory) as s:
        return inventory.list_nodes(s, cluster.principal(user))


def node_as(cluster, user: str, name: str = "solo-1") -> dict:
    with transaction(cluster.world.session_factory) as s:
        return inventory.get_node(s, cluster.principal(user), name)


def test_an_idle_node_holds_nothing(solo):
    n = node_as(solo, "bob")
    assert n["used"] == {}
    assert [d["taken"] for d in n["devices"]] == ["0", "0"]


def test_shares_add_up_exactly_and_say_nobody(solo):
    for _ in range(3):
        solo.submit("alice", "ml", "solo", slots={"cpu": "1", "gpu.shares": "0.3"})
    n = node_as(solo, "bob")  # bob, of the same domain, sees the use, not the users
    assert [d["taken"] for d in n["devices"]] == ["0.9", "0"]
    assert n["used"]["gpu.shares"] == "0.9" and n["used"]["cpu"] == "3"
    assert "alice" not in repr(n)
    assert nodes_as(solo, "bob") == [n]


def test_whole_gpus_and_released_sessions(solo):
    whole = solo.submit("alice", "ml", "solo", slots={"gpu": "1"})
    half = solo.submit("alice", "ml", "solo", slots={"gpu.shares": "0.5"})
    taken = {d["index"]: d["taken"] for d in node_as(solo, "alice")["devices"]}
    assert sorted(taken.values()) == ["0.5", "1"]
    solo.release("alice", whole["id"])
    assert sorted(d["taken"] for d in node_as(solo, "alice")["devices"]) == ["0", "0.5"]
    solo.release("alice", half["id"])
    assert node_as(solo, "alice")["used"] == {}


def test_pending_requests_take_nothing(solo):
    solo.submit("alice", "ml", "solo", slots={"gpu": "2"})
    pending = solo.submit("alice", "ml", "solo", slots={"gpu": "1"})
    assert pending["state"] == "pending"
    assert sorted(d["taken"] for d in node_as(solo, "root")["devices"]) == ["1", "1"]


def test_a_node_of_a_group_not_granted_stays_hidden(solo):
    with pytest.raises(Hidden):
        node_as(solo, "gus")
    assert nodes_as(solo, "gus") == []
