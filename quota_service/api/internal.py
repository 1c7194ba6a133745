"""Endpoints for the hub's authenticator and spawners only (shared internal token)."""

from __future__ import annotations

import asyncio
import re

from ..tenancy import audit, accounts
from ..scheduling import ledger, queuedesk, sessionaudit
from ..serving import replicaadmit
from ..sessions import logs
from ..core.errors import ApiError
from ..core.schemas import InternalAllocationCreate, LoginEvent, parse
from .base import APIHandler


async def queue_place(handler: APIHandler, model: dict) -> dict | None:
    """A pending allocation's place in its resource group's queue, for its
    spawner's progress page (None when it is not pending): the group's line
    is kept by the service and moved by each change (``lineplaces``), so a
    place costs what changed since the last one, not the queue's length."""
    if model["state"] != "pending":
        return None

    async def read_line(group):
        return await handler.db(lambda s: queuedesk.line_rows(s, group))

    async def read_rows(ids):
        return await handler.db(lambda s: queuedesk.line_changes(s, ids))

    handler.waiters.attach()  # the line hears of every change from now on
    return await handler.waiters.lines.place(model["resource_group"], model["id"], read_line,
                                             read_rows)


class LoginHandler(APIHandler):
    """Record a login attempt; on success resolve (or create) the user."""

    caller_kind = "internal"
    bodies = {"post": LoginEvent}
    success = {"post": ("200", "204")}  # the identity; 204 for a failed login

    async def post(self):
        """Record a login attempt; on success resolve (or create) the user."""
        event = parse(LoginEvent, self.json_body())
        rec = dict(actor=event.username, credential="password", source=event.source,
                   action="login", target=event.username)
        if not event.success:
            await self.log_access(audit.Record(outcome="failure", status=401,
                                              detail=event.reason or "bad credentials", **rec))
            self.no_content()
            return
        domain, project = self.first_login

        def resolve(s):
            return accounts.identity(s, accounts.resolve_login(s, event.username, domain,
                                                               project))

        try:
            model = await self.db(resolve)
        except ApiError as e:
            await self.log_access(audit.Record(outcome="denied", status=e.status,
                                              detail=e.message, **rec))
            raise
        await self.log_access(audit.Record(outcome="success", status=200,
                                          actor_domain=model["domain"], domain=model["domain"],
                                          **rec))
        self.mirror.request_sync()
        self.finish_json(model)


class IdentityHandler(APIHandler):
    """The current identity of a user, for the authenticator's refresh."""

    caller_kind = "internal"

    async def get(self, user):
        """The current identity of an active user, for the authenticator's refresh."""
        self.finish_json(await self.db(lambda s: accounts.identity_of(s, user)))


class SyncHandler(APIHandler):
    """Mirror the tenancy into the hub now, and answer when done."""

    caller_kind = "internal"
    success = {"post": "200"}

    async def post(self):
        """Mirror the tenancy into the hub now, and answer when done."""
        self.finish_json(await self.mirror.sync_now())


class SpawnChoicesHandler(APIHandler):
    """What a user may start now: the spawn form's projects, groups, images and quota."""

    caller_kind = "internal"

    async def get(self, user):
        """What a user may start now: the spawn form's projects, groups, images and quota."""
        choices = await self.db(lambda s: ledger.spawn_choices(s, user))
        self.finish_json({**choices, "presets": self.resource_presets})


class InternalAllocationsHandler(APIHandler):
    """The hub's spawner asks for resources on behalf of a user."""

    caller_kind = "internal"
    bodies = {"post": InternalAllocationCreate}
    success = {"post": ("201", "202")}  # allocated / pending

    async def post(self):
        """Ask for resources for a user's server: 201 allocated, 202 pending, 422 refused."""
        body = parse(InternalAllocationCreate, self.json_body())
        now, strategy, base_url, hosts = self.now(), self.strategy, self.hub_base_url, \
            self.vfolder_hosts
        p = replica = None
        if body.endpoint is not None:  # checked against its endpoint first
            p = await self.db(lambda s: accounts.principal_for_hub_user(s, body.user))
            replica = await self.db(lambda s: replicaadmit.replica(s, p, body, hosts))

        def submit(s):
            # the caller is read in the decision's own batch: a class pressing
            # Start at once pays one transaction a start, not two
            caller = p or accounts.principal_for_hub_user(s, body.user)
            return ledger.submit(
                s, caller, body, now, strategy, origin="hub", base_url=base_url, hosts=hosts,
                mount_paths=True, via=sessionaudit.Via(body.user, "hub"), replica=replica)

        model = await self.db(submit, ledger="batched")
        model["queue"] = await queue_place(self, model)
        # once past its grace, the hub must be seen holding it: else released
        self.mirror.check_after(self.reconcile_grace + 0.5)
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

    async def get(self, allocation_id):
        """The allocation; with ``wait``, a long-poll while it is pending."""
        wait = self.wait_argument()
        waiters = self.waiters
        waiters.seen(allocation_id)
        if wait is None:
            self.finish_json(await self._read(allocation_id))
            return
        # registered before the read: a change in between still wakes it
        fut = waiters.wait(allocation_id)
        self._waiting = (allocation_id, fut)
        try:
            model = await self._model(allocation_id)
            if model["state"] == "pending" and not fut.done():
                try:
                    await asyncio.wait_for(fut, wait)
                except asyncio.TimeoutError:
                    pass
                if self.request.connection.stream.closed():
                    return  # the waiter left (on_connection_close dropped it)
                model = await self._model(allocation_id)
        finally:
            self._waiting = None
            waiters.leave(allocation_id, fut)
        self.finish_json(model)

    def compute_etag(self):
        return None  # an answer to the hub, never cached: no hash of every body

    def on_connection_close(self):
        if self._waiting is not None:
            allocation_id, fut = self._waiting
            self._waiting = None
            self.waiters.leave(allocation_id, fut)
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

    async def _model(self, allocation_id: str) -> dict:
        """The model a waiter gets: cached while it does not change, with
        its current place in the queue."""
        cached = self.waiters.cached(allocation_id)
        if cached is None:
            return await self._read(allocation_id)
        return {**cached, "queue": await queue_place(self, cached)}

    async def _read(self, allocation_id: str) -> dict:
        """The hub's model of the allocation; a pending one is cached for the
        waiters until it changes."""
        waiters = self.waiters
        version = waiters.version(allocation_id)
        base_url = self.hub_base_url
        model = await self.db(lambda s: ledger.allocation_model(
            s, ledger.get_allocation(s, allocation_id), base_url, mount_paths=True))
        waiters.remember(allocation_id, version, model)
        return {**model, "queue": await queue_place(self, model)}

    async def delete(self, allocation_id):
        """Release it exactly once; a second release changes nothing (exit code included)."""
        reason = self.get_query_argument("reason", "released by the hub")
        exit_code = self.int_argument("exit_code", -255, 255)
        now, base_url = self.now(), self.hub_base_url
        model = await self.db(lambda s: ledger.release_allocation(
            s, ledger.get_allocation(s, allocation_id), now, reason, exit_code, base_url,
            mount_paths=True), ledger="batched")
        self.schedule_soon(model["resource_group"])
        self.finish_json(model)


class InternalLogHandler(APIHandler):
    """The spawner appends a session's output to its log."""

    caller_kind = "internal"
    success = {"post": "200"}

    async def post(self, allocation_id):
        """Append the request body (bytes, as they come) to the session's log."""
        store, data, days = self.log_store, self.request.body, self.log_retention_days
        size, truncated = await self.db(
            lambda s: logs.append_log(s, store, allocation_id, data, days))
        self.finish_json({"size": size, "truncated": truncated})
