"""Mirror the tenancy into JupyterHub: users and groups, through the hub API.

The service database is the truth; the hub mirrors it. Each domain is a hub
group named after the domain (all its users), each project a group
``<domain>.<project>`` (its members). Groups hubgrid owns are marked with the
group property ``hubgrid``; groups of other names are never touched (one that
already has a desired name is adopted and marked).

``plan`` is a pure function from the desired and the actual state to a list
of actions; ``HubMirror`` reads the hub once, plans, applies, and runs again
on request (after every tenancy write) and periodically, so hand edits in the
hub's admin panel are undone.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..core.models import Domain, Project, User
from .accounts import hub_group_name

MARK = "hubgrid"


@dataclass(frozen=True)
class HubState:
    users: frozenset[str]
    # group name -> (marker kind or None if unmanaged, members)
    groups: dict[str, tuple[str | None, frozenset[str]]] = field(default_factory=dict)
    # users who may not use the hub now (inactive, or of an inactive domain)
    inactive: frozenset[str] = frozenset()
    # allocation ids held by the hub's servers (from their spawner state)
    held: frozenset[str] = frozenset()
    # (user, server name) of the servers the hub lists as pending (a spawn
    # whose allocation its spawner may not have recorded yet)
    pending: frozenset[tuple[str, str]] = frozenset()
    # the hub's last_activity of each user (None: never active)
    activity: dict[str, str | None] = field(default_factory=dict)
    # users with a server in the hub (running or pending)
    serving: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Action:
    verb: str  # create-user | create-group | mark-group | add | remove | delete-group | revoke
    target: str
    users: tuple[str, ...] = ()
    kind: str = ""


def desired_state(s: Session) -> HubState:
    all_users = list(s.scalars(select(User)))
    users = frozenset(u.name for u in all_users)
    inactive = frozenset(u.name for u in all_users if not (u.active and u.domain.active))
    groups: dict[str, tuple[str | None, frozenset[str]]] = {}
    for d in s.scalars(select(Domain)):
        groups[d.name] = ("domain", frozenset(u.name for u in d.users))
    for p in s.scalars(select(Project)):
        groups[hub_group_name(p.domain.name, p.name)] = (
            "project",
            frozenset(m.user.name for m in p.memberships),
        )
    return HubState(users=users, groups=groups, inactive=inactive)


def locked_out(desired: HubState, actual: HubState) -> frozenset[str]:
    """Hub users who may hold nothing: inactive ones, and hub users hubgrid
    does not know (deleted, or added in the admin panel and never logged in)."""
    return (desired.inactive & actual.users) | (actual.users - desired.users)


def plan(desired: HubState, actual: HubState,
         settled: Mapping[str, str | None] | None = None) -> list[Action]:
    """Actions that make the hub's users and managed groups match ``desired``.

    ``settled``: locked-out users already revoked, with their hub
    last_activity then. Such a user is revoked again only when there may be
    something to revoke: a server in the hub, or activity since (a token
    used). Without it every locked-out user is revoked."""
    actions: list[Action] = []
    for name in sorted(desired.users - actual.users):
        actions.append(Action("create-user", name))
    for name in sorted(locked_out(desired, actual)):
        if (settled is not None and name in settled and name not in actual.serving
                and settled[name] == actual.activity.get(name)):
            continue  # revoked, and nothing happened since
        actions.append(Action("revoke", name))
    for name, (kind, members) in sorted(desired.groups.items()):
        if name not in actual.groups:
            actions.append(Action("create-group", name, tuple(sorted(members)), kind))
            continue
        current_kind, current = actual.groups[name]
        if current_kind != kind:
            actions.append(Action("mark-group", name, kind=kind))
        if members - current:
            actions.append(Action("add", name, tuple(sorted(members - current))))
        if current - members:
            actions.append(Action("remove", name, tuple(sorted(current - members))))
    for name, (kind, _members) in sorted(actual.groups.items()):
        if kind is not None and name not in desired.groups:
            actions.append(Action("delete-group", name))
    return actions


def serving(models: list[dict]) -> frozenset[str]:
    """Users of the hub's user models with a server, running or pending."""
    return frozenset(u["name"] for u in models
                     if u.get("servers") or u.get("server") or u.get("pending"))


def holdings(models: list[dict]) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """(allocation ids the servers hold, (user, server name) of the pending
    servers) of the hub's user models (their ``servers`` with ``state``)."""
    held, pending = set(), set()
    for u in models:
        for name, server in (u.get("servers") or {}).items():
            alloc = (server.get("state") or {}).get("hubgrid_allocation")
            if alloc:
                held.add(alloc)
            if server.get("pending"):
                pending.add((u["name"], name))
    return frozenset(held), frozenset(pending)


class HubAPI:
    """The few hub REST calls the mirror needs (token of the hubgrid service)."""

    def __init__(self, api_url: str, token: str):
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.client = AsyncHTTPClient()

    async def call(self, method: str, path: str, body=None):
        req = HTTPRequest(
            f"{self.api_url}/{path}",
            method=method,
            headers={
                "Authorization": f"token {self.token}",
                "Accept": "application/jupyterhub-pagination+json",
            },
            body=None if body is None else json.dumps(body),
            allow_nonstandard_methods=True,
            request_timeout=30,
        )
        resp = await self.client.fetch(req)
        return json.loads(resp.body) if resp.body else None

    async def _paged(self, path: str, query: str = "") -> list[dict]:
        items: list[dict] = []
        offset = 0
        while True:
            page = await self.call("GET", f"{path}?{query}{'&' if query else ''}"
                                          f"offset={offset}&limit=200")
            if isinstance(page, list):  # hub without pagination support
                return page
            items.extend(page["items"])
            nxt = (page.get("_pagination") or {}).get("next")
            if not nxt:
                return items
            offset = nxt["offset"]

    async def state(self) -> HubState:
        models = await self._paged("users")
        users = frozenset(u["name"] for u in models)
        held, pending = holdings(models)
        groups = {
            g["name"]: ((g.get("properties") or {}).get(MARK), frozenset(g.get("users", [])))
            for g in await self._paged("groups")
        }
        return HubState(users=users, groups=groups, held=held, pending=pending,
                        activity={u["name"]: u.get("last_activity") for u in models},
                        serving=serving(models))

    async def servers(self) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
        """``holdings`` of the users with an active (pending or running) server
        only: what the reconciler needs, cheaper than ``state``."""
        return holdings(await self._paged("users", "state=active"))

    async def revoke(self, user: str) -> str:
        """End an inactive user's hub access: their tokens and servers; what
        was ended ("" when there was nothing)."""
        tokens = await self.call("GET", f"users/{user}/tokens")
        ended = []
        for t in (tokens or {}).get("api_tokens", []):
            await self.call("DELETE", f"users/{user}/tokens/{t['id']}")
            ended.append(f"token {t['id']}")
        model = await self.call("GET", f"users/{user}")
        for server_name in (model.get("servers") or {}):
            path = f"users/{user}/servers/{quote(server_name, safe='')}" if server_name else f"users/{user}/server"
            try:
                await self.call("DELETE", path)
            except HTTPClientError as e:
                if e.code not in (202, 204, 400, 404):
                    raise
            ended.append(f"server {server_name!r}")
        return ", ".join(ended)

    async def apply(self, action: Action) -> str | None:
        """Do ``action``; a revoke says what it ended ("" for nothing)."""
        g = quote(action.target, safe="")
        if action.verb == "create-user":
            try:
                await self.call("POST", f"users/{g}", {})
            except HTTPClientError as e:
                if e.code != 409:  # created meanwhile by a login: fine
                    raise
        elif action.verb == "create-group":
            await self.call("POST", f"groups/{g}", {"users": list(action.users)})
            await self.call("PUT", f"groups/{g}/properties", {MARK: action.kind})
        elif action.verb == "mark-group":
            await self.call("PUT", f"groups/{g}/properties", {MARK: action.kind})
        elif action.verb == "add":
            await self.call("POST", f"groups/{g}/users", {"users": list(action.users)})
        elif action.verb == "remove":
            await self.call("DELETE", f"groups/{g}/users", {"users": list(action.users)})
        elif action.verb == "delete-group":
            await self.call("DELETE", f"groups/{g}")
        elif action.verb == "revoke":
            return await self.revoke(g)
        else:  # pragma: no cover - plan() makes only the verbs above
            raise ValueError(action.verb)


class HubMirror:
    """Runs ``plan`` against the live hub when asked and every ``interval`` s,
    and reconciles the ledger with the hub's servers: with every mirror
    pass, and on its own (reading only the active users) when allocations
    the hub was not seen holding leave their grace (``check_at``)."""

    def __init__(self, session_factory, hub: HubAPI | None, interval: float, log=None,
                 reconcile=None, retry: float = 1.0):
        self.session_factory = session_factory
        #: called (in a worker thread) with the allocation ids the hub's
        #: servers hold, when the hub was read and its pending servers;
        #: returns a ``ledger.Reconciled``
        self.reconcile = reconcile
        self.hub = hub
        self.interval = interval
        #: seconds between attempts while the hub does not answer
        self.retry = retry
        self.log = log or logging.getLogger(__name__)
        #: set once the ledger was reconciled with the hub after the start
        #: (at once without a hub): the queues wait for it
        self.reconciled = asyncio.Event()
        if hub is None or reconcile is None:
            self.reconciled.set()
        self._wake = asyncio.Event()
        self._full = False
        self._next_full = 0.0
        self._recheck: float | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        #: locked-out users revoked, with their hub last_activity then (``plan``)
        self._settled: dict[str, str | None] = {}

    def start(self) -> None:
        if self.hub is not None and self._task is None:
            self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    def request_sync(self) -> None:
        self._full = True
        self._wake.set()

    def check_at(self, when: float) -> None:
        """Reconcile again at loop time ``when`` (or earlier, if one is due sooner)."""
        if self.hub is None:
            return
        if self._recheck is None or when < self._recheck:
            self._recheck = when
            self._wake.set()

    def check_after(self, seconds: float) -> None:
        self.check_at(asyncio.get_running_loop().time() + seconds)

    async def sync_now(self) -> dict:
        if self.hub is None:
            return {"actions": [], "hub": "not configured"}
        async with self._lock:
            # the hub first: a user the service creates meanwhile is then
            # absent from both, never taken for a stranger and revoked
            read_at = dt.datetime.now(dt.timezone.utc)
            actual = await self.hub.state()
            # first: a failing mirror action must not keep the ledger waiting
            released = await self._reconcile(actual.held, read_at, actual.pending)
            with self.session_factory() as s:
                desired = desired_state(s)
            # forget who is no longer locked out: revoked afresh if locked out again
            locked = locked_out(desired, actual)
            self._settled = {u: a for u, a in self._settled.items() if u in locked}
            actions = plan(desired, actual, self._settled)
            for action in actions:
                if action.verb != "revoke":
                    self.log.info("hub mirror: %s %s %s", action.verb, action.target,
                                  ",".join(action.users))
                ended = await self.hub.apply(action)
                if action.verb == "revoke":
                    # logged only when it ended something; not again until
                    # the user is seen with a server or active
                    self._settled[action.target] = actual.activity.get(action.target)
                    if ended:
                        self.log.info("hub mirror: revoke %s: ended %s", action.target, ended)
            self._next_full = asyncio.get_running_loop().time() + self.interval
            return {"actions": [a.__dict__ | {"users": list(a.users)} for a in actions],
                    "released": released}

    async def reconcile_now(self) -> list[str]:
        """Reconcile with the hub's active servers only; the released ids."""
        if self.hub is None:
            return []
        async with self._lock:
            read_at = dt.datetime.now(dt.timezone.utc)
            held, pending = await self.hub.servers()
            return await self._reconcile(held, read_at, pending)

    async def _reconcile(self, held, read_at: dt.datetime, pending) -> list[str]:
        # judged as of when the hub was read: what started after that is
        # not in ``held`` yet and must not be taken for an orphan
        if self.reconcile is None:
            return []
        done = await asyncio.to_thread(self.reconcile, held, read_at, pending)
        self._recheck = None
        if done.recheck_at is not None:
            delay = (done.recheck_at - dt.datetime.now(dt.timezone.utc)).total_seconds()
            self.check_after(max(delay, 0.0) + 0.2)
        self.reconciled.set()
        return done.released

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = min(self._next_full, self._recheck if self._recheck is not None else math.inf)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=max(due - loop.time(), 0.0))
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            full = self._full or loop.time() >= self._next_full
            if not full and (self._recheck is None or loop.time() < self._recheck):
                continue  # only the deadline moved
            self._full = False
            try:
                await (self.sync_now() if full else self.reconcile_now())
            except Exception as e:  # the hub may be (re)starting: try again soon
                self.log.warning("hub %s failed, will retry in %g s: %s",
                                 "mirror" if full else "reconciliation", self.retry, e)
                await asyncio.sleep(self.retry)
                if full:
                    self.request_sync()
                else:
                    self.check_at(loop.time())
