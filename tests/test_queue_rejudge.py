"""Judging again only what a change touches (scheduling/rejudge.py) decides
exactly what judging everybody decides.

The property: on random queues, with random sessions starting and ending,
requests cancelled and limits, policies and the queue's rules changed
between passes, every pass that reuses its memo (``queue.Memo`` with the
service's change log) leaves every allocation exactly as a pass that judges
every request would have (state, node, GPUs, reasons, passes counted) --
the reference pass runs first on the same database and is rolled back.
Both databases (the ``db_url`` fixture)."""

from __future__ import annotations

import datetime as dt
import random

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import sessionmaker

from quota_service.core import db
from quota_service.core.errors import Invalid
from quota_service.core.models import Allocation
from quota_service.core.schemas import UserCreate
from quota_service.scheduling import queue as queueing, rejudge
from quota_service.scheduling.waiters import Waiters
from quota_service.tenancy import accounts

#: (user, domain, project); alice is in acme/ml and gina in globex/lab already
MEMBERS = [("alice", "acme", "ml"), ("ann", "acme", "ml"), ("amy", "acme", "web"),
           ("gina", "globex", "lab"), ("gil", "globex", "lab")]
SEEDS = 3
STEPS = 45


class Rollback(Exception):
    pass


def outcome(s) -> dict:
    return {i: (state, reasons, passes, node, gpus) for i, state, reasons, passes, node, gpus in
            s.execute(sa.select(Allocation.id, Allocation.state, Allocation.reasons,
                                Allocation.passes, Allocation.node_id, Allocation.gpus))}


@pytest.fixture
def world(cluster):
    with cluster.world.tx() as s:
        root = cluster.world.principal("root")
        for name, domain, project in MEMBERS[1:3] + MEMBERS[4:]:
            accounts.create_user(s, root, UserCreate(name=name, domain=domain))
            accounts.add_member(s, root, domain, project, name)
    cluster.add_group("g", {"n1": (), "n2": ()}, cpu="4", mem="16G",
                      domains=("acme", "globex"), hol_passes=2)
    waiters = Waiters()
    waiters.watch(cluster.world.session_factory)
    return cluster, waiters


def change_something(cluster, rng: random.Random) -> str:
    """One random change of a limit, a policy or the queue's rules."""
    kind = rng.choice(["policy", "project", "domain", "group", "sessions"])
    if kind == "policy":
        cluster.set_policy("default", total_resource_slots={"cpu": rng.choice([2, 3, 5, 8])})
    elif kind == "project":
        cluster.set_project("acme", "ml", slots={"cpu": rng.choice([1, 3, 6])})
    elif kind == "domain":
        cluster.set_domain("globex", slots={"cpu": rng.choice([2, 4, 8])})
    elif kind == "group":
        cluster.set_group("g", queue_order=rng.choice(["fifo", "priority", "drf"]),
                          hol_passes=rng.choice([0, 1, 3]))
    else:
        cluster.set_policy("default", max_concurrent_sessions=rng.choice([None, 2, 4]))
    return kind


def step(cluster, rng: random.Random, live: dict[str, str]) -> None:
    """One random change between passes: requests join, sessions end,
    requests are cancelled, a limit changes."""
    roll = rng.random()
    if roll < 0.45 or not live:
        for _ in range(rng.choice([1, 1, 2, 4])):
            user, _domain, project = rng.choice(MEMBERS)
            try:
                model = cluster.submit(user, project, "g",
                                       slots={"cpu": rng.choice(["0.5", "1", "1", "2", "3"])})
            except Invalid:  # refused: over a limit it can never meet
                continue
            live[model["id"]] = user
            if rng.random() < 0.3:  # an admin's priority
                with cluster.world.tx() as s:
                    s.get(Allocation, model["id"]).priority = rng.choice([1, 5])
    elif roll < 0.85:
        with cluster.world.session_factory() as s:
            states = dict(s.execute(sa.select(Allocation.id, Allocation.state)).all())
        ids = sorted(i for i in live if states[i] in ("allocated", "pending"))
        if ids:
            alloc_id = rng.choice(ids)
            cluster.release(live.pop(alloc_id), alloc_id)
    else:
        change_something(cluster, rng)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_judging_again_only_what_changes_touch_decides_as_judging_everybody(
        world, seed, monkeypatch):
    cluster, waiters = world
    rng = random.Random(seed)
    factory = cluster.world.session_factory
    # the reference pass's sessions: the same database, unseen by the change log
    reference = sessionmaker(**factory.kw)
    memo = queueing.Memo()
    live: dict[str, str] = {}
    judged = {"full": 0, "incremental": 0}
    real_judge = queueing.judge
    counting = ["full"]

    def counted(*args):
        judged[counting[0]] += 1
        return real_judge(*args)

    monkeypatch.setattr(queueing, "judge", counted)
    for n in range(STEPS):
        for _ in range(rng.choice([1, 2, 3])):
            step(cluster, rng, live)
        cluster.now += dt.timedelta(seconds=1)
        counting[0] = "full"
        try:
            with db.ledger_transaction(reference) as s:
                full = queueing.schedule(s, "g", cluster.now, cluster.strategy)
                expected = outcome(s)
                raise Rollback
        except Rollback:
            pass
        counting[0] = "incremental"
        with db.ledger_transaction(factory) as s:
            generation = waiters.generation
            kept = queueing.schedule(s, "g", cluster.now, cluster.strategy, memo=memo,
                                     generation=generation, since=waiters.changes.since)
            got = outcome(s)
        assert kept.admitted == full.admitted, (seed, n)
        assert kept.cancelled == full.cancelled, (seed, n)
        assert got == expected, (seed, n)
    # the memo spared work, or the comparison proved nothing
    assert judged["incremental"] < 0.85 * judged["full"], judged


def test_a_session_ending_frees_what_it_held_and_one_starting_takes_it():
    own = rejudge.own_keys(1, 2, 3, 4)
    by_user = rejudge.kept([{"level": "user", "code": "slot-limit"}], own)
    by_capacity = rejudge.kept([{"level": "resource-group", "code": "capacity"}], own)
    assert not by_user.waits_for_capacity and by_capacity.waits_for_capacity
    other_user_same_project = rejudge.Touched()
    other_user_same_project.ended(rejudge.own_keys(9, 2, 3, 4))
    # it frees project, domain and group capacity: not what blocks by_user
    assert not rejudge.must_judge(by_user, other_user_same_project)
    assert rejudge.must_judge(by_capacity, other_user_same_project)
    started = rejudge.Touched()
    started.started(rejudge.own_keys(9, 2, 3, 5))  # takes the project's usage elsewhere
    assert rejudge.must_judge(by_user, started)  # it may now be over the project's limit
    assert not rejudge.must_judge(by_capacity, rejudge.Touched())
    unknown = rejudge.kept([{"level": "image", "code": "image"}], own)
    assert rejudge.must_judge(unknown, rejudge.Touched())


def test_a_pass_over_a_quiet_queue_is_skipped_only_when_it_would_change_nothing():
    now = dt.datetime(2031, 1, 1, tzinfo=dt.timezone.utc)
    own = rejudge.own_keys(1, 2, 3, 4)
    known = {"a": rejudge.kept([{"level": "resource-group", "code": "capacity"}], own)}
    old = now - dt.timedelta(seconds=100)
    assert rejudge.idle_pass([("a", 3, old)], known, 2, None, now, ())
    assert not rejudge.idle_pass([("a", 2, old)], known, 2, None, now, ())  # still counting
    assert not rejudge.idle_pass([("b", 3, old)], known, 2, None, now, ())  # never judged
    assert not rejudge.idle_pass([("a", 3, old)], known, 2, 60, now, ())  # timed out
    assert rejudge.idle_pass([("a", 3, old)], known, 2, 120, now, ())
    assert not rejudge.idle_pass([("a", 3, old)], known, 2, None, now, ("a",))  # abandoned
