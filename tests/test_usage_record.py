"""The usage record: the ledger appends one immutable interval when a session
that ran is released, nothing for a cancelled request, nothing twice; the
migration backfills the same intervals from the ledger (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import sqlalchemy as sa

from ledger_world import T0
from quota_service.core import db
from quota_service.core.usagemodels import UsageInterval
from quota_service.operations import usage_store

HOUR = dt.timedelta(hours=1)


def facts(session_factory):
    with session_factory() as s:
        return sorted((i.allocation, i.user, i.domain, i.project, i.resource_group,
                       dict(i.slots), i.start, i.end) for i in usage_store.recorded(s))


def test_a_release_appends_one_interval_and_a_cancel_none(cluster, engine):
    cluster.add_group("gpu", {"n1": ("A100",)})
    ran = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1.5", "gpu.shares": "0.25"})
    blocked = cluster.submit("alice", "ml", "gpu", slots={"gpu": "1"})
    assert (ran["state"], blocked["state"]) == ("allocated", "pending")
    cluster.release("alice", blocked["id"])          # cancelled: it never ran
    cluster.now += HOUR
    cluster.release("alice", ran["id"])
    cluster.release("alice", ran["id"])              # again: changes nothing
    rows = facts(cluster.world.session_factory)
    assert rows == [(ran["id"], "alice", "acme", "ml", "gpu",
                     {"cpu": Decimal("1.5"), "gpu.shares": Decimal("0.25")},
                     T0 + dt.timedelta(seconds=1), T0 + dt.timedelta(seconds=2) + HOUR)]
    with cluster.world.session_factory() as s:
        row = s.scalar(sa.select(UsageInterval))
        # the allocation's GPUs as placed: a declared device with no UUID or memory given
        assert row.gpus == [{"index": 0, "uuid": "", "share": "0.25", "memory": 0}]
        assert row.session_type == "interactive"
    # running sessions are read from the ledger, not recorded
    live = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    with cluster.world.session_factory() as s:
        seen = usage_store.intervals(s, T0, T0 + 2 * HOUR)
    assert {(i.allocation, i.end is None) for i in seen} == {(ran["id"], False),
                                                             (live["id"], True)}


def test_the_migration_backfills_what_the_releases_recorded(cluster, engine):
    cluster.add_group("gpu", {"n1": ("A100", "A100")}, domains=("acme", "globex"))
    ids = [cluster.submit(u, p, "gpu", slots=s)["id"] for u, p, s in (
        ("alice", "ml", {"cpu": "1", "gpu": "1"}),
        ("gina", "lab", {"mem": "2G"}),
        ("alice", "ml", {"gpu.shares": "0.5"}))]
    cluster.now += HOUR
    for i in ids[:2]:
        cluster.release("root", i)
    before = facts(cluster.world.session_factory)
    assert len(before) == 2
    engine.dispose()
    db.downgrade(engine, "0005")
    db.upgrade(engine)
    assert facts(cluster.world.session_factory) == before
