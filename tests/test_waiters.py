"""The waiters of pending allocations: presence, abandonment, wake-ups after commit."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import Allocation, Node, Project
from quota_service.scheduling.waiters import Presence, Waiters, abandoned

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc)


def ago(seconds: float) -> dt.datetime:
    return T0 - dt.timedelta(seconds=seconds)


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


# --- abandoned: a pure rule ---------------------------------------------------

def test_a_request_nobody_has_waited_for_past_the_limit_is_abandoned_with_the_numbers():
    gone = abandoned([("a", ago(60))], Presence(uptime=600, quiet={"a": 25}), T0, 10)
    assert gone == {"a": "abandoned: nobody has waited for it for 25 s "
                         "(pending_abandon_after is 10 s)"}


def test_a_request_with_a_waiter_connected_is_never_abandoned():
    assert abandoned([("a", ago(3600))], Presence(uptime=3600, quiet={"a": 0}), T0, 10) == {}


def test_a_waiter_that_left_recently_keeps_it():
    assert abandoned([("a", ago(600))], Presence(uptime=600, quiet={"a": 9}), T0, 10) == {}


def test_a_new_request_gets_the_limit_from_its_creation():
    assert abandoned([("new", ago(5))], Presence(uptime=600), T0, 10) == {}
    assert set(abandoned([("old", ago(11))], Presence(uptime=600), T0, 10)) == {"old"}


def test_after_a_restart_nobody_is_judged_before_the_spawners_could_come_back():
    pending = [("a", ago(3600)), ("b", ago(3600))]
    assert abandoned(pending, Presence(uptime=4), T0, 10) == {}
    assert set(abandoned(pending, Presence(uptime=11, quiet={"b": 0}), T0, 10)) == {"a"}


# --- the registry ---------------------------------------------------------------

async def test_a_change_wakes_the_waiters_of_that_allocation_only():
    w = Waiters()
    a1, a2, b = w.wait("a"), w.wait("a"), w.wait("b")
    assert (w.connected("a"), w.connected("b"), len(w)) == (2, 1, 3)
    assert w.changed(["a"]) == 2
    assert a1.done() and a2.done() and not b.done()
    for fut in (a1, a2):
        w.leave("a", fut)
    assert w.connected("a") == 0 and len(w) == 1


async def test_presence_counts_a_connected_waiter_as_zero_and_forgets_old_ones():
    clock = Clock()
    w = Waiters(clock)
    w.wait("here")
    w.seen("left")
    clock.t += 4
    w.seen("read")
    p = w.presence(forget_after=10)
    assert (p.uptime, dict(p.quiet)) == (4, {"here": 0, "left": 4, "read": 0})
    clock.t += 11
    assert dict(w.presence(forget_after=10).quiet) == {"here": 0}


async def test_a_cached_model_is_dropped_when_it_changes_and_a_stale_read_is_not_cached():
    w = Waiters()
    w.wait("a")
    version = w.version("a")
    w.remember("a", version, {"state": "pending", "reasons": ["x"]})
    assert w.cached("a") == {"state": "pending", "reasons": ["x"]}
    w.changed(["a"])
    assert w.cached("a") is None
    w.remember("a", version, {"state": "pending", "reasons": ["stale"]})  # read before the change
    assert w.cached("a") is None
    w.remember("a", w.version("a"), {"state": "allocated"})  # only pending ones are kept
    assert w.cached("a") is None


# --- after commit: from the database -------------------------------------------------

@pytest.fixture
def alice_alloc(cluster):
    cluster.add_group("solo", {"n1": ()}, cpu="1")
    running = cluster.submit("alice", "ml", "solo", slots={"cpu": "1"})
    waiting = cluster.submit("alice", "ml", "solo", slots={"cpu": "1"})
    assert waiting["state"] == "pending"
    return cluster, running["id"], waiting["id"]


async def test_a_commit_that_changes_state_or_reasons_wakes_waiters_but_a_pass_count_does_not(
        alice_alloc, session_factory):
    cluster, running, waiting = alice_alloc
    w = Waiters()
    w.watch(session_factory)
    fut = w.wait(waiting)

    def touch(**fields):
        with db.ledger_transaction(session_factory) as s:
            a = s.get(Allocation, waiting)
            for k, v in fields.items():
                setattr(a, k, v)

    await asyncio.to_thread(touch, passes=7)
    await asyncio.sleep(0.05)
    assert not fut.done()
    await asyncio.to_thread(touch, reasons=[{"text": "new reason"}])
    await asyncio.wait_for(fut, 5)
    fut = w.wait(waiting)
    await asyncio.to_thread(touch, state="cancelled")
    await asyncio.wait_for(fut, 5)


async def test_a_rolled_back_change_wakes_nobody(alice_alloc, session_factory):
    cluster, running, waiting = alice_alloc
    w = Waiters()
    w.watch(session_factory)
    fut = w.wait(waiting)

    def fail():
        with db.ledger_transaction(session_factory) as s:
            s.get(Allocation, waiting).state = "cancelled"
            s.flush()
            raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        await asyncio.to_thread(fail)
    await asyncio.to_thread(lambda: None)
    await asyncio.sleep(0.05)
    assert not fut.done()


# --- the generation of what queue decisions read ----------------------------------------

def bumps(session_factory, change) -> int:
    """How far one committed ``change(session)`` moves the generation."""
    w = Waiters()
    w.watch(session_factory)
    with db.ledger_transaction(session_factory) as s:
        change(s)
    return w.generation


def test_starting_or_ending_a_session_or_changing_a_setting_moves_the_generation(
        alice_alloc, session_factory):
    cluster, running, waiting = alice_alloc

    def release(s):
        s.get(Allocation, running).state = "released"

    def drain(s):
        s.scalar(sa.select(Node).where(Node.name == "n1")).schedulable = False

    def limit(s):
        s.scalar(sa.select(Project).where(Project.name == "ml")).max_concurrent_sessions = 1

    for change in (release, drain, limit):
        assert bumps(session_factory, change) == 2, change.__name__


def test_bookkeeping_and_pending_requests_leave_the_generation_alone(
        alice_alloc, session_factory):
    cluster, running, waiting = alice_alloc

    def count_a_pass(s):
        a = s.get(Allocation, waiting)
        a.passes, a.reasons = a.passes + 1, [{"text": "still waiting"}]

    def cancel_pending(s):
        s.get(Allocation, waiting).state = "cancelled"

    for change in (count_a_pass, cancel_pending):
        assert bumps(session_factory, change) == 0, change.__name__
