"""The warm pool of network sandboxes (spawner/sandboxes.py): its pure
decisions with plain data, and its Docker calls on the real engine (no hub;
the sessions that join holders: tests/test_docker_sandboxes.py)."""

from __future__ import annotations

import asyncio
import uuid

import docker
import pytest

from docker_fixtures import HOSTS, IMAGE, require_image
from spawner.docker import HubgridDockerSpawner
from spawner.sandboxes import (HOLDER_MEMORY, HUB_LABEL, PROCESS_LABEL, SANDBOXES, PoolKey, Sandboxes,
                               _Pool, holder_config, joined_mode, stale_holders)

KEY = PoolKey("unix:///var/run/docker.sock", IMAGE, "none")


def test_a_holder_only_sleeps_without_privileges_in_its_network():
    cfg = holder_config(PoolKey("e", "img:1", "egress"), "http://hub/api", "p1", 1000, 100)
    assert (cfg["image"], cfg["entrypoint"], cfg["command"]) == ("img:1", ["sleep"], ["infinity"])
    assert cfg["user"] == "1000:100"
    assert cfg["labels"] == {HUB_LABEL: "http://hub/api", PROCESS_LABEL: "p1"}
    hc = cfg["host_config"]
    assert hc["NetworkMode"] == "egress"
    assert hc["CapDrop"] == ["ALL"] and hc["SecurityOpt"] == ["no-new-privileges"]
    assert hc["ReadonlyRootfs"] is True and hc["Privileged"] is False
    assert hc["Memory"] == hc["MemorySwap"] == HOLDER_MEMORY and hc["PidsLimit"] == 8


def _holder(hid, owner="me", process="old"):
    return {"Id": hid, "Labels": {HUB_LABEL: owner, PROCESS_LABEL: process}}


def test_stale_holders_are_the_hubs_own_from_an_earlier_process_that_nobody_joined():
    holders = [_holder("idle"), _holder("joined"), _holder("exited-session"),
               _holder("other-hub", owner="you"), _holder("current", process="now"),
               {"Id": "unlabelled", "Labels": None}]
    containers = [{"HostConfig": {"NetworkMode": joined_mode("joined")}},
                  {"HostConfig": {"NetworkMode": "none"}}, {"Id": "no-host-config"}]
    assert stale_holders(holders, containers, "me", "now") == ["idle", "exited-session"]
    # an exited session container still holds its holder (stop() removes both)
    containers.append({"HostConfig": {"NetworkMode": joined_mode("exited-session")}})
    assert stale_holders(holders, containers, "me", "now") == ["idle"]
    assert stale_holders(holders, containers, "nobody", "now") == []


def test_a_holder_is_taken_once_and_forgotten_holders_are_not_taken():
    s = Sandboxes()
    assert s.take(KEY) is None and s.forget(KEY) == []
    s._pools[KEY] = _Pool(idle=["a", "b", "c"])
    assert s.take(KEY) == "a" and s.take(KEY) == "b"
    assert s.take(PoolKey(KEY.engine, KEY.image, "egress")) is None  # another network
    assert s.take(PoolKey(KEY.engine, "other:1", "none")) is None  # another image
    assert s.forget(KEY) == ["c"] and s.take(KEY) is None


def test_pool_size_zero_fills_nothing_and_a_session_keeps_its_own_namespace():
    assert Sandboxes().fill(KEY, None, 0, "me", 1000, 100) is None
    sp = HubgridDockerSpawner(sandbox_pool_size=0)
    assert sp._take_sandbox("none") == "none" and sp._sandbox == ""
    with pytest.raises(Exception, match="0 \\(off\\) or more"):
        HubgridDockerSpawner(sandbox_pool_size=-1)


def fills() -> set:
    """The loop's tasks but this one and the pass that reaps (it runs for ever)."""
    return asyncio.all_tasks() - {asyncio.current_task(), SANDBOXES._reaper}


def test_an_empty_pool_gives_the_session_its_own_namespace_and_a_later_one_a_holder():
    url = HOSTS[0] if HOSTS else "unix:///var/run/docker.sock"
    cl = require_image(url)

    async def go():
        sp = HubgridDockerSpawner(sandbox_pool_size=1, docker_url=url)
        key = sp._pool_key("none")
        SANDBOXES.forget(key)  # (another test's hub process is not this one)
        first = sp._take_sandbox("none"), sp._sandbox
        sp._count_start(-1)  # (its start ends: start_object's part; the fill waited for it)
        await asyncio.gather(*fills())
        second = sp._take_sandbox("none"), sp._sandbox
        sp._count_start(-1)
        await asyncio.gather(*fills())
        return first, second, SANDBOXES.forget(key)
    (mode1, holder1), (mode2, holder2), idle = asyncio.run(go())
    try:
        assert (mode1, holder1) == ("none", "")
        assert holder2 and mode2 == joined_mode(holder2)
        assert cl.inspect_container(holder2)["State"]["Running"]
        assert len(idle) == 1 and idle[0] != holder2  # filled again after the take
    finally:
        for h in [holder2, *idle]:
            if h:
                cl.remove_container(h, force=True)


# -- the real engine -----------------------------------------------------------------

@pytest.fixture
def engine():
    cl = require_image(HOSTS[0] if HOSTS else "unix:///var/run/docker.sock")
    owner = f"test-{uuid.uuid4().hex[:8]}"
    yield cl, owner
    for c in cl.containers(all=True, filters={"label": [f"{HUB_LABEL}={owner}"]}):
        cl.remove_container(c["Id"], force=True)


def test_a_fill_starts_holders_as_configured_and_remove_takes_them_away(engine):
    cl, owner = engine
    key = PoolKey(cl.base_url, IMAGE, "none")

    async def go():
        s = Sandboxes()
        await s.fill(key, cl, 2, owner, 1000, 100)
        assert s.fill(key, cl, 2, owner, 1000, 100) is None  # full
        return s
    s = asyncio.run(go())
    idle = s.idle(key)
    assert len(set(idle)) == 2
    info = cl.inspect_container(idle[0])
    assert info["State"]["Running"] and info["HostConfig"]["NetworkMode"] == "none"
    assert info["Config"]["User"] == "1000:100" and info["HostConfig"]["ReadonlyRootfs"]
    assert info["Config"]["Labels"][PROCESS_LABEL] == s.process
    asyncio.run(s.remove(cl, idle[0]))
    asyncio.run(s.remove(cl, idle[0]))  # gone already: nothing to say
    with pytest.raises(docker.errors.NotFound):
        cl.inspect_container(idle[0])


def test_a_pool_whose_image_is_missing_stays_empty_and_waits_before_trying_again(engine):
    cl, owner = engine
    key = PoolKey(cl.base_url, "hubgrid/no-such-image:0", "none")

    async def go():
        s = Sandboxes()
        await s.fill(key, cl, 2, owner, 1000, 100)
        return s, s.fill(key, cl, 2, owner, 1000, 100)
    s, again = asyncio.run(go())
    assert s.idle(key) == [] and again is None
    assert cl.containers(all=True, filters={"label": [f"{HUB_LABEL}={owner}"]}) == []


def test_the_first_fill_on_an_engine_removes_only_stale_holders_of_its_hub(engine):
    cl, owner = engine
    other = f"{owner}-other"

    def holder(who, process, network="none"):
        h = cl.create_container(IMAGE, ["infinity"], entrypoint=["sleep"],
                                labels={HUB_LABEL: who, PROCESS_LABEL: process},
                                host_config={"NetworkMode": network})["Id"]
        cl.start(h)
        return h
    idle_old = holder(owner, "earlier")
    joined_old = holder(owner, "earlier")
    session = cl.create_container(IMAGE, ["sleep", "600"],
                                  host_config={"NetworkMode": joined_mode(joined_old)})["Id"]
    gone_session = holder(owner, "earlier")  # its session was removed
    theirs = holder(other, "earlier")
    try:
        s = Sandboxes()
        mine_now = holder(owner, s.process)
        assert sorted(asyncio.run(s.clean(cl, owner))) == sorted([idle_old, gone_session])
        left = {c["Id"] for c in cl.containers(all=True, filters={"label": [HUB_LABEL]})}
        assert {joined_old, theirs, mine_now} <= left
        assert not {idle_old, gone_session} & left
        # a pool cleans an engine when it first fills there, and only then
        stale, later = holder(owner, "earlier"), None

        async def fills():
            nonlocal later
            await s.fill(PoolKey(cl.base_url, IMAGE, "none"), cl, 1, owner, 1000, 100)
            later = holder(owner, "earlier")
            await s.fill(PoolKey(cl.base_url, "hubgrid/no-such-image:0", "none"), cl, 1,
                         owner, 1000, 100)
        asyncio.run(fills())
        left = {c["Id"] for c in cl.containers(all=True, filters={"label": [HUB_LABEL]})}
        assert stale not in left and later in left
    finally:
        cl.remove_container(session, force=True)
        cl.remove_container(theirs, force=True)


def test_a_sessions_holder_is_kept_in_its_state_for_a_hub_that_restarts():
    sp = HubgridDockerSpawner()
    sp._sandbox, sp.docker_url = "h1", "unix:///x.sock"
    state = sp.get_state()
    assert state["hubgrid_sandbox"] == "h1"
    restarted = HubgridDockerSpawner()
    restarted.load_state({**state, "object_name": "hubgrid-u"})
    assert restarted._sandbox == "h1"
    sp._sandbox = ""
    assert "hubgrid_sandbox" not in sp.get_state()
    fresh = HubgridDockerSpawner()
    fresh.load_state({"object_name": "hubgrid-u"})
    assert fresh._sandbox == ""


def test_a_hub_that_exits_removes_its_idle_holders(engine):
    cl, owner = engine
    key = PoolKey(cl.base_url, IMAGE, "none")
    s = Sandboxes()

    async def fill():
        await s.fill(key, cl, 2, owner, 1000, 100)
    asyncio.run(fill())
    taken = s.take(key)
    idle = s.idle(key)
    assert len(idle) == 1
    s.drain()  # (registered with atexit at the first fill)
    left = {c["Id"] for c in cl.containers(all=True, filters={"label": [f"{HUB_LABEL}={owner}"]})}
    assert left == {taken} and s.idle(key) == []


def test_a_fill_waits_until_no_session_is_starting_on_its_engine(engine):
    cl, owner = engine
    key = PoolKey(cl.base_url, IMAGE, "none")
    s = Sandboxes()

    async def go():
        s.starting(key.engine, +1)
        s.starting(key.engine, +1)
        task = s.fill(key, cl, 1, owner, 1000, 100)
        await asyncio.sleep(1.0)
        during = s.idle(key)
        s.starting(key.engine, -1)
        await asyncio.sleep(0.5)
        one_left = s.idle(key)
        s.starting(key.engine, -1)
        await asyncio.wait_for(task, 60)
        return during, one_left, s.idle(key)
    during, one_left, after = asyncio.run(go())
    assert during == [] and one_left == [] and len(after) == 1


def test_a_users_spawner_made_at_login_starts_filling_the_default_pool():
    from jupyterhub.objects import Hub
    url = HOSTS[0] if HOSTS else "unix:///var/run/docker.sock"
    cl = require_image(url)
    key = PoolKey(url, IMAGE, "none")

    async def go():
        SANDBOXES.forget(key)
        for off in ({"sandbox_pool_size": 0}, {"isolated": False},
                    {"egress_network": "somewhere"}):  # (checked at a start only)
            HubgridDockerSpawner(hub=Hub(), default_docker_url=url, sandbox_pool_size=1,
                                 **off) if "sandbox_pool_size" not in off else \
                HubgridDockerSpawner(hub=Hub(), default_docker_url=url, **off)
            assert asyncio.all_tasks() == {asyncio.current_task()}, off
        HubgridDockerSpawner(hub=Hub(), default_docker_url=url, sandbox_pool_size=1)
        await asyncio.gather(*fills())
        return SANDBOXES.forget(key)
    idle = asyncio.run(go())
    try:
        assert len(idle) == 1 and cl.inspect_container(idle[0])["State"]["Running"]
    finally:
        for h in idle:
            cl.remove_container(h, force=True)
