"""HubgridDockerSpawner's start() returns once the server answers
(ready_poll_interval, spawner/readiness.py), on real containers of the
session image: a server that answers, a container that exits first, one
removed while it starts, one that never answers, a start budget nearly spent, and the wait turned off."""

from __future__ import annotations

import os
import socket
import time

import pytest
from jupyterhub.objects import Server
from jupyterhub.spawner import SpawnException

from hub_fixtures import require
from spawner.docker import HubgridDockerSpawner
from spawner.isolation import SessionNetwork

HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = os.environ.get("HUBGRID_TEST_DOCKER_IMAGE", "hubgrid/base:latest")


@pytest.fixture(scope="module")
def engine():
    import docker

    require("the test Docker engines", bool(HOSTS),
            "run `make test` (scripts/start-docker.sh, scripts/build-images.sh)")
    client = docker.DockerClient(base_url=HOSTS[0], version="auto", timeout=60)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def containers(engine):
    made = []

    def run(command: list[str]):
        container = engine.containers.run(IMAGE, command, detach=True, network_mode="host",
                                          labels={"hubgrid.test": "readiness"})
        made.append(container)
        return container

    yield run
    for c in made:
        c.remove(force=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawner_of(container_id: str, port: int, **config) -> HubgridDockerSpawner:
    """A spawner whose container was just started (what start_object leaves)."""
    spawner = HubgridDockerSpawner(default_docker_url=HOSTS[0], **config)
    spawner.server = Server(base_url="/user/u/")
    spawner.object_id, spawner.ip, spawner.port = container_id, "127.0.0.1", port
    spawner._start_began = time.monotonic()
    return spawner


async def test_start_returns_once_the_server_answers(containers):
    port = free_port()
    # any HTTP answer below 500 is up (a 404 here, as the hub reads it)
    c = containers(["python3", "-m", "http.server", str(port), "--bind", "127.0.0.1"])
    spawner = spawner_of(c.id, port, ready_poll_interval=0.05, http_timeout=60)
    assert await spawner._until_answering() is None
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # it listens now


async def test_a_container_that_exits_first_fails_the_start_with_its_code(containers):
    c = containers(["sh", "-c", "exit 3"])
    spawner = spawner_of(c.id, free_port(), ready_poll_interval=0.05, http_timeout=60)
    with pytest.raises(SpawnException) as e:
        await spawner._until_answering()
    assert e.value.reason == "backend"
    assert "exited with code 3 before it answered" in str(e.value)


async def test_a_container_removed_while_starting_fails_the_start_at_once(engine):
    """Removed by someone else (``docker rm -f``) before its server answered:
    the start fails with that reason within a check, not after http_timeout
    as 'did not answer'."""
    c = engine.containers.run(IMAGE, ["sleep", "600"], detach=True, network_mode="none",
                              labels={"hubgrid.test": "readiness"})
    c.remove(force=True)
    spawner = spawner_of(c.id, free_port(), ready_poll_interval=0.05, http_timeout=60)
    with pytest.raises(SpawnException) as e:
        await spawner._until_answering()
    assert e.value.reason == "backend"  # not "timeout" after the 60 s of http_timeout
    assert "container was removed before its server answered" in str(e.value)


async def test_a_session_whose_container_is_gone_leaves_no_directory_behind(engine, tmp_path):
    """After a failed start JupyterHub polls and calls stop() only for a server
    still running: a container already gone (removed while it started) must
    not leave its session's directory (relay socket, server socket) on the node."""
    c = engine.containers.run(IMAGE, ["sleep", "600"], detach=True, network_mode="none",
                              labels={"hubgrid.test": "readiness"})
    spawner = spawner_of(c.id, free_port(), ready_poll_interval=0.05, http_timeout=60)
    spawner.object_name = c.name  # poll() looks the container up by name
    spawner._net = SessionNetwork.of(str(tmp_path), "gone-1", 8081)
    os.mkdir(spawner._net.directory, 0o700)
    c.remove(force=True)
    assert await spawner.poll() is not None
    assert not os.path.exists(tmp_path / "gone-1")
    assert spawner._net is None


async def test_a_server_that_never_answers_fails_after_http_timeout(containers):
    c = containers(["sleep", "600"])
    spawner = spawner_of(c.id, free_port(), ready_poll_interval=0.05, http_timeout=1)
    with pytest.raises(SpawnException) as e:
        await spawner._until_answering()
    assert e.value.reason == "timeout"
    assert "did not answer within 1 s (http_timeout)" in str(e.value)


async def test_a_start_budget_nearly_spent_leaves_the_rest_to_the_hub(containers):
    """start() must not fail a start the hub would still wait for: with the
    start budget shorter than http_timeout it returns, and the hub's own
    check goes on for http_timeout."""
    c = containers(["sleep", "600"])
    spawner = spawner_of(c.id, free_port(), ready_poll_interval=0.05, http_timeout=60,
                         start_timeout=2)
    assert await spawner._until_answering() is None


async def test_no_wait_when_turned_off():
    spawner = spawner_of("no-such-container", free_port(), ready_poll_interval=0,
                         http_timeout=60)
    assert await spawner._until_answering() is None
