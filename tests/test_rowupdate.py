"""Columns of a loaded allocation written with one plain UPDATE
(quota_service/core/rowupdate.py), as a session's end writes them: the row
and the object say the same, nothing is read back or left to flush, what
watches a session's writes (the counters, the waiters) learns of it as of a
flush, and a savepoint or transaction rolled back takes it back in the
object too. On SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from test_rowinsert import allocation
from test_rowinsert import made as alice  # noqa: F401 (the fixture: alice's ids, group gpu)

from quota_service.core import db, generations, rowinsert, rowupdate
from quota_service.core.models import Allocation
from quota_service.scheduling.waiters import Waiters

NOW = dt.datetime(2026, 11, 28, 12)


@pytest.fixture
def made(cluster, alice):
    """A pending and a running allocation of alice's in group gpu (ids)."""
    ids = {}
    with cluster.world.tx() as s:
        for state in ("pending", "allocated"):
            a = allocation(alice, state=state, created_at=NOW)
            rowinsert.insert(s, a)
            ids[state] = a.id
    return ids


class Statements:
    def __init__(self, engine):
        self.engine, self.seen = engine, []
        sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, *rest):
        self.seen.append(statement.lstrip().split()[0].upper())

    def stop(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def test_one_update_and_the_object_holds_the_values_with_nothing_to_flush(cluster, made):
    factory = cluster.world.session_factory
    with db.transaction(factory) as s:
        a = s.get(Allocation, made["allocated"])
        statements = Statements(factory.kw["bind"])
        try:
            change = rowupdate.update(s, a, {"state": "released", "ended_at": NOW,
                                             "release_reason": "done"})
            assert (a.state, a.release_reason) == ("released", "done")
            s.flush()
        finally:
            statements.stop()
        assert statements.seen == ["UPDATE"]  # nothing read back, nothing flushed after
        assert not s.dirty and generations.wrote(s, frozenset({"allocations"}))
        assert change.changed("state") and change.before["state"] == "allocated"
        assert not change.changed("priority")  # not set
    with factory() as s:
        back = s.get(Allocation, made["allocated"])
        assert (back.state, back.release_reason) == ("released", "done")
        assert back.ended_at.replace(tzinfo=None) == NOW


def test_a_column_it_does_not_have_or_an_object_never_written_is_refused(cluster, made):
    with db.transaction(cluster.world.session_factory) as s:
        a = s.get(Allocation, made["pending"])
        with pytest.raises(ValueError, match="no column colour"):
            rowupdate.update(s, a, {"state": "cancelled", "colour": "red"})
        with pytest.raises(ValueError, match="not persistent"):
            rowupdate.update(s, Allocation(id="new"), {"state": "cancelled"})
    with cluster.world.session_factory() as s:
        assert s.get(Allocation, made["pending"]).state == "pending"  # nothing written


def test_the_waiters_learn_of_it_as_of_a_flush(cluster, made):
    factory = cluster.world.session_factory
    waiters, told = Waiters(), []
    waiters.changed_threadsafe = told.extend  # (no event loop here)
    waiters.watch(factory)
    before = waiters.generation
    with db.transaction(factory) as s:
        rowupdate.update(s, s.get(Allocation, made["pending"]), {"passes": 3})
    assert told == [] and waiters.generation == before  # neither its state nor its reasons
    with db.transaction(factory) as s:
        rowupdate.update(s, s.get(Allocation, made["pending"]), {"state": "cancelled"})
    assert told == [made["pending"]] and waiters.generation == before  # decides nothing
    with db.transaction(factory) as s:
        rowupdate.update(s, s.get(Allocation, made["allocated"]), {"state": "released"})
    assert told[1:] == [made["allocated"]] and waiters.generation > before  # frees capacity


@pytest.mark.parametrize("undo", ["savepoint", "transaction"])
def test_a_write_taken_back_is_taken_back_in_the_object(cluster, made, undo):
    factory = cluster.world.session_factory
    s = factory()
    try:
        s.begin()
        a = s.get(Allocation, made["allocated"])
        savepoint = s.begin_nested() if undo == "savepoint" else None
        rowupdate.update(s, a, {"state": "released", "release_reason": "oops"})
        (savepoint or s).rollback()
        # read again from the row, not the value taken back (an end that
        # failed after writing must not let the next one find it ended)
        assert (a.state, a.release_reason) == ("allocated", "")
    finally:
        s.close()
