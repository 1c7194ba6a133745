"""The base of every API handler: caller resolution, JSON in and out, the
database off the event loop, the service's collaborators, the access log.

Handlers stay thin: parse, call a manager with
``await self.db(lambda s: manager.fn(s, self.principal, ...))`` -- one
transaction in a worker thread, so the event loop never waits for the
database -- and finish with JSON. They reach the service only through the
typed accessors below (``mirror``, ``waiters``, ``strategy``, ...). Refusals
are ``ApiError``s, answered as ``{"status": N, "reason": ..., "message": ...}``
-- never a 500 for a caller's mistake. The access-log entry of a request is
written (in a worker thread too) before its answer goes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import sys
from decimal import Decimal
from typing import Any, Callable, TypeVar

from jupyterhub.services.auth import HubOAuthenticated, UserNotAllowed
from sqlalchemy.orm import Session, sessionmaker
from tornado import web
from tornado.concurrent import Future, chain_future, future_set_exc_info
from tornado.ioloop import IOLoop

from ..core import forwarded, groupcommit
from ..core.authz import Principal
from ..core.db import ledger_transaction, transaction
from ..core.errors import ApiError, Denied, Hidden, Invalid, NotFound, Unauthenticated
from ..core.keys import parse_keypair_header
from ..operations import reconcile
from ..operations.reconcile_repair import Actor
from ..scheduling.placement import Strategy
from ..scheduling.waiters import Waiters
from ..sessions.logs import LogStore
from ..sessions.registry import ScanReport
from ..storage.folders import Storage
from ..storage.hosts import Host
from ..tenancy import accounts, audit, keyauth, keycache
from ..tenancy.hubmirror import HubMirror
from .uploadbook import FileUploads

INTERNAL_SCHEME = "hubgrid-internal"
VERBS = ("get", "post", "put", "patch", "delete", "head", "options")


T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread: blocking work (the database) never
    holds up the event loop."""
    return await asyncio.to_thread(fn, *args)


def implemented_verbs(handler: type) -> list[str]:
    """The verbs a handler class serves (lowercase), in ``VERBS`` order."""
    return [v for v in VERBS if getattr(handler, v) is not getattr(web.RequestHandler, v)]


class _Encoder(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, Decimal):
            return str(o)
        if isinstance(o, dt.datetime):
            return o.isoformat()
        return super().default(o)


#: how deep a request body's arrays and objects may nest (no body needs more
#: than a few levels; a deeper one would exhaust the parsers' stacks)
MAX_JSON_DEPTH = 32
_TOO_DEEP = object()


def json_depth(value: Any) -> int:
    """How deep ``value``'s lists and dicts nest (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break
        stack.extend((child, depth + 1) for child in item)
    return deepest


class APIHandler(HubOAuthenticated, web.RequestHandler):
    """JSON API handler. Subclasses declare ``audit_action`` per verb."""

    #: who may call: "user" (hub token, OAuth cookie or keypair) or "internal"
    caller_kind = "user"

    principal: Principal | None = None

    #: query parameters each verb accepts, with their meaning (for OpenAPI)
    queries: dict[str, dict[str, str]] = {}
    #: success statuses that differ from the usual ones (for OpenAPI): one
    #: code, or a tuple of the codes a verb answers with
    success: dict[str, str | tuple[str, ...]] = {}
    #: verbs that answer 201 when they made something new, else their usual status (for OpenAPI)
    creates_when_new: tuple[str, ...] = ()
    #: content types other than JSON a verb answers with (for OpenAPI)
    produces: dict[str, str] = {}
    #: verbs that act in the ledger's batch (``db(..., ledger="batched")``)
    #: and there confirm a keypair caller taken from memory (``tenancy.keyauth``)
    confirmed_in_batch: frozenset[str] = frozenset()

    def initialize(self, service):
        # the HubgridService (untyped: the api package may not import the app
        # that serves it); handlers reach it through the accessors below
        self.service = service
        self.hub_auth = service.hub_auth
        self.audit_target = ""
        self.audit_domain: str | None = None
        self.audit_detail = ""
        self._credential = "none"
        #: the keypair (access key, secret) and time of a caller still to be
        #: confirmed in the ledger batch (``confirmed_in_batch``)
        self._unconfirmed: tuple[str, str, dt.datetime] | None = None

    # -- time and database ------------------------------------------------

    def now(self) -> dt.datetime:
        return self.service.clock()

    async def db(self, work: Callable[[Session], T], *, ledger: bool | str = False,
                 before: groupcommit.Before | None = None) -> T:
        """``work(session)`` in one transaction (``ledger``: holding the
        ledger lock, ``core.db.ledger_transaction``), in a worker thread.
        ``ledger="batched"``: in the next batch of the ledger's group commit
        (``core.groupcommit``: decisions and releases arriving together share
        one transaction holding the lock, each in its own savepoint);
        ``before``: what ``work`` will read, read for the whole batch first.

        The transaction has committed when this returns; an exception (a
        refusal included) rolls it back and is raised here. ``work`` must
        not open a transaction of its own (on SQLite it would wait for the
        write lock its own thread holds)."""
        if ledger == "batched":
            if self._unconfirmed is None:
                return await self.service.ledger_batches.run(work, before)
            return await self._confirmed_then(work, before)
        begin = ledger_transaction if ledger else transaction
        factory = self.session_factory

        def run() -> T:
            with begin(factory) as s:
                return work(s)

        return await off_loop(run)

    async def _confirmed_then(self, work: Callable[[Session], T],
                              before: groupcommit.Before | None = None) -> T:
        """``work`` in the ledger's batch after the keypair caller taken from
        memory is confirmed there (``tenancy.keyauth``); the key's last use
        is written with it, or on its own when the write was refused."""
        (access_key, secret, now), self._unconfirmed = self._unconfirmed, None

        def confirmed(s: Session) -> T:
            self.principal = keyauth.principal_for_keypair(s, access_key, secret, now,
                                                           record=False)
            value = work(s)
            keyauth.record_use(s, access_key, now)
            return value

        try:
            return await self.service.ledger_batches.run(confirmed, before)
        except ApiError:
            if keyauth.use_due(self.key_cache, access_key, now):
                try:
                    await self.service.write_batches.run(
                        lambda s: keyauth.principal_for_keypair(s, access_key, secret, now))
                except ApiError:
                    pass  # not a usable key any more: no use to record
            raise

    # -- the service's collaborators ----------------------------------------

    @property
    def key_cache(self) -> keycache.KeyCache:
        """The keypairs kept in memory for the service database."""
        return keycache.cache_for(self.session_factory.kw["bind"])

    @property
    def session_factory(self) -> sessionmaker[Session]:
        """Sessions of the service database (use ``db``, not this, in verbs)."""
        return self.service.session_factory

    @property
    def mirror(self) -> HubMirror:
        """The mirror of the tenancy into the hub's groups."""
        return self.service.mirror

    @property
    def waiters(self) -> Waiters:
        """Who long-polls which pending allocation."""
        return self.service.waiters

    @property
    def strategy(self) -> Strategy:
        """The placement strategy (its workload profile kept fresh by the service)."""
        return self.service.strategy

    def session_readings(self, allocation_id: str) -> list:
        """The reclaim pass's readings of a session (oldest first; none when
        it was not read): its live use (operations.sessionview)."""
        window = self.service.reclaimer.windows.get(allocation_id)
        return list(window.readings) if window is not None else []

    @property
    def resource_presets(self) -> list[dict]:
        """The resource presets every user is offered (``resource_presets``)."""
        return self.service.resource_presets

    @property
    def hub_base_url(self) -> str:
        """The hub's base URL, under which session apps are served."""
        return self.service.hub_base_url

    @property
    def vfolder_hosts(self) -> dict[str, Host]:
        """The storage hosts of virtual folders, resolved at start."""
        return self.service.vfolder_hosts_resolved

    @property
    def vfolder_storage(self) -> Storage:
        """What creating a folder needs besides the database."""
        return self.service.vfolder_storage

    @property
    def uploads(self) -> FileUploads:
        """The uploads of this service process (its ``file_uploads`` slot),
        made at the first use."""
        service = self.service
        if service.file_uploads is None:
            service.file_uploads = FileUploads(
                staging_max_age=3600.0 * service.vfolder_staging_max_age_hours,
                tus_idle=3600.0 * service.vfolder_tus_expiry_hours,
            )
        return service.file_uploads

    @property
    def log_store(self) -> LogStore:
        """The per-session logs on disk."""
        return self.service.log_store

    @property
    def log_retention_days(self) -> int:
        """Days a session's log is kept after its release (0: forever)."""
        return self.service.session_log_retention_days

    @property
    def endpoint_token_max_days(self) -> int:
        """The longest an endpoint's bearer token may live (days)."""
        return self.service.endpoint_token_max_days

    @property
    def reconcile_grace(self) -> float:
        """Seconds a hub-held allocation may exist before a server must hold it."""
        return self.service.reconcile_grace

    @property
    def first_login(self) -> tuple[str, str]:
        """The (domain, project) a user logging in for the first time joins."""
        return self.service.default_domain, self.service.default_project

    @property
    def api_prefix(self) -> str:
        """``<service prefix>api/v1/``."""
        return self.service.api_prefix

    def api_url(self, *parts: str) -> str:
        """The URL path of an API resource (``parts`` quoted)."""
        return self.service.api_url(*parts)

    @property
    def serving_reports(self):
        """What the serving gateway last reported (serving/health.py)."""
        return self.service.serving_reports

    @property
    def gateway_url(self) -> str:
        """Where the service reaches the serving gateway ('' : nowhere)."""
        return self.service.gateway_url

    def serve_soon(self) -> None:
        """A pass of the serving controller soon (endpoints' replicas changed)."""
        self.service.serving.soon()

    def schedule_soon(self, resource_group: str | None = None) -> None:
        """Run a pass over the pending queues now (capacity came free)."""
        self.service.schedule_soon(resource_group)

    async def scan_images(self) -> ScanReport:
        """Scan the Docker hosts for session images and record them."""
        return await self.service.scan_images()

    async def reconcile_pass(self, actor: Actor | None, selected: list[str] | None,
                             dry_run: bool) -> dict:
        """Compare the ledger with the engines, Slurm and the hub; repair unless
        ``dry_run`` (docs/operations.md#reconcile)."""
        return await reconcile.run(reconcile.context_of(self.service), actor, selected,
                                   dry_run)

    # -- authentication ----------------------------------------------------

    async def prepare(self):
        await self.authenticate()
        if self.request.method.lower() not in implemented_verbs(type(self)):
            # a verb this route does not serve is a 405 (with Allow), whatever
            # its query says: the query's check is for the verbs served
            raise web.HTTPError(405)
        allowed = set(self.queries.get(self.request.method.lower(), {}))
        unknown = sorted(set(self.request.query_arguments) - allowed)
        if unknown:
            raise Invalid(f"unknown query parameter(s): {', '.join(unknown)}")

    async def authenticate(self):
        auth = self.request.headers.get("Authorization", "")
        scheme = auth.partition(" ")[0].lower()
        if self.caller_kind == "internal":
            if scheme != INTERNAL_SCHEME or not self.service.internal_token_matches(
                auth.partition(" ")[2].strip()
            ):
                raise Unauthenticated("this endpoint is for the hub only")
            self._credential = "internal"
            return
        if scheme == "keypair":
            parsed = parse_keypair_header(auth)
            if parsed is None:
                raise Unauthenticated("malformed keypair header: use 'Keypair ACCESS:SECRET'")
            self._credential = "keypair"
            now = self.now()
            if self.request.method.lower() in self.confirmed_in_batch:
                kept = keyauth.kept_caller(self.key_cache, *parsed, now)
                if kept is not None:
                    self.principal, self._unconfirmed = kept, (*parsed, now)
                    return
            # a write (the key's last use): with the others arriving together
            self.principal = await self.service.write_batches.run(
                lambda s: keyauth.principal_for_keypair(s, *parsed, now))
            return
        if scheme == INTERNAL_SCHEME:
            raise Unauthenticated("internal credentials are not accepted here")
        model = None
        if self.hub_auth is not None:
            model = await self.hub_auth.get_user(self, sync=False)
        if not model:
            raise Unauthenticated(
                "authentication required: send a JupyterHub token "
                "('Authorization: token ...') or a keypair ('Authorization: Keypair ACCESS:SECRET')"
            )
        try:
            model = self.check_hub_user(model)
        except UserNotAllowed:
            raise Denied(
                "this token lacks the scope access:services!service=hubgrid"
            ) from None
        self._hub_auth_user_cache = model
        if model.get("kind", "user") != "user":
            raise Denied("only users may call the hubgrid API")
        self._credential = "token"
        name = model["name"]
        self.principal = await self.db(lambda s: accounts.principal_for_hub_user(s, name))

    def get_current_user(self):
        # identity comes from prepare(); never block on a sync hub request
        return getattr(self, "_hub_auth_user_cache", None)

    # -- JSON --------------------------------------------------------------

    def json_body(self) -> Any:
        if not self.request.body:
            return {}
        try:
            value = json.loads(self.request.body, parse_float=Decimal)
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(f"request body is not valid JSON: {e}") from None
        except RecursionError:  # nested past the parser's stack
            value = _TOO_DEEP
        if value is _TOO_DEEP or json_depth(value) > MAX_JSON_DEPTH:
            raise ApiError(f"request body is nested deeper than {MAX_JSON_DEPTH} levels "
                           "of arrays and objects") from None
        return value

    def int_argument(self, name: str, lo: int, hi: int) -> int | None:
        """An optional integer query argument in [lo, hi]; a 400 otherwise."""
        value = self.get_query_argument(name, None)
        if value is None:
            return None
        n = int(value) if re.fullmatch(r"-?[0-9]{1,18}", value, re.ASCII) else None
        if n is None or not lo <= n <= hi:
            raise ApiError(f"{name}: must be an integer from {lo} to {hi}, not {value[:40]!r}")
        return n

    def query_args(self) -> dict[str, str]:
        return {k: self.get_query_argument(k) for k in self.request.query_arguments}

    def finish_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(data, cls=_Encoder))

    def created(self, data: Any, location: str) -> None:
        self.set_header("Location", location)
        self.finish_json(data, 201)

    def no_content(self) -> None:
        self.set_status(204)
        self.finish()

    # -- errors ------------------------------------------------------------

    def _handle_request_exception(self, e):
        if isinstance(e, ApiError):
            self._api_error = e
            self.log_refusal(e)
            self.send_error(e.status, exc_info=(type(e), e, e.__traceback__))
            return
        super()._handle_request_exception(e)

    def log_exception(self, typ, value, tb):
        if isinstance(value, ApiError):
            return
        super().log_exception(typ, value, tb)

    def log_refusal(self, e: ApiError) -> None:
        """A refusal is an answer, not a fault: one INFO line an operator can
        follow in the hub's output."""
        p = self.principal
        who = p.name if p else ("the hub" if self.caller_kind == "internal" else "anonymous")
        self.log.info("refused %s %s for %s: %d %s", self.request.method, self.request.path,
                      who, e.status, e.message)

    def write_error(self, status_code, **kwargs):
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if status_code == 405:
            self.set_header("Allow", ", ".join(v.upper() for v in implemented_verbs(type(self))))
        if isinstance(exc, ApiError):
            body = {"status": status_code, "reason": exc.reason, "message": exc.message}
            if exc.detail is not None:
                body["detail"] = exc.detail
        elif isinstance(exc, web.HTTPError):
            body = {"status": status_code, "reason": "http",
                    "message": exc.log_message or self._reason}
        else:
            body = {"status": status_code, "reason": "error",
                    "message": "internal error; see the service log"}
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(body))

    # -- audit -------------------------------------------------------------

    #: the answer, held while its access-log entry is written
    _answer: Future | None = None

    def finish(self, chunk=None):
        """Send the answer once its access-log entry (if any) is written, in
        a worker thread: a caller who reads the log after an answer finds it."""
        if self._answer is not None:  # send_error or tornado finishing a held answer
            return self._answer
        rec = None if self._finished else self.audit_record()
        if rec is None:
            return super().finish(chunk)
        self._answer = Future()
        IOLoop.current().add_callback(self._record_then_finish, rec, chunk)
        return self._answer

    async def _record_then_finish(self, rec: audit.Record, chunk) -> None:
        try:
            await self.log_access(rec)
        except Exception:
            self.log.exception("could not write the access log for %s %s",
                               self.request.method, rec.target)
        try:
            chain_future(super().finish(chunk), self._answer)
        except Exception:
            future_set_exc_info(self._answer, sys.exc_info())
            raise

    def audit_record(self) -> audit.Record | None:
        """The access-log entry of this request: writes, refusals of the
        caller (401, 403, a hidden 404); None for reads and the hub's calls."""
        status = self.get_status()
        method = self.request.method
        exc = getattr(self, "_api_error", None)
        is_write = method not in ("GET", "HEAD", "OPTIONS")
        denied = status in (401, 403) or isinstance(exc, Hidden)
        if not (is_write or denied) or self.caller_kind == "internal":
            return None
        if denied:
            outcome = "denied"
        elif status < 400:
            outcome = "success"
        elif isinstance(exc, ApiError):
            outcome = "invalid"
        else:
            outcome = "error"
        p = self.principal
        return audit.Record(
            action=self.audit_action(method),
            outcome=outcome,
            status=status,
            actor=p.name if p else None,
            actor_domain=p.domain if p else None,
            domain=audit.entry_domain(self.audit_domain, p.domain if p else None,
                                      p is not None and p.is_superadmin, status),
            credential=self._credential,
            source=self.client_address(),
            target=self.audit_target or self.request.path,
            detail=exc.message if isinstance(exc, ApiError) else self.audit_detail,
        )

    def client_address(self) -> str:
        """The caller's address: forwarded headers count only from the
        service's ``trusted_proxies`` (see quota_service/forwarded.py)."""
        trusted = forwarded.parse_networks(tuple(self.service.trusted_proxies))
        return forwarded.client_address(self.request.remote_ip, self.request.headers, trusted)

    async def log_access(self, rec: audit.Record) -> None:
        """Write an access-log entry, in a transaction of its own in a worker
        thread; a failure raises."""
        now = self.now()
        await self.service.write_batches.run(lambda s: audit.add(s, rec, now))

    def audit_action(self, method: str) -> str:
        return f"{self.resource}.{ {'POST': 'create', 'PUT': 'put', 'PATCH': 'update', 'DELETE': 'delete'}.get(method, 'read')}"

    resource = "api"

    @property
    def log(self):
        return self.service.log


class JSONNotFoundHandler(APIHandler):
    """Unknown API paths: a JSON 404 (nothing to authenticate for)."""

    resource = "api"

    async def prepare(self):
        raise NotFound(f"no such API endpoint: {self.request.path}")

    def write_error(self, status_code, **kwargs):
        if status_code == 405:
            # a verb tornado never serves (TRACE, ...) on a path that does not
            # exist: the path is what is wrong
            self.set_status(404)
            exc = NotFound(f"no such API endpoint: {self.request.path}")
            return super().write_error(404, exc_info=(NotFound, exc, None))
        return super().write_error(status_code, **kwargs)

    def audit_record(self) -> None:
        # nothing happened: not worth a row in the access log
        return None



class OpenAPIHandler(APIHandler):
    """The OpenAPI document (no authentication needed). The application
    holds it (setting ``openapi``, made by ``api.openapi.document`` from the
    route table): a handler listed in that table cannot import its builder."""

    resource = "openapi"

    async def prepare(self):
        pass

    def get(self):
        """The OpenAPI document of this API."""
        self.finish_json(self.settings["openapi"])
