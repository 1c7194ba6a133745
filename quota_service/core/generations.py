"""What a copy kept in memory between transactions needs to know it is current.

The service keeps some rows in memory between requests (the resource groups:
``scheduling/groupcache``; each keypair's principal: ``tenancy/keycache``).
Each copy is tagged with a *generation*: a row of ``ledger_counters`` that
triggers of the database move with every change to the tables the copy was
read from, whoever writes them (any process, raw SQL). Reading it is one row
by its key, in the caller's transaction, which then sees exactly the changes
that committed before it. Counters start at random values
(migrations/counters.py), so a database made again from nothing never
matches an old copy.

A transaction that has written anything never keeps what it read: it may be
its own change, which a rollback would take back (and the generation with it).
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable, TypeVar

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from . import db
from .models import LedgerCounter

T = TypeVar("T")


def generation(s: Session, name: str, tables: frozenset[str]) -> int | None:
    """The counter ``name`` (of ``tables``) as ``s``'s transaction sees it
    (None: a database without it, whose rows are never kept); read once per
    transaction unless it writes to ``tables``. The first counter a
    transaction asks for reads them all (one query, not one per counter);
    one asked for after the transaction wrote to its tables is read alone."""

    def load() -> int | None:
        if wrote(s, tables):
            return _since_writes(s).get(name)
        counters = s.info.get(_COUNTERS)
        if counters is None:
            counters = s.info[_COUNTERS] = _every_counter(s)
        return counters.get(name)

    return once(s, ("generation", name), tables, load)


#: ``Session.info`` key: every counter, as the transaction first read them
_COUNTERS = "hubgrid_counters"
#: ``Session.info`` key: every counter as read after the transaction's last
#: write, with when: (``db.writes``, the savepoint then open)
_SINCE = "hubgrid_counters_since"


#: (made once: a statement built per call costs more than its run)
_EVERY = select(LedgerCounter.name, LedgerCounter.value)


def _every_counter(s: Session) -> dict[str, int]:
    return dict(s.execute(_EVERY).all())


def _since_writes(s: Session) -> dict[str, int]:
    """Every counter as ``s``'s transaction sees it now that it wrote: read
    again after each write (counted by ``db.writes``; a flush about to run
    is one), and after a savepoint opened or ended, which may take writes
    back; read once for all counters asked for in between (a batch's end
    asks for two)."""
    if s.new or s.dirty or s.deleted:
        s.flush()
    when = (db.writes(s), s.get_nested_transaction())
    kept = s.info.get(_SINCE)
    if kept is not None and kept[0] == when:
        return kept[1]
    counters = _every_counter(s)
    s.info[_SINCE] = (when, counters)
    return counters


#: ``Session.info`` key: what ``once`` read in this transaction
_ONCE = "hubgrid_once"


def once(s: Session, key, tables: frozenset[str], load: Callable[[], T]) -> T:
    """``load()``, read once per transaction of ``s`` under ``key`` (a batch
    of requests reads a policy, a counter, a user once, not once per
    request), as long as the transaction has not written to ``tables``
    (the tables ``load`` reads): after that, read each time."""
    memo = s.info.setdefault(_ONCE, {})
    if key in memo and not wrote(s, tables):
        return memo[key]
    value = load()
    if not wrote(s, tables):
        memo[key] = value
    return value


#: ``Session.info`` key: the tables this transaction wrote to (ANY: unknown)
_WROTE = "hubgrid_wrote"
ANY = "*"
#: execution option of a statement that writes only columns no copy is made
#: of (and no trigger watches), e.g. a keypair's last use
UNWATCHED = "hubgrid_unwatched"


def wrote(s: Session, tables: frozenset[str] | None = None) -> bool:
    """Whether ``s``'s transaction has written anything (flushed, or ran an
    INSERT, UPDATE or DELETE), or, given ``tables``, to any of those."""
    written = s.info.get(_WROTE)
    if not written:
        return False
    return tables is None or ANY in written or not written.isdisjoint(tables)


def mark_written(session: Session, tables) -> None:
    """Count ``tables`` as written by ``session``'s transaction (by a flush,
    a statement, or a write held to run later: ``heldrows``)."""
    session.info.setdefault(_WROTE, set()).update(tables)


@event.listens_for(Session, "after_flush")
def _flushed(session, _context) -> None:
    # (after_flush still lists what the flush wrote as new, dirty and deleted)
    mark_written(session, {getattr(getattr(o, "__table__", None), "name", ANY)
                    for o in (*session.new, *session.dirty, *session.deleted)} or {ANY})


@event.listens_for(Session, "do_orm_execute")
def _statement(state) -> None:
    if (state.is_insert or state.is_update or state.is_delete) \
            and not state.execution_options.get(UNWATCHED):
        table = getattr(state.statement, "table", None)
        mark_written(state.session, {getattr(table, "name", None) or ANY})


@event.listens_for(Session, "after_transaction_end")
def _ended(session, transaction) -> None:
    if transaction.parent is None:
        session.info.pop(_WROTE, None)
        session.info.pop(_ONCE, None)
        session.info.pop(_COUNTERS, None)
        session.info.pop(_SINCE, None)


_caches: dict[str, weakref.WeakKeyDictionary] = {}
_guard = threading.Lock()


def per_engine(s: Session, kind: str, make: Callable[[], T]) -> T:
    """The ``kind`` cache of ``s``'s database, made by ``make()`` the first
    time (one per engine: a test process serves many databases)."""
    bind = s.get_bind()
    return of_engine(getattr(bind, "engine", bind), kind, make)


def of_engine(engine, kind: str, make: Callable[[], T]) -> T:
    """``per_engine`` for ``engine`` (without a session)."""
    caches = _caches.get(kind)
    cache = caches.get(engine) if caches is not None else None
    if cache is not None:  # (made once: read without the lock)
        return cache
    with _guard:
        caches = _caches.setdefault(kind, weakref.WeakKeyDictionary())
        cache = caches.get(engine)
        if cache is None:
            cache = caches[engine] = make()
    return cache
