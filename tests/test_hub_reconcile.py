"""When the service reconciles the ledger with the hub's servers (HubMirror),
against a fake hub: at start as soon as the hub answers, again when a young
allocation leaves its grace, and with only the active users' servers."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import pytest

from quota_service.tenancy.hubmirror import HubMirror, HubState, holdings
from quota_service.scheduling.ledger import Reconciled


class FakeHub:
    def __init__(self, fail: int = 0):
        self.fail = fail
        self.calls: list[str] = []
        self.held = frozenset({"a-1"})
        self.pending = frozenset({("alice", "gpu")})

    async def state(self) -> HubState:
        self.calls.append("state")
        if self.fail:
            self.fail -= 1
            raise ConnectionRefusedError("the hub is starting")
        return HubState(users=frozenset(), held=self.held, pending=self.pending)

    async def servers(self):
        self.calls.append("servers")
        return self.held, self.pending

    async def apply(self, action):  # pragma: no cover - the plan is empty here
        raise AssertionError(action)


class Reconciler:
    """Records what it was given; answers ``recheck`` (seconds from now) once."""

    def __init__(self, recheck: float | None = None):
        self.seen: list[tuple] = []
        self.recheck = recheck

    def __call__(self, held, as_of, pending):
        self.seen.append((held, pending))
        at = None
        if self.recheck is not None:
            at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=self.recheck)
            self.recheck = None
        return Reconciled(released=[], recheck_at=at)


async def until(check, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


@pytest.fixture
def mirror(session_factory):
    """A mirror of a fake hub: full passes once an hour, retries at once."""

    def make(hub, reconcile):
        return HubMirror(session_factory, hub, 3600, logging.getLogger("test"),
                         reconcile=reconcile, retry=0.01)

    return make


async def test_the_ledger_is_reconciled_as_soon_as_the_hub_answers_and_not_before(mirror):
    hub, reconcile = FakeHub(fail=3), Reconciler()
    m = mirror(hub, reconcile)
    assert not m.reconciled.is_set()  # the queues wait for it
    m.start()
    m.request_sync()
    try:
        await asyncio.wait_for(m.reconciled.wait(), 10)
        assert hub.calls == ["state"] * 4
        assert reconcile.seen == [(hub.held, hub.pending)]
    finally:
        await m.stop()


async def test_an_allocation_spared_by_its_grace_is_checked_again_with_the_active_servers(
        mirror):
    hub, reconcile = FakeHub(), Reconciler(recheck=0.1)
    m = mirror(hub, reconcile)
    m.start()
    m.request_sync()
    try:
        await until(lambda: len(reconcile.seen) == 2)
        assert hub.calls == ["state", "servers"]
        await asyncio.sleep(0.3)
        assert hub.calls == ["state", "servers"]  # nothing more is due
    finally:
        await m.stop()


async def test_a_new_allocation_asks_for_a_check_once_its_grace_ends(mirror):
    hub, reconcile = FakeHub(), Reconciler()
    m = mirror(hub, reconcile)
    m.start()
    m.request_sync()
    try:
        await until(lambda: hub.calls == ["state"])
        m.check_after(0.05)
        m.check_after(0.5)  # a later one does not postpone the earlier
        await until(lambda: hub.calls == ["state", "servers"])
    finally:
        await m.stop()


async def test_without_a_hub_nothing_is_waited_for(session_factory):
    m = HubMirror(session_factory, None, 60, logging.getLogger("test"), reconcile=Reconciler())
    assert m.reconciled.is_set()
    m.check_after(0)  # a no-op
    assert await m.reconcile_now() == []


def test_the_hub_holds_what_its_servers_record_and_its_pending_servers_hold_their_name():
    models = [
        {"name": "alice", "servers": {
            "": {"pending": None, "state": {"hubgrid_allocation": "a-1"}},
            "gpu": {"pending": "spawn", "state": {}},
            "cpu": {"pending": "spawn", "state": {"hubgrid_allocation": "a-2"}},
        }},
        {"name": "bob", "servers": {}},
        {"name": "carl"},
    ]
    assert holdings(models) == (frozenset({"a-1", "a-2"}),
                                frozenset({("alice", "gpu"), ("alice", "cpu")}))


class RevokingHub(FakeHub):
    """A hub with a user hubgrid does not know, ``ghost``, holding a token
    until the first revoke ends it; records the revokes."""

    def __init__(self):
        super().__init__()
        self.revokes: list[str] = []
        self.activity = "2026-01-01T00:00:00Z"

    async def state(self) -> HubState:
        return HubState(users=frozenset({"ghost"}), held=self.held, pending=self.pending,
                        activity={"ghost": self.activity})

    async def apply(self, action):
        assert action.verb == "revoke" and action.target == "ghost", action
        self.revokes.append(action.target)
        return "token 7" if len(self.revokes) == 1 else ""


async def test_a_locked_out_user_is_revoked_and_logged_once_until_active_again(
        mirror, caplog):
    hub = RevokingHub()
    m = mirror(hub, Reconciler())
    with caplog.at_level(logging.INFO, logger="test"):
        for _ in range(3):
            await m.sync_now()
        assert hub.revokes == ["ghost"]
        assert [r.getMessage() for r in caplog.records if "revoke" in r.getMessage()] == [
            "hub mirror: revoke ghost: ended token 7"]
        # a token used since: revoked again; nothing found, nothing logged
        hub.activity = "2026-01-02T00:00:00Z"
        await m.sync_now()
        await m.sync_now()
    assert hub.revokes == ["ghost", "ghost"]
    assert len([r for r in caplog.records if "revoke" in r.getMessage()]) == 1
