"""The running hub's pass that removes the network sandboxes (holders) no
session took or kept (spawner/sandboxes.py): the rule with plain data, the
pass on the real engine, and its safety against a session taking a holder."""

from __future__ import annotations

import asyncio

import pytest
from traitlets import TraitError

from docker_fixtures import IMAGE
from spawner import sandboxes
from spawner.sandboxes import HUB_LABEL, PROCESS_LABEL, PoolKey, Sandboxes, joined_mode, \
    stale_holders
from test_sandboxes import engine  # noqa: F401 - a real engine and an owner of its own

NOW = 1_000_000.0
OLD = NOW - sandboxes.REAP_MIN_AGE
YOUNG = NOW - sandboxes.REAP_MIN_AGE + 1


def h(hid, process="now", created=OLD, owner="me"):
    return {"Id": hid, "Created": created, "Labels": {HUB_LABEL: owner, PROCESS_LABEL: process}}


def test_the_pass_reaps_this_processs_holders_that_nobody_keeps_and_were_made_a_while_ago():
    holders = [h("lost"), h("idle"), h("taken"), h("joined"), h("young", created=YOUNG),
               h("earlier", process="old"), h("theirs", owner="you"), h("no-time", created=None)]
    containers = [{"HostConfig": {"NetworkMode": joined_mode("joined")}}]
    kept = frozenset({"idle", "taken"})
    assert stale_holders(holders, containers, "me", "now", kept, NOW) == [
        "lost", "earlier"]
    # without what the process keeps (the first fill's clean): its own are left alone
    assert stale_holders(holders, containers, "me", "now") == ["earlier"]


def test_a_taken_holder_is_kept_until_removed_or_long_past_its_start(monkeypatch):
    s = Sandboxes()
    key = PoolKey("e", "i", "none")
    s._pools[key] = sandboxes._Pool(idle=["a", "b"])
    assert s.kept() == {"a", "b"}
    assert s.take(key) == "a"
    assert s.kept() == {"a", "b"}  # "a" is a session's now, not the pool's
    clock = [0.0]
    monkeypatch.setattr(sandboxes.time, "monotonic", lambda: clock[0])
    s._taken["a"] = 0.0
    clock[0] = sandboxes.TAKEN_GRACE - 1
    assert "a" in s.kept()
    clock[0] = sandboxes.TAKEN_GRACE
    assert s.kept() == {"b"}


def test_the_pass_on_the_real_engine_removes_only_holders_nobody_keeps(engine,  # noqa: F811
                                                                      monkeypatch):
    cl, owner = engine
    monkeypatch.setattr(sandboxes, "REAP_MIN_AGE", 0.0)  # the holders here are seconds old
    key = PoolKey(cl.base_url, IMAGE, "none")
    s = Sandboxes()

    def holder(process):
        hid = cl.create_container(IMAGE, ["infinity"], entrypoint=["sleep"],
                                  labels={HUB_LABEL: owner, PROCESS_LABEL: process},
                                  host_config={"NetworkMode": "none"})["Id"]
        cl.start(hid)
        return hid

    async def go():
        await s.fill(key, cl, 2, owner, 1000, 100)
        taken = s.take(key)  # a session took it and has not joined it yet
        lost = holder(s.process)  # a holder of this process nobody keeps
        earlier = holder("earlier")  # an earlier process's, joined by nobody
        joined = holder(s.process)
        session = cl.create_container(IMAGE, ["sleep", "600"],
                                      host_config={"NetworkMode": joined_mode(joined)})["Id"]
        try:
            gone = await s.reap(owner)
        finally:
            cl.remove_container(session, force=True)
        s._reaper.cancel()
        return taken, lost, earlier, joined, gone
    taken, lost, earlier, joined, gone = asyncio.run(go())
    assert sorted(gone) == sorted([lost, earlier])
    left = {c["Id"] for c in cl.containers(all=True, filters={"label": [f"{HUB_LABEL}={owner}"]})}
    assert {taken, joined, *s.idle(key)} <= left and not {lost, earlier} & left
    # once the session removes its holder, nothing keeps a holder of that id any more
    asyncio.run(s.remove(cl, taken))
    assert taken not in s.kept()


def test_a_fill_starts_the_pass_once(engine, monkeypatch):  # noqa: F811
    cl, owner = engine
    passes = []

    async def go():
        s = Sandboxes()
        monkeypatch.setattr(sandboxes, "REAP_INTERVAL", 0.05)

        async def reap(who):
            passes.append(who)
            return []
        monkeypatch.setattr(s, "reap", reap)
        key = PoolKey(cl.base_url, IMAGE, "none")
        await s.fill(key, cl, 1, owner, 1000, 100)
        first = s._reaper
        s.fill(key, cl, 1, owner, 1000, 100)
        assert s._reaper is first
        await asyncio.sleep(0.3)
        first.cancel()
    asyncio.run(go())
    assert len(passes) >= 2 and set(passes) == {owner}


def test_the_pass_takes_its_interval_and_youngest_age_from_the_spawners_settings():
    holders = [h("old"), h("young", created=NOW - 5)]
    assert stale_holders(holders, [], "me", "now", frozenset(), NOW, min_age=5) == [
        "old", "young"]
    assert stale_holders(holders, [], "me", "now", frozenset(), NOW, min_age=6) == ["old"]
    s = Sandboxes()
    assert (s.reap_interval, s.reap_min_age) == (None, None)  # the module's defaults
    s.reaping(2.0, 3.0)
    assert (s.reap_interval, s.reap_min_age) == (2.0, 3.0)


def test_the_reaping_settings_are_positive_seconds():
    from spawner.docker import HubgridDockerSpawner
    s = HubgridDockerSpawner(sandbox_reap_interval=2, sandbox_reap_min_age=3)
    assert (s.sandbox_reap_interval, s.sandbox_reap_min_age) == (2.0, 3.0)
    for name in ("sandbox_reap_interval", "sandbox_reap_min_age"):
        with pytest.raises(TraitError, match=f"{name} must be positive"):
            HubgridDockerSpawner(**{name: 0})
