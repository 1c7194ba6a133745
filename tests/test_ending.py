"""Ending a session without its model (quota_service/scheduling/ending.py,
the API's DELETE allocations/{id}): it reads its allocation in one query of
the columns an end needs, and ends it exactly as ``ledger.release`` does,
with the same checks. On SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.errors import Conflict, Hidden, NotFound
from quota_service.core.models import Allocation, AuditEntry
from quota_service.core.usagemodels import UsageInterval
from quota_service.scheduling import ending, sessionaudit


@pytest.fixture
def group(cluster):
    cluster.add_group("gpu", {"n1": ("A100", "A100")}, domains=("acme", "globex"))
    return cluster


def end(cluster, user: str, alloc_id: str, reason: str = "stopped by alice"):
    with db.ledger_transaction(cluster.world.session_factory) as s:
        return ending.end(s, cluster.principal(user), alloc_id, cluster.now, reason)


class Selects:
    """The SELECTs reading the allocations table, while counting."""

    def __init__(self, cluster):
        self.engine, self.count = cluster.world.session_factory.kw["bind"], 0
        sa.event.listen(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, params, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and "FROM allocations" in statement:
            self.count += 1

    def stop(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def row(cluster, alloc_id: str) -> dict:
    with cluster.world.session_factory() as s:
        a = s.get(Allocation, alloc_id)
        return {"state": a.state, "released_at": a.released_at, "ended_at": a.ended_at,
                "release_reason": a.release_reason}


def end_record(cluster, alloc_id: str) -> list[str]:
    with cluster.world.session_factory() as s:
        return list(s.scalars(sa.select(AuditEntry.detail).where(
            AuditEntry.target == alloc_id, AuditEntry.action == sessionaudit.END)))


def test_an_end_reads_its_allocation_once_and_ends_it_as_a_release_does(group):
    ended, released = (group.submit("alice", "ml", "gpu", slots={"cpu": "1", "gpu": "1"})["id"]
                       for _ in range(2))
    selects = Selects(group)
    try:
        assert end(group, "alice", ended) == ending.Ended("acme", "gpu")
    finally:
        selects.stop()
    assert selects.count == 1  # nothing it left out was read after
    group.release("alice", released, "stopped by alice")
    assert row(group, ended) == row(group, released)
    assert row(group, ended)["state"] == "released"
    # the same record, aside from the GPU it held and how long it ran (one
    # submit a second after the other)
    a, b = (re.sub(r"#\d|ran: \d+ s", "", r)
                for r in end_record(group, ended) + end_record(group, released))
    assert a == b and "ended: stopped by alice" in a and "node: n1" in a
    with group.world.session_factory() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(UsageInterval).where(
            UsageInterval.allocation_id.in_([ended, released]))) == 2


def test_an_end_is_hidden_refused_and_idempotent_as_a_release_is(group):
    mine = group.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    with pytest.raises(Hidden):
        end(group, "gina", mine)  # another domain's: not found
    with pytest.raises(NotFound):
        end(group, "alice", "no-such-id")
    hub = group.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    with group.world.tx() as s:
        s.get(Allocation, hub).origin = "hub"
    with pytest.raises(Conflict, match="running server"):
        end(group, "alice", hub)
    assert row(group, hub)["state"] == "allocated" and row(group, mine)["state"] == "allocated"
    assert end(group, "ada", mine) == ending.Ended("acme", "gpu")  # acme's admin
    assert end(group, "alice", mine) == ending.Ended("acme", "gpu")  # again: nothing more
    assert len(end_record(group, mine)) == 1


def ends_in_one_batch(cluster, ends, reads=None):
    """``ends`` ((user, allocation id, fails after) each) queued at once on
    the ledger's group commit, each naming its allocation (``ending.read``);
    their outcomes, and how many SELECTs read the allocations."""
    import asyncio

    from test_ledger_batched import group_commit

    commit = group_commit(cluster)

    def read(s, ids):
        if reads is not None:
            reads.append(list(ids))
        ending.read(s, ids)

    def work(user, alloc_id, fails):
        def run(s):
            ended = ending.end(s, cluster.principal(user), alloc_id, cluster.now, "stop")
            if fails:
                raise RuntimeError("after it wrote")
            return ended
        return run

    async def all_at_once():
        return await asyncio.gather(*(commit.run(work(*e), before=(read, e[1])) for e in ends),
                                    return_exceptions=True)

    selects = Selects(cluster)
    try:
        return asyncio.run(all_at_once()), selects.count, commit
    finally:
        selects.stop()


def test_a_batchs_ends_read_their_allocations_in_one_query(group):
    ids = [group.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"] for _ in range(4)]
    out, selects, _ = ends_in_one_batch(group, [
        ("alice", ids[0], False), ("alice", ids[1], False), ("alice", "no-such-id", False),
        ("gina", ids[3], False), ("ada", ids[2], False)])
    assert out[0] == out[1] == out[4] == ending.Ended("acme", "gpu")
    assert isinstance(out[2], NotFound) and isinstance(out[3], Hidden)
    # the batch's one read, and the unknown id's own (found nowhere)
    assert selects == 2
    assert [row(group, i)["state"] for i in ids] == ["released"] * 3 + ["allocated"]
    assert [len(end_record(group, i)) for i in ids] == [1, 1, 1, 0]


def test_a_batch_run_again_reads_again(group):
    ids = [group.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"] for _ in range(2)]
    reads: list[list[str]] = []
    out, _, commit = ends_in_one_batch(
        group, [("alice", ids[0], False), ("alice", ids[1], True)], reads)
    assert commit.reruns == 1
    assert reads == [ids, ids]  # once a run, in arrival order
    assert out[0] == ending.Ended("acme", "gpu") and isinstance(out[1], RuntimeError)
    assert [row(group, i)["state"] for i in ids] == ["released", "allocated"]
