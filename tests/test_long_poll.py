"""Pending spawners long-poll ``GET internal/allocations/{id}?wait=N`` and the
queue cancels the requests nobody waits for: through the service's real
tornado app (no hub), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from urllib.parse import urlparse

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import AuditEntry
from service_app import served  # noqa: F401


@pytest.fixture
def solo(cluster):
    """One node with room for exactly one session of 1 cpu."""
    cluster.add_group("solo", {"solo-1": ()}, cpu="1")
    return cluster


async def ask(served, server=""):  # noqa: F811
    r, body = await served.call("POST", "internal/allocations", "internal", json_body={
        "user": "alice", "project": "ml", "resource_group": "solo", "slots": {"cpu": "1"},
        "server_name": server})
    assert r.code in (201, 202), body
    return body


async def get(served, alloc_id, query=""):  # noqa: F811
    return await served.call("GET", f"internal/allocations/{alloc_id}{query}", "internal")


async def until(check, timeout=10.0):
    """Wait (bounded) until ``check()`` is true."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_a_long_poll_of_an_allocated_one_answers_at_once(served, solo):  # noqa: F811
    a = await ask(served)
    r, body = await get(served, a["id"], "?wait=60")
    assert (r.code, body["state"], body["id"]) == (200, "allocated", a["id"])
    assert served.svc.waiters.connected(a["id"]) == 0


async def test_a_long_poll_answers_once_the_request_is_admitted(served, solo):  # noqa: F811
    running, waiting = await ask(served), await ask(served)
    assert waiting["state"] == "pending"
    poll = asyncio.ensure_future(get(served, waiting["id"], "?wait=30"))
    await until(lambda: served.svc.waiters.connected(waiting["id"]) == 1)
    r, _ = await served.call("DELETE", f"internal/allocations/{running['id']}", "internal")
    assert r.code == 200
    assert not poll.done()
    assert await asyncio.to_thread(served.svc.schedule_now) == [waiting["id"]]
    r, body = await poll
    assert (r.code, body["state"], body["node"]) == (200, "allocated", "solo-1")
    assert served.svc.waiters.connected(waiting["id"]) == 0


async def test_a_long_poll_answers_when_the_pending_reasons_change(served, solo):  # noqa: F811
    await ask(served)
    waiting = await ask(served)
    poll = asyncio.ensure_future(get(served, waiting["id"], "?wait=30"))
    await until(lambda: served.svc.waiters.connected(waiting["id"]) == 1)
    await asyncio.to_thread(served.svc.schedule_now)  # nothing changed: it keeps waiting
    await asyncio.sleep(0.1)
    assert not poll.done()
    r, body = await served.call("PATCH", "domains/acme/projects/ml", "root",
                                json_body={"max_concurrent_sessions": 1})
    assert r.code == 200, body
    await asyncio.to_thread(served.svc.schedule_now)
    r, body = await poll
    assert body["state"] == "pending"
    assert [x["code"] for x in body["reasons"]] == ["sessions"]
    assert body["reasons"] != waiting["reasons"]


async def test_a_long_poll_answers_the_pending_model_when_its_wait_elapses(served, solo):  # noqa: F811
    await ask(served)
    waiting = await ask(served)
    r, body = await get(served, waiting["id"], "?wait=0.2")
    assert (r.code, body["state"], body["reasons"]) == (200, "pending", waiting["reasons"])
    # the next poll is answered from the cache: the same model
    assert (await get(served, waiting["id"], "?wait=0.1"))[1] == body


async def test_a_cancel_wakes_the_long_poll(served, solo):  # noqa: F811
    await ask(served)
    waiting = await ask(served)
    poll = asyncio.ensure_future(get(served, waiting["id"], "?wait=30"))
    await until(lambda: served.svc.waiters.connected(waiting["id"]) == 1)
    await served.call("DELETE", f"internal/allocations/{waiting['id']}?reason=stopped", "internal")
    r, body = await poll
    assert (body["state"], body["release_reason"]) == ("cancelled", "stopped")


@pytest.mark.parametrize("wait", ["0", "-1", "61", "60.5", "abc", "nan", "inf", "1e3", ""])
async def test_an_invalid_wait_is_a_400_with_a_message(served, solo, wait):  # noqa: F811
    a = await ask(served)
    r, body = await get(served, a["id"], f"?wait={wait}")
    assert r.code == 400 and body["status"] == 400
    assert body["message"].startswith("wait: must be a number of seconds, more than 0 and at most 60")


async def test_a_long_poll_of_an_unknown_allocation_is_a_404(served, solo):  # noqa: F811
    r, body = await get(served, "nosuch", "?wait=1")
    assert r.code == 404 and "not found" in body["message"]
    assert served.svc.waiters.connected("nosuch") == 0


async def test_a_waiter_whose_connection_closes_is_dropped(served, solo):  # noqa: F811
    await ask(served)
    waiting = await ask(served)
    url = urlparse(served.api)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write((f"GET {url.path}internal/allocations/{waiting['id']}?wait=30 HTTP/1.1\r\n"
                  f"Host: {url.netloc}\r\nAuthorization: {served.auth('internal')}\r\n\r\n")
                 .encode())
    await writer.drain()
    await until(lambda: served.svc.waiters.connected(waiting["id"]) == 1)
    writer.close()
    await until(lambda: served.svc.waiters.connected(waiting["id"]) == 0)
    assert served.svc.waiters.presence(60).quiet[waiting["id"]] < 60


# ---------------------------------------------------------------- abandoned requests

def a_minute_later(svc) -> None:
    """Move the service's clocks a minute on: past every grace."""
    later = svc.clock() + dt.timedelta(seconds=60)
    svc.clock = lambda: later
    svc.waiters.started -= 60


async def test_the_queue_cancels_a_request_nobody_waits_for_instead_of_admitting_it(
        served, solo):  # noqa: F811
    svc = served.svc
    running = await ask(served)
    gone, waited = await ask(served, "gone"), await ask(served, "w")
    poll = asyncio.ensure_future(get(served, waited["id"], "?wait=30"))
    await until(lambda: svc.waiters.connected(waited["id"]) == 1)
    await served.call("DELETE", f"internal/allocations/{running['id']}", "internal")
    a_minute_later(svc)
    presence = svc.waiters.presence(svc.pending_abandon_after)
    assert await asyncio.to_thread(svc.schedule_now, presence) == [waited["id"]]
    r, body = await poll
    assert body["state"] == "allocated"
    r, body = await get(served, gone["id"])
    assert body["state"] == "cancelled" and body["admitted_at"] is None
    assert body["release_reason"] == ("abandoned: nobody has waited for it for 60 s "
                                      "(pending_abandon_after is 10 s)")
    with db.transaction(svc.session_factory) as s:
        entry = s.scalar(sa.select(AuditEntry).where(AuditEntry.target == gone["id"],
                                                     AuditEntry.action == "session.end"))
        assert (entry.actor, entry.outcome, entry.domain) == ("hubgrid-scheduler", "success",
                                                              "acme")
        assert entry.detail.endswith("; ended: cancelled while waiting: "
                                     + body["release_reason"])


async def test_any_read_of_a_request_counts_as_waiting_for_it(served, solo):  # noqa: F811
    svc = served.svc
    running = await ask(served)
    read = await ask(served, "read")
    await served.call("DELETE", f"internal/allocations/{running['id']}", "internal")
    a_minute_later(svc)
    assert (await get(served, read["id"]))[1]["state"] == "pending"
    presence = svc.waiters.presence(svc.pending_abandon_after)
    assert await asyncio.to_thread(svc.schedule_now, presence) == [read["id"]]


async def test_nobody_is_judged_abandoned_right_after_the_service_starts(served, solo):  # noqa: F811
    svc = served.svc
    running = await ask(served)
    unseen = await ask(served, "unseen")
    await served.call("DELETE", f"internal/allocations/{running['id']}", "internal")
    later = svc.clock() + dt.timedelta(seconds=60)
    svc.clock = lambda: later  # the request is old, the service young
    presence = svc.waiters.presence(svc.pending_abandon_after)
    assert await asyncio.to_thread(svc.schedule_now, presence) == [unseen["id"]]


async def test_a_pending_request_knows_its_place_in_the_queue_and_what_it_waits_for(
        served, solo):  # noqa: F811
    """The spawner's progress page says where a waiting start stands: its
    place in its group's queue, and it moves up when a request ahead leaves
    (also for a waiter answered from the cache)."""
    running = await ask(served)
    first, second = await ask(served, "b"), await ask(served, "c")
    assert "queue" not in running or running["queue"] is None
    assert first["queue"] == {"resource_group": "solo", "position": 1, "pending": 1,
                              "waits_for": "capacity"}  # alone in the line when it came
    assert (second["queue"]["position"], second["queue"]["pending"]) == (2, 2)
    poll = asyncio.ensure_future(get(served, second["id"], "?wait=0.3"))
    await until(lambda: served.svc.waiters.connected(second["id"]) == 1)
    r, body = await poll
    assert body["queue"]["position"] == 2  # read once, and now cached for the waiters
    keep = asyncio.ensure_future(get(served, second["id"], "?wait=30"))  # a waiter stays
    await until(lambda: served.svc.waiters.connected(second["id"]) == 1)
    r, _ = await served.call("DELETE", f"internal/allocations/{first['id']}?reason=gone",
                             "internal")
    assert r.code == 200
    r, body = await get(served, second["id"], "?wait=0.1")
    assert (body["state"], body["queue"]["position"], body["queue"]["pending"]) == (
        "pending", 1, 1), body["queue"]
    keep.cancel()
    r, body = await get(served, running["id"])
    assert body["queue"] is None  # allocated: in no queue


async def test_places_follow_requests_leaving_before_anybody_long_polls(
        served, solo):  # noqa: F811
    """The line of places is moved by every committed change, also while no
    spawner waits yet (a burst of starts asks only for its places)."""
    await ask(served)  # fills the node
    line = [await ask(served, f"s{i}") for i in range(5)]
    assert [b["queue"]["position"] for b in line] == [1, 2, 3, 4, 5]
    for gone in (line[0], line[2]):
        r, _ = await served.call("DELETE", f"internal/allocations/{gone['id']}?reason=gone",
                                 "internal")
        assert r.code == 200
    await asyncio.sleep(0.05)  # the commits' news reach the loop
    last = await ask(served, "s5")
    assert (last["queue"]["position"], last["queue"]["pending"]) == (4, 4)
    r, body = await get(served, line[3]["id"])
    assert (body["queue"]["position"], body["queue"]["pending"]) == (2, 4)
