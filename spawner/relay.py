"""The one way out of an isolated session: its relay socket.

A Docker session in its own network namespace (``HubgridDockerSpawner.isolated``)
has nothing but its own loopback. What it needs from outside comes through
one Unix socket in the session's directory, served here in the hub: HTTP
requests to the hub's API (the server's OAuth, its activity) and to the
hubgrid API (the Lab extension, the ``hubgrid`` command, reclaim activity)
and to the serving gateway (through the hub's proxy: the Lab's Chat page),
each forwarded to its upstream, and nothing else: any other path, an
``Upgrade`` (websockets, CONNECT), or a path that could climb out of its
prefix is refused with 403 before anything is forwarded. Inside the
session, ``hubgrid-relay`` (spawner/scripts) makes the socket reachable at
``127.0.0.1:<port>`` of the session's own loopback, so the usual URLs and
clients (``JUPYTERHUB_API_URL``, ``HUBGRID_API_URL``, curl, requests) work.

The relay only carries bytes: every request still needs the session's own
token, and the hub and the service check it as for any caller.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from . import sockpin

log = logging.getLogger("JupyterHub")

#: headers of one hop, never forwarded (RFC 9110 7.6.1), and the Host the
#: client gave (the upstream's is set by the client library)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
                        "host"})

#: what a proxy says about its client: a session may not say it of itself
#: (the relay calls from loopback, which the hub and the service trust)
FORWARDED = frozenset({"forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-port",
                       "x-forwarded-proto", "x-real-ip"})

#: path segments or encodings that could leave a prefix once decoded upstream
_CLIMBS = re.compile(r"(^|/)\.{1,2}(/|$)|%2e|%2f|%5c|\\", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    """Requests whose path starts with ``prefix`` go to ``upstream`` (an
    origin such as ``http://127.0.0.1:8081``), path and query unchanged."""

    prefix: str
    upstream: str


def route_for(routes: tuple[Route, ...], method: str, raw_path: str,
              headers) -> Route | str:
    """The route a request takes, or why it is refused."""
    if method.upper() == "CONNECT" or "upgrade" in headers.get("Connection", "").lower() \
            or headers.get("Upgrade"):
        return "the relay carries plain HTTP requests only"
    if "#" in raw_path:  # no fragment in a request (RFC 9112): upstream would cut it off
        return "the path may not contain a fragment ('#')"
    path = raw_path.split("?", 1)[0]
    if _CLIMBS.search(path):
        return "the path may not contain dot segments or encoded slashes"
    for route in routes:
        if path.startswith(route.prefix) or path == route.prefix.rstrip("/"):
            return route
    return "not a path this session may reach from its relay: " \
           + ", ".join(r.prefix for r in routes)


class SessionRelay:
    """The relay of one session: an HTTP server on ``path`` (a Unix socket,
    owned by ``uid``:``gid``, mode 0600, in a directory only root writes:
    the session connects to it, never writes beside it) that forwards the
    ``routes``."""

    def __init__(self, path: str, routes: tuple[Route, ...], uid: int, gid: int,
                 client: aiohttp.ClientSession):
        self.path, self.routes, self.uid, self.gid = path, routes, uid, gid
        self._client = client
        self._runner: web.AppRunner | None = None

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(self) -> None:
        app = web.Application(client_max_size=0)  # bodies stream, nothing is buffered
        app.router.add_route("*", "/{tail:.*}", self._forward)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            # nobody but root could have planted anything there
            sockpin.private_dir(os.path.dirname(self.path))
            if os.path.lexists(self.path):  # left by a hub that died
                os.unlink(self.path)
            await web.UnixSite(runner, self.path).start()
            sockpin.own_socket(self.path, self.uid, self.gid, 0o600)
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        route = route_for(self.routes, request.method, request.raw_path, request.headers)
        if isinstance(route, str):
            # a session asking for what it may not reach: worth an admin's look
            log.warning("relay %s refused %s %s: %s", self.path, request.method,
                        request.raw_path[:200], route)
            return web.json_response({"message": route}, status=403)
        headers = [(k, v) for k, v in request.headers.items()
                   if k.lower() not in HOP_BY_HOP and k.lower() not in FORWARDED]
        body = request.content.iter_any() if request.body_exists else None
        try:
            async with self._client.request(
                    request.method, route.upstream + request.raw_path, headers=headers,
                    data=body, allow_redirects=False, auto_decompress=False,
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)) as upstream:
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for k, v in upstream.headers.items():
                    if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                        response.headers.add(k, v)
                if upstream.content_length is not None:
                    response.content_length = upstream.content_length
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response
        except (aiohttp.ClientConnectionError, asyncio.TimeoutError) as e:
            if request.transport is None or request.transport.is_closing():
                raise  # the session went away mid-answer: nothing to tell it
            return web.json_response({"message": f"upstream unreachable: {e}"}, status=502)


class Relays:
    """The relays of one hub process, by socket path (a hub that restarts
    starts those of its running sessions again, from their state)."""

    def __init__(self):
        self._relays: dict[str, SessionRelay] = {}
        self._client: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._client is None or self._client.closed:
            self._client = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"))
        return self._client

    def get(self, path: str) -> SessionRelay | None:
        return self._relays.get(path)

    async def ensure(self, path: str, routes: tuple[Route, ...], uid: int, gid: int) -> SessionRelay:
        relay = self._relays.get(path)
        if relay is None or not relay.running:
            relay = SessionRelay(path, routes, uid, gid, self._session())
            await relay.start()
            self._relays[path] = relay
        return relay

    async def close(self, path: str) -> None:
        relay = self._relays.pop(path, None)
        if relay is not None:
            await relay.close()


#: the hub's relays
RELAYS = Relays()
