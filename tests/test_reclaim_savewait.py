"""The stop of a session that is due waits for the save that its Lab has
announced, within a bounded time (quota_service/operations/reclaim/savehold.py):
as pure decisions with an injected clock, and on the real service (API
allocations, the Lab's reports posted as its server extension posts them,
the service's clock injected)."""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.core.models import ReclaimEvent
from quota_service.operations.reclaim import rules, savehold
from service_app import served  # noqa: F401

UTC = dt.timezone.utc
T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
WAIT = 120


def s(seconds: float) -> dt.timedelta:
    return dt.timedelta(seconds=seconds)


NOTICE = rules.Notice("idle", T0, "no activity for 600 s", {}, T0 - s(60))


def save(state: str, warned_at: dt.datetime = NOTICE.warned_at) -> dict:
    return {"warned_at": warned_at.isoformat(), "state": state}


# --- the decision -----------------------------------------------------------

def test_without_a_lab_heard_of_the_stop_goes_ahead_at_the_deadline():
    assert savehold.hold(NOTICE, None, T0, WAIT) is None  # no report: activity reporting off
    assert savehold.hold(NOTICE, {"listening": 0, "kernels": 1}, T0, WAIT) is None
    # a save of an older notice is not this one's
    old = {"listening": 0, "save": save("saving", NOTICE.warned_at - s(3600))}
    assert savehold.hold(NOTICE, old, T0, WAIT) is None


def test_a_listening_lab_that_has_not_saved_yet_holds_the_stop_within_the_bound():
    report = {"listening": 1}
    held = savehold.hold(NOTICE, report, T0 + s(5), WAIT)
    assert held is not None and held.until == T0 + s(WAIT)
    assert "has not saved yet" in held.why and "2030-01-01 12:02:00 UTC" in held.why
    assert savehold.hold(NOTICE, report, T0 + s(WAIT), WAIT) is None  # bounded
    assert savehold.hold(NOTICE, report, T0 + s(5), 0) is None  # reclaim_save_wait 0


def test_a_save_under_way_holds_the_stop_and_its_end_releases_it():
    saving = {"listening": 0, "save": save("saving")}
    assert savehold.hold(NOTICE, saving, T0 + s(30), WAIT).until == T0 + s(WAIT)
    assert savehold.hold(NOTICE, saving, T0 + s(WAIT + 1), WAIT) is None
    for ended in ("saved", "failed"):
        # ended: nothing more to wait for, even with the Lab still listening
        assert savehold.hold(NOTICE, {"listening": 1, "save": save(ended)}, T0 + s(1), WAIT) is None


# --- on the real service ----------------------------------------------------

@pytest.fixture
def session(cluster):
    cluster.add_group("g", {"n1": ()})
    cluster.set_policy("default", idle_timeout=600, reclaim_warning=60)
    return cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]


class Clock:
    """The service's clock, set by the test."""

    def __init__(self, start: dt.datetime):
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now


async def pass_at(served, clock: Clock, t: dt.datetime, save_wait: float = WAIT):  # noqa: F811
    clock.now = t
    return await served.svc.reclaimer.run(
        t, hub=None, slack=1.0, shadow=False, default_warning=60, docker_hosts=[],
        make_client=None, docker_timeout=1.0, gpu=None, save_wait=save_wait)


async def lab_reports(served, alloc: str, body: dict) -> dict:  # noqa: F811
    """A report as the Lab's server extension sends it (no activity in it)."""
    resp, answer = await served.call("POST", f"allocations/{alloc}/activity", "alice",
                                     json_body=body)
    assert resp.code == 200, answer
    return answer


def started(cluster, seconds: float) -> dt.datetime:
    return cluster.now + s(seconds)


async def test_the_stop_waits_for_a_lab_that_hears_of_it_late_then_for_its_save(served, cluster, session, monkeypatch):  # noqa: F811
    """The warning (60 s) is shorter than the Lab's report period: the Lab
    learns of the reclaim only after the deadline, and the stop waits."""
    clock = Clock(started(cluster, 0))
    monkeypatch.setattr(served.svc, "clock", clock)
    await lab_reports(served, session, {"listening": 1})  # a Lab is open, at the start
    assert (await pass_at(served, clock, started(cluster, 540))).warned == [session]
    due = await pass_at(served, clock, started(cluster, 610))  # past the deadline (600)
    assert due.reclaimed == [] and due.held == [session]
    # the Lab's next report hears of it; the Lab takes it and saves
    clock.now = started(cluster, 620)
    answer = await lab_reports(served, session, {"listening": 1})
    notice = answer["reclaim"]
    assert notice["rule"] == "idle"
    await lab_reports(served, session, {"listening": 0, "save": {
        "warned_at": notice["warned_at"], "state": "saving"}})
    assert (await pass_at(served, clock, started(cluster, 630))).held == [session]
    await lab_reports(served, session, {"listening": 1, "save": {
        "warned_at": notice["warned_at"], "state": "saved", "documents": 2, "saved": 1,
        "copies": 1}})
    done = await pass_at(served, clock, started(cluster, 640))
    assert done.reclaimed == [session] and done.held == []
    _, model = await served.call("GET", f"allocations/{session}", "alice")
    assert model["state"] == "released" and model["release_reason"].startswith("reclaimed (idle)")
    assert cluster.world.count(ReclaimEvent, ReclaimEvent.kind == "reclaimed") == 1


async def test_a_save_that_never_ends_holds_the_stop_only_until_the_bound(served, cluster, session, monkeypatch):  # noqa: F811
    clock = Clock(started(cluster, 0))
    monkeypatch.setattr(served.svc, "clock", clock)
    assert (await pass_at(served, clock, started(cluster, 540))).warned == [session]
    clock.now = started(cluster, 560)
    notice = (await lab_reports(served, session, {"listening": 1}))["reclaim"]
    await lab_reports(served, session, {"listening": 1, "save": {
        "warned_at": notice["warned_at"], "state": "saving"}})
    assert (await pass_at(served, clock, started(cluster, 600 + WAIT - 1))).held == [session]
    assert (await pass_at(served, clock, started(cluster, 600 + WAIT))).reclaimed == [session]


async def test_with_a_warning_of_0_a_listening_lab_hears_of_the_reclaim_and_saves_first(served, cluster, session, monkeypatch):  # noqa: F811
    cluster.set_policy("default", idle_timeout=600, reclaim_warning=0)
    clock = Clock(started(cluster, 0))
    monkeypatch.setattr(served.svc, "clock", clock)
    await lab_reports(served, session, {"listening": 1})
    assert (await pass_at(served, clock, started(cluster, 590))).warned == []  # no warning
    due = await pass_at(served, clock, started(cluster, 601))
    assert due.reclaimed == [] and due.held == [session]
    clock.now = started(cluster, 605)
    notice = (await lab_reports(served, session, {"listening": 1}))["reclaim"]
    assert notice is not None and notice["deadline"] == started(cluster, 600).isoformat()
    await lab_reports(served, session, {"listening": 1, "save": {
        "warned_at": notice["warned_at"], "state": "saved"}})
    assert (await pass_at(served, clock, started(cluster, 610))).reclaimed == [session]


async def test_with_no_lab_listening_the_stop_goes_ahead_at_the_deadline(served, cluster, session, monkeypatch):  # noqa: F811
    clock = Clock(started(cluster, 0))
    monkeypatch.setattr(served.svc, "clock", clock)
    await lab_reports(served, session, {"listening": 0})
    assert (await pass_at(served, clock, started(cluster, 540))).warned == [session]
    assert (await pass_at(served, clock, started(cluster, 601))).reclaimed == [session]
