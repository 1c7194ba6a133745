"""Live use for every running session under the shipped settings: the
reclaim pass (``HubgridService.reclaim_now``, on the real service with an
injected clock and a Docker engine double answering the engine's stats)
reads each running session's container whatever its policy, so its detail
("Use now", ``GET allocations/<id>/usage``) shows numbers; reading is not
judging: a session whose policy has no rule is never warned or reclaimed
however idle its readings, and an idle rule is not turned into a
utilization one. ``usage_sample_window = 0`` reads only sessions under a
utilization rule, as before.
"""

from __future__ import annotations

import datetime as dt

import pytest

from quota_service.core.models import ReclaimEvent
from quota_service.app import HubgridService
from service_app import served  # noqa: F401

GIB = 2**30
NS = 10**9


class Engine:
    """A Docker engine double: one container per allocation id, its
    cumulative CPU time (seconds) and memory in use, as ``stats`` gives them."""

    def __init__(self):
        self.cpu: dict[str, int] = {}
        self.mem: dict[str, int] = {}

    def containers(self, filters):
        alloc = filters["label"].split("=", 1)[1]
        return [{"Id": alloc}] if alloc in self.cpu else []

    def stats(self, cid, stream=False, one_shot=True):
        return {"cpu_stats": {"cpu_usage": {"total_usage": self.cpu[cid] * NS}},
                "memory_stats": {"usage": self.mem[cid], "limit": 2 * GIB,
                                 "stats": {"inactive_file": 0}}}


@pytest.fixture
def docker(served, cluster, monkeypatch):  # noqa: F811
    """The service reads ``Engine`` as its one Docker engine, at the cluster's clock."""
    fake = Engine()
    svc = served.svc
    monkeypatch.setattr(svc, "docker_hosts", ["tcp://engine.invalid:2375"])
    monkeypatch.setattr(svc, "docker_client", lambda url, timeout: fake)
    cluster.add_group("g", {"n1": ()})
    return fake


async def pass_at(served, cluster, seconds):  # noqa: F811
    served.svc.clock = lambda: cluster.now + dt.timedelta(seconds=seconds)
    return await served.svc.reclaim_now()


async def usage(served, alloc, who="alice"):  # noqa: F811
    resp, body = await served.call("GET", f"allocations/{alloc}/usage", who)
    assert resp.code == 200, body
    return body


def test_the_shipped_settings_sample_every_session():
    svc = HubgridService()
    assert svc.usage_sample_window == 600 and svc.reclaim_interval > 0


async def test_a_session_under_a_policy_without_rules_shows_its_use_now(served, cluster, docker):  # noqa: F811
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "2", "mem": "2G"})["id"]
    assert (await usage(served, alloc))["note"].startswith("not sampled")
    docker.cpu[alloc], docker.mem[alloc] = 10, GIB
    await pass_at(served, cluster, 60)
    docker.cpu[alloc], docker.mem[alloc] = 70, GIB // 2
    rep = await pass_at(served, cluster, 120)
    assert rep.judged == 0  # read, not judged: no rule binds it
    body = await usage(served, alloc, "ada")
    # 60 CPU-seconds in 60 s on 2 granted cores: 50 %
    assert body["latest"]["cpu_percent"] == "50.00", body
    assert body["latest"]["mem_used"] == str(GIB // 2) and body["latest"]["mem_limit"] == str(2 * GIB)
    assert [s["cpu_percent"] for s in body["samples"]] == [None, "50.00"]
    assert body["note"] == ""


async def test_idle_readings_reclaim_nothing_without_a_utilization_rule(served, cluster, docker):  # noqa: F811
    """Hours of 0 % CPU under a policy with no rule, and under one with only
    a (long) idle rule: no warning, no reclaim; the readings are kept."""
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
    docker.cpu[alloc], docker.mem[alloc] = 5, 1
    for minute in range(1, 31):
        rep = await pass_at(served, cluster, minute * 60)
        assert rep.warned == rep.reclaimed == rep.shadow == [], minute
    cluster.set_policy("default", idle_timeout=86400, reclaim_warning=60)
    for minute in range(31, 61):
        rep = await pass_at(served, cluster, minute * 60)
        assert rep.judged == 1 and rep.warned == rep.reclaimed == [], minute
    _, model = await served.call("GET", f"allocations/{alloc}", "alice")
    assert model["state"] == "allocated" and model["reclaim"] is None
    assert cluster.world.count(ReclaimEvent) == 0
    body = await usage(served, alloc)
    assert body["latest"]["cpu_percent"] == "0.00"
    # 600 s of readings kept, one a minute (and the anchor before them)
    assert len(body["samples"]) == 11


async def test_a_session_without_a_container_says_why_it_shows_nothing(served, cluster, docker):  # noqa: F811
    alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1"})["id"]
    await pass_at(served, cluster, 60)
    await pass_at(served, cluster, 120)
    body = await usage(served, alloc)
    assert body["latest"] is None and body["samples"] == []
    assert "a session without one, such as a local process, is not read" in body["note"]


async def test_sampling_off_reads_only_sessions_under_a_utilization_rule(served, cluster, docker):  # noqa: F811
    served.svc.usage_sample_window = 0
    try:
        alloc = cluster.submit("alice", "ml", "g", slots={"cpu": "1", "mem": "1G"})["id"]
        docker.cpu[alloc], docker.mem[alloc] = 5, 1
        await pass_at(served, cluster, 60)
        assert (await usage(served, alloc))["samples"] == []
        cluster.set_policy("default", utilization_window=600,
                           utilization_thresholds={"cpu": "1"})
        await pass_at(served, cluster, 120)
        assert len((await usage(served, alloc))["samples"]) == 1
    finally:
        served.svc.usage_sample_window = 600
