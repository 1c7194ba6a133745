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


def test_a_pass_judges_queued_requests_by_their_keypairs_policies_read_together(cluster):
    """Two requests made with keypairs wait; the pass judges each by its
    keypair's policy (not the user's), the keypairs read in one query;
    one whose keypair is gone is judged by the user's policy."""
    import dataclasses

    import sqlalchemy as sa

    from quota_service.core import keys
    from quota_service.core.models import Keypair, User

    cluster.set_policy("default", max_concurrent_sessions=1, max_pending_sessions=5)
    cluster.set_policy("wide", max_concurrent_sessions=3, max_pending_sessions=5)
    cluster.add_group("g", {"g-n": ("A100", "A100", "A100", "A100")})
    with cluster.world.tx() as s:
        uid = s.scalar(sa.select(User.id).where(User.name == "alice"))
        for access in ("AKWIDE1", "AKWIDE2", "AKGONE"):
            s.add(Keypair(access_key=access, secret_hash=keys.hash_secret("x"), user_id=uid,
                          resource_policy="wide" if access != "AKGONE" else "default"))
    alice = cluster.principal("alice")
    held = cluster.submit("alice", "ml", "g", slots={"gpu": "1"})  # alice's one (default)
    waiting = {}
    for access in ("AKWIDE1", "AKWIDE2", "AKGONE"):
        # asked with a keypair of a narrower policy: waits for alice's own limit
        cluster._principals["alice"] = dataclasses.replace(alice, keypair=access,
                                                           policy="default")
        waiting[access] = cluster.submit("alice", "ml", "g", slots={"gpu": "1"})
    cluster._principals.pop("alice")
    assert {w["state"] for w in waiting.values()} == {"pending"}
    with cluster.world.tx() as s:
        s.execute(sa.delete(Keypair).where(Keypair.access_key == "AKGONE"))
    statements = []

    def count(conn, cursor, statement, *args):
        if "FROM keypairs" in statement:
            statements.append(statement)

    engine = cluster.world.session_factory.kw["bind"]
    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        admitted = cluster.schedule("g")
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
    # the wide keypairs' requests fit their policy (3 at once with the held
    # one); the one whose keypair is gone falls back to alice's (1): waits
    assert sorted(admitted) == sorted([waiting["AKWIDE1"]["id"], waiting["AKWIDE2"]["id"]])
    assert cluster.states(waiting["AKGONE"]["id"], held["id"]) == ["pending", "allocated"]
    assert len(statements) == 1  # every keypair of the queue in one query
