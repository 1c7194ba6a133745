"""Rows kept in memory between transactions, at one generation of their tables.

Rows read by key (each keypair's caller: ``tenancy/keycache``; users and
projects: ``tenancy/people``), each copy tagged with a generation
(``core/generations``: a ``ledger_counters`` row that triggers move with
every change to ``tables``, whoever writes). Reading
it is one row in the caller's transaction, read before the rows, so a copy
is never tagged newer than what it holds: a change committed before the
read is seen, and one committed during it moves the counter past the copy.
A transaction that wrote to ``tables`` neither reads nor keeps copies (its
rows may be its own uncommitted change). Missing rows are never kept (an
unknown name costs its query each time, not memory), and a copy holding
``max_rows`` starts again (``on_reset`` is called then, and whenever a
copy of a new generation starts).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

from sqlalchemy.orm import Session

from . import generations

R = TypeVar("R")


class RowCache(Generic[R]):
    """Rows of one database by key, at one generation of ``tables``."""

    def __init__(self, counter: str, tables: frozenset[str], max_rows: int = 200_000,
                 on_reset: Callable[[], None] | None = None):
        self.counter, self.tables, self.max_rows = counter, tables, max_rows
        self.on_reset = on_reset
        self._lock = threading.Lock()
        #: (the generation, its rows): replaced as one, so a reader never
        #: pairs a new generation with the rows of an old one
        self._rows: tuple[int | None, dict[Hashable, R]] = (None, {})

    def _current(self, s: Session) -> tuple[int | None, dict[Hashable, R]]:
        """The generation ``s`` sees, and the rows kept at it (empty when
        they are of another, or when ``s`` wrote to the tables)."""
        gen = generations.generation(s, self.counter, self.tables)
        kept_gen, kept = self._rows
        if gen is None or gen != kept_gen or generations.wrote(s, self.tables):
            return gen, {}
        return gen, kept

    def _keep(self, s: Session, gen: int | None, found: dict[Hashable, R]) -> None:
        if gen is None or not found or generations.wrote(s, self.tables):
            return
        with self._lock:
            kept_gen, kept = self._rows
            if gen != kept_gen or len(kept) + len(found) > self.max_rows:
                kept = {}
                self._rows = (gen, kept)
                if self.on_reset is not None:
                    self.on_reset()
            kept.update(found)

    def fill(self, s: Session, load: Callable[[], dict[Hashable, R]]) -> int:
        """Keep what ``load()`` reads (rows by key) at the generation ``s``
        sees, read before them (a service's start: ``tenancy/warm``); how
        many are kept (none when the database has no counter, or the rows
        would pass ``max_rows``)."""
        gen, _ = self._current(s)
        if gen is None:
            return 0
        found = load()
        if len(found) > self.max_rows:
            return 0
        self._keep(s, gen, found)
        return len(found)

    def peek(self, key: Hashable) -> R | None:
        """The row ``key`` as last kept, whatever the generation now: a
        guess, to be confirmed by ``get`` in a transaction."""
        return self._rows[1].get(key)

    def get(self, s: Session, key: Hashable, load: Callable[[], R | None]) -> R | None:
        """The row ``key``: kept, else ``load()`` (None: there is none)."""
        gen, kept = self._current(s)
        hit = kept.get(key)
        if hit is not None:
            return hit
        row = load()
        if row is not None:
            self._keep(s, gen, {key: row})
        return row

    def get_many(self, s: Session, keys: Iterable[Hashable],
                 load: Callable[[list], dict[Hashable, R]]) -> dict[Hashable, R]:
        """The rows of ``keys`` that exist: the kept ones, and ``load(missing)``
        (the rows it found, by key) for the others, in one call."""
        gen, kept = self._current(s)
        out, missing = {}, []
        for key in keys:
            hit = kept.get(key)
            if hit is not None:
                out[key] = hit
            else:
                missing.append(key)
        if missing:
            found = load(missing)
            self._keep(s, gen, found)
            out.update(found)
        return out


def of(s: Session, kind: str, make: Callable[[], RowCache]) -> RowCache:
    """The ``kind`` cache of ``s``'s database (one per engine)."""
    return generations.per_engine(s, kind, make)
