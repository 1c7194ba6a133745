"""The gateway's HTTP side (tornado): callers' requests in, replicas' answers out.

Under the hub's proxy at ``/services/hubgrid-gateway/``:

- ``e/<endpoint id>/<path>``: an endpoint's stable URL; any method, the
  path and body passed as they are to a healthy replica;
- ``v1/models``, ``v1/chat/completions``, ``v1/completions``,
  ``v1/embeddings``: one OpenAI-compatible API over every endpoint the
  caller may use, routed by ``model`` (``access.usable``); the body's
  ``model`` becomes the name the replica serves;
- ``health``: the gateway itself.

Answers stream through as the replica writes them (server-sent events of a
streamed chat included). Errors are OpenAI's shape. Every call is counted
per endpoint and outcome (``Counts``), for the service's metrics.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections import Counter

import httpx
from tornado import web

from . import access, usercred
from .access import Refusal
from .coldstart import Hold, Unavailable
from .table import EMPTY, Endpoint, Table

#: request headers not passed on (hop-by-hop, and the caller's credentials)
DROP_REQUEST = {"host", "connection", "keep-alive", "transfer-encoding", "te", "upgrade",
                "proxy-authorization", "authorization", "api-key", "x-api-key", "cookie",
                "content-length"}
DROP_RESPONSE = {"connection", "keep-alive", "transfer-encoding", "content-length", "server",
                 "x-hubgrid-no-replica"}
OPENAI_ROUTES = ("chat/completions", "completions", "embeddings")


class Counts:
    """Calls per endpoint and outcome since the last report."""

    def __init__(self):
        self.calls: Counter = Counter()
        self.seconds: Counter = Counter()

    def add(self, endpoint_id: str, status: int, seconds: float) -> None:
        key = (endpoint_id, f"{status // 100}xx")
        self.calls[key] += 1
        self.seconds[key] += seconds

    def take(self) -> list[dict]:
        out = [{"endpoint": e, "code": c, "calls": n, "seconds": round(self.seconds[(e, c)], 6)}
               for (e, c), n in sorted(self.calls.items())]
        self.calls.clear()
        self.seconds.clear()
        return out

    def give_back(self, taken: list[dict]) -> None:
        """Count again what ``take`` gave, for a report that did not arrive."""
        for c in taken:
            self.calls[(c["endpoint"], c["code"])] += c["calls"]
            self.seconds[(c["endpoint"], c["code"])] += c["seconds"]


async def send(client: httpx.AsyncClient, req: httpx.Request, tries: int = 3) -> httpx.Response:
    """``req`` to the balancer, sent again (up to ``tries`` times) when its
    connection was closed or reset before any answer came: at a reload,
    haproxy's old worker closes the connections it accepted and read nothing
    from yet (a reset when the call's bytes were waiting unread), so no
    replica saw the call; haproxy itself answers every call it passed on
    (a replica's failure is its 502). Other failures are not retried."""
    for attempt in range(tries):
        try:
            return await client.send(req, stream=True)
        except (httpx.RemoteProtocolError, httpx.ConnectError, httpx.ReadError,
                httpx.WriteError) as ex:
            unanswered = not isinstance(ex, httpx.RemoteProtocolError) or (
                "without sending" in str(ex))
            if not unanswered or attempt == tries - 1:
                raise
            await asyncio.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


class State:
    """What the handlers share: the table, the balancer's sockets, clients."""

    def __init__(self, socket_of, hold: Hold | None = None):
        self.table: Table = EMPTY
        self.socket_of = socket_of
        self.counts = Counts()
        self.clients: dict[str, httpx.AsyncClient] = {}
        self.users = usercred.UserCreds.from_env()  # Lab users' hub tokens
        self.changed = asyncio.Event()  # set when the next table is in
        self.hold = hold or Hold(lambda: self.table, lambda: self.changed,
                                 self._no_wake, lambda: None, timeout=0)

    @staticmethod
    async def _no_wake(endpoint_id: str) -> None:
        raise Unavailable("the endpoint is scaled to zero", "scaled_to_zero")

    def client(self, endpoint_id: str) -> httpx.AsyncClient:
        c = self.clients.get(endpoint_id)
        if c is None:
            c = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=str(self.socket_of(endpoint_id))),
                timeout=httpx.Timeout(600.0, connect=5.0))
            self.clients[endpoint_id] = c
        return c

    async def set_table(self, table: Table) -> None:
        self.table = table
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()
        for gone in set(self.clients) - set(table.endpoints):
            await self.clients.pop(gone).aclose()


class Base(web.RequestHandler):
    def initialize(self, state: State):
        self.state = state

    def check_xsrf_cookie(self):  # token-authenticated API, no cookies
        pass

    def error(self, status: int, message: str, kind: str = "invalid_request_error",
              code: str | None = None) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": {"message": message, "type": kind, "param": None,
                                          "code": code}}))

    def bearer(self) -> tuple[str | None, bool]:
        """The secret presented, and whether it is the user's own hub token
        given as the Bearer (usercred.py) rather than an endpoint token."""
        secret = access.bearer({k.lower(): v for k, v in self.request.headers.items()})
        return secret, bool(secret and self.state.users is not None and usercred.hub_bearer(
            secret, self.state.table.tokens))

    def secret(self) -> str | None:
        secret, hub = self.bearer()
        return None if hub else secret

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)

    async def users(self) -> frozenset[str] | None:
        """What a presented hub token opens (usercred.py); None without one."""
        secret, hub = self.bearer()
        if hub:
            return await self.state.users.endpoints(secret)
        return await usercred.opened(self.state.users, self.request.headers)

    async def call(self, e: Endpoint, path: str, body: bytes | dict) -> None:
        """Forward to ``e``, held while it has no replica ready (coldstart.py).
        A dict ``body`` is an OpenAI call's: its ``model`` becomes the name the
        replicas serve (known once one is routed)."""
        started = time.monotonic()
        hold = self.state.hold
        deadline = started + hold.timeout
        while True:
            try:
                e = await hold.ready(e.id, deadline)
            except Unavailable as u:
                self.state.counts.add(e.id, 503, time.monotonic() - started)
                return self.error(503, u.message, "unavailable", u.code)
            if isinstance(body, dict):
                data = json.dumps({**body, "model": e.models[0]} if e.models else body).encode()
            else:
                data = body
            if await self.forward(e, path, data, started, time.monotonic() < deadline):
                return
            await asyncio.sleep(0.2)  # haproxy's first probe of a new replica

    async def forward(self, e: Endpoint, path: str, body: bytes, started: float,
                      again: bool = False) -> bool:
        """One try; False (nothing written, nothing counted) when no replica was
        ready and ``again`` says the call may wait for one."""
        status = 502
        headers = {k: v for k, v in self.request.headers.items() if k.lower() not in DROP_REQUEST}
        query = ("?" + self.request.query) if self.request.query else ""
        client = self.state.client(e.id)
        try:
            resp = await send(client, client.build_request(
                self.request.method, "http://replica" + path + query, headers=headers,
                content=body or None))
        except httpx.HTTPError as ex:
            self.state.counts.add(e.id, status, time.monotonic() - started)
            self.error(502, f"endpoint {e.name!r} cannot be reached: {type(ex).__name__}",
                       "unavailable", "unreachable")
            return True
        counted = True
        try:
            status = resp.status_code
            if resp.headers.get("x-hubgrid-no-replica"):
                await resp.aread()
                if again:
                    counted = False
                    return False
                self.error(503, f"endpoint {e.name!r} has no replica ready; try again "
                           "shortly", "unavailable", "no_replica")
                return True
            self.set_status(status)
            for k in {k for k in resp.headers if k.lower() not in DROP_RESPONSE}:
                self.clear_header(k)  # the replica's, not tornado's defaults (text/html)
            for k, v in resp.headers.multi_items():
                if k.lower() not in DROP_RESPONSE:
                    self.add_header(k, v)
            async for chunk in resp.aiter_raw():
                self.write(chunk)
                await self.flush()
            self.finish()
        except httpx.HTTPError:
            if not self._headers_written:
                status = 502
                self.error(502, f"endpoint {e.name!r} broke off its answer",
                           "unavailable", "broken")
                return True
            self.finish()
        finally:
            await resp.aclose()
            if counted:
                self.state.counts.add(e.id, status, time.monotonic() - started)
        return True


class EndpointHandler(Base):
    """``e/<id>/<path>``: the endpoint's own API, as its replicas serve it."""

    async def _any(self, endpoint_id: str, path: str | None):
        try:
            e = access.may_call(self.state.table, endpoint_id, self.secret(), self.now(),
                                await self.users())
        except Refusal as r:
            return self.error(r.status, r.message, "authentication_error" if r.status == 401
                              else "permission_error" if r.status == 403 else
                              "invalid_request_error")
        await self.call(e, path or "/", self.request.body)

    get = post = put = patch = delete = head = options = _any


class ModelsHandler(Base):
    async def get(self):
        try:
            users = await self.users()
        except Refusal as r:
            return self.error(r.status, r.message, "authentication_error")
        models, refused = access.usable(self.state.table, self.secret(), self.now(), users)
        if refused is not None and not models:
            return self.error(refused.status, refused.message, "authentication_error")
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"object": "list", "data": [
            {"id": mid, "object": "model", "created": 0, "owned_by": e.project}
            for mid, e in models.items()]}))


class OpenAIHandler(Base):
    """``v1/chat/completions`` etc.: routed by the body's ``model``."""

    async def post(self, route: str):
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            return self.error(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return self.error(400, "say which model: {\"model\": \"<name>\", ...}; "
                              "GET v1/models lists them")
        try:
            e = access.choose(self.state.table, body["model"], self.secret(), self.now(),
                              await self.users())
        except Refusal as r:
            return self.error(r.status, r.message, "authentication_error" if r.status == 401
                              else "invalid_request_error",
                              "model_not_found" if r.status == 404 else None)
        await self.call(e, "/v1/" + route, body)


class HealthHandler(Base):
    def get(self):
        self.finish({"ok": True, "endpoints": len(self.state.table.endpoints)})


def make_app(prefix: str, state: State) -> web.Application:
    p = prefix.rstrip("/")
    kw = {"state": state}
    return web.Application([
        (p + r"/e/([0-9a-f]{32})(/.*)?", EndpointHandler, kw),
        (p + r"/v1/models/?", ModelsHandler, kw),
        (p + r"/v1/(%s)/?" % "|".join(r.replace("/", r"\/") for r in OPENAI_ROUTES),
         OpenAIHandler, kw),
        (p + r"/(?:health)?", HealthHandler, kw),  # the hub checks the prefix itself
    ])
