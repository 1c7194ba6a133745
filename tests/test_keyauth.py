"""A keypair caller taken from memory for a session's start or end and
confirmed in the ledger batch that acts (quota_service/tenancy/keyauth.py),
through the service's real app on SQLite and PostgreSQL: no transaction of
its own once the key was read, and every change to the accounts made before
the batch (by anybody, plain SQL included) refuses the write as the usual
check would."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from ledger_world import Cluster
from quota_service.core.models import Allocation, Keypair
from quota_service.tenancy import keyauth, keycache
from service_app import served  # noqa: F401

MINUTE = dt.timedelta(minutes=1)


@pytest.fixture
def api(served):  # noqa: F811
    """alice (acme/ml) may start sessions on group gpu; the service's clock
    is the cluster's."""
    c = Cluster(served.world)
    c.add_group("gpu", {"n1": ()}, cpu="8", domains=("acme",))
    served.clock = [c.now + dt.timedelta(seconds=1)]
    served.svc.clock = lambda: served.clock[0]
    return served


class AuthTransactions:
    """Counts the transactions that authenticate a caller on their own."""

    def __init__(self, served, monkeypatch):  # noqa: F811
        self.count, batches = 0, served.svc.write_batches
        real = batches.run

        async def counted(work):
            self.count += 1
            return await real(work)

        monkeypatch.setattr(batches, "run", counted)


async def start(api, user="alice"):
    return await api.call("POST", "allocations", user, json_body={
        "project": "ml", "resource_group": "gpu", "slots": {"cpu": "1"}})


def sql(api, statement: str) -> None:
    """``statement`` by another writer (plain SQL, its own transaction)."""
    engine = api.svc.engine
    if engine.dialect.name == "sqlite":
        statement = statement.replace("true", "1").replace("false", "0")
    with engine.begin() as c:
        c.exec_driver_sql(statement)


def held(api) -> int:
    with api.world.tx() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Allocation).where(
            Allocation.state == "allocated"))


async def test_a_kept_key_starts_and_ends_a_session_without_a_transaction_of_its_own(
        api, monkeypatch):
    auth = AuthTransactions(api, monkeypatch)
    resp, first = await start(api)  # the key is read (and its first use written)
    assert resp.code == 201, first
    assert auth.count == 1
    resp, second = await start(api)
    assert resp.code == 201, second
    resp, _ = await api.call("DELETE", f"allocations/{first['id']}", "alice")
    assert resp.code == 204
    assert auth.count == 1  # both confirmed in the batch that acted
    # a read is not a batched write: its caller is read the usual way
    resp, _ = await api.call("GET", f"allocations/{second['id']}", "alice")
    assert resp.code == 200 and auth.count == 2


@pytest.mark.parametrize("statement, status, words", [
    ("UPDATE keypairs SET active = false", 401, "keypair is inactive"),
    ("UPDATE users SET active = false WHERE name = 'alice'", 403, "user 'alice' is inactive"),
    ("UPDATE domains SET active = false WHERE name = 'acme'", 403, "domain 'acme' is inactive"),
    ("DELETE FROM keypairs", 401, "invalid keypair"),
])
async def test_a_change_to_the_accounts_after_the_key_was_kept_refuses_the_write(
        api, statement, status, words):
    resp, kept = await start(api)
    assert resp.code == 201, kept
    assert held(api) == 1
    sql(api, statement)
    resp, body = await start(api)
    assert (resp.code, words in body["message"]) == (status, True), body
    resp, body = await api.call("DELETE", f"allocations/{kept['id']}", "alice")
    assert (resp.code, words in body["message"]) == (status, True), body
    assert held(api) == 1  # neither started nor ended


async def test_a_membership_removed_after_the_key_was_kept_refuses_the_start(api):
    resp, kept = await start(api)
    assert resp.code == 201, kept
    sql(api, "DELETE FROM memberships")
    resp, body = await start(api)
    assert resp.code in (403, 404) and "ml" in body["message"], body
    assert held(api) == 1


async def test_a_wrong_secret_is_never_taken_from_memory(api):
    resp, _ = await start(api)
    assert resp.code == 201
    header = api.auth("alice")
    api._keys["alice"] = header[:-1] + ("x" if header[-1] != "x" else "y")
    resp, body = await start(api)
    assert resp.code == 401 and body["message"] == "invalid keypair", body
    assert held(api) == 1


def last_use(api) -> dt.datetime | None:
    with api.world.tx() as s:
        return s.scalar(sa.select(Keypair.last_used_at))


async def test_the_keys_use_is_written_to_the_minute_with_a_write_or_after_a_refusal(api):
    resp, _ = await start(api)
    assert resp.code == 201
    first = last_use(api)
    assert first is not None
    api.clock[0] += 2 * MINUTE  # its use is due again: written in the batch that started
    resp, _ = await start(api)
    assert resp.code == 201
    assert last_use(api) - first == 2 * MINUTE
    api.clock[0] += 2 * MINUTE  # due again, and this start is refused (no such group)
    resp, body = await api.call("POST", "allocations", "alice", json_body={
        "project": "ml", "resource_group": "nowhere", "slots": {"cpu": "1"}})
    assert resp.code >= 400, body
    assert last_use(api) - first == 4 * MINUTE


def test_kept_caller_takes_only_a_usable_key_with_its_secret(api):
    cache = keycache.KeyCache()
    now = api.clock[0]
    assert keyauth.kept_caller(cache, "HGnone", "s", now) is None  # never kept
    header = api.auth("alice")
    access, secret = header.split(" ", 1)[1].split(":", 1)
    with api.world.tx() as s:
        assert keyauth.principal_for_keypair(s, access, secret, now).name == "alice"
        cache = keycache.cache_of(s)
    assert keyauth.kept_caller(cache, access, secret, now).name == "alice"
    assert keyauth.kept_caller(cache, access, secret + "x", now) is None
    sql(api, f"UPDATE keypairs SET expires_at = '{(now + MINUTE).strftime('%Y-%m-%d %H:%M:%S')}'")
    with api.world.tx() as s:
        keyauth.principal_for_keypair(s, access, secret, now)
    assert keyauth.kept_caller(cache, access, secret, now) is not None
    assert keyauth.kept_caller(cache, access, secret, now + 2 * MINUTE) is None  # expired
