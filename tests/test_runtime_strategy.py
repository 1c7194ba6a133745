"""The placement strategy provider (quota_service/scheduling/strategies.py):
``best-fit`` and ``first-fit`` need nothing; ``hubgrid``'s workload profile is
built where it is first asked for (at start), then rebuilt in a thread of its
own while the old one keeps serving; a failed rebuild keeps the old one."""

from __future__ import annotations

import logging
import threading

import pytest

from quota_service.scheduling.placement import BestFit, FirstFit, Hubgrid
from quota_service.scheduling.strategies import StrategyProvider

LOG = logging.getLogger("test-strategy")


class GatedProvider(StrategyProvider):
    """Profiles from a script; a rebuild outside the first waits for ``gate``."""

    def __init__(self, *profiles, refresh: float = -1.0) -> None:
        super().__init__("hubgrid", None, 10, refresh, LOG)
        self.profiles = list(profiles)
        self.threads: list[str] = []
        self.gate = threading.Event()

    def workload_profile(self):
        self.threads.append(threading.current_thread().name)
        if len(self.threads) > 1:
            self.gate.wait()
        profile = self.profiles.pop(0)
        if isinstance(profile, Exception):
            raise profile
        return profile


@pytest.mark.parametrize("name, cls", [("best-fit", BestFit), ("first-fit", FirstFit)])
def test_the_simple_strategies_read_nothing(name, cls):
    provider = StrategyProvider(name, None, 10, 600.0, LOG)  # no database at all
    assert isinstance(provider.get(), cls) and provider.rebuilding is None


def test_hubgrid_builds_its_profile_in_the_callers_thread_at_the_first_call():
    provider = GatedProvider(None, refresh=600.0)
    first = provider.get()
    assert isinstance(first, Hubgrid) and first.profile is None
    assert provider.threads == [threading.current_thread().name]
    assert provider.get() is first and provider.rebuilding is None  # young: kept


def test_an_old_profile_is_rebuilt_in_a_thread_while_the_old_one_serves():
    provider = GatedProvider(None, None)
    first = provider.get()
    assert provider.get() is first  # the rebuild started, and waits at the gate
    rebuild = provider.rebuilding
    assert rebuild is not None and rebuild.name == "workload profile" and rebuild.daemon
    provider.gate.set()
    rebuild.join()
    assert provider.threads == [threading.current_thread().name, "workload profile"]
    provider.refresh = 600.0
    assert provider.get() is not first


def test_a_failed_rebuild_keeps_the_old_profile(caplog):
    provider = GatedProvider(None, RuntimeError("the database is gone"))
    provider.gate.set()
    first = provider.get()
    with caplog.at_level(logging.ERROR, LOG.name):
        provider.get()
        provider.rebuilding.join()
    provider.refresh = 600.0
    assert provider.get() is first
    assert "could not rebuild the workload profile; keeping the old one" in caplog.messages


def test_a_failed_first_build_starts_without_a_profile(caplog):
    provider = GatedProvider(RuntimeError("no table yet"), refresh=600.0)
    with caplog.at_level(logging.ERROR, LOG.name):
        strategy = provider.get()
    assert isinstance(strategy, Hubgrid) and strategy.profile is None
    assert "could not rebuild the workload profile; keeping the old one" in caplog.messages


def test_the_profile_is_read_from_the_ledgers_recent_requests(cluster):
    provider = StrategyProvider("hubgrid", cluster.world.session_factory, 10, 600.0, LOG)
    assert provider.workload_profile() is None  # nothing asked yet
    cluster.add_group("gpu", {"node-1": ("A100", "A100")})
    for _ in range(3):
        cluster.submit("alice", "ml", "gpu", slots={"cpu": "2", "mem": "4G", "gpu": "1"})
    profile = provider.workload_profile()
    [(request, weight)] = profile.typical
    assert (request.cpu, request.num_gpu, weight) == (2000, 1, 1.0)
