"""Waiting until a started server answers, before start() returns.

JupyterHub checks a started server with exponential backoff and full jitter
(``jupyterhub.utils.exponential_backoff``: random pauses of up to 0.2, 0.4,
0.8, ... 5 s), so it finds a server that came up after a few seconds 1.2 to
1.7 s late on average. A spawner whose start() returns once its server
answers is found by the hub's first check. The wait asks the server every
``interval`` seconds what the hub asks (``<server url>api``: any HTTP status
below 500 means up), with the hub's own HTTP client, which also reaches
servers on Unix sockets; a refused connection costs next to nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp
from jupyterhub.httpclient import JupyterHubHTTPClient


class ServerExited(Exception):
    """The server's process ended before it answered."""

    def __init__(self, code: int):
        super().__init__(f"exited with code {code}")
        self.code = code


async def answers(client: JupyterHubHTTPClient, url: str, timeout: float) -> bool:
    """Whether ``url`` (``http://`` or ``http+unix://``, as the hub reaches
    it) answers with a status below 500 within ``timeout`` seconds."""
    try:
        response = await client.fetch(url, raise_for_status=False, allow_redirects=False,
                               timeout=aiohttp.ClientTimeout(total=timeout))
    except (OSError, aiohttp.ClientError, asyncio.TimeoutError):  # refused, reset, timed out
        return False
    response.release()
    return response.status < 500


async def answers_once(url: str, timeout: float) -> bool:
    """``answers`` with a client of its own (closed when done): one check."""
    client = JupyterHubHTTPClient()
    try:
        return await answers(client, url, timeout)
    finally:
        await client.close()


async def until_answering(url: str, *, interval: float, timeout: float,
                          exit_code: Callable[[], Awaitable[int | None]],
                          check_every: float = 1.0,
                          ready: Callable[[], bool] | None = None) -> bool:
    """Ask ``url`` every ``interval`` seconds until it answers: True; False
    when it did not within ``timeout`` seconds. Every ``check_every`` seconds
    ``exit_code()`` says whether the server's process ended (its code, else
    None): ServerExited then. ``ready``: asked before each try, which is
    made only once it says True (a session's socket pinned: spawner/sockpin.py;
    what it raises ends the wait)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_check = loop.time() + check_every
    client = JupyterHubHTTPClient()  # its own connections, closed when done
    try:
        while True:
            if (ready is None or ready()) and await answers(client, url, max(interval, 1.0)):
                return True
            now = loop.time()
            if now >= next_check:
                code = await exit_code()
                if code is not None:
                    raise ServerExited(code)
                next_check = now + check_every
            if now >= deadline:
                return False
            await asyncio.sleep(min(interval, deadline - now))
    finally:
        await client.close()
