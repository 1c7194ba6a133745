"""The service's passes and background work (quota_service/runtime/passes.py):
the queue loop waits for the reconciliation and is woken from any thread;
every pass does its database work in a worker thread, never on the event
loop; a failing pass is logged and retried; and the running service starts
them that way (``ServiceRuntime.background``)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import sys
import threading

import pytest
import sqlalchemy as sa

from quota_service.core import db
from quota_service.core.models import Allocation, Image
from quota_service.runtime import passes
from quota_service.runtime import service as runtime_service
from quota_service.scheduling import queue as queueing
from quota_service.scheduling.waiters import Presence
from quota_service.sessions import dockerevents, registry
from service_app import served  # noqa: F401

LOG = logging.getLogger("test-passes")
NEVER = 3600.0  # an interval no test waits for: a wake or a cancel ends it


class Reports:
    """Where worker threads report to the test's loop: ``(what, thread id)``."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()

    def __call__(self, what: str) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (what, threading.get_ident()))

    async def next(self) -> tuple[str, int]:
        return await self.queue.get()


async def stop(*tasks: asyncio.Future) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------- the queue loop

async def test_the_queue_waits_for_the_reconciliation_then_passes_in_a_worker_thread():
    reports, ready, wake = Reports(), asyncio.Event(), passes.Wake()
    asked_when_ready = []

    def presence() -> Presence:  # called on the loop right before each pass
        asked_when_ready.append(ready.is_set())
        return Presence(uptime=0.0, quiet={})

    loop_task = asyncio.ensure_future(passes.queue_loop(
        ready, presence, lambda p, groups: reports("pass"), wake, lambda: NEVER, LOG))
    for _ in range(5):
        await asyncio.sleep(0)
    assert asked_when_ready == []
    ready.set()
    what, thread = await reports.next()
    assert (what, asked_when_ready) == ("pass", [True])
    assert thread != threading.get_ident()
    await asyncio.to_thread(wake.set)  # a release in a worker thread wakes the next pass
    assert (await reports.next())[0] == "pass"
    assert asked_when_ready == [True, True]
    await stop(loop_task)


async def test_a_wake_for_a_group_passes_over_that_group_and_the_interval_over_all():
    reports, ready, wake = Reports(), asyncio.Event(), passes.Wake()
    ready.set()
    interval = [NEVER]
    loop_task = asyncio.ensure_future(passes.queue_loop(
        ready, lambda: Presence(0.0, {}), lambda p, groups: reports(groups), wake,
        lambda: interval[0], LOG))
    assert (await reports.next())[0] is None  # the first pass: every group
    await asyncio.to_thread(wake.set, "gpu")  # releases in two groups, from worker threads
    await asyncio.to_thread(wake.set, "cpu")
    groups = (await reports.next())[0]
    while groups != {"gpu", "cpu"}:  # the second wake may come after the first pass
        assert groups <= {"gpu", "cpu"}
        groups = groups | (await reports.next())[0]
    wake.set("gpu")
    wake.set()  # a change that touches every queue
    while (await reports.next())[0] is not None:
        pass
    interval[0] = 0.01  # the periodic pass: every group
    assert (await reports.next())[0] is None
    await stop(loop_task)


async def test_wakes_within_the_minimum_interval_make_one_pass_over_their_groups_together():
    reports, ready, wake = Reports(), asyncio.Event(), passes.Wake()
    ready.set()
    gap = [0.3]
    loop = asyncio.get_running_loop()
    loop_task = asyncio.ensure_future(passes.queue_loop(
        ready, lambda: Presence(0.0, {}), lambda p, groups: reports(groups), wake,
        lambda: NEVER, LOG, lambda: gap[0]))
    assert (await reports.next())[0] is None
    first = loop.time()
    for group in ("a", "b", "c"):  # a burst of releases right after a pass
        await asyncio.to_thread(wake.set, group)
        await asyncio.sleep(0.01)
    groups, _ = await reports.next()
    assert groups == {"a", "b", "c"}  # one pass for the whole burst
    assert loop.time() - first >= 0.3 - 0.05  # not before the interval is over
    assert reports.queue.empty()
    wake.set("a")
    wake.set()  # a wake for every group during the wait: the pass is over all
    assert (await reports.next())[0] is None
    gap[0] = 0.0  # 0: a pass after every wake, at once
    await asyncio.to_thread(wake.set, "d")
    assert (await reports.next())[0] == {"d"}
    await stop(loop_task)


def test_the_groups_of_two_wakes_together():
    assert passes.merged(frozenset({"a"}), frozenset({"b"})) == {"a", "b"}
    assert passes.merged(frozenset({"a"}), None) is None
    assert passes.merged(None, frozenset()) is None
    assert passes.merged(frozenset(), frozenset()) == frozenset()


async def test_a_failing_queue_pass_is_logged_and_the_loop_goes_on(caplog):
    reports, ready, wake = Reports(), asyncio.Event(), passes.Wake()
    ready.set()
    calls = []

    def run_pass(presence, groups):
        calls.append(presence)
        reports("pass")
        if len(calls) == 1:
            raise RuntimeError("the database is gone")

    with caplog.at_level(logging.ERROR, LOG.name):
        loop_task = asyncio.ensure_future(passes.queue_loop(
            ready, lambda: Presence(0.0, {}), run_pass, wake, lambda: NEVER, LOG))
        await reports.next()
        wake.set()
        await reports.next()
        await stop(loop_task)
    assert len(calls) == 2
    assert "scheduling pass failed; will retry" in caplog.messages


async def test_a_repeated_pass_runs_in_a_worker_thread_and_is_retried_after_a_failure(caplog):
    reports = Reports()
    runs = []

    def run():
        runs.append(threading.get_ident())
        reports("run")
        if len(runs) == 1:
            raise OSError("disk gone")

    with caplog.at_level(logging.ERROR, LOG.name):
        task = asyncio.ensure_future(passes.repeat("log retention pass", run, lambda: 0.0, LOG))
        await reports.next()
        await reports.next()
        await stop(task)
    assert threading.get_ident() not in runs
    assert "log retention pass failed; will retry" in caplog.messages


# ---------------------------------------------------------------- the passes

async def test_an_image_scan_reads_hosts_and_records_images_in_worker_threads(
        session_factory, monkeypatch, caplog):
    threads = {}
    apply_scan = registry.apply_scan

    def recording_apply_scan(*args, **kwargs):
        threads["record"] = threading.get_ident()
        return apply_scan(*args, **kwargs)

    def urls_of():
        threads["hosts"] = threading.get_ident()
        return ["tcp://127.0.0.1:1"]

    def unreachable(url, timeout):
        raise ConnectionError("refused")

    monkeypatch.setattr(registry, "apply_scan", recording_apply_scan)
    with caplog.at_level(logging.INFO, LOG.name):
        report = await passes.scan_images(urls_of, unreachable, 1.0, session_factory,
                                          lambda: dt.datetime.now(dt.timezone.utc), LOG)
    assert [h["ok"] for h in report.hosts] == [False]
    assert set(threads) == {"hosts", "record"}
    assert threading.get_ident() not in threads.values()
    assert any(m.startswith("image scan: docker host tcp://127.0.0.1:1: ConnectionError")
               for m in caplog.messages)
    assert f"image scan: {report.summary}" in caplog.messages
    with session_factory() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Image)) == 0


async def test_a_container_exit_is_released_in_a_worker_thread_then_the_queues_are_woken(
        monkeypatch, caplog):
    threads, woken = [], []

    def release_exited(factory, ex, now, base_url):
        threads.append(threading.get_ident())
        return {"user": "alice", "server_name": "work"} if ex.allocation == "a-1" else None

    monkeypatch.setattr(dockerevents, "release_exited", release_exited)
    now = dt.datetime.now(dt.timezone.utc)
    gone = dockerevents.Exit("a-1", 137, "unix:///docker.sock", "c0ffee" * 4, 0.0)
    with caplog.at_level(logging.INFO, LOG.name):
        await passes.container_exited(gone, 0.0, None, lambda: now, "/", LOG,
                                      lambda: woken.append(True))
        # released already (by its spawner): nothing to say, nobody to wake
        await passes.container_exited(dockerevents.Exit("a-2", 0, "e", "c", 0.0), 0.0, None,
                                      lambda: now, "/", LOG, lambda: woken.append(True))
    assert len(threads) == 2 and threading.get_ident() not in threads
    assert woken == [True]
    [line] = [m for m in caplog.messages if m.startswith("container ")]
    assert line.startswith("container c0ffeec0ffee of allocation a-1 (alice/work) on "
                           "unix:///docker.sock exited (code 137): released it ")


def test_reconciling_releases_what_no_hub_server_holds_and_wakes_the_queues(cluster, caplog):
    cluster.add_group("gpu", {"node-1": ()})
    a = cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})
    with db.ledger_transaction(cluster.world.session_factory) as s:
        s.get(Allocation, a["id"]).origin = "hub"
    woken = []
    later = cluster.now + dt.timedelta(minutes=1)
    with caplog.at_level(logging.INFO, LOG.name):
        done = passes.reconcile(cluster.world.session_factory, frozenset(), later, frozenset(),
                                5.0, later, LOG, lambda: woken.append(True))
        again = passes.reconcile(cluster.world.session_factory, frozenset(), later, frozenset(),
                                 5.0, later, LOG, lambda: woken.append(True))
    assert (done.released, again.released, woken) == ([a["id"]], [], [True])
    assert cluster.states(a["id"]) == ["released"]
    assert caplog.messages == [f"reconciled with the hub (0 server(s) hold an allocation, 0 "
                               f"pending): released 1 no server holds: {a['id']}"]


# ---------------------------------------------------------------- the running service

class Transactions:
    """``db`` for the runtime modules: a transaction runs as usual, then
    reports which function opened it and in which thread."""

    def __init__(self, reports: Reports) -> None:
        self.reports = reports

    def transaction(self, factory):
        return self._reported(db.transaction(factory), sys._getframe(1).f_code.co_name)

    def ledger_transaction(self, factory):
        return self._reported(db.ledger_transaction(factory), sys._getframe(1).f_code.co_name)

    @contextlib.contextmanager
    def _reported(self, tx, caller: str):
        with tx as s:
            yield s
        self.reports(caller)


async def test_the_running_services_passes_touch_the_database_only_off_the_loop(
        served, monkeypatch):  # noqa: F811
    reports = Reports()
    svc = served.svc
    svc.scan_images_at_start, svc.follow_docker_events = True, False
    svc.docker_hosts = []  # no engine to ask: the scan still records its (empty) result
    monkeypatch.setattr(passes, "db", Transactions(reports))
    monkeypatch.setattr(runtime_service, "db", Transactions(reports))
    schedule_all = queueing.schedule_all

    def recording_schedule_all(*args, **kwargs):
        try:
            return schedule_all(*args, **kwargs)
        finally:
            reports("schedule_all")

    monkeypatch.setattr(queueing, "schedule_all", recording_schedule_all)
    expected = {"schedule_all", "purge_logs", "measure_usage", "docker_host_urls", "_record_scan"}
    seen: dict[str, set[int]] = {}
    tasks = [asyncio.ensure_future(work) for work in svc.background()]
    try:
        while not expected <= set(seen):
            what, thread = await reports.next()
            seen.setdefault(what, set()).add(thread)
    finally:
        await stop(*tasks)
    loop_thread = threading.get_ident()
    assert {what for what, threads in seen.items() if loop_thread in threads} == set()


@pytest.mark.parametrize("follow", [True, False])
async def test_the_background_work_follows_the_settings(served, follow):  # noqa: F811
    svc = served.svc
    svc.scan_images_at_start, svc.follow_docker_events = follow, follow
    # the GPU share check runs when it has an interval (60 s by default), not at 0
    svc.share_check_interval = 60 if follow else 0
    # the serving controller's pass runs when it has an interval (5 s by default)
    svc.serving_interval = 5 if follow else 0
    work = svc.background()
    names = [w.__qualname__ for w in work]
    for w in work:
        w.close()  # never started
    assert names == ["queue_loop", "repeat", "repeat", "repeat_async"] + (
        ["Controller.loop", "repeat", "ServiceRuntime._scan_at_start", "follow"]
        if follow else [])
