"""Each keypair's caller kept in memory between requests (tenancy/keycache.py):
served from memory while the accounts did not change, read again the moment
anything changed them, whoever wrote it; a key's last use to the minute."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from quota_service.core import db, keys
from quota_service.core.errors import Denied, Unauthenticated
from quota_service.core.models import Domain, Keypair, Membership, Project, User
from quota_service.tenancy import keyauth, keycache

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.timezone.utc)
SECRET = "s3cret-" + "x" * 30


@pytest.fixture
def key(session_factory):
    """alice of acme, member of project ml, with keypair HGK."""
    with db.transaction(session_factory) as s:
        d = Domain(name="acme")
        p = Project(name="ml", domain=d)
        u = User(name="alice", domain=d)
        s.add_all([d, p, u])
        s.flush()
        s.add_all([Membership(user_id=u.id, project_id=p.id),
                   Keypair(access_key="HGK", secret_hash=keys.hash_secret(SECRET), user_id=u.id)])
    return "HGK"


def auth(session_factory, access_key="HGK", secret=SECRET, now=NOW):
    with db.transaction(session_factory) as s:
        return keyauth.principal_for_keypair(s, access_key, secret, now)


def gen(engine) -> int:
    with engine.connect() as c:
        return c.execute(sa.text("SELECT value FROM ledger_counters WHERE name = 'tenancy'")).scalar()


def sql(engine, statement: str) -> None:
    if engine.dialect.name == "sqlite":
        statement = statement.replace("true", "1").replace("false", "0")
    with engine.begin() as c:
        c.exec_driver_sql(statement)


CHANGES = [
    ("domains", "UPDATE domains SET active = false"),
    ("users", "INSERT INTO users (name, domain_id, role, active, resource_policy, created_at) "
     "SELECT 'bob', id, 'user', true, 'default', CURRENT_TIMESTAMP FROM domains"),
    ("projects", "UPDATE projects SET name = 'ml2'"),
    ("users", "UPDATE users SET resource_policy = 'gold'"),
    ("memberships", "DELETE FROM memberships"),
    ("keypairs", "UPDATE keypairs SET active = false"),
    ("keypairs", "UPDATE keypairs SET resource_policy = 'other'"),
    ("keypairs", "DELETE FROM keypairs"),
]


@pytest.mark.parametrize("table, statement", CHANGES,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(CHANGES)])
def test_every_change_to_the_accounts_moves_the_generation(engine, key, table, statement):
    before = gen(engine)
    sql(engine, statement)
    assert gen(engine) > before


def test_a_keys_last_use_does_not_move_it(engine, key):
    before = gen(engine)
    sql(engine, "UPDATE keypairs SET last_used_at = CURRENT_TIMESTAMP")
    assert gen(engine) == before


@pytest.mark.parametrize("statement, refusal", [
    ("UPDATE keypairs SET active = false", (Unauthenticated, "keypair is inactive")),
    ("UPDATE users SET active = false", (Denied, "user 'alice' is inactive")),
    ("UPDATE domains SET active = false", (Denied, "domain 'acme' is inactive")),
    ("DELETE FROM keypairs", (Unauthenticated, "invalid keypair")),
], ids=["key revoked", "user deactivated", "domain deactivated", "key deleted"])
def test_a_change_by_another_writer_is_seen_by_the_next_request(
        engine, session_factory, key, db_url, statement, refusal):
    first = auth(session_factory)
    assert auth(session_factory) is first  # from memory
    other = db.make_engine(db_url)  # another process: plain SQL on its own engine
    try:
        sql(other, statement)
    finally:
        other.dispose()
    kind, message = refusal
    with pytest.raises(kind, match=message):
        auth(session_factory)


def test_membership_and_policy_changes_reach_the_caller(engine, session_factory, key):
    assert auth(session_factory).projects == frozenset({("acme", "ml")})
    sql(engine, "DELETE FROM memberships")
    assert auth(session_factory).projects == frozenset()
    sql(engine, "UPDATE keypairs SET resource_policy = 'gold'")
    assert auth(session_factory).policy == "gold"


def test_a_wrong_secret_is_refused_from_memory_too(session_factory, key):
    auth(session_factory)
    with pytest.raises(Unauthenticated, match="invalid keypair"):
        auth(session_factory, secret="wrong")


def test_expiry_is_judged_at_each_request(engine, session_factory, key):
    sql(engine, "UPDATE keypairs SET expires_at = '2026-11-27 13:00:00'")
    assert auth(session_factory, now=NOW).name == "alice"
    with pytest.raises(Unauthenticated, match="expired"):
        auth(session_factory, now=NOW + dt.timedelta(hours=2))


def test_unknown_keys_are_never_kept(session_factory, key):
    with pytest.raises(Unauthenticated):
        auth(session_factory, access_key="HGNOPE")
    with db.transaction(session_factory) as s:
        kept = keycache.cache_of(s)._entries._rows[1]
        assert "HGNOPE" not in kept
        assert "HGK" not in kept  # nothing asked for it yet


def test_what_a_writing_transaction_read_is_never_kept(session_factory, key):
    with db.transaction(session_factory) as s:
        s.get(User, 1).active = False
        s.flush()
        with pytest.raises(Denied, match="inactive"):
            keyauth.principal_for_keypair(s, "HGK", SECRET, NOW)
        s.rollback()
    assert auth(session_factory).name == "alice"  # the rolled-back refusal was not kept


def last_use(session_factory):
    with db.transaction(session_factory) as s:
        t = s.scalar(sa.select(Keypair.last_used_at))
    return t.replace(tzinfo=dt.timezone.utc) if t is not None and t.tzinfo is None else t


def test_a_keys_last_use_is_recorded_to_the_minute(session_factory, key):
    assert last_use(session_factory) is None
    auth(session_factory, now=NOW)
    assert last_use(session_factory) == NOW  # the first use is written
    auth(session_factory, now=NOW + dt.timedelta(seconds=59))
    assert last_use(session_factory) == NOW  # within the minute: not again
    auth(session_factory, now=NOW + dt.timedelta(seconds=61))
    assert last_use(session_factory) == NOW + dt.timedelta(seconds=61)
    auth(session_factory, now=NOW)  # a clock gone back is written as it is
    assert last_use(session_factory) == NOW


def test_a_copy_starts_again_when_full(session_factory, key, monkeypatch):
    with db.transaction(session_factory) as s:
        s.add(Keypair(access_key="HGL", secret_hash=keys.hash_secret(SECRET), user_id=1))
    monkeypatch.setattr(keycache, "MAX_KEYS", 1)
    first = auth(session_factory)
    assert auth(session_factory) is first
    auth(session_factory, access_key="HGL")  # a second key: the copy was full
    assert auth(session_factory) is not first


def test_writes_to_other_tables_do_not_keep_a_transaction_from_keeping_what_it_read(
        session_factory, key):
    from quota_service.core.models import AuditEntry
    with db.transaction(session_factory) as s:
        s.add(AuditEntry(timestamp=NOW, actor="x", action="test", target="t", outcome="success",
                         status=200, detail=""))
        s.flush()  # the access log, as the requests batched with this one write it
        first = keyauth.principal_for_keypair(s, "HGK", SECRET, NOW)
    assert auth(session_factory) is first  # kept


def test_recording_a_use_does_not_keep_the_next_caller_from_being_kept(session_factory, key):
    with db.transaction(session_factory) as s:
        s.add(Keypair(access_key="HGL", secret_hash=keys.hash_secret(SECRET), user_id=1))
    with db.transaction(session_factory) as s:  # two requests batched together
        keyauth.principal_for_keypair(s, "HGL", SECRET, NOW)  # its first use: written
        first = keyauth.principal_for_keypair(s, "HGK", SECRET, NOW)
    assert last_use(session_factory) is not None
    assert auth(session_factory) is first  # kept all the same


def test_in_a_batch_the_keys_last_uses_are_one_update_at_its_end(engine, session_factory, key):
    from quota_service.core import laterrows

    with db.transaction(session_factory) as s:
        s.add(Keypair(access_key="HGL", secret_hash=keys.hash_secret(SECRET),
                      user_id=s.scalar(sa.select(User.id))))
    updates: list[str] = []

    def seen(conn, cursor, statement, *args):
        if statement.lstrip().startswith("UPDATE keypairs"):
            updates.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        with pytest.raises(RuntimeError):  # a batch that never reached its end
            with db.transaction(session_factory) as s:
                laterrows.collect(s)
                keyauth.principal_for_keypair(s, "HGK", SECRET, NOW)
                raise RuntimeError
        assert updates == [] and last_use(session_factory) is None
        with db.transaction(session_factory) as s:
            laterrows.collect(s)
            keyauth.principal_for_keypair(s, "HGK", SECRET, NOW)
            keyauth.principal_for_keypair(s, "HGL", SECRET, NOW + dt.timedelta(seconds=1))
            keyauth.principal_for_keypair(s, "HGK", SECRET, NOW + dt.timedelta(seconds=2))
            assert updates == []
            assert laterrows.flush(s) == 2
        assert len(updates) == 1
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    with session_factory() as s:
        used = dict(s.execute(sa.select(Keypair.access_key, Keypair.last_used_at)).all())
    assert {k: v.replace(tzinfo=dt.timezone.utc) if v.tzinfo is None else v
            for k, v in used.items()} == {k: NOW + dt.timedelta(seconds=2) for k in ("HGK", "HGL")}
    # written, so not due again within the minute
    assert not keyauth.use_due(keycache.cache_for(engine), "HGK", NOW + dt.timedelta(seconds=30))
