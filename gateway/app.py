"""The gateway's HTTP side (tornado): callers' requests in, replicas' answers out.

Under the hub's proxy at ``/services/hubgrid-gateway/``:

- ``e/<endpoint id>/<path>``: an endpoint's stable URL; the path and body
  passed to a healthy replica, for the methods and paths the endpoint
  declares (GET and POST on the OpenAI routes and its probe's path unless
  its definition says otherwise; 405 or 404 else); the path is judged and
  sent on in normal form (quota_service/core/urlpaths.py, 400 otherwise);
- ``v1/models``, ``v1/chat/completions``, ``v1/completions``,
  ``v1/embeddings``: one OpenAI-compatible API over every endpoint the
  caller may use, routed by ``model`` (``access.usable``); the body's
  ``model`` becomes the name the replica serves;
- ``health``: the gateway itself.

Answers stream through as the replica writes them (server-sent events of a
streamed chat included). Errors are OpenAI's shape. Every call is counted
per endpoint and outcome (``Counts``), for the service's metrics.

The table (endpoints, tokens' hashes, who is public) is trusted for
``max_age`` seconds after it was last read from the service: past that,
every call is refused (503, ``table_stale``) until a sync succeeds again,
so a token revoked while the service cannot be reached stops working
within that bound (fail closed).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections import Counter
from typing import Callable

import httpx
from tornado import web

from quota_service.core import urlpaths

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
#: seconds a table read from the service is trusted without a newer one
TABLE_MAX_AGE = 30.0


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

    def __init__(self, socket_of, hold: Hold | None = None, max_age: float = TABLE_MAX_AGE,
                 clock: Callable[[], float] = time.monotonic):
        self.table: Table = EMPTY
        self.table_at: float | None = None  # ``clock()`` when the table was last read
        self.max_age = max_age
        self.clock = clock
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

    def trusted(self) -> Table:
        """The table, while it is recent enough to go by; Refusal(503) when
        the service has not given one for ``max_age`` seconds (or ever)."""
        if self.table_at is None:
            raise Refusal(503, "the gateway has not read its endpoints from the service yet; "
                          "try again shortly", "table_stale")
        age = self.clock() - self.table_at
        if age > self.max_age:
            raise Refusal(503, f"the gateway cannot reach the service: its endpoints and "
                          f"tokens were last read {age:.0f} s ago, more than the "
                          f"{self.max_age:g} s they are trusted; try again shortly",
                          "table_stale")
        return self.table

    def client(self, endpoint_id: str) -> httpx.AsyncClient:
        c = self.clients.get(endpoint_id)
        if c is None:
            c = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=str(self.socket_of(endpoint_id))),
                timeout=httpx.Timeout(600.0, connect=5.0))
            self.clients[endpoint_id] = c
        return c

    async def set_table(self, table: Table) -> None:
        self.table, self.table_at = table, self.clock()
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

    def refuse(self, r: Refusal, code: str | None = None) -> None:
        kind = {401: "authentication_error", 403: "permission_error",
                503: "unavailable"}.get(r.status, "invalid_request_error")
        self.error(r.status, r.message, kind, r.code or code)

    def credentials(self, table: Table) -> tuple[str | None, str | None]:
        """(endpoint secret, hub token) presented, each None when absent. A
        Bearer is a hub token only where it could be one (usercred.hub_bearer)
        and this gateway takes hub tokens; else it is judged as an endpoint
        token, never sent anywhere."""
        headers = self.request.headers
        secret = access.bearer({k.lower(): v for k, v in headers.items()})
        token = usercred.hub_token(headers)
        if token is not None:
            return secret, token
        if secret and self.state.users is not None and usercred.hub_bearer(secret,
                                                                           table.tokens):
            return None, secret
        return secret, None

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)

    async def users(self, token: str | None) -> tuple[frozenset[str] | None, Refusal | None]:
        """What a presented hub token opens (usercred.py), or why it opens
        nothing; (None, None) without one."""
        if token is None:
            return None, None
        if self.state.users is None:
            return None, Refusal(401, "this gateway does not take hub tokens (it has no "
                                 "service to ask)")
        try:
            return await self.state.users.endpoints(token), None
        except Refusal as r:
            return None, r

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
    """``e/<id>/<path>``: the endpoint's own API, as its replicas serve it,
    for the methods it declares."""

    async def _any(self, endpoint_id: str, path: str | None):
        try:
            table = self.state.trusted()
            secret, token = self.credentials(table)
            e = table.endpoints.get(endpoint_id)
            users, refused = (None, None) if e is not None and e.public and not e.disabled \
                else await self.users(token)  # a public endpoint asks nobody
            e = access.may_call(table, endpoint_id, secret, self.now(), users, refused)
            access.allow_method(e, self.request.method)
            # judged as sent (tornado's ``path`` is decoded already), sent on normal
            path = access.allow_path(e, self.request.path.partition(f"/e/{endpoint_id}")[2])
        except Refusal as r:
            if r.status == 405:
                self.set_header("Allow", ", ".join(sorted(table.endpoints[endpoint_id].methods)))
            return self.refuse(r)
        await self.call(e, urlpaths.wire(path), self.request.body)

    get = post = put = patch = delete = head = options = _any


class ModelsHandler(Base):
    async def get(self):
        try:
            table = self.state.trusted()
        except Refusal as r:
            return self.refuse(r)
        secret, token = self.credentials(table)
        users, refused = await self.users(token)
        models, refused = access.usable(table, secret, self.now(), users, refused)
        if refused is not None and not models:
            return self.refuse(refused)
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
            table = self.state.trusted()
            secret, token = self.credentials(table)
            users, refused = await self.users(token)
            e = access.choose(table, body["model"], secret, self.now(), users, refused)
        except Refusal as r:
            return self.refuse(r, "model_not_found" if r.status == 404 else None)
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
