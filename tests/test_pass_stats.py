"""How the periodic passes ran, and their metrics: runs, seconds, failures
and when each last ended, recorded around the pass functions
(quota_service/operations/passstats.py) and served by the metrics endpoint
through the service's real app (tests/service_app.py)."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from prometheus_client.parser import text_string_to_metric_families

from quota_service.operations.passstats import PASSES, PassRecord, PassStats, timed, timed_async
from service_app import served  # noqa: F401


def ticking(step: float = 0.25):
    """A timer that moves ``step`` seconds at every reading."""
    counter = itertools.count()
    return lambda: next(counter) * step


def test_a_pass_is_counted_with_its_seconds_and_when_it_ended():
    stats = PassStats(wall=lambda: 1_800_000_000.0)
    assert stats.snapshot()["schedule"] == PassRecord()
    run = timed(stats, "schedule", lambda presence: ["a1"], timer=ticking())
    assert run(None) == ["a1"] and run(None) == ["a1"]
    assert stats.snapshot()["schedule"] == PassRecord(2, 0.5, 0, 1_800_000_000.0)
    assert stats.snapshot()["reclaim"] == PassRecord()


def test_a_failed_pass_is_counted_and_still_raises_for_the_loop_to_log():
    stats = PassStats(wall=lambda: 5.0)

    def broken():
        raise RuntimeError("database is locked")

    with pytest.raises(RuntimeError, match="database is locked"):
        timed(stats, "log-retention", broken, timer=ticking())()
    assert stats.snapshot()["log-retention"] == PassRecord(1, 0.25, 1, 5.0)


def test_an_async_pass_is_timed_around_its_await():
    stats = PassStats(wall=lambda: 7.0)

    async def reclaim():
        await asyncio.sleep(0)
        return "report"

    assert asyncio.run(timed_async(stats, "reclaim", reclaim, timer=ticking(2.0))()) == "report"
    assert stats.snapshot()["reclaim"] == PassRecord(1, 2.0, 0, 7.0)


def test_only_the_known_passes_are_recorded():
    with pytest.raises(ValueError, match="'backup' is not one of the passes"):
        PassStats().record("backup", 1.0, True)
    assert set(PassStats().snapshot()) == set(PASSES)


async def test_the_endpoint_serves_the_passes(served):  # noqa: F811
    svc = served.svc
    timed(svc.pass_stats, "schedule", svc.schedule_now)()

    def scan():
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        timed(svc.pass_stats, "usage-scan", scan)()
    resp, text = await served.call("GET", "metrics", "root")
    assert resp.code == 200, text
    samples = {(s.name, s.labels.get("pass")): s.value
               for f in text_string_to_metric_families(text) for s in f.samples
               if f.name.startswith("hubgrid_pass_")}
    assert samples[("hubgrid_pass_duration_seconds_count", "schedule")] == 1
    assert samples[("hubgrid_pass_duration_seconds_sum", "schedule")] > 0
    assert samples[("hubgrid_pass_failures_total", "schedule")] == 0
    assert samples[("hubgrid_pass_failures_total", "usage-scan")] == 1
    assert samples[("hubgrid_pass_duration_seconds_count", "reclaim")] == 0
    ended = {p for (name, p) in samples if name == "hubgrid_pass_last_end_timestamp_seconds"}
    assert ended == {"schedule", "usage-scan"}  # absent until a pass ran once
