"""Decisions in batches (core.groupcommit + scheduling.batchmemo) answer exactly
as the same requests one transaction each, in the same order.

Random rounds of submits and releases (some of them failing: an allocation
that does not exist) go through the group commit all at once, with random
batch sizes, so that the batches' memos carry admissions, queued requests,
releases and cancellations from one decision to the next, and from one
batch to the next (one group commit for the whole play); between rounds,
an admin changes a policy, drains or restores a node, renumbers a node's
devices or a queue pass runs, each in its own transaction as the service
does them. The oracle is the same sequence, one ledger transaction per
request (the path tests/test_ledger_property.py checks). Every answer, and
the ledger after each round, must be the same; and nothing is ever
over-committed. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_world import SECOND, T0
from quota_service.core import db
from quota_service.core.errors import ApiError
from quota_service.core.groupcommit import GroupCommit
from quota_service.core.models import Allocation, AuditEntry, Node
from quota_service.scheduling import batchmemo, ledger
from test_ledger_property import LIMITS, NODES, REQUEST, USERS, check_invariants
from test_ledger_property import prop  # noqa: F401 (the fixture: NODES granted to acme)

SUBMIT = st.tuples(st.just("submit"), st.sampled_from(sorted(USERS)), REQUEST,
                   st.sampled_from([[], ["A100"], ["T4"]]))
RELEASE = st.tuples(st.just("release"), st.integers(0, 40))
MISSING = st.tuples(st.just("missing"))
ROUND = st.lists(st.one_of(SUBMIT, SUBMIT, SUBMIT, RELEASE, RELEASE, MISSING),
                 min_size=1, max_size=12)
BETWEEN = st.one_of(
    st.tuples(st.just("policy"), LIMITS, st.sampled_from([None, 1, 2, 4])),
    st.tuples(st.just("drain"), st.sampled_from(sorted(NODES)), st.booleans()),
    st.tuples(st.just("model"), st.sampled_from(["A100", "T4"])),
    st.tuples(st.just("schedule")),
)
PLAN = st.lists(st.tuples(ROUND, BETWEEN, st.integers(1, 5)), min_size=1, max_size=5)
#: often no limit at all, so that the batches admit and queue much
LOOSE = st.one_of(st.just({}), st.just({}), LIMITS)
SETUP = st.fixed_dictionaries({"policy": LOOSE, "ml": LOOSE, "web": LOOSE,
                               "sessions": st.sampled_from([1, 2, 3]),
                               "hol_passes": st.sampled_from([0, 1, 3])})


def start(cluster, setup) -> None:
    with cluster.world.tx() as s:
        s.execute(sa.delete(Allocation))
        s.execute(sa.delete(AuditEntry))
    cluster.now = T0
    cluster.set_policy("default", total_resource_slots=setup["policy"],
                       max_concurrent_sessions=setup["sessions"], max_pending_sessions=None)
    cluster.set_project("acme", "ml", slots=setup["ml"])
    cluster.set_project("acme", "web", slots=setup["web"])
    cluster.set_group("prop", hol_passes=setup["hol_passes"])
    for name in NODES:
        cluster.set_node(name, schedulable=True)
    with cluster.world.tx() as s:
        s.scalar(sa.select(Node).where(Node.name == "a100-1")).devices[1].model = "A100"


def works(cluster, ops, ids: list[str]):
    """Each op of a round as ``work(session)``; releases name the allocations
    made before the round (``ids``), by position."""
    out = []
    for op in ops:
        cluster.now += SECOND
        now = cluster.now
        if op[0] == "submit":
            _, user, amounts, models = op
            body = cluster.body(USERS[user], "prop", slots=amounts, gpu_models=models)
            p = cluster.principal(user)
            out.append(lambda s, p=p, body=body, now=now: ledger.submit(
                s, p, body, now, cluster.strategy))
        elif op[0] == "release" and ids:
            alloc_id, root = ids[op[1] % len(ids)], cluster.principal("root")
            out.append(lambda s, a=alloc_id, now=now: ledger.release(s, root, a, now, "done"))
        else:  # an allocation nobody made: NotFound, rolled back alone
            root = cluster.principal("root")
            out.append(lambda s, now=now: ledger.release(s, root, "no-such-id", now, "done"))
    return out


def answer(outcome, ids: list[str]):
    """An answer with allocation ids replaced by their position."""
    ok, value = outcome
    if not ok:
        assert isinstance(value, ApiError), value
        return ("error", type(value).__name__, value.message)
    if value["id"] not in ids:
        ids.append(value["id"])
    return ("ok", ids.index(value["id"]), value["state"], value["node"],
            [(g["index"], g["share"]) for g in value["gpus"]],
            [r["text"] for r in value["reasons"] or []])


def one_by_one(cluster, round_works):
    outcomes = []
    for work in round_works:
        try:
            with db.ledger_transaction(cluster.world.session_factory) as s:
                outcomes.append((True, work(s)))
        except ApiError as e:
            outcomes.append((False, e))
    return outcomes


def group_commit(cluster, max_batch: int = 200) -> GroupCommit:
    """The ledger's group commit as the service makes it: each batch starts
    from what the last one left (``batchmemo.Carry``) while nobody else
    changed the allocations."""
    return GroupCommit(cluster.world.session_factory, ledger_lock=True, max_batch=max_batch,
                       view=batchmemo.Carry())


def batched(cluster, round_works, max_batch: int, commit: GroupCommit | None = None):
    """The round's works queued at once on ``commit`` (a new one if None)."""
    commit = commit or group_commit(cluster)
    commit.max_batch, before = max_batch, commit.batches

    async def all_at_once():
        return await asyncio.gather(*(commit.run(w) for w in round_works),
                                    return_exceptions=True)

    values = asyncio.run(all_at_once())
    # full batches, in order
    assert commit.batches - before == -(-len(round_works) // max_batch)
    return [(not isinstance(v, Exception), v) for v in values]


def between(cluster, op) -> None:
    cluster.now += SECOND
    if op[0] == "policy":
        cluster.set_policy("default", total_resource_slots=op[1], max_concurrent_sessions=op[2])
    elif op[0] == "drain":
        cluster.set_node(op[1], schedulable=op[2])
    elif op[0] == "model":  # a device changes: a100-1's second GPU
        with cluster.world.tx() as s:
            node = s.scalar(sa.select(Node).where(Node.name == "a100-1"))
            node.devices[1].model = op[1]
    else:
        cluster.schedule("prop")


def ledger_rows(cluster, ids: list[str]):
    with cluster.world.session_factory() as s:
        rows = s.execute(sa.select(Allocation.id, Allocation.state, Allocation.node_id,
                                   Allocation.gpus, Allocation.reasons)).all()
    return sorted((ids.index(r.id) if r.id in ids else -1, r.state, r.node_id,
                   r.gpus, r.reasons) for r in rows)


def play(cluster, setup, plan, batch: bool):
    """The plan's rounds, batched on one group commit kept for the whole
    play (so what a round's last batch read carries to the next round's
    first, unless the admin's change between them made it stale) or one
    transaction each."""
    start(cluster, setup)
    commit = group_commit(cluster)
    ids: list[str] = []
    trace = []
    # a policy lowered, or a GPU's model changed, under what runs: the
    # invariants of the limits and the models end (the oracle still holds)
    rules_moved = False
    for round_ops, admin, max_batch in plan:
        round_works = works(cluster, round_ops, list(ids))
        outcomes = (batched(cluster, round_works, max_batch, commit) if batch
                    else one_by_one(cluster, round_works))
        trace.append([answer(o, ids) for o in outcomes])
        if not rules_moved:
            check_invariants(cluster)
        between(cluster, admin)
        rules_moved = rules_moved or admin[0] in ("policy", "model")
        trace.append(ledger_rows(cluster, ids))
    return trace


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setup=SETUP, plan=PLAN)
def test_batches_answer_exactly_as_one_transaction_each(prop, setup, plan):
    assert play(prop, setup, plan, batch=True) == play(prop, setup, plan, batch=False)


def test_a_batch_counts_what_its_own_decisions_took(prop):
    """Three requests of one user with room for one session, one batch: the
    first is admitted, the second waits (its user's limit), the third is
    refused (one waiting allowed); then a release in the same batch lets a
    fourth in."""
    prop.set_policy("default", total_resource_slots={}, max_concurrent_sessions=1,
                    max_pending_sessions=1)
    ask = [("submit", "alice", {"cpu": "1"}, [])] * 3
    round_works = works(prop, ask, [])
    first = batched(prop, round_works, 10)
    ids: list[str] = []
    assert [answer(o, ids)[:3] if o[0] else answer(o, ids)[:2] for o in first] == [
        ("ok", 0, "allocated"), ("ok", 1, "pending"), ("error", "Invalid")]
    again = batched(prop, works(prop, [("release", "alice", 0)][:0] + [("release", 0)]
                                + [("submit", "alice", {"cpu": "1"}, [])], ids[:1]), 10)
    assert [o[1]["state"] for o in again] == ["released", "allocated"]


def test_a_request_waiting_for_capacity_in_a_batch_holds_the_line_for_the_next(prop):
    prop.set_policy("default", total_resource_slots={}, max_concurrent_sessions=None,
                    max_pending_sessions=None)
    prop.set_group("prop", hol_passes=3)
    ask = [("submit", "alice", {"cpu": "16"}, []),  # fills cpu-1
           ("submit", "bob", {"cpu": "10"}, []),    # no node has 10 free: waits
           ("submit", "ada", {"cpu": "1"}, [])]     # fits, but queues behind bob
    out = batched(prop, works(prop, ask, []), 10)
    assert [o[1]["state"] for o in out] == ["allocated", "pending", "pending"]
    assert "queued behind 1 earlier request" in out[2][1]["reasons"][0]["text"]


def test_a_batch_never_places_two_sessions_on_one_gpu(prop):
    prop.set_policy("default", total_resource_slots={}, max_concurrent_sessions=None,
                    max_pending_sessions=None)
    ask = [("submit", "alice", {"cpu": "1", "gpu": "2"}, ["A100"]),  # both of a100-1's GPUs
           ("submit", "bob", {"cpu": "1", "gpu": "1"}, ["A100"])]    # none left: waits
    out = batched(prop, works(prop, ask, []), 10)
    assert [o[1]["state"] for o in out] == ["allocated", "pending"]
