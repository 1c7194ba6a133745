"""The session's side of an announced reclaim and the Lab's input
(labextension/jupyterlab_hubgrid/reclaimwatch.py): a real Jupyter server
(tests/lab_fixtures.py) reporting to the real hubgrid service
(tests/service_app.py). Input posted by the Lab is the report's activity;
the service's answer carries the session's reclaim notice; ``hubgrid/reclaim``
answers it only from ``reclaim_save_ahead`` seconds before the deadline, once
per notice, and waits otherwise."""

from __future__ import annotations

import asyncio
import datetime as dt
from urllib.parse import quote

import pytest
from tornado.simple_httpclient import HTTPTimeoutError

from jupyterlab_hubgrid.activity import summarize
from jupyterlab_hubgrid.reclaimwatch import ReclaimWatch, notice_key, save_at
from lab_fixtures import TOKEN, lab_server
from quota_service.core.models import Allocation
from service_app import served  # noqa: F401
from test_lab_activity import stored, until

UTC = dt.timezone.utc


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    return sqlite_db_url


def announce(served, alloc: str, deadline: dt.datetime, now: dt.datetime) -> None:  # noqa: F811
    """The reclaim pass's notice on the allocation (as store.apply writes it)."""
    with served.world.session_factory() as s:
        a = s.get(Allocation, alloc)
        a.reclaim_notice = {
            "rule": "idle", "deadline": deadline.isoformat(), "warned_at": now.isoformat(),
            "reason": "no activity for 60 s (last: 2030-01-01 12:00:00 UTC, the hub); "
                      "the policy's idle_timeout is 120 s",
            "numbers": {"idle_seconds": 60, "idle_timeout": 120}, "shadow": False,
            "max_keeps": 0, "keep_extension": 0}
        s.commit()


def test_input_is_the_latest_activity_when_it_is():
    kernels = [{"execution_state": "idle", "connections": 1,
                "last_activity": "2030-01-01T12:00:05+00:00"}]
    typed = dt.datetime(2030, 1, 1, 12, 1, tzinfo=UTC)
    assert summarize(kernels, [], typed)["last_activity"] == "2030-01-01T12:01:00+00:00"
    older = dt.datetime(2030, 1, 1, 11, 0, tzinfo=UTC)
    assert summarize(kernels, [], older)["last_activity"] == "2030-01-01T12:00:05+00:00"


def test_the_save_time_is_ahead_of_the_deadline_and_each_notice_answers_once():
    now = dt.datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    clock = [now]
    notice = {"deadline": (now + dt.timedelta(seconds=40)).isoformat(), "warned_at": "w"}
    assert save_at(notice, 30) == now + dt.timedelta(seconds=10)
    assert save_at(None, 30) is None and notice_key(None) == ""

    async def run():
        watch = ReclaimWatch(30, clock=lambda: clock[0])
        watch.update(notice)
        waiting = watch.wait("")
        assert not waiting.done() and watch.due() is None  # 40 s ahead: not yet
        clock[0] = now + dt.timedelta(seconds=11)
        watch.update(notice)  # the service's word at the save time
        assert waiting.done() and waiting.result() == notice
        assert watch.wait("").done()  # a Lab that comes late hears it at once
        again = watch.wait(notice_key(notice))  # this notice is known: wait for the next
        assert not again.done()
        watch.update(None)  # withdrawn (activity, a keep): nothing due
        assert watch.due() is None and not again.done()
        watch.forget(again)
        assert watch.waiting() == 0

    asyncio.run(run())


async def test_the_lab_hears_of_its_reclaim_only_when_the_save_is_due(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    cluster.add_group("g", {"n1": ()})
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
    monkeypatch.setenv("HUBGRID_ALLOCATION", alloc)
    key = served.auth("alice").removeprefix("Keypair ")
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_url=served.api,
                          keypair=key, activity_interval=3600, reclaim_save_ahead=5) as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        watch = lab.app.web_app.settings["hubgrid_reclaim_watch"]
        reporter.stop()  # the test reports when it wants
        # input in the Lab is the report's activity
        before = dt.datetime.now(UTC)
        r, _ = await lab.call("POST", "hubgrid/input")
        assert r.code == 204
        assert await reporter.report() == 200
        assert dt.datetime.fromisoformat(stored(served, alloc)["last_activity"]) >= before

        # nothing announced: the Lab's call waits
        wait = asyncio.ensure_future(lab.call("GET", "hubgrid/reclaim?seen="))
        assert await until(lambda: watch.waiting() == 1, 10)
        # announced 60 s ahead: known from the report's answer, not due yet
        now = dt.datetime.now(UTC)
        announce(served, alloc, now + dt.timedelta(seconds=60), now)
        assert await reporter.report() == 200
        assert watch.notice and watch.notice["rule"] == "idle"
        await asyncio.sleep(0.3)
        assert not wait.done()
        # 3 s ahead (within reclaim_save_ahead): due, the waiting call answers the notice
        announce(served, alloc, now + dt.timedelta(seconds=3), now)
        assert await reporter.report() == 200
        r, body = await asyncio.wait_for(wait, 10)
        assert r.code == 200 and body["reclaim"]["rule"] == "idle", body
        assert "idle_timeout is 120 s" in body["reclaim"]["reason"]
        assert body["save_ahead"] == 5 and body["key"]
        assert body["allocation"] == alloc  # the Lab reads the final record by it
        # the same notice again: the next call waits
        again = asyncio.ensure_future(lab.call("GET", f"hubgrid/reclaim?seen={quote(body['key'])}"))
        await asyncio.sleep(0.3)
        assert not again.done()
        again.cancel()


async def test_keep_it_running_is_input_reported_to_the_service_at_once(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    """The warning banner's "Keep it running" posts ``hubgrid/input?now=1``:
    the report goes now, not at the next tick (an hour away here)."""
    cluster.add_group("g", {"n1": ()})
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
    monkeypatch.setenv("HUBGRID_ALLOCATION", alloc)
    key = served.auth("alice").removeprefix("Keypair ")
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_url=served.api,
                          keypair=key, activity_interval=3600, reclaim_save_ahead=5) as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        reporter.stop()  # no ticks: only the input's own report
        assert await reporter.report() == 200
        before = dt.datetime.now(UTC)
        r, _ = await lab.call("POST", "hubgrid/input")  # plain input waits for the tick
        assert r.code == 204
        await asyncio.sleep(0.5)
        assert (stored(served, alloc).get("last_activity") or "") < before.isoformat()
        r, _ = await lab.call("POST", "hubgrid/input?now=1")
        assert r.code == 204
        assert await until(lambda: (stored(served, alloc).get("last_activity") or "")
                           >= before.isoformat(), 10)


async def test_only_the_servers_owner_may_post_input_or_wait(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    async with lab_server(tmp_path, monkeypatch, owner="alice", user="bob",
                          api_url=served.api) as lab:
        watch = lab.app.web_app.settings["hubgrid_reclaim_watch"]
        r, _ = await lab.call("POST", "hubgrid/input")
        assert r.code == 403 and watch.input_at is None
        r, _ = await lab.call("GET", "hubgrid/reclaim")
        assert r.code == 403 and watch.waiting() == 0
        r, _ = await lab.call("POST", "hubgrid/input", token=False)
        assert r.code in (401, 403) and watch.input_at is None


# --- the save the service's stop waits for (savehold.py) ------------------------

def test_a_lab_retrying_after_a_failed_call_still_listens_for_a_while():
    """The front end calls again 30 s after a failed call (its back-off):
    meanwhile the reports say a Lab listens, so the stop waits for it."""
    from jupyterlab_hubgrid.reclaimwatch import LINGER

    now = dt.datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    clock = [now]

    async def run():
        watch = ReclaimWatch(30, clock=lambda: clock[0])
        assert watch.listening() == 0  # no Lab ever called
        waiting = watch.wait("")
        assert watch.listening() == 1
        watch.forget(waiting)  # the call failed: the Lab backs off
        clock[0] = now + dt.timedelta(seconds=LINGER)
        assert watch.listening() == 1
        clock[0] = now + dt.timedelta(seconds=LINGER + 1)
        assert watch.listening() == 0  # gone (the tab was closed)

    asyncio.run(run())


def test_a_taken_notice_is_saving_at_once_and_the_labs_results_add_up():
    now = dt.datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    notice = {"deadline": (now + dt.timedelta(seconds=10)).isoformat(), "warned_at": "w1"}
    told = []

    async def run():
        watch = ReclaimWatch(30, clock=lambda: now)

        async def announce():
            told.append(dict(watch.save))

        watch.announce = announce
        watch.update(notice)
        watch.taken(notice)
        watch.taken(notice)  # another tab of the same save: no news
        await asyncio.sleep(0)
        assert [t["state"] for t in told] == ["saving"] and told[0]["warned_at"] == "w1"
        assert not watch.finished("other|key", "saved", {})
        key = notice_key(notice)
        assert watch.finished(key, "saved", {"documents": 2, "saved": 1, "copies": 1})
        assert watch.finished(key, "failed", {"documents": 1, "unsaved": 1}, "disk full")
        await asyncio.sleep(0)
        assert watch.save == {"warned_at": "w1", "state": "failed", "at": now.isoformat(),
                              "documents": 3, "saved": 1, "copies": 1, "unsaved": 1,
                              "error": "disk full"}
        assert len(told) == 3

    asyncio.run(run())


async def lab_with_notice(served, cluster, tmp_path, monkeypatch, **hubgrid):  # noqa: F811
    cluster.add_group("g", {"n1": ()})
    cluster.set_policy("default", idle_timeout=120, reclaim_warning=60)
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
    monkeypatch.setenv("HUBGRID_ALLOCATION", alloc)
    key = served.auth("alice").removeprefix("Keypair ")
    return alloc, lab_server(tmp_path, monkeypatch, owner="alice", api_url=served.api,
                             keypair=key, reclaim_save_ahead=5, **hubgrid)


def save_state(served, alloc: str) -> str:  # noqa: F811
    """The state of the save the service last heard of ("" if none)."""
    return ((stored(served, alloc) or {}).get("save") or {}).get("state", "")


async def reclaim_pass(served, cluster, seconds: float):  # noqa: F811
    """A pass of the real service ``seconds`` after the session started."""
    return await served.svc.reclaimer.run(
        cluster.now + dt.timedelta(seconds=seconds), hub=None, slack=1.0, shadow=False,
        default_warning=60, docker_hosts=[], make_client=None, docker_timeout=1.0, gpu=None,
        save_wait=120)


async def test_the_stop_waits_for_the_labs_save_and_goes_ahead_when_it_ends(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    alloc, lab_cm = await lab_with_notice(served, cluster, tmp_path, monkeypatch,
                                          activity_interval=3600)
    async with lab_cm as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        reporter.stop()  # reports come when the test or the save says
        wait = asyncio.ensure_future(lab.call("GET", "hubgrid/reclaim?seen="))
        watch = lab.app.web_app.settings["hubgrid_reclaim_watch"]
        assert await until(lambda: watch.waiting() == 1, 10)
        now = dt.datetime.now(UTC)
        announce(served, alloc, now + dt.timedelta(seconds=3), now)
        assert await reporter.report() == 200  # due: the Lab's call is answered
        r, body = await asyncio.wait_for(wait, 10)
        assert r.code == 200 and body["key"]
        # the Lab took it: the service hears "saving" at once, not at the next tick
        assert await until(lambda: save_state(served, alloc) == "saving", 10), \
            stored(served, alloc)
        held = await reclaim_pass(served, cluster, 200)  # past the deadline
        assert held.reclaimed == [] and held.held == [alloc]
        r, _ = await lab.call("POST", "hubgrid/reclaim", json_body={
            "key": body["key"], "state": "saved", "documents": 2, "saved": 1, "copies": 1})
        assert r.code == 204
        assert await until(lambda: save_state(served, alloc) == "saved", 10)
        assert stored(served, alloc)["save"]["copies"] == 1
        done = await reclaim_pass(served, cluster, 210)
        assert done.reclaimed == [alloc] and done.held == []
        r, _ = await lab.call("POST", "hubgrid/reclaim", json_body={"key": "x|y", "state": "saved"})
        assert r.code == 409  # not the notice being saved


async def test_a_lab_in_its_back_off_holds_the_stop_and_saves_when_it_calls_again(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    alloc, lab_cm = await lab_with_notice(served, cluster, tmp_path, monkeypatch,
                                          activity_interval=3600)
    async with lab_cm as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        reporter.stop()
        watch = lab.app.web_app.settings["hubgrid_reclaim_watch"]
        # the Lab's call fails (a proxy dropped it): the Lab backs off before calling again
        with pytest.raises(HTTPTimeoutError):
            await lab.client.fetch(lab.url + "hubgrid/reclaim?seen=", request_timeout=0.5,
                                   headers={"Authorization": f"token {TOKEN}"})
        assert await until(lambda: watch.waiting() == 0 and watch.seen_at is not None, 10)
        now = dt.datetime.now(UTC)
        announce(served, alloc, now + dt.timedelta(seconds=3), now)
        assert await reporter.report() == 200  # due now, while the Lab backs off
        assert stored(served, alloc)["listening"] == 1
        held = await reclaim_pass(served, cluster, 200)
        assert held.reclaimed == [] and held.held == [alloc]
        # the back-off is over: the Lab hears the due notice at once and saves
        r, body = await lab.call("GET", "hubgrid/reclaim?seen=")
        assert r.code == 200 and body["reclaim"]["rule"] == "idle"
        r, _ = await lab.call("POST", "hubgrid/reclaim",
                              json_body={"key": body["key"], "state": "saved"})
        assert r.code == 204
        assert await until(lambda: save_state(served, alloc) == "saved", 10)
        assert (await reclaim_pass(served, cluster, 210)).reclaimed == [alloc]


async def test_with_activity_reports_off_the_lab_still_hears_of_its_reclaim(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    alloc, lab_cm = await lab_with_notice(served, cluster, tmp_path, monkeypatch,
                                          activity_interval=0, reclaim_check_interval=3600)
    async with lab_cm as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        reporter.stop()
        watch = lab.app.web_app.settings["hubgrid_reclaim_watch"]
        r, _ = await lab.call("POST", "hubgrid/input")  # input: not reported as activity
        assert r.code == 204
        now = dt.datetime.now(UTC)
        announce(served, alloc, now + dt.timedelta(seconds=60), now)
        assert await reporter.report() == 200
        assert watch.notice and watch.notice["rule"] == "idle"
        report = stored(served, alloc)
        assert report["last_activity"] is None and report["kernels"] == 0, report
