"""Who waits for which pending allocation, and telling them when it changes.

A pending spawner long-polls ``GET internal/allocations/{id}?wait=N``: the
handler registers a future here and sleeps on it. Nothing polls the
database for them: every committed transaction of the service that changed
an allocation's ``state`` or ``reasons`` (the scheduling pass, a release, a
cancel, the reconciler, a container's exit) wakes that allocation's waiters
once it has committed (``watch`` hooks the session factory), and each
waiter re-reads once. The last model a waiter read is cached until the
next change, so the steady trickle of re-polls costs no database reads.

The registry also remembers when each pending request was last waited for
(a connected long-poll, or any GET of it): ``presence`` is the snapshot the
scheduling pass judges abandoned requests by (``abandoned`` is pure), so a
request whose spawner died with its hub is cancelled instead of admitted.

Everything but the SQLAlchemy hooks runs on the event loop's thread; the
hooks hand their ids to the loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from sqlalchemy import event
from sqlalchemy.orm.attributes import PASSIVE_NO_INITIALIZE, get_history, instance_state

from . import changelog, lineplaces
from ..core import heldrows, rowupdate
from ..core.models import (
    Allocation,
    Device,
    Domain,
    Image,
    Keypair,
    Membership,
    Node,
    Project,
    ResourceGroup,
    ResourceGroupGrant,
    ResourcePolicy,
    User,
)

#: Session.info keys (per registry): the allocation ids a transaction
#: changed, and whether it changed what queue decisions read
CHANGED = "hubgrid_changed_allocations"
DECIDING = "hubgrid_changed_decisions"


@dataclass(frozen=True)
class Presence:
    """When each request was last waited for, as the scheduling pass sees it."""

    #: seconds since the service started: nobody is judged before the
    #: spawners had that long to come back to a restarted service
    uptime: float
    #: allocation id -> seconds since a waiter last left (0: one is connected)
    quiet: Mapping[str, float] = field(default_factory=dict)


def abandoned(pending: Iterable[tuple[str, dt.datetime]], presence: Presence,
              now: dt.datetime, after: float) -> dict[str, str]:
    """The pending requests nobody has waited for in more than ``after``
    seconds, with the reason they are cancelled. ``pending``: (id, created
    at) of the hub's pending requests. Pure.

    A request is given ``after`` seconds from its creation and from the
    service's start before it can be judged; a known waiter's absence counts
    from when it left."""
    out: dict[str, str] = {}
    for alloc_id, created in pending:
        quiet = min(presence.quiet.get(alloc_id, math.inf), presence.uptime,
                    (now - created).total_seconds())
        if quiet > after:
            out[alloc_id] = (f"abandoned: nobody has waited for it for {quiet:.0f} s "
                             f"(pending_abandon_after is {after:g} s)")
    return out


class Waiters:
    """Long-poll waiters by allocation id, their presence and a model cache."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.started = clock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: dict[str, set[asyncio.Future]] = {}
        #: id -> when its last waiter left or it was last read
        self._last_seen: dict[str, float] = {}
        #: id -> how many changes were announced (a read older than the last
        #: change must not be cached)
        self._version: dict[str, int] = {}
        self._cache: dict[str, tuple[int, dict]] = {}
        #: every write that may change a queue decision (an allocation
        #: starting or ending, any limit, grant, node, image or membership),
        #: noted when flushed and again once committed (``changelog``)
        self.changes = changelog.ChangeLog()
        #: the queue places of the spawners' progress pages, moved by each
        #: change of a request (``lineplaces``)
        self.lines = lineplaces.Lines(clock)

    # -- waiting ---------------------------------------------------------------

    def wait(self, alloc_id: str) -> asyncio.Future:
        """A future set when ``alloc_id`` changes; register before reading it,
        so no change between the read and the wait is missed."""
        self._loop = asyncio.get_running_loop()
        fut = self._loop.create_future()
        self._waiting.setdefault(alloc_id, set()).add(fut)
        return fut

    def attach(self) -> None:
        """Hear of changes from now on (on the loop's thread): the lines of
        queue places are kept by them even before anybody long-polls."""
        self._loop = asyncio.get_running_loop()

    def leave(self, alloc_id: str, fut: asyncio.Future) -> None:
        """The waiter answered or its connection closed."""
        waiting = self._waiting.get(alloc_id)
        if waiting is not None:
            waiting.discard(fut)
            if not waiting:
                del self._waiting[alloc_id]
        self.seen(alloc_id)

    def seen(self, alloc_id: str) -> None:
        """Somebody asked for it (any GET of the allocation)."""
        self._last_seen[alloc_id] = self.clock()

    def connected(self, alloc_id: str) -> int:
        return len(self._waiting.get(alloc_id, ()))

    def __len__(self) -> int:
        return sum(len(w) for w in self._waiting.values())

    def presence(self, forget_after: float) -> Presence:
        """The snapshot ``abandoned`` judges by; forgets who was last seen
        more than ``forget_after`` seconds ago (unknown counts the same)."""
        now = self.clock()
        quiet = {}
        for alloc_id, when in list(self._last_seen.items()):
            if now - when > forget_after:
                del self._last_seen[alloc_id]
            else:
                quiet[alloc_id] = now - when
        for alloc_id in self._waiting:
            quiet[alloc_id] = 0.0
        return Presence(uptime=now - self.started, quiet=quiet)

    # -- changes ---------------------------------------------------------------

    def changed(self, ids: Iterable[str]) -> int:
        """Wake the waiters of ``ids`` (on the loop's thread); how many were woken."""
        woken = 0
        ids = list(ids)
        self.lines.changed(ids)  # their places may have moved
        for alloc_id in ids:
            self._version[alloc_id] = self._version.get(alloc_id, 0) + 1
            self._cache.pop(alloc_id, None)
            for fut in self._waiting.get(alloc_id, ()):
                if not fut.done():
                    fut.set_result(True)
                    woken += 1
        if len(self._version) > 10 * (len(self._waiting) + 1000):
            # versions and models only matter while somebody waits: keep them small
            self._version = {k: v for k, v in self._version.items() if k in self._waiting}
            self._cache = {k: v for k, v in self._cache.items() if k in self._waiting}
        return woken

    def changed_threadsafe(self, ids: Iterable[str]) -> None:
        """``changed`` from any thread (a no-op before anybody waited)."""
        ids = list(ids)
        loop = self._loop
        if not ids or loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self.changed, ids)
        except RuntimeError:  # the loop closed meanwhile
            pass

    @property
    def generation(self) -> int:
        """Moves with every note of ``changes``: a pass that starts at the
        same generation as the last one reads an unchanged world."""
        return self.changes.seq

    def watch(self, factory) -> None:
        """Announce, after each commit of ``factory``'s sessions, the
        allocations whose state, reasons or place in line it changed, and
        note in ``changes`` what queue decisions read."""
        event.listen(factory, "after_flush", self._after_flush)
        event.listen(factory, "do_orm_execute", self._plain_write)
        event.listen(factory, "after_commit", self._after_commit)
        event.listen(factory, "after_rollback", self._after_rollback)

    def _keys(self) -> tuple[str, str]:
        return f"{CHANGED}:{id(self)}", f"{DECIDING}:{id(self)}"

    def _after_flush(self, session, _flush_context) -> None:
        changed_key, deciding_key = self._keys()
        changed, deciding = _collect(session)
        session.info.setdefault(changed_key, set()).update(changed)
        if deciding is None or deciding:
            self._deciding(session, deciding)  # before the commit too: see ``changelog``

    def _plain_write(self, state) -> None:
        """Allocations made with a plain INSERT (``core/rowinsert``) or
        changed with a plain UPDATE (``core/rowupdate``, one or a batch's
        held ones: ``core/heldrows``) count as a flush of those objects would."""
        changes = None
        if state.is_update:
            one = state.execution_options.get(rowupdate.CHANGE)
            changes = [one] if one is not None else state.execution_options.get(heldrows.NOTES)
        if changes is not None:
            changes = [c for c in changes if c.table == Allocation.__tablename__]
            if not changes:
                return
            ids = [c.key[0] for c in changes if any(c.changed(k) for k in ANNOUNCED)]
            deciding = frozenset(c.key[0] for c in changes if c.changed("state") and (
                "allocated" in (c.before.get("state"), c.after["state"])))
        else:
            table = getattr(state.statement, "table", None) if state.is_insert else None
            if getattr(table, "name", None) != Allocation.__tablename__:
                return
            params = state.parameters
            rows = params if isinstance(params, list) else [params] if params else []
            ids = [r["id"] for r in rows]
            deciding = frozenset(r["id"] for r in rows if r.get("state") == "allocated")
        changed_key, deciding_key = self._keys()
        state.session.info.setdefault(changed_key, set()).update(ids)
        if deciding:
            self._deciding(state.session, deciding)

    def _deciding(self, session, ids: frozenset[str] | None) -> None:
        """A flush wrote what decisions read: the allocations ``ids`` started
        or ended (None: anything changed). Noted now and kept for the commit."""
        _, deciding_key = self._keys()
        kept = session.info.get(deciding_key, frozenset())
        session.info[deciding_key] = None if ids is None or kept is None else kept | ids
        self.changes.note(ids)

    def _after_commit(self, session) -> None:
        changed_key, deciding_key = self._keys()
        if deciding_key in session.info:
            self.changes.note(session.info.pop(deciding_key))
        self.changed_threadsafe(session.info.pop(changed_key, ()))

    def _after_rollback(self, session) -> None:
        for key in self._keys():
            session.info.pop(key, None)

    # -- the cache of what waiters read ----------------------------------------

    def version(self, alloc_id: str) -> int:
        return self._version.get(alloc_id, 0)

    def cached(self, alloc_id: str) -> dict | None:
        hit = self._cache.get(alloc_id)
        if hit is not None and hit[0] == self.version(alloc_id):
            return hit[1]
        return None

    def remember(self, alloc_id: str, version: int, model: dict) -> None:
        """Cache a pending model a waiter read at ``version`` (not if it
        changed since, nor when nobody waits for it)."""
        if alloc_id not in self._waiting:
            return
        if model.get("state") == "pending" and version == self.version(alloc_id):
            self._cache[alloc_id] = (version, model)
        elif model.get("state") != "pending":
            self._cache.pop(alloc_id, None)



#: an allocation's columns whose change its waiters and the queue places hear of
ANNOUNCED = ("state", "reasons", "priority", "queue_at")

#: what queue decisions read besides allocations
DECISIVE = (Domain, Project, User, Membership, Keypair, ResourcePolicy, ResourceGroup,
            ResourceGroupGrant, Node, Device, Image)
#: columns whose change decides nothing (bookkeeping)
UNDECISIVE = {"last_used_at", "passes", "reasons", "log_purged_at"}


def _changed_keys(obj) -> set[str]:
    # only an attribute set since the last flush keeps its committed value
    # (``committed_state``), so only those can have changes; reading every
    # attribute's state (``inspect(obj).attrs``) built one object per column
    # of every object a flush wrote
    return {key for key in list(instance_state(obj).committed_state)
            if get_history(obj, key, PASSIVE_NO_INITIALIZE).has_changes()}


def _collect(session) -> tuple[set[str], frozenset[str] | None]:
    """(ids of the allocations whose state, reasons or place in line a flush
    changes, what it changes that queue decisions read: the ids of the
    allocations that start or end (empty: none), None for anything)."""
    changed: set[str] = set()
    started_or_ended: set[str] = set()
    anything = False
    for obj in session.new:
        if isinstance(obj, Allocation):
            changed.add(obj.id)
            if obj.state == "allocated":
                started_or_ended.add(obj.id)
        elif isinstance(obj, DECISIVE):
            anything = True
    for obj in session.dirty:
        if isinstance(obj, Allocation):
            state = get_history(obj, "state", PASSIVE_NO_INITIALIZE)
            if any(get_history(obj, k, PASSIVE_NO_INITIALIZE).has_changes() for k in ANNOUNCED):
                changed.add(obj.id)
            # capacity and usage change only when an allocation starts or ends
            if "allocated" in (*state.added, *state.deleted):
                started_or_ended.add(obj.id)
        elif isinstance(obj, DECISIVE) and _changed_keys(obj) - UNDECISIVE:
            anything = True
    anything |= any(isinstance(obj, (Allocation, *DECISIVE)) for obj in session.deleted)
    return changed, None if anything else frozenset(started_or_ended)
