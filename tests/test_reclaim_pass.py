"""The reclaim pass on the real service (API allocations, injected clock):
warning before reclaim, the notice on the allocation's JSON, keep, a changed
policy taking effect at the next check, the records of a reclaim."""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.core.models import AuditEntry, ReclaimEvent
from service_app import served  # noqa: F401


def at(cluster, seconds: float) -> dt.datetime:
    """``seconds`` after the session started (the cluster's clock)."""
    return cluster.now + dt.timedelta(seconds=seconds)


async def run(svc, now):
    return await svc.reclaimer.run(now, hub=None, slack=1.0, shadow=svc.reclaim_shadow_mode,
                                   default_warning=60, docker_hosts=[], make_client=None,
                                   docker_timeout=1.0, gpu=None)


@pytest.fixture
def session(cluster):
    cluster.add_group("g", {"n1": ()})
    cluster.set_policy("default", idle_timeout=600, reclaim_warning=60, keep_extension=300,
                       max_keeps=1)
    return cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]


async def test_an_idle_session_is_warned_kept_then_reclaimed_with_its_numbers(served, cluster, session):  # noqa: F811
    svc = served.svc
    assert (await run(svc, at(cluster, 100))).warned == []
    rep = await run(svc, at(cluster, 560))
    assert rep.warned == [session]
    _, model = await served.call("GET", f"allocations/{session}", "alice")
    assert model["reclaim"]["rule"] == "idle" and model["reclaim"]["can_keep"] is True
    resp, kept = await served.call("POST", f"allocations/{session}/keep", "alice")
    assert resp.code == 200 and kept["keeps"] == 1 and kept["can_keep"] is False
    resp, _ = await served.call("POST", f"allocations/{session}/keep", "alice")
    assert resp.code == 422  # bounded by max_keeps
    resp, _ = await served.call("POST", f"allocations/{session}/keep", "ada")
    assert resp.code == 403  # an admin sees it but is not its owner
    assert (await run(svc, at(cluster, 700))).reclaimed == []
    assert (await run(svc, at(cluster, 900))).warned == [session]
    rep = await run(svc, at(cluster, 1000))
    assert rep.reclaimed == [session]
    _, model = await served.call("GET", f"allocations/{session}", "alice")
    assert model["state"] == "released" and model["release_reason"].startswith("reclaimed (idle)")
    assert cluster.world.count(ReclaimEvent, ReclaimEvent.kind == "reclaimed") == 1
    assert cluster.world.count(AuditEntry, AuditEntry.action == "session.reclaim") == 1
    _, events = await served.call("GET", "reclaim/events", "alice")
    assert sorted(e["kind"] for e in events["events"]) == ["extended", "reclaimed", "warning",
                                                           "warning"]


async def test_a_busy_kernel_report_keeps_the_session_and_a_changed_policy_applies(served, cluster, session):  # noqa: F811
    svc = served.svc
    resp, _ = await served.call("POST", f"allocations/{session}/activity", "alice",
                                json_body={"kernels": 1, "busy_kernels": 1, "connections": 0})
    assert resp.code == 200
    resp, _ = await served.call("POST", f"allocations/{session}/activity", "bob",
                                json_body={"kernels": 0})
    assert resp.code == 404
    # reported now and busy: idle counts from now
    assert (await run(svc, at(cluster, 500))).warned == []
    cluster.set_policy("default", idle_timeout=100)  # takes effect at the next check
    rep = await run(svc, at(cluster, 200))
    assert rep.reclaimed == [session] or rep.warned == [session]


async def test_shadow_mode_stops_nothing_and_counts_what_it_would_free(served, cluster, session):  # noqa: F811
    svc = served.svc
    svc.reclaim_shadow_mode = True
    rep = await run(svc, at(cluster, 700))
    assert rep.shadow == [session] and rep.reclaimed == []
    assert (await run(svc, at(cluster, 800))).shadow == []  # reported once
    _, model = await served.call("GET", f"allocations/{session}", "alice")
    assert model["state"] == "allocated" and model["reclaim"] is None
    _, events = await served.call("GET", "reclaim/events?kind=shadow", "root")
    assert events["events"][0]["rule"] == "idle" and "shadow_gpu_hours_freed" in events


class FlakyHub:
    """A hub double whose first server stop fails (its server stays up)."""

    def __init__(self, user: str, server: str, alloc: str):
        self.server = {"user": user, "name": server, "alloc": alloc}
        self.stops = 0

    async def _paged(self, path, query=""):
        s = self.server
        return [{"name": s["user"], "servers": {s["name"]: {
            "last_activity": None, "state": {"hubgrid_allocation": s["alloc"]}}}}]

    async def call(self, method, path):
        from tornado.httpclient import HTTPClientError

        assert method == "DELETE"
        self.stops += 1
        if self.stops == 1:
            raise HTTPClientError(500, "the hub failed")


async def test_a_failed_hub_stop_is_retried_and_the_reclaim_recorded_once(served, cluster, session):  # noqa: F811
    from quota_service.core.models import Allocation

    with cluster.world.tx() as s:
        a = s.get(Allocation, session)
        a.origin, a.server_name = "hub", "lab"
    hub = FlakyHub("alice", "lab", session)

    async def run_hub(seconds):
        return await served.svc.reclaimer.run(
            at(cluster, seconds), hub=hub, slack=1.0, shadow=False, default_warning=60,
            docker_hosts=[], make_client=None, docker_timeout=1.0, gpu=None)

    assert (await run_hub(545)).warned == [session]
    failed = await run_hub(610)
    assert failed.reclaimed == [session] and failed.failed == [session]
    assert cluster.world.count(ReclaimEvent, ReclaimEvent.kind == "reclaimed") == 0
    assert (await run_hub(612)).reclaimed == []  # its stop may still be under way
    retried = await run_hub(620)
    assert retried.reclaimed == [session] and retried.failed == [] and hub.stops == 2
    assert (await run_hub(630)).reclaimed == [session]  # the hub is slow: asked again
    assert cluster.world.count(ReclaimEvent, ReclaimEvent.kind == "reclaimed") == 1
    with cluster.world.session_factory() as s:
        outcomes = sorted(e.outcome for e in s.query(AuditEntry).filter(
            AuditEntry.action == "session.reclaim"))
    assert outcomes == ["error", "success", "success"]  # every attempt is in the access log
    # the server stopped: its spawner releases it, and the session ends for the rule
    resp, ended = await served.call(
        "DELETE", f"internal/allocations/{session}?reason=stopped", "internal")
    assert resp.code == 200, ended
    assert ended["state"] == "released" and ended["release_reason"].startswith("reclaimed (idle): ")


@pytest.mark.parametrize("every,takes,at_most", [(10.0, 0.2, 9.8), (0.1, 0.2, 0.0)])
async def test_the_pass_runs_at_a_fixed_rate_so_a_deadline_waits_at_most_one_interval(
        monkeypatch, every, takes, at_most):
    """The next pass starts ``interval`` after the previous one STARTED (not
    after it ended); one that overran is followed at once."""
    import asyncio
    import logging

    from quota_service.runtime import passes

    real_sleep = asyncio.sleep
    waits = []

    async def run():
        await real_sleep(takes)

    async def sleep(delay):
        waits.append(delay)
        raise asyncio.CancelledError

    monkeypatch.setattr(passes.asyncio, "sleep", sleep)
    with pytest.raises(asyncio.CancelledError):
        await passes.repeat_async("reclaim pass", run, lambda: every, logging.getLogger("t"))
    assert len(waits) == 1 and 0.0 <= waits[0] <= at_most


async def test_an_endpoints_replica_is_never_reclaimed(served, cluster, session):  # noqa: F811
    """No rule (idle, lifetime) reclaims an inference session: its endpoint's
    replica count decides (docs/serving.md). The world's own admin step
    makes the session a replica."""
    from quota_service.core.models import Allocation

    cluster.set_policy("default", idle_timeout=600, max_session_lifetime=300,
                       reclaim_warning=60)
    with cluster.world.tx() as s:
        s.get(Allocation, session).session_type = "inference"
    for seconds in (290, 700, 5000):
        rep = await run(served.svc, at(cluster, seconds))
        assert (rep.warned, rep.reclaimed) == ([], [])
    _, model = await served.call("GET", f"allocations/{session}", "alice")
    assert model["state"] == "allocated" and model["reclaim"] is None


async def test_the_reclaimed_record_and_access_log_have_the_final_numbers_not_the_warnings(
        served, cluster, session):  # noqa: F811
    """Warned 560 s after the start (the deadline moves to a full warning
    lead later); the next pass comes at 640 s: the warning's event keeps its
    numbers, the reclaimed event, the session's end and the access log say
    how long it was idle at the stop, and the stop's time."""
    svc = served.svc
    assert (await run(svc, at(cluster, 560))).warned == [session]
    assert (await run(svc, at(cluster, 610))).reclaimed == []  # warned 60 s ahead at least
    assert (await run(svc, at(cluster, 640))).reclaimed == [session]
    _, events = await served.call("GET", f"reclaim/events?allocation={session}", "alice")
    by_kind = {e["kind"]: e for e in events["events"]}
    warning = by_kind["warning"]["details"]
    last = dt.datetime.fromisoformat(warning["last_activity"])
    warned_idle, idle = warning["idle_seconds"], round((at(cluster, 640) - last).total_seconds())
    assert warned_idle < 600 < idle, (warned_idle, idle)
    final = by_kind["reclaimed"]
    assert final["at"] == at(cluster, 640).isoformat()
    assert final["details"]["idle_seconds"] == idle and final["details"]["idle_timeout"] == 600
    assert final["details"]["stopped_at"] == at(cluster, 640).isoformat()
    assert final["details"]["reason"].startswith(f"no activity for {idle} s when it was stopped at ")
    _, model = await served.call("GET", f"allocations/{session}", "alice")
    assert model["release_reason"].startswith(f"reclaimed (idle): no activity for {idle} s"), model
    with cluster.world.session_factory() as s:
        entry = s.query(AuditEntry).filter(AuditEntry.action == "session.reclaim").one()
        logged_at = entry.timestamp if entry.timestamp.tzinfo \
            else entry.timestamp.replace(tzinfo=dt.timezone.utc)
        assert logged_at == at(cluster, 640)
        assert f"'idle_seconds': {idle}" in entry.detail and f"no activity for {idle} s" in entry.detail
        assert f"no activity for {warned_idle} s" not in entry.detail, entry.detail
