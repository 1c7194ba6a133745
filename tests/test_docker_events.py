"""A session container killed behind the hub's back is released from the
engine's events, before the hub polls; the spawner's later release and log
push still work. Pure parts first, then the real hub on the real engines
($HUBGRID_TEST_DOCKER_HOSTS, as tests/test_docker_sessions.py)."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time

import pytest

from quota_service.core import db
from quota_service.sessions import dockerevents
from quota_service.sessions.dockerevents import DockerEvents, Exit, container_exit

DIE = {
    "status": "die", "id": "c0ffee", "from": "hubgrid/base:latest", "Type": "container",
    "Action": "die", "scope": "local", "time": 1700000000, "timeNano": 1700000000123456789,
    "Actor": {"ID": "c0ffee", "Attributes": {"exitCode": "137", "hubgrid.allocation": "a-1",
                                             "image": "hubgrid/base:latest"}},
}


def test_a_die_event_of_a_session_container_is_an_exit_with_its_code():
    assert container_exit(DIE, "unix:///e") == Exit("a-1", 137, "unix:///e", "c0ffee",
                                                     1700000000.123456789)


@pytest.mark.parametrize("change", [
    {"Action": "start"}, {"Type": "network"},
    {"Actor": {"ID": "x", "Attributes": {"exitCode": "0"}}},  # not a session container
])
def test_other_events_are_not_exits(change):
    assert container_exit({**DIE, **change}, "unix:///e") is None


def test_an_exit_code_the_engine_did_not_give_is_unknown():
    actor = {"ID": "c", "Attributes": {"hubgrid.allocation": "a-1"}}
    assert container_exit({**DIE, "Actor": actor}, "u").exit_code is None


class FakeEngine:
    """An engine whose event stream fails ``fail`` times, then sends ``events``
    and stays open until closed."""

    def __init__(self, events, fail=0):
        self.events_to_send, self.fail = events, fail
        self.calls: list[dict] = []
        self.closed = threading.Event()

    def client(self, url, timeout):
        engine = self

        class Client:
            def events(self, **kw):
                engine.calls.append(kw)
                if len(engine.calls) <= engine.fail:
                    raise ConnectionError("engine away")
                return Stream(engine)

            def close(self):
                pass

        return Client()


class Stream:
    def __init__(self, engine):
        self.engine = engine

    def __iter__(self):
        yield from self.engine.events_to_send
        self.engine.closed.wait(30)

    def close(self):
        self.engine.closed.set()


def test_a_lost_engine_is_asked_again_with_the_label_filter_from_the_last_event(monkeypatch):
    monkeypatch.setattr(dockerevents, "MAX_PAUSE", 0.01)
    engine = FakeEngine([DIE], fail=2)
    got = []
    events = DockerEvents(engine.client, got.append, logging.getLogger("test"))
    events.sync(["unix:///e"])
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    events.stop()
    assert [e.allocation for e in got] == ["a-1"]
    assert len(engine.calls) == 3
    assert all(c["filters"] == {"type": "container", "event": "die",
                                "label": "hubgrid.allocation"} for c in engine.calls)
    assert all(c["decode"] is True for c in engine.calls)
    # the first connection looks back a little: exits just before the start count
    assert engine.calls[0]["since"] <= time.time() - dockerevents.REPLAY + 5


def test_following_a_set_of_engines_starts_and_stops_followers():
    engine = FakeEngine([])
    events = DockerEvents(engine.client, lambda e: None, logging.getLogger("test"))
    events.sync(["a", "b"])
    assert set(events.followers) == {"a", "b"}
    events.sync(["b"])
    assert set(events.followers) == {"b"}
    events.stop()
    assert events.followers == {}


# ---------------------------------------------------------------- releasing (ledger)

def test_an_exit_releases_a_running_allocation_once_with_its_code(cluster):
    cluster.add_group("solo", {"solo-1": ()}, cpu="1")
    a = cluster.submit("alice", "ml", "solo", slots={"cpu": "1"})
    ex = Exit(a["id"], 137, "unix:///e", "c0ffee", 0)
    now = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    model = dockerevents.release_exited(cluster.world.session_factory, ex, now)
    assert (model["state"], model["exit_code"], model["release_reason"]) == (
        "released", 137, "the container exited (code 137)")
    assert dockerevents.release_exited(cluster.world.session_factory, ex, now) is None
    unknown = Exit("nosuch", 0, "unix:///e", "c", 0)
    assert dockerevents.release_exited(cluster.world.session_factory, unknown, now) is None
    with db.ledger_transaction(cluster.world.session_factory) as s:
        from quota_service.scheduling import ledger

        again = ledger.release_allocation(s, ledger.get_allocation(s, a["id"]), now,
                                          "the server is no longer running", 0)
    assert (again["release_reason"], again["exit_code"]) == ("the container exited (code 137)",
                                                             137)


# ---------------------------------------------------------------- the real thing

@pytest.fixture(scope="module")
def dock(tmp_path_factory):
    from docker_fixtures import HOSTS as hosts, _engines, docker_hub

    # the hub polls once an hour: what is released before is the service's doing
    config = ("c.Spawner.poll_interval = 3600\n"
              "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")
    with docker_hub(tmp_path_factory.mktemp("docker-events-hub"), _engines(), config,
                    (("dock-a", hosts[0], 0),)) as d:
        yield d


def test_a_container_killed_behind_the_hubs_back_is_released_before_the_hub_polls(dock):
    from session_fixtures import allocations, eventually, hub_log, server_of, spawn, \
        stop_server, wait_ready

    hub = dock.hub
    opts = {"project": "ml", "resource_group": "dock", "image": "hubgrid/base:latest",
            "cpu": "1", "mem": "512M"}
    assert spawn(hub, "alice", "killed", **opts).status_code in (201, 202)
    wait_ready(hub, "alice", "killed")
    [a] = allocations(hub, "alice", "allocated", "killed")
    url, c = dock.container(a["id"])
    dock.engines[url].kill(c["Id"])
    killed = time.monotonic()

    def released():
        [now] = allocations(hub, "alice", server="killed")
        return now if now["state"] == "released" else None

    done = eventually(released, timeout=60)
    assert done, hub_log(hub)
    assert (done["exit_code"], done["release_reason"]) == (137, "the container exited (code 137)")
    # the hub has not polled: it still takes the server for running
    assert server_of(hub, "alice", "killed")["ready"]
    print(f"\nreleased {time.monotonic() - killed:.1f} s after docker kill")
    # the queue uses the capacity at once: both CPUs for a new session
    assert spawn(hub, "alice", "next", **{**opts, "cpu": "2"}).status_code in (201, 202)
    wait_ready(hub, "alice", "next")
    # stopping the dead server afterwards: its spawner's release changes nothing
    stop_server(hub, "alice", "killed")
    [after] = allocations(hub, "alice", server="killed")
    assert (after["release_reason"], after["exit_code"]) == (done["release_reason"], 137)
    stop_server(hub, "alice", "next")
