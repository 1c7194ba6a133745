"""The access log: records, filters, pages and who may read which part."""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.tenancy import audit
from quota_service.core.authz import Principal
from quota_service.core.errors import Denied, Invalid
from quota_service.core.models import AuditEntry, Role

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)
MINUTE = dt.timedelta(minutes=1)

ROOT = Principal("root", Role.superadmin, "acme")
ADA = Principal("ada", Role.domain_admin, "acme")
GUS = Principal("gus", Role.domain_admin, "globex")
ALICE = Principal("alice", Role.user, "acme", frozenset({("acme", "ml")}))

# (minute, actor, actor_domain, target domain, action, outcome, status)
LOG = [
    (0, "alice", "acme", "acme", "login", "success", 200),
    (1, "gina", "globex", "globex", "login", "success", 200),
    (2, "ada", "acme", "acme", "project.create", "success", 201),
    (3, "gus", "globex", "acme", "project.create", "denied", 404),
    (4, "root", "acme", "globex", "user.update", "success", 200),
    (5, "gina", "globex", "globex", "keypair.create", "success", 201),
    (6, None, None, None, "user.read", "denied", 401),
    (7, "mallory", None, None, "login", "failure", 401),
    (8, "bob", "acme", "acme", "user.update", "invalid", 422),
]


@pytest.fixture
def log(session_factory):
    for minute, actor, actor_domain, domain, action, outcome, status in LOG:
        audit.record(
            session_factory,
            audit.Record(action=action, outcome=outcome, status=status, actor=actor,
                         actor_domain=actor_domain, domain=domain, target=f"t{minute}"),
            T0 + minute * MINUTE,
        )
    return session_factory


def read(factory, principal=ROOT, **args) -> dict:
    with factory() as s:
        return audit.query(s, principal, {k: str(v) for k, v in args.items()})


def minutes(page: dict) -> list[int]:
    return [int(e["target"][1:]) for e in page["entries"]]


def test_a_superadmin_reads_everything_newest_first(log):
    page = read(log)
    assert minutes(page) == [8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert (page["offset"], page["limit"], page["next_offset"]) == (0, 100, None)


def test_a_record_keeps_every_field(session_factory):
    rec = audit.Record(action="user.delete", outcome="success", status=204, actor="ada",
                       actor_domain="acme", domain="acme", credential="keypair",
                       source="10.0.0.7", target="bob", detail="bye")
    audit.record(session_factory, rec, T0)
    (entry,) = read(session_factory)["entries"]
    assert entry == {
        "id": entry["id"], "timestamp": T0.isoformat(), "actor": "ada", "actor_domain": "acme",
        "domain": "acme", "credential": "keypair", "source": "10.0.0.7",
        "action": "user.delete", "target": "bob", "outcome": "success", "status": 204,
        "detail": "bye",
    }


def test_long_targets_and_details_are_cut_to_fit(session_factory):
    audit.record(session_factory, audit.Record(action="x", outcome="error", status=500,
                                               target="t" * 2000, detail="d" * 9000), T0)
    (entry,) = read(session_factory)["entries"]
    assert (len(entry["target"]), len(entry["detail"])) == (512, 4000)


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"user": "gina"}, [5, 1]),
        ({"user": "nobody"}, []),
        ({"action": "login"}, [7, 1, 0]),
        ({"outcome": "denied"}, [6, 3]),
        ({"action": "login", "outcome": "success"}, [1, 0]),
        ({"since": (T0 + 6 * MINUTE).isoformat()}, [8, 7, 6]),
        ({"until": (T0 + 2 * MINUTE).isoformat()}, [1, 0]),
        ({"since": (T0 + 2 * MINUTE).isoformat(), "until": (T0 + 4 * MINUTE).isoformat()},
         [3, 2]),
        # naive times are UTC
        ({"since": "2026-03-01T09:07:00"}, [8, 7]),
        # the same instant written in another zone selects the same entries
        ({"since": "2026-03-01T11:07:00+02:00"}, [8, 7]),
        ({"until": "2026-03-01T04:02:00-05:00"}, [1, 0]),
        ({"user": "gina", "since": (T0 + 2 * MINUTE).isoformat()}, [5]),
    ],
    ids=lambda v: "&".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else None,
)
def test_filters(log, args, expected):
    assert minutes(read(log, **args)) == expected


def test_pages_walk_every_entry_once(log):
    seen, offset, pages = [], 0, 0
    while offset is not None:
        page = read(log, limit=4, offset=offset)
        assert len(page["entries"]) <= 4
        seen += minutes(page)
        offset = page["next_offset"]
        pages += 1
    assert seen == [8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert pages == 3


@pytest.mark.parametrize(
    "limit, offset, expected, next_offset",
    [(3, 0, [8, 7, 6], 3), (3, 6, [2, 1, 0], None), (9, 0, list(range(8, -1, -1)), None),
     (8, 0, list(range(8, 0, -1)), 8), (5, 20, [], None)],
)
def test_pagination(log, limit, offset, expected, next_offset):
    page = read(log, limit=limit, offset=offset)
    assert minutes(page) == expected
    assert (page["limit"], page["offset"], page["next_offset"]) == (limit, offset, next_offset)


def test_a_domain_admin_reads_exactly_the_entries_about_their_domain(log):
    # by what the entry is about, whoever acted: minute 3 (gus of globex
    # refused in acme) is acme's, minute 4 (root, of acme, acting on globex)
    # is globex's alone; never the anonymous entries (6, 7)
    assert minutes(read(log, ADA)) == [8, 3, 2, 0]
    assert minutes(read(log, GUS)) == [5, 4, 1]


def test_a_domain_admin_cannot_widen_their_scope_with_filters(log):
    assert minutes(read(log, ADA, user="gina")) == []
    assert minutes(read(log, ADA, action="login")) == [0]
    # the superadmin is of acme, but what they did in globex is globex's
    assert minutes(read(log, ADA, user="root")) == []
    assert minutes(read(log, GUS, user="root")) == [4]
    assert minutes(read(log, ADA, user="gus")) == [3]


@pytest.mark.parametrize("target, actor_domain, superadmin, status, expected", [
    ("globex", "acme", True, 201, "globex"),   # a superadmin acting in another domain
    ("globex", "acme", False, 404, "globex"),  # a refusal in a domain the handler named
    (None, "acme", False, 422, "acme"),        # a user acts inside their own domain
    (None, "acme", True, 422, None),           # a superadmin acts anywhere: theirs only
    (None, "acme", False, 404, None),          # not found may be another domain's thing
    (None, None, False, 401, None),            # nobody
])
def test_an_entry_is_about_its_target_domain(target, actor_domain, superadmin, status, expected):
    assert audit.entry_domain(target, actor_domain, superadmin, status) == expected


def test_names_a_client_sent_are_recorded_with_their_controls_visible(session_factory):
    audit.record(session_factory, audit.Record(
        action="login", outcome="failure", status=401, actor="\u202enimda", source="1.2.3.4",
        target="a\nb\u2066c", detail="bad \x00"), T0)
    (entry,) = read(session_factory)["entries"]
    assert (entry["actor"], entry["target"], entry["detail"]) == (
        "\\u202enimda", "a\\u000ab\\u2066c", "bad \\u0000")
    audit.record(session_factory, audit.Record(action="login", outcome="failure", status=401,
                                               actor="\u202e" * 255), T0 + MINUTE)
    assert len(read(session_factory)["entries"][0]["actor"]) == 255


@pytest.mark.parametrize("args", [{}, {"user": "alice"}, {"limit": "0"}])
def test_a_user_may_not_read_the_log(log, args):
    with pytest.raises(Denied):
        read(log, ALICE, **args)


@pytest.mark.parametrize(
    "args, message",
    [
        ({"limit": "0"}, "limit: must be between 1 and 500"),
        ({"limit": "501"}, "limit: must be between 1 and 500"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "ten"}, "limit: not an integer"),
        ({"limit": "1.5"}, "limit: not an integer"),
        ({"limit": ""}, "limit: not an integer"),
        ({"offset": "-1"}, "offset"),
        ({"offset": "x"}, "offset: not an integer"),
        ({"since": "yesterday"}, "since: not an ISO 8601 time"),
        ({"until": "2026-13-01"}, "until: not an ISO 8601 time"),
        ({"page": "2"}, "unknown query parameter(s): page"),
    ],
)
def test_bad_query_parameters_are_invalid(log, args, message):
    with pytest.raises(Invalid) as e:
        read(log, **args)
    assert message in e.value.message


def test_the_largest_page_is_500(session_factory):
    for i in range(501):
        audit.record(session_factory, audit.Record(action="x", outcome="success", status=200),
                     T0 + i * MINUTE)
    page = read(session_factory, limit=500)
    assert len(page["entries"]) == 500 and page["next_offset"] == 500
    assert len(read(session_factory)["entries"]) == 100  # the default page


def test_records_are_independent_of_other_transactions(session_factory):
    # a record is committed by itself: rolling back another session's work
    # does not take it away
    with session_factory() as s:
        audit.record(session_factory, audit.Record(action="x", outcome="denied", status=403), T0)
        s.rollback()
    with session_factory() as s:
        assert s.query(AuditEntry).count() == 1


# --- through the served API ---------------------------------------------------

from service_app import served  # noqa: E402,F401


async def _entries(served, reader, query, count=None):  # noqa: F811
    """``reader``'s page for ``query``; waits until the superadmin's page for
    the same query holds ``count`` entries (records follow the answers)."""
    import asyncio

    for _ in range(200):
        resp, page = await served.call("GET", "audit?" + query, "root")
        if count is None or len(page["entries"]) >= count:
            break
        await asyncio.sleep(0.05)
    resp, page = await served.call("GET", "audit?" + query, reader)
    assert resp.code == 200, page
    return page["entries"]


async def test_a_superadmins_work_in_another_domain_is_that_domains_only(served):  # noqa: F811
    """root (superadmin of acme) acts in globex: globex's admin reads every
    entry, keypair access keys included; acme's admin reads none of them."""
    for method, path, body in (
        ("POST", "users", {"name": "gwen", "domain": "globex"}),
        ("POST", "keypairs", {"user": "gina"}),
        ("POST", "vfolders", {"name": "shared", "project": "globex/lab"}),
        ("PATCH", "users/gina", {"active": False}),
    ):
        resp, data = await served.call(method, path, "root", json_body=body)
        assert resp.code in (200, 201), data
        if path == "keypairs":
            access_key = data["access_key"]
    globex = await _entries(served, "gus", "user=root", count=4)
    assert {e["action"] for e in globex} == {"user.create", "keypair.create", "vfolder.create",
                                             "user.update"}
    assert {e["domain"] for e in globex} == {"globex"}
    assert any(access_key in e["target"] for e in globex)
    assert await _entries(served, "ada", "user=root") == []
    everything = await _entries(served, "ada", "")
    assert all(e["domain"] == "acme" for e in everything)
    assert not any(access_key in e["target"] for e in everything)


async def test_a_domain_admins_probes_of_other_domains_do_not_show_in_their_log(served):  # noqa: F811
    """ada (acme) asks for globex's user and for a user nobody has: her log
    tells her nothing of globex, not even that the probe was refused."""
    for method, path in (("GET", "users/gina"), ("PATCH", "users/gina"), ("PATCH", "users/nobody"),
                         ("GET", "domains/globex")):
        resp, _ = await served.call(method, path, "ada", json_body={"active": True}
                                    if method == "PATCH" else None)
        assert resp.code == 404
    await _entries(served, "root", "user=ada", count=4)
    assert await _entries(served, "ada", "user=ada") == []
    # a probe whose domain the path names is in that domain's log
    assert "globex" in {e["target"] for e in await _entries(served, "gus", "user=ada")}


def test_a_write_batchs_entries_are_one_insert_at_its_end(session_factory):
    import asyncio

    import sqlalchemy as sa

    from quota_service.core.groupcommit import GroupCommit

    inserts: list[str] = []

    def seen(conn, cursor, statement, *args):
        if statement.lstrip().startswith("INSERT INTO audit_log"):
            inserts.append(statement)

    engine = session_factory.kw["bind"]
    commit = GroupCommit(session_factory)
    recs = [audit.Record(actor=f"user{i}", actor_domain="acme", domain="acme",
                         credential="keypair", source="127.0.0.1", action="allocation.create",
                         target=f"a{i}", outcome="success", status=201) for i in range(3)]

    async def all_at_once():
        await asyncio.gather(*(commit.run(lambda s, r=r: audit.add(s, r, T0)) for r in recs))

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        asyncio.run(all_at_once())
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert commit.batches == 1 and len(inserts) == 1
    assert sorted(minutes(read(session_factory))) == [0, 1, 2]
