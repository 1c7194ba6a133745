"""The resource groups kept in memory between decisions (scheduling/groupcache.py):
served from memory while the database says they did not change, read again
the moment anything changed them, whoever wrote it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import Device, Node, ResourceGroup, ResourceGroupGrant
from quota_service.scheduling import groupcache, ledger


@pytest.fixture
def group(session_factory):
    """Resource group g with node n1 (cpu 4, one A100) and a grant."""
    with db.transaction(session_factory) as s:
        from quota_service.core.models import Domain
        d = Domain(name="acme")
        rg = ResourceGroup(name="g")
        n = Node(name="n1", resource_group=rg, capacity={"cpu": "4"})
        n.devices.append(Device(index=0, model="A100", memory=80))
        s.add_all([d, rg, n])
        s.flush()
        rg.grants.append(ResourceGroupGrant(domain_id=d.id))
    return "g"


def gen(engine) -> int:
    with engine.connect() as c:
        return c.execute(sa.text("SELECT value FROM ledger_counters WHERE name = 'groups'")).scalar()


CHANGES = [
    ("resource_groups", "INSERT INTO resource_groups (name, description, active, session_types, "
     "queue_order, hol_passes, created_at) VALUES ('h', '', true, '[]', 'fifo', 3, "
     "CURRENT_TIMESTAMP)"),
    ("resource_groups", "UPDATE resource_groups SET hol_passes = 5 WHERE name = 'g'"),
    ("resource_group_grants", "DELETE FROM resource_group_grants"),
    ("nodes", "UPDATE nodes SET schedulable = false"),
    ("devices", "INSERT INTO devices (node_id, \"index\", model, memory, uuid) "
     "SELECT id, 1, 'A100', 80, '' FROM nodes"),
    ("devices", "UPDATE devices SET model = 'H100'"),
    ("devices", "DELETE FROM devices"),
    ("nodes", "DELETE FROM devices; DELETE FROM nodes"),
]


@pytest.mark.parametrize("table, statement", CHANGES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CHANGES)])
def test_every_change_to_groups_grants_nodes_and_devices_moves_the_generation(
        engine, group, table, statement):
    before = gen(engine)
    with engine.begin() as c:
        for part in statement.split("; "):
            c.exec_driver_sql(part.replace("true", "1").replace("false", "0")
                              if engine.dialect.name == "sqlite" else part)
    assert gen(engine) > before


def test_the_same_rows_are_served_until_another_writer_changes_them(engine, session_factory,
                                                                   group, db_url):
    with db.transaction(session_factory) as s:
        first = ledger.group_for_decision(s, "g")
    with db.transaction(session_factory) as s:
        assert ledger.group_for_decision(s, "g") is first  # from memory
    assert first.node("n1").capacity == {"cpu": "4"}
    assert [(d.index, d.model) for d in first.node("n1").devices] == [(0, "A100")]
    assert [g.domain_id for g in first.grants] != [None]
    # another process (its own engine) drains the node with plain SQL
    other = db.make_engine(db_url)
    try:
        with other.begin() as c:
            c.exec_driver_sql("UPDATE nodes SET schedulable = "
                              + ("0" if other.dialect.name == "sqlite" else "false"))
    finally:
        other.dispose()
    with db.transaction(session_factory) as s:
        again = ledger.group_for_decision(s, "g")
    assert again is not first and again.node("n1").schedulable is False
    with db.transaction(session_factory) as s:
        assert ledger.group_for_decision(s, "g") is again


def test_what_a_rolled_back_change_showed_is_never_served(session_factory, group):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with db.transaction(session_factory) as s:
            node = s.scalar(sa.select(Node).where(Node.name == "n1"))
            node.capacity = {"cpu": "64"}
            s.flush()
            # the transaction sees its own change...
            assert ledger.group_for_decision(s, "g").node("n1").capacity == {"cpu": "64"}
            raise Boom
    with db.transaction(session_factory) as s:
        # ...which went with the rollback: nobody else is ever served it
        assert ledger.group_for_decision(s, "g").node("n1").capacity == {"cpu": "4"}


def test_a_missing_group_is_none_and_one_made_later_is_found(session_factory, group):
    with db.transaction(session_factory) as s:
        assert ledger.group_for_decision(s, "nope") is None
    with db.transaction(session_factory) as s:
        s.add(ResourceGroup(name="nope"))
    with db.transaction(session_factory) as s:
        assert ledger.group_for_decision(s, "nope").name == "nope"


def test_a_database_made_again_does_not_meet_the_old_generation(empty_db_url):
    starts = set()
    e = db.make_engine(empty_db_url)
    try:
        for _ in range(2):
            db.upgrade(e)
            starts.add(gen(e))
            db.downgrade(e, "base")
    finally:
        e.dispose()
    assert len(starts) == 2


def test_without_the_counter_nothing_is_kept(session_factory, group, engine):
    with engine.begin() as c:
        c.exec_driver_sql("DELETE FROM ledger_counters")
    with db.transaction(session_factory) as s:
        first = groupcache.group(s, "g")
    with db.transaction(session_factory) as s:
        assert groupcache.group(s, "g") is not first
