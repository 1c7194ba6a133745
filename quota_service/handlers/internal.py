"""Endpoints for the hub's authenticator only (shared internal token)."""

from __future__ import annotations

from .. import audit, tenancy
from ..errors import ApiError
from ..schemas import LoginEvent, parse
from .base import APIHandler


class LoginHandler(APIHandler):
    """Record a login attempt; on success resolve (or create) the user."""

    caller_kind = "internal"
    bodies = {"post": LoginEvent}

    def post(self):
        event = parse(LoginEvent, self.json_body())
        rec = dict(actor=event.username, credential="password", source=event.source,
                   action="login", target=event.username)
        if not event.success:
            self._record(audit.Record(outcome="failure", status=401,
                                      detail=event.reason or "bad credentials", **rec))
            self.no_content()
            return
        try:
            with self.transaction() as s:
                u = tenancy.resolve_login(s, event.username, self.service.default_domain)
                model = tenancy.identity(s, u)
        except ApiError as e:
            self._record(audit.Record(outcome="denied", status=e.status, detail=e.message, **rec))
            raise
        self._record(audit.Record(outcome="success", status=200, actor_domain=model["domain"],
                                  domain=model["domain"], **rec))
        self.service.mirror.request_sync()
        self.finish_json(model)

    def _record(self, rec: audit.Record) -> None:
        audit.record(self.service.session_factory, rec, self.now())


class IdentityHandler(APIHandler):
    """The current identity of a user, for the authenticator's refresh."""

    caller_kind = "internal"

    def get(self, name):
        with self.transaction() as s:
            self.finish_json(tenancy.identity_of(s, name))


class SyncHandler(APIHandler):
    """Mirror the tenancy into the hub now, and answer when done."""

    caller_kind = "internal"

    async def post(self):
        report = await self.service.mirror.sync_now()
        self.finish_json(report)


routes = [
    (r"internal/login", LoginHandler),
    (r"internal/identity/([^/]+)", IdentityHandler),
    (r"internal/sync", SyncHandler),
]
