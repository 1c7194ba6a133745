"""A ledger batch's session records and usage intervals are inserted at its
end, one statement per table (quota_service/core/laterrows.py); a write
that fails after keeping one leaves none behind, and a row that cannot be
inserted fails its own write alone. On SQLite and PostgreSQL (the ``prop``
cluster of tests/test_ledger_property.py)."""

from __future__ import annotations

import sqlalchemy as sa

from quota_service.core import laterrows
from quota_service.core.models import AuditEntry
from quota_service.core.usagemodels import UsageInterval
from quota_service.scheduling import sessionaudit
from test_batch_carry import states, unlimited
from test_ledger_batched import batched, group_commit, works
from test_ledger_property import prop  # noqa: F401 (the fixture)


class Inserts:
    """The INSERT statements run on the cluster's engine, by table."""

    def __init__(self, cluster):
        self.by_table: dict[str, int] = {}
        self.engine = cluster.world.session_factory.kw["bind"]
        sa.event.listen(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, params, context, executemany):
        words = statement.split()
        if words[:2] == ["INSERT", "INTO"]:
            table = words[2].strip('"')
            self.by_table[table] = self.by_table.get(table, 0) + 1

    def stop(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def rows(cluster, model, *where) -> int:
    with cluster.world.session_factory() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(model).where(*where))


def test_a_batchs_records_and_intervals_are_one_insert_each_at_its_end(prop):  # noqa: F811
    unlimited(prop)
    commit = group_commit(prop)
    first = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                       ("submit", "bob", {"cpu": "1"}, [])], []), 10, commit)
    ids = [value["id"] for _, value in first]
    inserts = Inserts(prop)
    try:
        out = batched(prop, works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                         ("release", 0), ("release", 1),
                                         ("submit", "bob", {"cpu": "1"}, [])], ids), 10, commit)
    finally:
        inserts.stop()
    assert [ok for ok, _ in out] == [True] * 4 and commit.reruns == 0
    # four records and two intervals, each table in one statement
    assert inserts.by_table["audit_log"] == 1 and inserts.by_table["usage_intervals"] == 1
    assert rows(prop, AuditEntry, AuditEntry.action == sessionaudit.START) == 4
    assert rows(prop, AuditEntry, AuditEntry.action == sessionaudit.END) == 2
    assert rows(prop, UsageInterval, UsageInterval.allocation_id.in_(ids)) == 2


def test_a_write_that_fails_after_keeping_a_record_leaves_none(prop):  # noqa: F811
    unlimited(prop)
    commit = group_commit(prop)
    [admit, other] = works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                  ("submit", "bob", {"cpu": "1"}, [])], [])

    def record_then_fail(s):
        laterrows.insert(s, AuditEntry.__table__, dict(
            timestamp=prop.now, action="test.kept", target="x", outcome="success",
            status=200, detail=""))
        raise RuntimeError("failed after keeping a row")

    out = batched(prop, [admit, record_then_fail, other], 10, commit)
    assert states(out) == ["allocated", "RuntimeError", "allocated"]
    assert commit.reruns == 1  # its kept row counted as a write
    assert rows(prop, AuditEntry, AuditEntry.action == "test.kept") == 0
    assert rows(prop, AuditEntry, AuditEntry.action == sessionaudit.START) == 2


def test_a_row_that_cannot_be_inserted_fails_its_own_write_alone(prop):  # noqa: F811
    unlimited(prop)
    commit = group_commit(prop)
    [admit, other] = works(prop, [("submit", "alice", {"cpu": "1"}, []),
                                  ("submit", "bob", {"cpu": "1"}, [])], [])

    def bad_row(s):  # no action: NOT NULL, found only when the batch inserts its rows
        laterrows.insert(s, AuditEntry.__table__, dict(
            timestamp=prop.now, action=None, target="x", outcome="success", status=200))
        return "kept"

    out = batched(prop, [admit, bad_row, other], 10, commit)
    assert commit.reruns == 1
    assert out[0][0] and out[2][0]
    assert not out[1][0] and isinstance(out[1][1], sa.exc.IntegrityError)
    assert rows(prop, AuditEntry, AuditEntry.action == sessionaudit.START) == 2


def test_outside_a_batch_a_row_is_inserted_at_once(prop):  # noqa: F811
    with prop.world.session_factory() as s:
        laterrows.insert(s, AuditEntry.__table__, dict(
            timestamp=prop.now, action="test.once", target="x", outcome="success",
            status=200, detail=""))
        assert s.scalar(sa.select(sa.func.count()).select_from(AuditEntry).where(
            AuditEntry.action == "test.once")) == 1  # before any COMMIT
        s.rollback()
    assert rows(prop, AuditEntry, AuditEntry.action == "test.once") == 0
