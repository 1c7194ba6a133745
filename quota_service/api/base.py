"""The base of every API handler: caller resolution, JSON in and out, audit.

Handlers stay thin: parse, call a manager inside ``self.transaction()``,
finish with JSON. Refusals are ``ApiError``s, answered as
``{"status": N, "reason": ..., "message": ...}`` -- never a 500 for a
caller's mistake.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

from jupyterhub.services.auth import HubOAuthenticated, UserNotAllowed
from tornado import web
from tornado.ioloop import IOLoop

from ..tenancy import audit, accounts
from ..core import forwarded
from ..core.authz import Principal
from ..core.db import transaction
from ..core.errors import ApiError, Denied, Hidden, Invalid, NotFound, Unauthenticated
from ..core.keys import parse_keypair_header

INTERNAL_SCHEME = "hubgrid-internal"
VERBS = ("get", "post", "put", "patch", "delete", "head", "options")


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


class APIHandler(HubOAuthenticated, web.RequestHandler):
    """JSON API handler. Subclasses declare ``audit_action`` per verb."""

    #: who may call: "user" (hub token, OAuth cookie or keypair) or "internal"
    caller_kind = "user"

    principal: Principal | None = None

    #: query parameters each verb accepts, with their meaning (for OpenAPI)
    queries: dict[str, dict[str, str]] = {}
    #: success statuses that differ from the usual ones (for OpenAPI)
    success: dict[str, str] = {}
    #: content types other than JSON a verb answers with (for OpenAPI)
    produces: dict[str, str] = {}

    def initialize(self, service):
        self.service = service
        self.hub_auth = service.hub_auth
        self.audit_target = ""
        self.audit_domain: str | None = None
        self.audit_detail = ""
        self._credential = "none"

    # -- time and database ------------------------------------------------

    def now(self) -> dt.datetime:
        return self.service.clock()

    def transaction(self):
        return transaction(self.service.session_factory)

    # -- authentication ----------------------------------------------------

    async def prepare(self):
        await self.authenticate()
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
            with self.transaction() as s:
                self.principal = accounts.principal_for_keypair(s, *parsed, self.now())
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
        with self.transaction() as s:
            self.principal = accounts.principal_for_hub_user(s, model["name"])

    def get_current_user(self):
        # identity comes from prepare(); never block on a sync hub request
        return getattr(self, "_hub_auth_user_cache", None)

    # -- JSON --------------------------------------------------------------

    def json_body(self) -> Any:
        if not self.request.body:
            return {}
        try:
            return json.loads(self.request.body, parse_float=Decimal)
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(f"request body is not valid JSON: {e}") from None

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

    def on_finish(self):
        status = self.get_status()
        method = self.request.method
        exc = getattr(self, "_api_error", None)
        is_write = method not in ("GET", "HEAD", "OPTIONS")
        denied = status in (401, 403) or isinstance(exc, Hidden)
        if not (is_write or denied) or self.caller_kind == "internal":
            return
        if denied:
            outcome = "denied"
        elif status < 400:
            outcome = "success"
        elif isinstance(exc, ApiError):
            outcome = "invalid"
        else:
            outcome = "error"
        p = self.principal
        rec = audit.Record(
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
        # after the handler's own transaction has ended (finish() may run
        # inside it): on SQLite two writers in one thread would deadlock
        IOLoop.current().add_callback(self._record, rec, method)

    def client_address(self) -> str:
        """The caller's address: forwarded headers count only from the
        service's ``trusted_proxies`` (see quota_service/forwarded.py)."""
        trusted = forwarded.parse_networks(tuple(self.service.trusted_proxies))
        return forwarded.client_address(self.request.remote_ip, self.request.headers, trusted)

    def _record(self, rec: audit.Record, method: str) -> None:
        try:
            audit.record(self.service.session_factory, rec, self.now())
        except Exception:
            self.log.exception("could not write the access log for %s %s", method, rec.target)

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

    def on_finish(self):
        # nothing happened: not worth a row in the access log
        pass

