"""Resource policies kept in memory between transactions
(quota_service/scheduling/policycache.py, migration 0023): every change to
the table moves their generation, whoever makes it, so the next transaction
sees it; what a transaction that wrote a policy read is never kept; a
missing policy is never kept. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import ResourcePolicy
from quota_service.scheduling import ledger, policycache


@pytest.fixture
def gold(session_factory):
    with db.transaction(session_factory) as s:
        s.add(ResourcePolicy(name="gold", max_concurrent_sessions=3,
                             total_resource_slots={"cpu": "8"}))
    return "gold"


def gen(engine) -> int:
    with engine.connect() as c:
        return c.execute(sa.text("SELECT value FROM ledger_counters WHERE name = 'policies'")
                         ).scalar()


def sql(engine, statement: str) -> None:
    with engine.begin() as c:
        c.exec_driver_sql(statement)


class Reads:
    """The queries of resource_policies an engine runs."""

    def __init__(self, engine):
        self.engine, self.count = engine, 0
        sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, *rest):
        self.count += statement.lstrip().upper().startswith("SELECT") \
            and "FROM resource_policies" in statement

    def stop(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def policy(session_factory, name="gold"):
    with db.transaction(session_factory) as s:
        return ledger.policy_of(s, name)


CHANGES = [
    "INSERT INTO resource_policies (name, total_resource_slots, unspecified_limited, "
    "max_pending_resource_slots, allowed_resource_groups, allowed_vfolder_hosts, "
    "utilization_operator, reclaim_warning, keep_extension, max_keeps, created_at) "
    "VALUES ('silver', '{}', false, '{}', '[]', '[]', 'and', 0, 0, 0, CURRENT_TIMESTAMP)",
    "UPDATE resource_policies SET max_concurrent_sessions = 5",
    "DELETE FROM resource_policies",
]


@pytest.mark.parametrize("statement", CHANGES, ids=["insert", "update", "delete"])
def test_every_change_to_the_policies_moves_their_generation(engine, gold, statement):
    if engine.dialect.name == "sqlite":
        statement = statement.replace("false", "0")
    before = gen(engine)
    sql(engine, statement)
    assert gen(engine) > before


def test_a_policy_is_read_once_and_kept_with_its_columns(engine, session_factory, gold):
    first = policy(session_factory)
    reads = Reads(engine)
    try:
        again = policy(session_factory)  # another transaction: from memory
    finally:
        reads.stop()
    assert again is first and reads.count == 0
    with session_factory() as s:
        orm = s.scalar(sa.select(ResourcePolicy).where(ResourcePolicy.name == "gold"))
        for attr in policycache.PolicyRow.__dataclass_fields__:
            assert getattr(first, attr) == getattr(orm, attr) or attr == "created_at"
    assert (first.max_concurrent_sessions, first.total_resource_slots) == (3, {"cpu": "8"})


def test_a_change_by_another_writer_is_seen_by_the_next_transaction(
        session_factory, gold, db_url):
    assert policy(session_factory).max_concurrent_sessions == 3
    other = db.make_engine(db_url)  # another process: plain SQL on its own engine
    try:
        sql(other, "UPDATE resource_policies SET max_concurrent_sessions = 7")
    finally:
        other.dispose()
    assert policy(session_factory).max_concurrent_sessions == 7


def test_what_a_transaction_that_wrote_a_policy_read_is_never_kept(engine, session_factory, gold):
    s = session_factory()
    try:
        s.begin()
        s.execute(sa.update(ResourcePolicy).values(max_concurrent_sessions=9))
        assert ledger.policy_of(s, "gold").max_concurrent_sessions == 9  # its own change
        s.rollback()
    finally:
        s.close()
    assert policy(session_factory).max_concurrent_sessions == 3  # not what was taken back


def test_a_missing_policy_is_none_and_never_kept(engine, session_factory, gold):
    assert policy(session_factory, "nope") is None
    reads = Reads(engine)
    try:
        assert policy(session_factory, "nope") is None
    finally:
        reads.stop()
    assert reads.count == 1  # read again: an unknown name costs its query, not memory
