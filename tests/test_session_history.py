"""GET allocations/{id}/history and GET allocations/{id}/usage: a session's
scheduling history (asked, queued and why, admitted where, warned, kept,
stopped by whom, reclaimed, cancelled) and its live use from the reclaim
pass's readings, for whoever may see the session.
Through the real tornado app; the pure builders with plain data."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from ledger_world import Cluster
from quota_service.core.models import ReclaimEvent
from quota_service.operations import sessionview
from quota_service.operations.reclaim.window import Reading, Window
from service_app import served  # noqa: F401

T0 = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)


def events(body: dict) -> list[str]:
    return [e["event"] for e in body["events"]]


@pytest.fixture
def cluster(served):  # noqa: F811
    """A one-node group of 2 CPUs in acme and globex; alice's first session fills it."""
    c = Cluster(served.world)
    c.add_group("small", {"n1": ()}, cpu="2", domains=("acme", "globex"))
    served.svc.clock = lambda: c.now + dt.timedelta(seconds=1)
    served.cluster = c
    return served


async def test_a_queued_session_says_what_it_waited_for_and_where_it_was_admitted(cluster):
    c = cluster.cluster
    first = c.submit("alice", "ml", "small", slots={"cpu": "2"})
    second = c.submit("alice", "ml", "small", slots={"cpu": "1", "mem": "1073741824"})
    assert second["state"] == "pending"
    c.schedule("small")
    resp, body = await cluster.call("GET", f"allocations/{second['id']}/history", "alice")
    assert resp.code == 200, body
    assert events(body) == ["requested", "queued"]
    queued = body["events"][1]
    assert queued["text"] == "waits in the queue" and queued["reasons"], queued
    assert "cpu" in str(queued["reasons"])
    assert body["events"][0]["slots"] == {"cpu": "1", "mem": "1073741824"}

    c.now += dt.timedelta(seconds=30)
    c.release("alice", first["id"])
    assert c.schedule("small") == [second["id"]]
    resp, body = await cluster.call("GET", f"allocations/{second['id']}/history", "alice")
    assert events(body) == ["requested", "queued", "admitted"], body
    queued, admitted = body["events"][1:]
    assert queued["text"] == "waited in the queue" and "cpu" in str(queued["reasons"])
    assert admitted["text"] == "admitted on n1" and admitted["node"] == "n1"
    assert admitted["at"] > queued["at"]
    # the first one never waited: no "queued" step
    resp, body = await cluster.call("GET", f"allocations/{first['id']}/history", "alice")
    assert events(body) == ["requested", "admitted", "ended"], body
    assert body["events"][-1]["text"] == "done"


async def test_warned_kept_and_stopped_by_an_admin_read_in_order(cluster):
    c = cluster.cluster
    a = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    with cluster.world.tx() as s:
        for kind, minutes, details in (("warning", 5, {"reason": "idle for 55 min", "deadline": "x"}),
                                       ("extended", 6, {"kept_until": "2026-12-01T11:00:00+00:00"})):
            s.add(ReclaimEvent(allocation_id=a["id"], kind=kind, rule="idle",
                               at=c.now + dt.timedelta(minutes=minutes), resource_group_id=1,
                               project_id=1, domain_id=1, user_id=c.user_id("alice"),
                               details=details))
    c.now += dt.timedelta(minutes=10)
    resp, body = await cluster.call("POST", f"allocations/{a['id']}/stop", "ada")
    assert resp.code == 200, body
    resp, body = await cluster.call("GET", f"allocations/{a['id']}/history", "alice")
    assert resp.code == 200, body
    # the stop's own access-log record (allocation-stop.create; session.stop for a
    # hub server's) comes as "logged"; an API session's says only its end
    steps = [e for e in events(body) if e != "logged"]
    assert steps == ["requested", "admitted", "warned", "kept", "stopped"], body
    by_event = {e["event"]: e for e in body["events"]}
    assert by_event["warned"]["text"] == "warned (idle): idle for 55 min"
    assert by_event["kept"]["text"] == "kept until 2026-12-01T11:00:00+00:00"
    assert all(e["by"] == "ada" for e in body["events"] if e["event"] == "logged")
    assert by_event["stopped"]["text"] == "stopped by ada"


async def test_the_access_logs_records_of_the_session_come_in_with_who_acted(cluster):
    """A queue move by an admin (its record targets "group/id") and a record
    of another session are told apart; row steps are not repeated."""
    c = cluster.cluster
    c.submit("alice", "ml", "small", slots={"cpu": "2"})
    waiting = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    other = c.submit("alice", "ml", "small", slots={"cpu": "1"})
    resp, body = await cluster.call(
        "PATCH", f"resource-groups/small/queue/{other['id']}", "ada", json_body={"position": 0})
    assert resp.code == 200, body
    resp, body = await cluster.call("GET", f"allocations/{other['id']}/history", "alice")
    logged = [e for e in body["events"] if e["event"] == "logged"]
    assert len(logged) == 1 and logged[0]["by"] == "ada", body
    assert not {"session.queue", "session.start", "allocation.create"} & {
        e.get("action") for e in body["events"]}
    resp, body = await cluster.call("GET", f"allocations/{waiting['id']}/history", "alice")
    assert "logged" not in events(body), body


async def test_a_request_cancelled_while_waiting_says_so(cluster):
    c = cluster.cluster
    c.submit("alice", "ml", "small", slots={"cpu": "2"})
    waiting = c.submit("alice", "ml", "small", slots={"cpu": "2"})
    c.release("alice", waiting["id"], "cancelled by alice")
    resp, body = await cluster.call("GET", f"allocations/{waiting['id']}/history", "alice")
    assert events(body)[-1] == "cancelled", body
    assert body["events"][-1]["text"] == "cancelled while waiting: cancelled by alice"


async def test_only_who_may_see_the_session_reads_its_history_and_use(cluster):
    a = cluster.cluster.submit("alice", "ml", "small", slots={"cpu": "1"})
    for path in ("history", "usage"):
        for who, code in (("alice", 200), ("ada", 200), ("root", 200), ("gina", 404),
                          ("gus", 404)):
            resp, body = await cluster.call("GET", f"allocations/{a['id']}/{path}", who)
            assert resp.code == code, (path, who, body)
        resp, body = await cluster.call("GET", f"allocations/nope/{path}", "root")
        assert resp.code == 404 and body["message"], body


async def test_use_is_the_reclaim_passs_readings_with_cpu_of_the_granted_cores(cluster):
    a = cluster.cluster.submit("alice", "ml", "small", slots={"cpu": "2"})
    resp, body = await cluster.call("GET", f"allocations/{a['id']}/usage", "alice")
    assert resp.code == 200, body
    assert body["latest"] is None and body["note"].startswith("not sampled"), body
    window = Window()
    window.add(Reading(T0, Decimal("10"), 1 << 30, 2 << 30), 600)
    window.add(Reading(T0 + dt.timedelta(seconds=60), Decimal("70"), 3 << 29, 2 << 30,
                       Decimal("12.5"), Decimal("40")), 600)
    cluster.svc.reclaimer.windows[a["id"]] = window
    resp, body = await cluster.call("GET", f"allocations/{a['id']}/usage", "ada")
    assert resp.code == 200, body
    # 60 CPU-seconds in 60 s on 2 granted cores: 50 %
    assert body["latest"] == {"at": "2026-12-01T09:01:00+00:00", "cpu_percent": "50.00",
                              "mem_used": str(3 << 29), "mem_limit": str(2 << 30),
                              "gpu_util": "12.50", "gpu_mem": "40.00"}
    assert [s["cpu_percent"] for s in body["samples"]] == [None, "50.00"]
    assert body["note"] == ""
    cluster.cluster.release("alice", a["id"])
    resp, body = await cluster.call("GET", f"allocations/{a['id']}/usage", "alice")
    assert body["latest"] is None and body["note"] == "it is not running", body


# --- the pure builders ---------------------------------------------------------

def test_cpu_percent_needs_two_readings_with_cpu_time_and_time_between():
    r0 = Reading(T0, Decimal("1"))
    r1 = Reading(T0 + dt.timedelta(seconds=10), Decimal("4"))
    assert sessionview.cpu_percent(r0, r1, Decimal("0.5")) == "60.00"
    assert sessionview.cpu_percent(r0, Reading(r1.at), Decimal(1)) is None
    assert sessionview.cpu_percent(r0, r0, Decimal(1)) is None
    assert sessionview.cpu_percent(r0, r1, Decimal(0)) is None
    # a counter that went back (a restarted container) is no negative use
    assert sessionview.cpu_percent(r1, Reading(r1.at + dt.timedelta(seconds=1), Decimal(0)),
                                   Decimal(1)) == "0.00"


def _facts(**kw) -> sessionview.Facts:
    base = dict(id="a", state="released", session_type="batch", slots={"cpu": "1"},
                project="ml", resource_group="g", created_at=T0, passes=0, reasons=[],
                waited_for=None, admitted_at=T0, node="n1",
                gpus=[{"index": 0, "share": "0.5"}, {"index": 1, "share": "1"}],
                released_at=T0 + dt.timedelta(hours=1), release_reason="",
                ended_at=T0 + dt.timedelta(hours=1), exit_code=3)
    base.update(kw)
    return sessionview.Facts(**base)


def test_the_ending_names_how_it_ended():
    assert sessionview.ending(_facts()) == ("ended", "ended with exit code 3")
    assert sessionview.ending(_facts(release_reason="reclaimed (idle): idle 61 min"))[0] == "reclaimed"
    assert sessionview.ending(_facts(release_reason="stopped by ada", exit_code=None)) == (
        "stopped", "stopped by ada")
    assert sessionview.ending(_facts(state="cancelled", release_reason="")) == (
        "cancelled", "cancelled while waiting")
    assert sessionview.ending(_facts(exit_code=None)) == ("ended", "ended")


def test_history_is_oldest_first_and_names_the_gpus_and_the_access_log():
    log = [sessionview.LogEntry(T0 + dt.timedelta(minutes=1), "session.move", "ada",
                                "moved to the front")]
    out = sessionview.history_events(_facts(passes=2), [], log)
    assert [e["event"] for e in out] == ["requested", "queued", "admitted", "logged", "ended"]
    assert out[2]["text"] == "admitted on n1 (GPU 0 × 0.5, 1)"
    assert out[3] == {"at": "2026-12-01T09:01:00+00:00", "event": "logged",
                      "text": "moved to the front", "action": "session.move", "by": "ada"}
