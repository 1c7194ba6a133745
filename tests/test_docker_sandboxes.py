"""Isolated Docker sessions and the warm pool of network sandboxes
(spawner/sandboxes.py), black-box through the real hub on the shared Docker
hub (tests/docker_fixtures.py; the pool is on by default): a session joins a
holder of its own, never shared, that goes when the session stops; a holder
that cannot be joined costs the session nothing. The pool's own Docker
calls (fill, stale holders): tests/test_sandboxes.py.
"""

from __future__ import annotations

import docker
import pytest

from docker_fixtures import HOSTS, IMAGE, group_on_first_engine, held
from session_fixtures import eventually, server_of, spawn, stop_server, wait_ready
from spawner.docker import HubgridDockerSpawner
from spawner.sandboxes import HOLDER_MEMORY, HUB_LABEL, joined_mode

GROUP, NODE = "pool", "pool-node"


@pytest.fixture(scope="module")
def pool(dock):
    """A resource group with one node, the first engine (the hub's default
    engine, whose pool a start begins to fill)."""
    return group_on_first_engine(dock, GROUP, NODE)


def holders(dock) -> dict[str, dict]:
    """This hub's holders on the first engine, by id."""
    cl = dock.engines[HOSTS[0]]
    port = f":{dock.hub.ports['HUBGRID_HUB_PORT']}/"
    return {c["Id"]: c for c in cl.containers(all=True, filters={"label": [HUB_LABEL]})
            if port in c["Labels"][HUB_LABEL]}


def idle_holders(dock, among: dict[str, dict] | None = None) -> list[str]:
    """This hub's holders (``among``: those of one listing) no session joined."""
    joined = {c["HostConfig"]["NetworkMode"] for c in dock.engines[HOSTS[0]].containers(all=True)}
    return [h for h in (holders(dock) if among is None else among) if joined_mode(h) not in joined]


def start(dock, user: str, server: str) -> dict:
    """``user``'s session ``server`` on the pool's node: its container's inspect."""
    r = spawn(dock.hub, user, server, project="ml", resource_group=GROUP, image=IMAGE,
              cpu="0.5", mem="512M")
    assert r.status_code in (201, 202), r.text
    wait_ready(dock.hub, user, server)
    url, c = dock.container(held(dock.hub, user, server)["id"])
    assert url == HOSTS[0]
    return dock.engines[url].inspect_container(c["Id"])


def pool_full(dock) -> bool:
    """Whether the pool of the session image is full: no fill is making
    holders any more (one that goes on would refill what a test removes)."""
    everything = holders(dock)  # one listing: the pool fills while it is read
    mine = [h for h in idle_holders(dock, everything) if everything[h]["Image"] == IMAGE]
    return len(mine) >= HubgridDockerSpawner.class_traits()["sandbox_pool_size"].default_value


def networks(dock, container: str) -> list[str]:
    return dock.exec(HOSTS[0], container, ["ls", "/sys/class/net"]).split()


def test_a_session_joins_a_holder_of_its_own_which_goes_with_it(pool):
    cl = pool.engines[HOSTS[0]]
    first = start(pool, "alice", "pool-1")  # (its start fills an empty pool)
    try:
        assert eventually(lambda: idle_holders(pool), timeout=60), "the pool did not fill"
        second = start(pool, "bob", "pool-2")
        mode = second["HostConfig"]["NetworkMode"]
        assert mode.startswith("container:"), mode
        holder = cl.inspect_container(mode.split(":", 1)[1])
        # the holder: a sleep in a namespace of its own, without privileges, this hub's
        assert holder["HostConfig"]["NetworkMode"] == "none"
        assert holder["State"]["Running"] and holder["Path"] == "sleep"
        assert holder["Config"]["User"] == "1000:100"
        assert holder["HostConfig"]["CapDrop"] == ["ALL"]
        assert holder["HostConfig"]["SecurityOpt"] == ["no-new-privileges"]
        assert holder["HostConfig"]["ReadonlyRootfs"] is True
        assert holder["HostConfig"]["Memory"] == HOLDER_MEMORY
        assert holder["Id"] in holders(pool)
        # the session sees the namespace's loopback only, and nobody else is in it
        assert networks(pool, second["Id"]) == ["lo"]
        assert first["HostConfig"]["NetworkMode"] != mode
        sharing = [c["Id"] for c in cl.containers(all=True)
                   if c["HostConfig"]["NetworkMode"] == mode]
        assert sharing == [second["Id"]]
        stop_server(pool.hub, "bob", "pool-2")
        with pytest.raises(docker.errors.NotFound):
            cl.inspect_container(holder["Id"])
        assert holder["Id"] not in idle_holders(pool)  # never given to another session
    finally:
        stop_server(pool.hub, "bob", "pool-2")
        stop_server(pool.hub, "alice", "pool-1")
    mode = first["HostConfig"]["NetworkMode"]
    if mode.startswith("container:"):
        assert mode.split(":", 1)[1] not in holders(pool)


def test_a_holder_that_cannot_be_joined_costs_the_session_nothing(pool):
    """Idle holders gone behind the hub's back (an engine restarted, an admin's
    docker rm): the session starts in a namespace of its own."""
    cl = pool.engines[HOSTS[0]]
    start(pool, "alice", "pool-3")  # the pool is full after this start, if it was not
    try:
        assert eventually(lambda: pool_full(pool), timeout=90), "the pool did not fill"
        for h in idle_holders(pool):
            cl.remove_container(h, force=True)
        info = start(pool, "bob", "pool-4")
        assert info["HostConfig"]["NetworkMode"] == "none"
        assert networks(pool, info["Id"]) == ["lo"]
        # the pool fills again, with holders that run
        assert eventually(lambda: idle_holders(pool), timeout=60), "the pool did not fill again"
        assert all(cl.inspect_container(h)["State"]["Running"] for h in idle_holders(pool))
    finally:  # each that exists (a failure above may have left either)
        for user, server in (("bob", "pool-4"), ("alice", "pool-3")):
            if server_of(pool.hub, user, server) is not None:
                stop_server(pool.hub, user, server)
