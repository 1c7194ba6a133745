"""The Docker spawner's start() returns once the server answers
(spawner/readiness.py): real HTTP servers on loopback that come up late,
answer with errors first, or never; a server whose process ended."""

from __future__ import annotations

import asyncio
import socket

import pytest
from tornado.httpserver import HTTPServer
from tornado.web import Application, RequestHandler

from spawner import readiness


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api(RequestHandler):
    """GET <prefix>api: the statuses in ``codes`` one after another, then the last one."""

    def initialize(self, codes: list[int], seen: list[int]):
        self.codes, self.seen = codes, seen

    def get(self):
        code = self.codes[min(len(self.seen), len(self.codes) - 1)]
        self.seen.append(code)
        self.set_status(code)
        self.finish({"version": "test"})


def serve(port: int, codes: list[int], seen: list[int]) -> HTTPServer:
    server = HTTPServer(Application([(r"/user/u/api", Api, {"codes": codes, "seen": seen})]))
    server.listen(port, "127.0.0.1")
    return server


async def running() -> int | None:
    return None


async def test_a_server_that_comes_up_late_is_found_once_it_listens():
    port, seen = free_port(), []
    url = f"http://127.0.0.1:{port}/user/u/api"
    servers: list[HTTPServer] = []
    loop = asyncio.get_running_loop()
    # nothing listens for the first checks (connection refused)
    loop.call_later(0.5, lambda: servers.append(serve(port, [200], seen)))
    try:
        up = await readiness.until_answering(url, interval=0.05, timeout=30, exit_code=running)
    finally:
        for s in servers:
            s.stop()
    assert up is True
    assert seen == [200]


@pytest.mark.parametrize("codes, answered", [
    ([503, 502, 200], [503, 502, 200]),  # a 5xx is not up yet, as the hub reads it
    ([404], [404]),                      # any other status is up (the hub's rule)
    ([302], [302]),                      # a redirect is an answer, not followed
])
async def test_the_server_is_up_at_its_first_status_below_500(codes, answered):
    port, seen = free_port(), []
    server = serve(port, codes, seen)
    try:
        up = await readiness.until_answering(f"http://127.0.0.1:{port}/user/u/api",
                                             interval=0.01, timeout=30, exit_code=running)
    finally:
        server.stop()
    assert up is True
    assert seen == answered


async def test_a_server_that_never_answers_is_given_up_after_the_timeout():
    port = free_port()  # nobody listens
    up = await readiness.until_answering(f"http://127.0.0.1:{port}/user/u/api",
                                         interval=0.05, timeout=0.3, exit_code=running)
    assert up is False


async def test_a_server_that_keeps_failing_is_given_up_too():
    port, seen = free_port(), []
    server = serve(port, [500], seen)
    try:
        up = await readiness.until_answering(f"http://127.0.0.1:{port}/user/u/api",
                                             interval=0.05, timeout=0.3, exit_code=running)
    finally:
        server.stop()
    assert up is False
    assert seen and set(seen) == {500}


async def test_a_process_that_ended_stops_the_wait_with_its_code():
    port = free_port()
    asked = []

    async def exited() -> int | None:
        asked.append(1)
        return 3

    with pytest.raises(readiness.ServerExited) as e:
        await readiness.until_answering(f"http://127.0.0.1:{port}/user/u/api", interval=0.01,
                                        timeout=30, exit_code=exited, check_every=0.05)
    assert e.value.code == 3
    assert "exited with code 3" in str(e.value)
    assert asked == [1]


async def test_the_process_is_not_asked_when_the_server_answers_at_once():
    port, seen, asked = free_port(), [], []

    async def exit_code() -> int | None:
        asked.append(1)
        return None

    server = serve(port, [200], seen)
    try:
        assert await readiness.until_answering(f"http://127.0.0.1:{port}/user/u/api",
                                               interval=0.01, timeout=30, exit_code=exit_code)
    finally:
        server.stop()
    assert asked == []
