"""Per-session logs: the cap, who reads them, the retention rule.

The pure parts (what the file holds after an append, which logs are due)
are tested with plain data; the store on a temporary directory; the
endpoints through the service's real app (tests/service_app.py) on SQLite
and PostgreSQL: alice owns the sessions (acme/ml), ada administers acme,
bob is another acme user, gina and gus are in globex, root is superadmin.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pytest

from quota_service.core import db
from quota_service.scheduling import ledger
from quota_service.core.errors import Gone, Hidden, NotFound
from quota_service.core.models import Allocation
from quota_service.sessions.logs import (
    Ended,
    TRUNCATED,
    LogStore,
    appended,
    check_id,
    marker,
    read_log,
    to_purge,
)
from log_fixtures import alice_session, internal_logs, logs_path  # noqa: F401
from service_app import served  # noqa: F401

CAP = 4096
T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
DAY = dt.timedelta(days=1)
ID = "0b7e2c1e-5d8c-4c39-9a55-8e1c2f9d4a10"


# ---------------------------------------------------------------- what the file holds

def test_up_to_the_cap_every_byte_is_kept():
    assert appended(b"a" * 100, b"b" * (CAP - 100), CAP) == (b"a" * 100 + b"b" * (CAP - 100), False)


def test_one_byte_over_the_cap_drops_the_oldest_and_says_how_many():
    content, truncated = appended(b"a" * 100, b"b" * (CAP - 99), CAP)
    line = marker(CAP, 1 + len(marker(CAP, 99)))  # the line's own room is dropped too
    assert line == b"[hubgrid: older output was dropped to keep this log within 4096 bytes " \
                   b"(%d bytes dropped)]\n" % (1 + len(line))
    assert truncated and len(content) == CAP
    assert content.startswith(line)
    assert content[len(line):] == (b"a" * 100 + b"b" * (CAP - 99))[-(CAP - len(line)):]


def test_the_truncation_line_is_never_repeated():
    once, _ = appended(b"", b"x" * (CAP + 10), CAP)
    twice, _ = appended(once, b"y" * 10, CAP)
    first = 10 + len(marker(CAP, 999))  # 101: three digits
    assert once.startswith(marker(CAP, first))
    assert twice.count(TRUNCATED) == 1 and twice.startswith(marker(CAP, first + 10))
    assert twice.endswith(b"x" * 10 + b"y" * 10) and len(twice) == CAP


def test_a_chunk_bigger_than_the_cap_keeps_its_own_tail():
    data = bytes(range(256)) * 40
    content, truncated = appended(b"old", data, CAP)
    line = marker(CAP, 3 + len(data) - CAP + len(marker(CAP, 9999)))
    assert truncated and content == line + data[-(CAP - len(line)):]


@pytest.mark.parametrize("bad", ["../../etc/passwd", "x", "", "0B7E2C1E-5D8C-4C39-9A55-8E1C2F9D4A10",
                                 "{" + ID + "}", ID.replace("-", ""), ID + "/..", None, 7])
def test_only_a_canonical_allocation_id_names_a_file(bad):
    with pytest.raises(ValueError, match="is not an allocation id"):
        check_id(bad)
    assert check_id(ID) == ID


# ---------------------------------------------------------------- the store

@pytest.fixture
def store(tmp_path) -> LogStore:
    return LogStore(tmp_path / "logs", CAP)


def test_appends_accumulate_as_raw_bytes(store):
    utf8, latin1 = b"caf\xc3\xa9\n", b"\xff\xfe latin-1 \xe9\n"
    assert store.append(ID, utf8) == (len(utf8), False)
    assert store.append(ID, latin1) == (len(utf8) + len(latin1), False)
    assert store.read(ID) == utf8 + latin1
    assert store.read(ID, tail=3) == b" \xe9\n"


def test_exactly_the_cap_is_kept_whole_and_one_more_byte_truncates(store):
    assert store.append(ID, b"a" * (CAP - 1)) == (CAP - 1, False)
    assert store.append(ID, b"b") == (CAP, False)
    assert store.read(ID) == b"a" * (CAP - 1) + b"b"
    assert store.append(ID, b"c") == (CAP, True)
    content = store.read(ID)
    line = marker(CAP, 1 + len(marker(CAP, 99)))
    assert len(content) == CAP and content.startswith(line) and content.endswith(b"bc")
    assert content[len(line):] == (b"a" * (CAP - 1) + b"bc")[-(CAP - len(line)):]


def test_a_rewrite_leaves_no_temporary_file(store):
    store.append(ID, b"a" * CAP)
    store.append(ID, b"b" * 10)
    assert sorted(os.listdir(store.root)) == [f"{ID}.log"]


def test_a_failed_rewrite_keeps_the_old_file(store, monkeypatch):
    store.append(ID, b"a" * CAP)

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        store.append(ID, b"b")
    assert store.read(ID) == b"a" * CAP
    assert sorted(os.listdir(store.root)) == [f"{ID}.log"]


def test_reading_a_log_nothing_was_written_to_is_empty(store):
    assert store.read(ID) == b"" and store.read(ID, tail=10) == b""
    assert store.delete(ID) is False


def test_tail_reads_the_last_bytes(store):
    store.append(ID, b"0123456789")
    assert [store.read(ID, tail=n) for n in (0, 3, 10, 11)] == [
        b"", b"789", b"0123456789", b"0123456789"]


def test_a_bad_id_never_reaches_the_filesystem(store):
    for verb in (lambda: store.append("../x", b"a"), lambda: store.read("../x"),
                 lambda: store.delete("../x")):
        with pytest.raises(ValueError):
            verb()
    assert not store.root.exists()


def test_a_store_keeps_at_least_4k():
    with pytest.raises(ValueError, match="at least 4096"):
        LogStore("/nonexistent", 4095)


# ---------------------------------------------------------------- the retention rule

def ended(alloc_id, released=None, purged=None) -> Ended:
    return Ended(alloc_id, released, purged)


RETENTION = [
    ("released longer ago than the retention: due",
     [ended("a", T0 - 30 * DAY - dt.timedelta(seconds=1))], 30, ["a"]),
    ("released exactly the retention ago: not yet",
     [ended("a", T0 - 30 * DAY)], 30, []),
    ("released recently: kept", [ended("a", T0 - DAY)], 30, []),
    ("still running (never released): kept", [ended("a", None)], 30, []),
    ("already purged: not again", [ended("a", T0 - 90 * DAY, T0 - 50 * DAY)], 30, []),
    ("0 days: kept forever", [ended("a", T0 - 9999 * DAY)], 0, []),
    ("naive times from SQLite are UTC",
     [ended("a", (T0 - 31 * DAY).replace(tzinfo=None)), ended("b", (T0 - 29 * DAY).replace(tzinfo=None))],
     30, ["a"]),
    ("several at once, in order",
     [ended("a", T0 - 40 * DAY), ended("b", T0 - DAY), ended("c", T0 - 31 * DAY)], 30, ["a", "c"]),
]


@pytest.mark.parametrize("allocations, days, due", [c[1:] for c in RETENTION],
                         ids=[c[0] for c in RETENTION])
def test_which_logs_the_retention_rule_deletes(allocations, days, due):
    assert to_purge(allocations, T0, days) == due


# ---------------------------------------------------------------- who reads a log (manager)

@pytest.fixture
def session(cluster, tmp_path):
    """alice's allocated session with a log, and the store."""
    cluster.add_group("gpu", {"node-1": ()})
    a = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    store = LogStore(tmp_path / "logs", CAP)
    store.append(a["id"], b"hello\n")
    return cluster, a["id"], store


@pytest.mark.parametrize("reader", ["alice", "ada", "root"])
def test_the_owner_the_domain_admin_and_a_superadmin_read_the_log(session, reader):
    cluster, alloc_id, store = session
    with cluster.world.tx() as s:
        assert read_log(s, cluster.principal(reader), store, alloc_id, None, 30).data == b"hello\n"


@pytest.mark.parametrize("reader", ["bob", "gina", "gus"])
def test_everybody_else_is_told_there_is_no_such_allocation(session, reader):
    cluster, alloc_id, store = session
    with cluster.world.tx() as s, pytest.raises(Hidden, match=f"allocation '{alloc_id}' not found"):
        read_log(s, cluster.principal(reader), store, alloc_id, None, 30)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "nosuch", str(uuid.uuid4())])
def test_a_bad_or_unknown_id_is_not_found(session, bad):
    cluster, _, store = session
    with cluster.world.tx() as s, pytest.raises(NotFound, match="not found"):
        read_log(s, cluster.principal("root"), store, bad, None, 30)


def test_a_purged_log_is_gone_and_says_since_when(session):
    cluster, alloc_id, store = session
    with cluster.world.tx() as s:
        s.get(Allocation, alloc_id).log_purged_at = T0 + 40 * DAY
    with cluster.world.tx() as s, pytest.raises(Gone) as e:
        read_log(s, cluster.principal("alice"), store, alloc_id, None, 30)
    assert e.value.status == 410
    assert e.value.message == (f"the log of allocation {alloc_id} was purged on 2030-02-10: "
                               "logs are kept 30 days after their session ends")


# ---------------------------------------------------------------- over HTTP

async def test_the_hub_appends_and_the_owner_reads_text(served, alice_session):  # noqa: F811
    raw = "naïve ✓\n".encode() + b"\xff broken\n"
    resp, data = await served.call("POST", internal_logs(alice_session), "internal", body=raw)
    assert (resp.code, data) == (200, {"size": len(raw), "truncated": False})
    resp, text = await served.call("GET", logs_path(alice_session), "alice")
    assert resp.code == 200
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert text == "naïve ✓\n\ufffd broken\n"
    resp, text = await served.call("GET", logs_path(alice_session) + "?tail=7", "alice")
    assert (resp.code, text) == (200, "broken\n")
    assert served.svc.log_store.read(alice_session) == raw  # stored as it came


@pytest.mark.parametrize("reader, status", [("alice", 200), ("ada", 200), ("root", 200),
                                            ("bob", 404), ("gina", 404), ("gus", 404)])
async def test_who_reads_a_log_over_http(served, alice_session, reader, status):  # noqa: F811
    await served.call("POST", internal_logs(alice_session), "internal", body=b"secret output\n")
    resp, data = await served.call("GET", logs_path(alice_session), reader)
    assert resp.code == status
    if status == 404:
        assert data["message"] == f"allocation '{alice_session}' not found"
        assert "secret" not in str(data)


@pytest.mark.parametrize("tail", ["-1", "x", "1.5", "", "99999999999999999999", "½"])
async def test_a_bad_tail_is_a_400(served, alice_session, tail):  # noqa: F811
    resp, data = await served.call("GET", logs_path(alice_session) + f"?tail={tail}", "alice")
    assert resp.code == 400 and data["message"].startswith("tail: must be an integer")


async def test_appending_past_the_cap_over_http_truncates(served, alice_session):  # noqa: F811
    cap = served.svc.session_log_max_bytes
    resp, data = await served.call("POST", internal_logs(alice_session), "internal", body=b"a" * cap)
    assert data == {"size": cap, "truncated": False}
    resp, data = await served.call("POST", internal_logs(alice_session), "internal", body=b"z")
    assert data == {"size": cap, "truncated": True}
    resp, text = await served.call("GET", logs_path(alice_session), "alice")
    assert text.startswith(TRUNCATED.decode()) and text.endswith("az")


@pytest.mark.parametrize("who", [None, "alice", "root"])
async def test_only_the_hub_appends(served, alice_session, who):  # noqa: F811
    resp, _ = await served.call("POST", internal_logs(alice_session), who, body=b"forged")
    assert resp.code == 401
    assert served.svc.log_store.read(alice_session) == b""


@pytest.mark.parametrize("bad", ["..%2F..%2Fetc%2Fpasswd", "nosuch", str(uuid.uuid4())])
async def test_appending_to_a_bad_or_unknown_id_is_a_404_and_writes_nothing(
        served, bad):  # noqa: F811
    resp, data = await served.call("POST", internal_logs(bad), "internal", body=b"x")
    assert resp.code == 404 and "not found" in data["message"]
    assert not any(served.svc.log_store.root.iterdir())


async def test_an_empty_append_changes_nothing(served, alice_session):  # noqa: F811
    await served.call("POST", internal_logs(alice_session), "internal", body=b"abc")
    resp, data = await served.call("POST", internal_logs(alice_session), "internal", body=b"")
    assert (resp.code, data) == (200, {"size": 3, "truncated": False})


async def test_a_log_of_a_session_that_wrote_nothing_is_empty(served, alice_session):  # noqa: F811
    resp, text = await served.call("GET", logs_path(alice_session), "alice")
    assert (resp.code, text) == (200, "")


async def test_retention_purges_old_logs_and_they_answer_410(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    old = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    recent = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    running = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    for alloc_id in (old, recent, running):
        await served.call("POST", internal_logs(alloc_id), "internal", body=b"out\n")
    svc = served.svc
    with db.ledger_transaction(svc.session_factory) as s:
        ledger.release_allocation(s, s.get(Allocation, old), T0, "done")
        ledger.release_allocation(s, s.get(Allocation, recent), T0 + 20 * DAY, "done")
    now = T0 + 30 * DAY + dt.timedelta(minutes=1)
    svc.clock = lambda: now
    assert svc.purge_logs() == [old]
    assert svc.purge_logs() == []
    assert sorted(p.name for p in svc.log_store.root.iterdir()) == sorted(
        f"{i}.log" for i in (recent, running))
    resp, data = await served.call("GET", logs_path(old), "alice")
    assert resp.code == 410 and data["reason"] == "gone"
    assert data["message"] == (f"the log of allocation {old} was purged on 2030-01-31: "
                               "logs are kept 30 days after their session ends")
    resp, data = await served.call("POST", internal_logs(old), "internal", body=b"late\n")
    assert resp.code == 410
    assert not svc.log_store.path(old).exists()
    resp, data = await served.call("GET", f"allocations/{old}", "alice")
    assert data["log_purged_at"] == now.isoformat()
    resp, text = await served.call("GET", logs_path(recent), "alice")
    assert (resp.code, text) == (200, "out\n")


async def test_a_purged_log_is_hidden_from_others_like_the_allocation(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    old = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    with db.ledger_transaction(served.svc.session_factory) as s:
        ledger.release_allocation(s, s.get(Allocation, old), T0, "done")
    served.svc.clock = lambda: T0 + 31 * DAY
    assert served.svc.purge_logs() == [old]
    resp, _ = await served.call("GET", logs_path(old), "gina")
    assert resp.code == 404


async def test_no_retention_keeps_logs_forever(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"node-1": ()})
    old = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
    await served.call("POST", internal_logs(old), "internal", body=b"out\n")
    with db.ledger_transaction(served.svc.session_factory) as s:
        ledger.release_allocation(s, s.get(Allocation, old), T0, "done")
    served.svc.session_log_retention_days = 0
    served.svc.clock = lambda: T0 + 3650 * DAY
    assert served.svc.purge_logs() == []
    resp, text = await served.call("GET", logs_path(old), "alice")
    assert (resp.code, text) == (200, "out\n")
