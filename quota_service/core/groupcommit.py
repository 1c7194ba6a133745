"""Group commit: writes that arrive together share one transaction.

Each write (``work(session)``) still runs alone and in arrival order, as
if in a savepoint of its own: one that raises is rolled back and raises to
its caller, and the others go on. Most writes that raise do so before they
wrote anything (a refusal), so a batch first runs without savepoints (two
statements a write saved): a write that raises having written nothing
(``db.writes`` did not move, the session holds no unflushed change, no
database error) leaves the transaction as it was, and the batch goes on. One
that raises after writing makes the whole batch roll back and run again,
each write in a SAVEPOINT of its own. Whatever queued while a batch
ran is the next batch, so a lone write waits for nobody and a crowd pays
for one BEGIN, one lock and one COMMIT per batch instead of one per write
(on SQLite, where writers take turns, that is most of a write's cost), and
the session records and usage intervals of a batch without savepoints are
inserted at its end, one statement per table (``laterrows``). A
caller's answer comes after its batch committed, exactly as with its own
transaction; a failed COMMIT fails every write of the batch.

A ``view`` (``batchmemo.Carry``) keeps what the batch's writes read in
``session.info``. A batch runs in the view's ``turn()`` (a context held from
before its BEGIN to after ``committed``): ``begin(session)`` when a batch
begins, ``succeeded(session)`` after each write that committed to its
savepoint, ``failed(session)`` after one was rolled back (what it moved may
be wrong), ``ending(session)`` after the last write, before the COMMIT (what
to keep of it), and ``committed(kept)`` once that succeeded (so a view may
outlive its batch).

A write may name what it will read (``run(work, before=(read, item))``): a
batch calls each ``read(session, items)`` once with the items of all its
writes that named it, after ``begin`` and before the first write (one
query for a batch's rows instead of one per write: ``scheduling/ending``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from . import db, heldrows, laterrows, orm

T = TypeVar("T")


#: what a write will read: (read(session, items), its item)
Before = tuple[Callable[[Session, list], None], Any]


def _read_first(s: Session, befores: list[Before]) -> None:
    """Each ``read`` of ``befores`` once, with its items in arrival order."""
    items: dict[Callable, list] = {}
    for read, item in befores:
        items.setdefault(read, []).append(item)
    for read, its in items.items():
        read(s, its)


class _WroteThenFailed(Exception):
    """A write of a batch without savepoints raised after it wrote."""


class BatchView(Protocol):
    """What a batch's writes read, kept beside it (see the module's doc)."""

    def turn(self) -> AbstractContextManager: ...

    def begin(self, s: Session) -> None: ...

    def succeeded(self, s: Session) -> None: ...

    def failed(self, s: Session) -> None: ...

    def ending(self, s: Session) -> Any: ...

    def committed(self, kept: Any) -> None: ...


class GroupCommit:
    """A queue of writes to one database, committed in batches."""

    def __init__(self, factory: sessionmaker[Session], *, ledger_lock: bool = False,
                 max_batch: int = 200, view: BatchView | None = None):
        self.factory, self.ledger_lock, self.max_batch = factory, ledger_lock, max_batch
        self.view = view
        self._queue: list[tuple[Callable[[Session], Any], asyncio.Future, Before | None]] = []
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: how many batches ran, and how many of them ran again with savepoints
        self.batches = self.reruns = 0

    async def run(self, work: Callable[[Session], T], before: Before | None = None) -> T:
        """``work(session)`` in the next batch; its value once that committed.
        ``before``: (read, item) for the batch to read first (the module's doc)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests run many): what queued on the old one is gone
            self._loop, self._queue, self._task = loop, [], None
        future = loop.create_future()
        self._queue.append((work, future, before))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._queue:
            batch = self._queue[: self.max_batch]
            del self._queue[: len(batch)]
            try:
                outcomes = await asyncio.to_thread(
                    self._commit, [work for work, _, _ in batch],
                    [before for _, _, before in batch if before is not None])
            except BaseException as exc:  # the COMMIT (or BEGIN) failed: every write did
                outcomes = [(False, exc)] * len(batch)
            for (_, future, _), (ok, value) in zip(batch, outcomes):
                if future.done():  # its caller went away
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def _commit(self, works: list[Callable[[Session], Any]],
                befores: list[Before] = ()) -> list[tuple[bool, Any]]:
        try:
            return self._attempt(works, savepoints=False, befores=befores)
        except _WroteThenFailed:
            self.reruns += 1
            return self._attempt(works, savepoints=True, befores=befores)

    def _attempt(self, works: list[Callable[[Session], Any]], savepoints: bool,
                 befores: list[Before] = ()) -> list[tuple[bool, Any]]:
        view = self.view
        with view.turn() if view is not None else nullcontext():
            return self._attempt_in_turn(works, savepoints, befores)

    def _attempt_in_turn(self, works: list[Callable[[Session], Any]], savepoints: bool,
                         befores: list[Before] = ()) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        view, kept = self.view, None
        with db.transaction(self.factory, ledger_lock=self.ledger_lock) as s:
            orm.hold_loaded(s)  # the rows one write read serve the next ones too
            if not savepoints:  # records and usage intervals at the end (``laterrows``),
                laterrows.collect(s)  # new rows with the batch's others (``heldrows``)
                heldrows.start(s)
            if view is not None:
                view.begin(s)
            _read_first(s, befores)
            for work in works:
                savepoint = s.begin_nested() if savepoints else None
                before = None if savepoints else db.writes(s)
                try:
                    value = work(s)
                    if savepoint is not None:
                        savepoint.commit()
                    else:
                        s.flush()  # (its own flush fails it, not the next write)
                except Exception as exc:
                    if savepoint is not None:
                        savepoint.rollback()
                    elif (isinstance(exc, SQLAlchemyError) or db.writes(s) != before
                          or s.new or s.dirty or s.deleted):
                        raise _WroteThenFailed() from exc
                    if view is not None:
                        view.failed(s)
                    outcomes.append((False, exc))
                else:
                    outcomes.append((True, value))
                    if view is not None:
                        view.succeeded(s)
            try:
                heldrows.stop(s)
                laterrows.flush(s)
            except SQLAlchemyError as exc:  # whose row it was is known with savepoints
                raise _WroteThenFailed() from exc
            if view is not None:
                kept = view.ending(s)
        if view is not None:
            view.committed(kept)
        self.batches += 1
        return outcomes
