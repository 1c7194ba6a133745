"""The session's activity reporter (labextension/jupyterlab_hubgrid/activity.py):
a real Jupyter server (tests/lab_fixtures.py) with real kernels reports them
to the real hubgrid service (tests/service_app.py) as the session's owner;
what the service stores is what its idle reclamation reads."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from jupyterlab_hubgrid.activity import start_reporter, summarize
from lab_fixtures import lab_server
from quota_service.core.models import Allocation
from service_app import served  # noqa: F401


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """The reporter does not care which database the service runs on: SQLite only."""
    return sqlite_db_url


def stored(served, alloc: str) -> dict | None:  # noqa: F811
    with served.world.session_factory() as s:
        return s.get(Allocation, alloc).activity


async def until(check, timeout: float = 60.0):
    """Poll ``check`` (bounded); its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.1)


async def test_a_busy_kernel_is_reported_busy_and_an_idle_one_not(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    cluster.add_group("g", {"n1": ()})
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
    monkeypatch.setenv("HUBGRID_ALLOCATION", alloc)
    key = served.auth("alice").removeprefix("Keypair ")
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_url=served.api,
                          keypair=key, activity_interval=0.2) as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        km = lab.app.kernel_manager
        kc = None
        try:
            busy = await km.start_kernel(kernel_name="python3")
            await km.start_kernel(kernel_name="python3")
            two_idle = await until(lambda: (a := stored(served, alloc)) and a["kernels"] == 2
                                   and a["busy_kernels"] == 0 and a)
            assert two_idle, stored(served, alloc)
            assert two_idle["connections"] == 0 and two_idle["last_activity"]
            # a long cell with no browser attached: only the kernel client below
            kc = km.get_kernel(busy).client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=30)  # (a request sent before its channels are up can be lost)
            kc.execute("import time; time.sleep(30)")
            one_busy = await until(lambda: (a := stored(served, alloc)) and a["busy_kernels"] == 1
                                   and a)
            assert one_busy and one_busy["kernels"] == 2, stored(served, alloc)
            assert one_busy["reported_at"] > two_idle["reported_at"]
            assert reporter.last[1] == 200
            await km.interrupt_kernel(busy)
            assert await until(lambda: stored(served, alloc)["busy_kernels"] == 0), \
                stored(served, alloc)
        finally:
            reporter.stop()
            if kc is not None:
                kc.stop_channels()
            await km.shutdown_all()


async def test_a_report_the_service_refuses_is_logged_and_retried(served, cluster, tmp_path, monkeypatch):  # noqa: F811
    cluster.add_group("g", {"n1": ()})
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
    monkeypatch.setenv("HUBGRID_ALLOCATION", alloc)
    key = served.auth("bob").removeprefix("Keypair ")  # not the session's owner
    async with lab_server(tmp_path, monkeypatch, owner="bob", user="bob", api_url=served.api,
                          keypair=key, activity_interval=3600) as lab:
        reporter = lab.app.web_app.settings["hubgrid_activity"]
        reporter.stop()
        assert await reporter.report() == 404
        assert await reporter.report() == 404  # logged once, retried at every tick
        assert reporter._failing and stored(served, alloc) is None


def test_the_report_sums_kernels_and_terminals_and_takes_the_latest_activity():
    kernels = [
        {"execution_state": "busy", "connections": 0, "last_activity": "2030-01-01T12:00:05Z"},
        {"execution_state": "idle", "connections": 2,
         "last_activity": "2030-01-01T12:00:01.000000+00:00"},
        {"execution_state": "starting", "connections": 0, "last_activity": None},
    ]
    terminals = [{"name": "1", "last_activity": "2030-01-01T12:00:09+00:00"}]
    assert summarize(kernels, terminals) == {
        "kernels": 3, "busy_kernels": 1, "terminals": 1, "connections": 2,
        "last_activity": "2030-01-01T12:00:09+00:00"}
    assert summarize([], []) == {"kernels": 0, "busy_kernels": 0, "terminals": 0,
                                 "connections": 0, "last_activity": None}


def test_no_reporter_outside_a_session_or_when_turned_off(monkeypatch):
    app = SimpleNamespace(log=None, web_app=SimpleNamespace(settings={}))
    config = SimpleNamespace(activity_interval=60.0, api_url="http://127.0.0.1:1/api/v1/",
                             authorization=lambda: "token t")
    monkeypatch.delenv("HUBGRID_ALLOCATION", raising=False)
    assert start_reporter(app, config) is None  # not a hubgrid session
    monkeypatch.setenv("HUBGRID_ALLOCATION", "a-1")
    config.activity_interval = 0
    assert start_reporter(app, config) is None  # turned off
    assert app.web_app.settings == {}
