"""The accounts read into memory when the service starts (tenancy/warm.py):
the same callers, users and projects the first request would have read one
by one, the most recently used keys first, none after a change, and none
beyond the limit."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from traitlets import TraitError

from quota_service.core import db, keys
from quota_service.core.errors import Unauthenticated
from quota_service.core.models import Domain, Keypair, Membership, Project, User
from quota_service.tenancy import keyauth, keycache, people, warm
from test_keycache import NOW, SECRET, auth, sql

USED = {"HGA": NOW - dt.timedelta(hours=1), "HGB": NOW - dt.timedelta(days=3), "HGC": None}


@pytest.fixture
def accounts(session_factory):
    """acme with projects ml and web: alice (both, key HGA used an hour
    ago), bob (inactive, key HGB used three days ago), carol (ml, key HGC
    never used)."""
    with db.transaction(session_factory) as s:
        d = Domain(name="acme")
        ml, web = Project(name="ml", domain=d), Project(name="web", domain=d)
        users = {name: User(name=name, domain=d, active=name != "bob")
                 for name in ("alice", "bob", "carol")}
        s.add_all([d, ml, web, *users.values()])
        s.flush()
        s.add_all([Membership(user_id=users["alice"].id, project_id=ml.id),
                   Membership(user_id=users["alice"].id, project_id=web.id),
                   Membership(user_id=users["carol"].id, project_id=ml.id)])
        for access, name in (("HGA", "alice"), ("HGB", "bob"), ("HGC", "carol")):
            s.add(Keypair(access_key=access, secret_hash=keys.hash_secret(SECRET),
                          user_id=users[name].id, last_used_at=USED[access]))
    return users


def warmed(session_factory, limit=100) -> warm.Warmed:
    with db.transaction(session_factory) as s:
        return warm.warm(s, limit)


class Statements:
    """The statements an engine runs while counted."""

    def __init__(self, engine):
        self.seen: list[str] = []
        sa.event.listen(engine, "before_cursor_execute", self._seen)
        self.engine = engine

    def _seen(self, conn, cursor, statement, *args):
        self.seen.append(statement)

    def touching(self, table: str) -> list[str]:
        return [s for s in self.seen if f"FROM {table}" in s or f"JOIN {table}" in s]

    def close(self):
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


@pytest.fixture
def statements(engine):
    counted = Statements(engine)
    yield counted
    counted.close()


def test_keys_are_kept_as_reading_them_one_by_one_would(session_factory, accounts):
    with db.transaction(session_factory) as s:
        one_by_one = {k: keyauth._key_entry(s, k) for k in USED}
        assert keyauth.recent_keys(s, 100) == one_by_one
    alice = one_by_one["HGA"].principal
    assert alice.projects == frozenset({("acme", "ml"), ("acme", "web")})
    assert one_by_one["HGB"].principal is None and "inactive" in one_by_one["HGB"].refusal


def test_after_the_warm_a_first_request_reads_no_key_user_or_project(
        session_factory, accounts, statements):
    assert warmed(session_factory) == warm.Warmed(keys=3, people=5)
    statements.seen.clear()
    assert auth(session_factory, "HGA").name == "alice"
    with db.transaction(session_factory) as s:
        assert people.user_named(s, "carol").id == accounts["carol"].id
        assert people.user(s, accounts["alice"].id).name == "alice"
        ml = people.project_named(s, accounts["alice"].domain_id, "ml")
        assert people.project(s, ml.id) is ml
    for table in ("keypairs", "users", "projects", "memberships"):
        assert statements.touching(table) == [], table
    with pytest.raises(Exception, match="inactive"):
        auth(session_factory, "HGB")  # the refusal was kept too


def test_the_most_recently_used_keys_come_first(session_factory, accounts):
    assert warmed(session_factory, limit=2).keys == 2
    cache = keycache.cache_for(session_factory.kw["bind"])
    assert [k for k in USED if cache.peek(k) is not None] == ["HGA", "HGB"]


def test_nothing_is_read_at_zero(session_factory, accounts, statements):
    statements.seen.clear()
    assert warmed(session_factory, limit=0) == warm.Warmed(0, 0)
    assert [s for s in statements.seen if s.lstrip().upper().startswith("SELECT")] == []


def test_a_change_after_the_warm_is_seen_by_the_next_request(
        engine, session_factory, accounts):
    warmed(session_factory)
    sql(engine, "UPDATE keypairs SET active = false WHERE access_key = 'HGA'")
    with pytest.raises(Unauthenticated, match="inactive"):
        auth(session_factory, "HGA")


def test_a_warm_larger_than_the_copy_keeps_nothing(session_factory, accounts, monkeypatch):
    cache = keycache.cache_for(session_factory.kw["bind"])
    monkeypatch.setattr(cache._entries, "max_rows", 2)
    assert warmed(session_factory).keys == 0
    assert cache.peek("HGA") is None


def test_the_service_warms_at_start(db_url, session_factory, accounts, tmp_path, monkeypatch):
    from quota_service.app import HubgridService
    from service_app import HUB_ENV

    for name in HUB_ENV:
        monkeypatch.delenv(name, raising=False)
    svc = HubgridService(db_url=db_url, register_local_node=False, scan_images_at_start=False,
                         session_log_dir=str(tmp_path / "logs"),
                         vfolder_hosts={"local": {"path": str(tmp_path / "vfolders")}})
    try:
        svc.initialize([])
        assert keycache.cache_for(svc.engine).peek("HGC") is not None
    finally:
        svc.engine.dispose()


def test_the_setting_is_checked_at_configuration():
    from quota_service.app import HubgridService

    svc = HubgridService()
    assert svc.warm_accounts == 50_000
    svc.warm_accounts = 0
    with pytest.raises(TraitError, match="warm_accounts"):
        svc.warm_accounts = -1
