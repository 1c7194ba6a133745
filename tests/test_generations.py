"""What a transaction reads once (core/generations.once), the tables it wrote
(core/generations.wrote), and the rows a batch keeps (core/orm.hold_loaded)."""

from __future__ import annotations

import gc

import pytest
import sqlalchemy as sa

from quota_service.core import db, generations, orm
from quota_service.core.models import AuditEntry, Domain, ResourcePolicy, User

import datetime as dt

NOW = dt.datetime(2026, 11, 27, tzinfo=dt.timezone.utc)
POLICIES = frozenset({"resource_policies"})


@pytest.fixture
def counted(engine):
    """The statements ``engine`` runs (a list that grows)."""
    seen: list[str] = []

    def count(_conn, _cursor, statement, *_args):
        seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", count)
    yield seen
    sa.event.remove(engine, "before_cursor_execute", count)


def policy(s, name="gold"):
    return generations.once(s, ("policy", name), POLICIES, lambda: s.scalar(
        sa.select(ResourcePolicy).where(ResourcePolicy.name == name)))


def test_once_reads_once_per_transaction(session_factory, counted):
    with db.transaction(session_factory) as s:
        s.add(ResourcePolicy(name="gold"))
    with db.transaction(session_factory) as s:
        before = len(counted)
        first = policy(s)
        assert len(counted) == before + 1
        assert policy(s) is first and len(counted) == before + 1
    with db.transaction(session_factory) as s:  # a new transaction reads again
        before = len(counted)
        assert policy(s).name == "gold" and len(counted) == before + 1


def test_once_reads_again_after_the_transaction_wrote_its_tables(session_factory):
    with db.transaction(session_factory) as s:
        assert policy(s) is None  # none yet: remembered for this transaction...
        s.add(AuditEntry(timestamp=NOW, actor="x", action="t", target="t", outcome="success",
                         status=200, detail=""))
        s.flush()  # (another table: still remembered)
        assert policy(s) is None
        s.add(ResourcePolicy(name="gold"))
        s.flush()  # ...until it writes a policy
        assert policy(s).name == "gold"


def test_a_core_update_of_a_table_counts_as_a_write(session_factory):
    with db.transaction(session_factory) as s:
        assert not generations.wrote(s)
        s.execute(sa.update(ResourcePolicy).values(max_concurrent_sessions=3))
        assert generations.wrote(s, POLICIES)
        assert not generations.wrote(s, frozenset({"users"}))
    with db.transaction(session_factory) as s:
        assert not generations.wrote(s)  # forgotten with the transaction


def test_an_unwatched_write_is_not_counted(session_factory):
    with db.transaction(session_factory) as s:
        s.execute(sa.update(ResourcePolicy).values(max_concurrent_sessions=3)
                  .execution_options(**{generations.UNWATCHED: True}))
        assert not generations.wrote(s)


def test_a_held_transaction_loads_each_row_once(session_factory, counted):
    with db.transaction(session_factory) as s:
        d = Domain(name="acme")
        s.add(d)
        s.flush()
        s.add(User(name="alice", domain_id=d.id))
    for hold, loads in ((False, 2), (True, 1)):
        with db.transaction(session_factory) as s:
            if hold:
                orm.hold_loaded(s)
            before = len(counted)
            for _ in range(2):
                assert s.get(User, 1).name == "alice"  # nothing else refers to it
                gc.collect()
            assert len(counted) - before == loads


def test_the_first_counter_read_reads_them_all_and_a_written_one_is_read_alone(
        session_factory, counted):
    groups, tenancy = frozenset({"nodes"}), frozenset({"users"})
    with db.transaction(session_factory) as s:
        counted.clear()
        g = generations.generation(s, "groups", groups)
        t = generations.generation(s, "tenancy", tenancy)
        assert g is not None and t is not None
        assert len([q for q in counted if "ledger_counters" in q]) == 1  # both in one query
        s.add(Domain(name="acme"))
        s.flush()
        s.add(User(name="alice", domain_id=s.scalar(sa.select(Domain.id))))
        s.flush()  # the users' triggers moved 'tenancy'
        counted.clear()
        assert generations.generation(s, "groups", groups) == g  # not written: as read
        assert generations.generation(s, "tenancy", tenancy) != t  # read again, alone
        assert len([q for q in counted if "ledger_counters" in q]) == 1
    with db.transaction(session_factory) as s:  # a new transaction reads them anew
        assert generations.generation(s, "tenancy", tenancy) != t


def _counter(s, name):  # the counter as the transaction sees it, read directly
    return s.scalar(sa.select(generations.LedgerCounter.value)
                    .where(generations.LedgerCounter.name == name))


def _add_user(s, name):
    s.add(User(name=name, domain_id=s.scalar(sa.select(Domain.id))))


def test_counters_asked_after_a_write_are_read_in_one_query_until_the_next_write(
        session_factory, counted):
    tenancy = frozenset({"users"})  # both asked as written ('groups' as if it watched users)
    with db.transaction(session_factory) as s:
        s.add(Domain(name="acme"))
        s.flush()
        _add_user(s, "alice")
        s.flush()
        counted.clear()
        t = generations.generation(s, "tenancy", tenancy)
        g = generations.generation(s, "groups", tenancy)
        assert len([q for q in counted if "ledger_counters" in q]) == 1  # the batch's end: one
        assert (t, g) == (_counter(s, "tenancy"), _counter(s, "groups"))
        _add_user(s, "bob")  # not flushed yet: asking flushes it, then reads again
        counted.clear()
        t2 = generations.generation(s, "tenancy", tenancy)
        assert any(q.lstrip().upper().startswith("INSERT") for q in counted)
        assert len([q for q in counted if "ledger_counters" in q]) == 1
        assert t2 != t and t2 == _counter(s, "tenancy")
        s.execute(sa.update(User).values(active=True))  # a Core write: read again too
        counted.clear()
        assert generations.generation(s, "groups", tenancy) == g  # (its triggers: not users')
        assert generations.generation(s, "tenancy", tenancy) == _counter(s, "tenancy")
        # one reading of every counter after that write, and the direct read
        assert len([q for q in counted if "ledger_counters" in q]) == 2


def test_a_counter_is_read_again_after_a_savepoint_took_its_write_back(session_factory):
    tenancy = frozenset({"users"})
    with db.transaction(session_factory) as s:
        s.add(Domain(name="acme"))
        s.flush()
        _add_user(s, "alice")
        s.flush()
        before = generations.generation(s, "tenancy", tenancy)
        savepoint = s.begin_nested()
        _add_user(s, "bob")
        s.flush()
        inside = generations.generation(s, "tenancy", tenancy)
        assert inside != before
        savepoint.rollback()
        # no write since the last reading, but the savepoint took one back
        assert generations.generation(s, "tenancy", tenancy) == before == _counter(s, "tenancy")
