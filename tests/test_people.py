"""Users, projects and domains as decisions read them, kept in memory
(tenancy/people.py over core/rowcache.py): the same rows while the accounts
did not change, read again the moment anything changed them, whoever wrote
it; never kept from a transaction that changed them itself."""

from __future__ import annotations

import pytest

from quota_service.core import db
from quota_service.core.models import Domain, Project, User
from quota_service.tenancy import people
from test_keycache import sql


@pytest.fixture
def acme(session_factory):
    """alice and bob of acme, project ml."""
    with db.transaction(session_factory) as s:
        d = Domain(name="acme", total_resource_slots={"cpu": "8"})
        s.add_all([d, Project(name="ml", domain=d, max_concurrent_sessions=3),
                   User(name="alice", domain=d, resource_policy="gold"), User(name="bob", domain=d)])
    with session_factory() as s:
        return {u.name: u.id for u in s.query(User)}, s.query(Project).one().id


def read(session_factory, how, *args):
    with db.transaction(session_factory) as s:
        return how(s, *args)


def test_rows_carry_what_the_orm_objects_say(session_factory, acme):
    users, project_id = acme
    alice = read(session_factory, people.user_named, "alice")
    assert (alice.id, alice.name, alice.resource_policy, alice.active) == (
        users["alice"], "alice", "gold", True)
    assert (alice.domain.name, alice.domain.total_resource_slots) == ("acme", {"cpu": "8"})
    ml = read(session_factory, people.project_named, alice.domain_id, "ml")
    assert (ml.id, ml.name, ml.max_concurrent_sessions, ml.active) == (project_id, "ml", 3, True)
    assert read(session_factory, people.project, project_id).name == "ml"
    assert read(session_factory, people.user, users["bob"]).name == "bob"
    assert read(session_factory, people.user_named, "nobody") is None
    assert read(session_factory, people.project_named, alice.domain_id, "nope") is None


def test_kept_while_nothing_changed_and_read_again_after_another_writers_change(
        engine, session_factory, acme):
    users, project_id = acme
    first = read(session_factory, people.user_named, "alice")
    assert read(session_factory, people.user_named, "alice") is first  # from memory
    for statement, check in (
            ("UPDATE users SET resource_policy = 'tight'",
             lambda: read(session_factory, people.user_named, "alice").resource_policy == "tight"),
            ("UPDATE domains SET active = false",
             lambda: not read(session_factory, people.user, users["alice"]).domain.active),
            ("UPDATE projects SET active = false",
             lambda: not read(session_factory, people.project, project_id).active)):
        read(session_factory, people.user_named, "alice")
        read(session_factory, people.user, users["alice"])
        read(session_factory, people.project, project_id)
        sql(engine, statement)  # plain SQL: only the database's counter tells
        assert check(), statement


def test_a_transaction_that_changed_the_accounts_reads_its_own_and_keeps_nothing(
        session_factory, acme):
    users, _ = acme
    kept = read(session_factory, people.user_named, "alice")
    with db.transaction(session_factory) as s:
        s.get(User, users["alice"]).resource_policy = "tight"
        s.flush()
        assert people.user_named(s, "alice").resource_policy == "tight"
        s.rollback()
    again = read(session_factory, people.user_named, "alice")
    assert again.resource_policy == "gold"  # the rolled back change was never kept
    assert again is kept


def test_preload_reads_what_is_missing_in_one_query_each(session_factory, acme, monkeypatch):
    users, project_id = acme
    calls = []
    real = people._users
    monkeypatch.setattr(people, "_users", lambda s, where: calls.append(1) or real(s, where))
    with db.transaction(session_factory) as s:
        people.preload(s, users.values(), [project_id])
        assert [people.user(s, i).name for i in sorted(users.values())] == ["alice", "bob"]
    assert len(calls) == 1
