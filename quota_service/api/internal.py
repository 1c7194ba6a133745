"""Endpoints for the hub's authenticator only (shared internal token)."""

from __future__ import annotations

import asyncio
import re

from ..tenancy import audit, accounts
from ..core import db
from ..scheduling import ledger
from ..sessions import logs
from ..core.errors import ApiError
from ..core.schemas import InternalAllocationCreate, LoginEvent, parse
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
                u = accounts.resolve_login(s, event.username, self.service.default_domain,
                                          self.service.default_project)
                model = accounts.identity(s, u)
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
            self.finish_json(accounts.identity_of(s, name))


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


class InternalAllocationsHandler(APIHandler):
    """The hub's spawner asks for resources on behalf of a user."""

    caller_kind = "internal"
    bodies = {"post": InternalAllocationCreate}

    def post(self):
        body = parse(InternalAllocationCreate, self.json_body())
        with db.transaction(self.service.session_factory) as s:
            p = accounts.principal_for_hub_user(s, body.user)
        with db.ledger_transaction(self.service.session_factory) as s:
            model = ledger.submit(s, p, body, self.now(), self.service.strategy, origin="hub",
                                  base_url=self.service.hub_base_url,
                                  hosts=self.service.vfolder_hosts_resolved, mount_paths=True)
        # once past its grace, the hub must be seen holding it: else released
        self.service.mirror.check_after(self.service.reconcile_grace + 0.5)
        self.finish_json(model, 201 if model["state"] == "allocated" else 202)


#: the longest a long-poll may be held, in seconds
MAX_WAIT = 60
WAIT_TEXT = ("long-poll: while the allocation is pending, answer only once its state or "
             "its pending reasons change, or after this many seconds (a number, "
             f"0 < wait <= {MAX_WAIT}); otherwise answer at once")


class InternalAllocationHandler(APIHandler):
    """Read or release an allocation (the spawner, on stop or when it died)."""

    caller_kind = "internal"
    queries = {"get": {"wait": WAIT_TEXT},
               "delete": {"reason": "why it is released",
                          "exit_code": "how the session's main process ended (-255 to 255)"}}
    query_schemas = {"get": {"wait": {"type": "number", "exclusiveMinimum": 0,
                                      "maximum": MAX_WAIT}}}
    success = {"delete": "200"}

    _waiting: tuple[str, asyncio.Future] | None = None

    async def get(self, alloc_id):
        """The allocation; with ``wait``, a long-poll while it is pending."""
        wait = self.wait_argument()
        waiters = self.service.waiters
        waiters.seen(alloc_id)
        if wait is None:
            self.finish_json(await self._read(alloc_id))
            return
        # registered before the read: a change in between still wakes it
        fut = waiters.wait(alloc_id)
        self._waiting = (alloc_id, fut)
        try:
            model = waiters.cached(alloc_id) or await self._read(alloc_id)
            if model["state"] == "pending" and not fut.done():
                try:
                    await asyncio.wait_for(fut, wait)
                except asyncio.TimeoutError:
                    pass
                if self.request.connection.stream.closed():
                    return  # the waiter left (on_connection_close dropped it)
                model = waiters.cached(alloc_id) or await self._read(alloc_id)
        finally:
            self._waiting = None
            waiters.leave(alloc_id, fut)
        self.finish_json(model)

    def compute_etag(self):
        return None  # an answer to the hub, never cached: no hash of every body

    def on_connection_close(self):
        if self._waiting is not None:
            alloc_id, fut = self._waiting
            self._waiting = None
            self.service.waiters.leave(alloc_id, fut)
            if not fut.done():
                fut.set_result(False)

    def wait_argument(self) -> float | None:
        value = self.get_query_argument("wait", None)
        if value is None:
            return None
        if re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6})?", value, re.ASCII):
            wait = float(value)
            if 0 < wait <= MAX_WAIT:
                return wait
        raise ApiError(f"wait: must be a number of seconds, more than 0 and at most "
                       f"{MAX_WAIT}, not {value[:40]!r}")

    async def _read(self, alloc_id: str) -> dict:
        """The hub's model of the allocation, read in a worker thread; a
        pending one is cached for the waiters until it changes."""
        waiters = self.service.waiters
        version = waiters.version(alloc_id)

        def read():
            with db.transaction(self.service.session_factory) as s:
                return ledger.allocation_model(s, ledger.get_allocation(s, alloc_id),
                                               self.service.hub_base_url, mount_paths=True)

        model = await asyncio.to_thread(read)
        waiters.remember(alloc_id, version, model)
        return model

    def delete(self, alloc_id):
        """Release it exactly once; a second release changes nothing (exit code included)."""
        reason = self.get_query_argument("reason", "released by the hub")
        exit_code = self.int_argument("exit_code", -255, 255)
        with db.ledger_transaction(self.service.session_factory) as s:
            model = ledger.release_allocation(s, ledger.get_allocation(s, alloc_id), self.now(),
                                              reason, exit_code, self.service.hub_base_url,
                                              mount_paths=True)
        self.service.schedule_soon(model["resource_group"])
        self.finish_json(model)


class InternalLogHandler(APIHandler):
    """The spawner appends a session's output to its log."""

    caller_kind = "internal"
    success = {"post": "200"}

    def post(self, alloc_id):
        """Append the request body (bytes, as they come) to the session's log."""
        with db.transaction(self.service.session_factory) as s:
            size, truncated = logs.append_log(
                s, self.service.log_store, alloc_id, self.request.body,
                self.service.session_log_retention_days)
        self.finish_json({"size": size, "truncated": truncated})


class SpawnChoicesHandler(APIHandler):
    """What a user may start now: the spawn form's projects, groups, images and quota."""

    caller_kind = "internal"

    def get(self, name):
        with db.transaction(self.service.session_factory) as s:
            self.finish_json(ledger.spawn_choices(s, name))


routes += [
    (r"internal/spawn-choices/([^/]+)", SpawnChoicesHandler),
    (r"internal/allocations", InternalAllocationsHandler),
    (r"internal/allocations/([^/]+)", InternalAllocationHandler),
    (r"internal/allocations/([^/]+)/logs", InternalLogHandler),
]
