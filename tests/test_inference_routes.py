"""The inference servers' answer to a route they do not serve,
with the real chat stand-in (images/inference, run as a process on a Unix
socket, as test_gateway runs it): a caller who picked the wrong kind of
model (the Chat page offers every model the gateway lists, embeddings ones
too) is told which server answered and what it serves, not a bare "no
route". The embeddings server shares the same HTTP side (httpbase); its
refusals on the real image are in test_inference_image.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def echo_chat():
    sock = Path(f"/tmp/hubgrid-routes-{os.getpid()}.sock")  # a short path for AF_UNIX
    sock.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "images" / "inference")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hubgrid_inference.echochat", "--model-name", "echo",
         "--port", str(_free_port()), "--unix", str(sock)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert proc.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not listen"
            time.sleep(0.02)
        yield httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)),
                           base_url="http://replica", timeout=30)
    finally:
        proc.kill()
        proc.wait()
        sock.unlink(missing_ok=True)


def test_a_route_not_served_says_which_server_and_what_it_serves(echo_chat):
    with echo_chat as h:
        answer = h.post("/v1/embeddings", json={"model": "echo", "input": "x"})
        assert answer.status_code == 404
        error = answer.json()["error"]
        assert error["code"] == "not_found"
        assert error["message"].startswith("hubgrid-echo-chat serves no /v1/embeddings (it serves ")
        assert "/v1/chat/completions" in error["message"] and "/v1/models" in error["message"]
        # its body was never read: the connection closes rather than read it as
        # the next request (which got a 501 'Unsupported method' before)
        assert answer.headers["Connection"] == "close"
        # a route it serves, with another method: 405, not 404
        assert h.get("/v1/chat/completions").status_code == 405
        client = openai.OpenAI(api_key="unused", base_url="http://replica/v1",
                               http_client=h, max_retries=0)
        with pytest.raises(openai.NotFoundError, match="serves no /v1/embeddings"):
            client.embeddings.create(model="echo", input="x")
        assert client.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "hi"}]
        ).choices[0].message.content == "echo: hi"
