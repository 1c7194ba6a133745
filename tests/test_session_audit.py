"""Sessions in the access log: each session's start, wait,
admission and end are ``session.*`` records about its allocation id, with
its user, server, resources (exact, binary units) and node, and how it
ended; drains, undrains and grants say what they did. Through the ledger
and through the real tornado app (the hub is a recording double)."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from ledger_world import Cluster
from quota_service.core.models import Allocation, AuditEntry
from quota_service.scheduling import sessionaudit
from quota_service.tenancy import audit
from service_app import served  # noqa: F401


def records(world, alloc_id: str) -> list[tuple[str, str | None, dict]]:
    """(action, actor, detail parts) of a session's records, oldest first."""
    with world.session_factory() as s:
        return [(e.action, e.actor, sessionaudit.parse_detail(e.detail))
                for e in sessionaudit.history(s, alloc_id)]


@pytest.fixture
def cluster_1cpu(cluster):
    c = cluster
    c.add_group("small", {"n1": ("A100",)}, cpu="1", mem="4G", domains=("acme",))
    return c


def test_a_session_that_starts_at_once_says_who_what_and_where(cluster_1cpu):
    a = cluster_1cpu.submit("alice", "ml", "small", slots={"cpu": "0.5", "mem": "1610612736",
                                                           "gpu.shares": "0.5"})
    ((action, actor, parts),) = records(cluster_1cpu.world, a["id"])
    assert (action, actor) == ("session.start", "alice")
    assert parts == {"user": "alice", "started through": "the API", "project": "ml",
                     "resource group": "small", "type": "interactive",
                     "resources": "cpu 0.5, gpu.shares 0.5, mem 1.5 GiB",
                     "gpus": "#0 x 0.5", "node": "n1"}


def test_a_queued_session_is_queued_admitted_and_its_end_says_who_stopped_it(cluster_1cpu):
    c = cluster_1cpu
    first = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    second = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    (queued,) = records(c.world, second["id"])
    assert queued[0] == "session.queue" and "node" not in queued[2]
    assert "cpu" in queued[2]["waits for"]
    c.now += dt.timedelta(seconds=30)
    c.release("alice", first["id"], "stopped by alice")
    c.now += dt.timedelta(seconds=1)
    assert c.schedule("small") == [second["id"]]
    c.now += dt.timedelta(seconds=60)
    c.release("ada", second["id"], "stopped by ada")
    ended_first = records(c.world, first["id"])[-1]
    assert ended_first[0:2] == ("session.end", "alice")
    assert ended_first[2]["ended"] == "stopped by alice" and ended_first[2]["ran"] == "31 s"
    actions = [(r[0], r[1]) for r in records(c.world, second["id"])]
    assert actions == [("session.queue", "alice"), ("session.admit", "hubgrid-scheduler"),
                       ("session.end", "ada")]
    admit, end = records(c.world, second["id"])[1:]
    assert admit[2]["node"] == "n1" and admit[2]["waited"] == "31 s"
    assert end[2]["ended"] == "stopped by ada" and end[2]["ran"] == "60 s"


def test_a_request_cancelled_while_waiting_says_so(cluster_1cpu):
    c = cluster_1cpu
    c.submit("alice", "ml", "small", slots={"cpu": "1"})
    mine = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    theirs = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    c.release("alice", mine["id"], "stopped by alice")
    c.schedule("small", abandoned={theirs["id"]: "abandoned: nobody waits"})
    assert records(c.world, mine["id"])[-1][2]["ended"] == "cancelled while waiting, by alice"
    action, actor, parts = records(c.world, theirs["id"])[-1]
    assert (action, actor) == ("session.end", "hubgrid-scheduler")
    assert parts["ended"] == "cancelled while waiting: abandoned: nobody waits"
    assert "ran" not in parts


@pytest.mark.parametrize("reason, ended, actor", [
    ("the server is no longer running", "died: the server was no longer running", "alice"),
    ("stopped", "stopped through the hub (by its owner, an admin or the hub's culler)",
     "alice"),
    ("the server failed to start", "failed: the server failed to start", "alice"),
    ("no hub server holds it (reconciled 90 s after it was made)",
     "released: no hub server holds it (reconciled 90 s after it was made)", "alice"),
])
def test_a_hub_session_ends_as_its_spawner_says(cluster_1cpu, reason, ended, actor):
    from quota_service.core import db
    from quota_service.scheduling import ledger

    a = cluster_1cpu.submit("alice", "ml", "small", slots={"cpu": "1"})
    with db.ledger_transaction(cluster_1cpu.world.session_factory) as s:
        row = s.get(Allocation, a["id"])
        row.origin, row.server_name = "hub", "lab"
        ledger.release_allocation(s, row, cluster_1cpu.now, reason, exit_code=3)
    action, who, parts = records(cluster_1cpu.world, a["id"])[-1]
    assert (action, who, parts["ended"]) == ("session.end", actor, ended)
    assert parts["server"] == "lab" and parts["exit code"] == "3"


def test_a_reclaimed_session_ends_for_its_rule(cluster_1cpu):
    from quota_service.core import db
    from quota_service.scheduling import ledger

    a = cluster_1cpu.submit("alice", "ml", "small", slots={"cpu": "1"})
    with db.ledger_transaction(cluster_1cpu.world.session_factory) as s:
        row = s.get(Allocation, a["id"])
        row.reclaim_notice = {"rule": "idle", "deadline": cluster_1cpu.now.isoformat(),
                              "reason": "no activity for 3600 s", "numbers": {},
                              "warned_at": cluster_1cpu.now.isoformat(), "shadow": False,
                              "reclaim_reason": "reclaimed (idle): no activity for 3600 s"}
        ledger.release_allocation(s, row, cluster_1cpu.now, "stopped")
    action, who, parts = records(cluster_1cpu.world, a["id"])[-1]
    assert (action, who) == ("session.end", "hubgrid-reclaim")
    assert parts["ended"] == "reclaimed by the idle rule: no activity for 3600 s"


def test_details_parse_back_whatever_the_end_says():
    text = sessionaudit.detail_text([("user", "bob"), ("node", "n1"),
                                     ("ended", "released: a; b: c")])
    assert sessionaudit.parse_detail(text) == {"user": "bob", "node": "n1",
                                               "ended": "released: a; b: c"}
    assert sessionaudit.parse_detail("ended: stopped by x") == {"ended": "stopped by x"}
    assert sessionaudit.resources({}) == "none"


# --- through the served API ---------------------------------------------------

class RecordingHub:
    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    async def call(self, method: str, path: str, *args, **kwargs):
        self.calls.append((method, path))


@pytest.fixture
def group(served):  # noqa: F811
    c = Cluster(served.world)
    c.set_policy("default")
    c.add_group("gpu", {"n1": ()}, cpu="2", domains=("acme",))
    served.svc.clock = lambda: c.now + dt.timedelta(seconds=1)
    return served


async def _audit(served, query, reader="root"):  # noqa: F811
    resp, page = await served.call("GET", "audit?" + query, reader)
    assert resp.code == 200, page
    return page["entries"]


async def test_api_sessions_are_logged_as_sessions_with_the_callers_credential(group):
    resp, a = await group.call("POST", "allocations", "alice", json_body={
        "project": "ml", "resource_group": "gpu", "slots": {"cpu": "1", "mem": "2G"}})
    assert resp.code == 201, a
    resp, refused = await group.call("POST", "allocations", "alice", json_body={
        "project": "ml", "resource_group": "gpu", "slots": {"cpu": "99"}})
    assert resp.code == 422, refused
    resp, _ = await group.call("DELETE", f"allocations/{a['id']}", "alice")
    assert resp.code == 204
    entries = await _audit(group, "user=ali")
    assert [(e["action"], e["outcome"]) for e in entries] == [
        ("session.end", "success"), ("session.start", "invalid"), ("session.start", "success")]
    end, _, start = entries
    assert start["target"] == end["target"] == a["id"]
    assert start["credential"] == "keypair" and start["source"] == "127.0.0.1"
    assert start["domain"] == "acme"
    assert "resources: cpu 1, mem 2 GiB; node: n1" in start["detail"]
    assert end["detail"].endswith("ended: stopped by alice")
    # one session's records by its id (what a session's history reads), and
    # the domain admin reads them too
    assert [e["action"] for e in await _audit(group, f"target={a['id']}", "ada")] == [
        "session.end", "session.start"]
    assert await _audit(group, f"target={a['id']}", "gus") == []


async def test_a_hub_session_stopped_from_the_admin_pages_ends_stopped_by_that_admin(group):
    resp, a = await group.call("POST", "internal/allocations", "internal", json_body={
        "user": "alice", "project": "ml", "resource_group": "gpu", "slots": {"cpu": "1"},
        "server_name": "lab"})
    assert resp.code == 201, a
    group.svc.mirror.hub = RecordingHub()
    resp, body = await group.call("POST", f"allocations/{a['id']}/stop", "ada")
    assert resp.code == 202, body
    resp, body = await group.call("DELETE", f"internal/allocations/{a['id']}?reason=stopped",
                                  "internal")
    assert resp.code == 200, body
    entries = list(reversed(await _audit(group, f"target={a['id']}")))
    assert [(e["action"], e["actor"], e["credential"]) for e in entries] == [
        ("session.start", "alice", "hub"), ("session.stop", "ada", "keypair"),
        ("session.end", "ada", "keypair")]
    assert "server: lab" in entries[0]["detail"]
    assert entries[2]["detail"].endswith("; ended: stopped by ada")


async def test_a_drain_an_undrain_and_a_grant_say_what_they_did(group):
    for schedulable in (False, True):
        resp, body = await group.call("PATCH", "nodes/n1", "root",
                                      json_body={"schedulable": schedulable})
        assert resp.code == 200, body
    resp, body = await group.call("PATCH", "nodes/n1", "root",
                                  json_body={"capacity": {"cpu": "4", "mem": "32G"}})
    assert resp.code == 200, body
    resp, body = await group.call("PUT", "resource-groups/gpu/grants", "root",
                                  json_body={"user": "bob"})
    assert resp.code in (200, 201), body
    resp, body = await group.call("DELETE", "resource-groups/gpu/grants", "root",
                                  json_body={"user": "bob"})
    assert resp.code == 204, body
    entries = list(reversed(await _audit(group, "user=root")))
    got = [(e["action"], e["target"], e["detail"]) for e in entries]
    assert got[:4] == [
        ("node.drain", "n1",
         "node: n1; drained (no new sessions; running ones stay); resource group: gpu"),
        ("node.undrain", "n1",
         "node: n1; undrained (takes new sessions again); resource group: gpu"),
        ("node.update", "n1", "node: n1; capacity: cpu 4, mem 32 GiB; resource group: gpu"),
        ("resource-group.grant", "gpu", "granted to user bob"),
    ]
    assert got[4] == ("resource-group.revoke", "gpu", "revoked from user bob")


def test_the_user_filter_matches_prefixes_exactly(session_factory):
    t0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    for i, actor in enumerate(("alice", "alina", "Alice", "bob", "a%b", "axb")):
        audit.record(session_factory, audit.Record(action="x", outcome="success", status=200,
                                                   actor=actor, target=str(i)), t0)
    from quota_service.core.authz import Principal
    from quota_service.core.models import Role

    root = Principal("root", Role.superadmin, "acme")

    def actors(prefix):
        with session_factory() as s:
            page = audit.query(s, root, {"user": prefix})
        return sorted(e["actor"] for e in page["entries"])

    assert actors("ali") == ["alice", "alina"]
    assert actors("alice") == ["alice"]
    assert actors("A") == ["Alice"]
    assert actors("a%") == ["a%b"]  # no wildcards
    assert actors("zz") == []
    with session_factory() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(AuditEntry)) == 6
