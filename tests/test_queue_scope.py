"""A queue pass woken by a release goes over the released session's group only
(scheduling/queue.schedule_all's ``only``): what it costs is what it touches."""

from __future__ import annotations

import logging

from quota_service.scheduling import queue as queueing


def test_a_pass_over_some_groups_admits_in_those_alone(cluster):
    cluster.set_policy("default", max_concurrent_sessions=None)
    for name in ("left", "right"):
        cluster.add_group(name, {f"{name}-n": ("A100",)})
    held = {name: cluster.submit("alice", "ml", name, slots={"gpu": "1"}) for name in ("left", "right")}
    waiting = {name: cluster.submit("alice", "ml", name, slots={"gpu": "1"}) for name in ("left", "right")}
    assert {w["state"] for w in waiting.values()} == {"pending"}
    for name in ("left", "right"):
        cluster.release("alice", held[name]["id"])
    results = queueing.schedule_all(cluster.world.session_factory, cluster.now, cluster.strategy,
                                    None, 60, logging.getLogger("t"), only=frozenset({"left"}))
    assert [r.group for r in results] == ["left"]
    assert cluster.states(waiting["left"]["id"], waiting["right"]["id"]) == ["allocated", "pending"]
    queueing.schedule_all(cluster.world.session_factory, cluster.now, cluster.strategy,
                          None, 60, logging.getLogger("t"))
    assert cluster.states(waiting["right"]["id"]) == ["allocated"]


def test_a_pass_moves_its_view_of_the_nodes_by_each_admission(cluster):
    """One GPU comes free and two requests wait for it: the pass admits the
    first and keeps the second waiting (its nodes, moved by the first
    admission, have nothing left)."""
    cluster.set_policy("default", max_concurrent_sessions=None)
    cluster.add_group("one", {"one-n": ("A100",)})
    held = cluster.submit("alice", "ml", "one", slots={"gpu": "1"})
    first = cluster.submit("alice", "ml", "one", slots={"gpu": "1"})
    second = cluster.submit("alice", "ml", "one", slots={"gpu": "1"})
    cluster.release("alice", held["id"])
    assert cluster.schedule("one") == [first["id"]]
    assert cluster.states(first["id"], second["id"]) == ["allocated", "pending"]
