"""A refusal of the Lab forwarder reaches the browser through the real
proxy, and the connection stays usable.

The forwarder (labextension/jupyterlab_hubgrid/routes.py) refuses some
calls before it reads their body: a visitor of a shared server, a caller
without the XSRF token, a server with no hubgrid configuration. Answered
with the body unread, tornado closed the connection on those bytes, the
kernel reset it, and configurable-http-proxy -- in front of every Jupyter
server -- answered 503 to that request and to the next one on the same
keep-alive connection. Here a real proxy stands in front of a real Jupyter
server, and one keep-alive connection carries a large refused upload and
then another call.
"""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from hub_fixtures import require
from tornado.testing import bind_unused_port

from jupyterlab_hubgrid.bodypipe import RefusalDrain
from lab_fixtures import TOKEN, lab_server
from service_app import served  # noqa: F401

MiB = 2**20


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    return sqlite_db_url


async def _free_port() -> int:
    sock, port = bind_unused_port()
    sock.close()
    return port


async def _listening(port: int, proc) -> None:
    for _ in range(300):
        if proc.returncode is not None:
            raise AssertionError(f"the proxy exited: {await proc.stderr.read()}")
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise AssertionError("the proxy did not listen")


async def _answer(reader) -> tuple[int, dict, bytes]:
    status = await asyncio.wait_for(reader.readline(), 30)
    assert status, "the connection closed without an answer"
    code = int(status.split()[1])
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return code, headers, body


@pytest.fixture
async def proxied_visitor(served, tmp_path, monkeypatch):  # noqa: F811
    """gina's view of alice's server (every call refused 403 before its body
    is read), behind a real configurable-http-proxy: the proxy's port."""
    chp = shutil.which("configurable-http-proxy")
    require("configurable-http-proxy", chp is not None, "run `make test` (npm install)")
    async with lab_server(tmp_path, monkeypatch, user="gina", owner="alice",
                          api_url=served.api, keypair="x:y") as lab:
        port, api = await _free_port(), await _free_port()
        proc = await asyncio.create_subprocess_exec(
            chp, "--ip", "127.0.0.1", "--port", str(port), "--api-ip", "127.0.0.1",
            "--api-port", str(api), "--default-target", lab.url.rstrip("/"),
            "--log-level", "warn", stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env={"CONFIGPROXY_AUTH_TOKEN": "t",
                                                 "PATH": "/usr/bin:/bin:/usr/local/bin"})
        try:
            await _listening(port, proc)
            yield port
        finally:
            proc.terminate()
            await proc.wait()


@pytest.mark.parametrize("size", [8 * MiB, 64 * 1024])
async def test_a_refused_upload_is_answered_and_the_connection_goes_on(proxied_visitor, size):
    reader, writer = await asyncio.open_connection("127.0.0.1", proxied_visitor)
    try:
        head = (f"PUT /hubgrid/api/vfolders/x/upload?path=big.bin HTTP/1.1\r\n"
                f"Host: 127.0.0.1\r\nAuthorization: token {TOKEN}\r\n"
                f"Content-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n")
        writer.write(head.encode() + b"x" * size)
        answer = asyncio.ensure_future(_answer(reader))
        await writer.drain()
        code, headers, body = await answer
        assert code == 403 and "only alice" in json.loads(body)["message"], (code, body[:300])
        assert headers.get("connection", "keep-alive").lower() != "close"
        # the next call on the same connection is answered too (was the proxy's 503)
        writer.write(f"GET /hubgrid/api/me HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     f"Authorization: token {TOKEN}\r\n\r\n".encode())
        await writer.drain()
        code, _, body = await _answer(reader)
        assert code == 403 and "only alice" in json.loads(body)["message"], (code, body[:300])
    finally:
        writer.close()


def test_a_body_too_large_to_drain_closes_the_connection_after_the_answer():
    """The drain is bounded: past it the answer goes at once, saying the
    connection closes (the service's rule for its own uploads)."""
    drain = RefusalDrain()
    assert drain.drain_length({"Content-Length": str(8 * MiB)}) == 8 * MiB
    assert drain.drain_length({"Content-Length": str(RefusalDrain.drain_max_bytes + 1)}) is None
    assert drain.drain_length({"Transfer-Encoding": "chunked"}) is None
    assert drain.drain_length({"Content-Length": "12x"}) is None
    assert drain.drain_length({}) == 0
