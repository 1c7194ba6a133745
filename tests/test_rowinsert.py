"""A new allocation written with one plain INSERT (quota_service/core/rowinsert.py):
the row is what the ORM would have written (defaults included), the object
is persistent and reads nothing back, and what watches a session's writes
(the counters, the waiters) learns of it as of a flush. On SQLite and
PostgreSQL."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from quota_service.core import db, generations, rowinsert
from quota_service.core.models import Allocation, ResourceGroup
from quota_service.scheduling.waiters import Waiters


@pytest.fixture
def made(cluster):
    """alice's ids and group gpu's, for an allocation of hers."""
    cluster.add_group("gpu", {"n1": ()})
    with cluster.world.tx() as s:
        user = cluster.world.user("alice")
        rg = s.scalar(sa.select(ResourceGroup).where(ResourceGroup.name == "gpu"))
        return dict(user_id=user.id, domain_id=user.domain_id, resource_group_id=rg.id,
                    project_id=s.scalar(sa.text("SELECT id FROM projects WHERE name = 'ml'")))


def allocation(made, **fields) -> Allocation:
    return Allocation(**{"id": str(uuid.uuid4()), "slots": {"cpu": "1"}, "state": "pending",
                         "created_at": dt.datetime(2026, 11, 27, 12), **made, **fields})


def columns(a: Allocation) -> dict:
    """Every column's value (times as naive UTC: PostgreSQL gives them aware)."""
    def plain(v):
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None) if (
            isinstance(v, dt.datetime) and v.tzinfo) else v
    return {p.key: plain(getattr(a, p.key)) for p in sa.inspect(Allocation).column_attrs}


class Selects:
    def __init__(self, engine):
        self.engine, self.count = engine, 0
        sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, *rest):
        self.count += statement.lstrip().upper().startswith("SELECT")

    def stop(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def test_the_row_is_the_objects_with_the_defaults_and_nothing_is_read_back(cluster, made):
    factory = cluster.world.session_factory
    a = allocation(made)
    with db.transaction(factory) as s:
        rowinsert.insert(s, a)
        selects = Selects(factory.kw["bind"])
        try:
            seen = columns(a)
        finally:
            selects.stop()
        assert selects.count == 0  # every column was given, none expired
        assert a in s and not s.new and not s.dirty  # persistent, nothing left to flush
        assert generations.wrote(s, frozenset({"allocations"}))
    # defaults as the ORM gives them
    assert (seen["passes"], seen["priority"], seen["gpus"], seen["reasons"], seen["origin"],
            seen["server_name"], seen["keeps"]) == (0, 0, [], [], "api", "", 0)
    with factory() as s:
        back = s.get(Allocation, a.id)
        assert columns(back) == seen


def test_a_change_after_the_insert_is_an_update(cluster, made):
    factory = cluster.world.session_factory
    a = allocation(made)
    with db.transaction(factory) as s:
        rowinsert.insert(s, a)
        a.state = "cancelled"
        assert a in s.dirty
    with factory() as s:
        assert s.get(Allocation, a.id).state == "cancelled"


def test_the_waiters_learn_of_it_as_of_a_flush(cluster, made):
    factory = cluster.world.session_factory
    waiters, told = Waiters(), []
    waiters.changed_threadsafe = told.extend  # (no event loop here)
    waiters.watch(factory)
    before = waiters.generation
    pending, running = allocation(made), allocation(made, state="allocated")
    with db.transaction(factory) as s:
        rowinsert.insert(s, pending)
    assert told == [pending.id] and waiters.generation == before  # a new request decides nothing
    with db.transaction(factory) as s:
        rowinsert.insert(s, running)
    assert told[1:] == [running.id] and waiters.generation > before  # a running one does


class _Base(DeclarativeBase):
    pass


class _OnlyServerDefault(_Base):
    __tablename__ = "only_server_default"
    id: Mapped[int] = mapped_column(primary_key=True)
    flag: Mapped[str] = mapped_column(sa.String(5), server_default="x")


def test_a_column_only_the_database_fills_is_refused():
    with pytest.raises(ValueError, match="flag: a server default only"):
        rowinsert.row_of(_OnlyServerDefault(id=1))
    assert rowinsert.row_of(_OnlyServerDefault(id=1, flag="y")) == {"id": 1, "flag": "y"}


def test_an_insert_taken_back_by_its_savepoint_leaves_no_object_that_says_otherwise(
        cluster, made):
    factory = cluster.world.session_factory
    a = allocation(made)
    with db.transaction(factory) as s:
        savepoint = s.begin_nested()
        rowinsert.insert(s, a)
        savepoint.rollback()
        assert sa.inspect(a).expired  # as after a flush: not what the row... was
        with pytest.raises(sa.orm.exc.ObjectDeletedError):
            a.state  # its row is gone: reading it says so
