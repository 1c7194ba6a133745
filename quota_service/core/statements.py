"""Statements made once, and long lists of keys cut to fit one statement.

Building a statement (and its cache key) cost more than running it on the
service's hot paths: each table's INSERT is made once here (``insert``),
for every writer of plain rows (``rowinsert``, ``heldrows``, ``laterrows``).
``chunks`` cuts a list of ids or keys into pieces a statement can bind
(SQLite bounds the parameters of one statement).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import Table

T = TypeVar("T")

#: ids or keys bound per statement (well under SQLite's bound on parameters)
PER_STATEMENT = 500

_INSERTS: dict[Table, Any] = {}


def insert(table: Table):
    """``table``'s INSERT (made the first time it is asked for)."""
    stmt = _INSERTS.get(table)
    if stmt is None:
        stmt = _INSERTS[table] = table.insert()
    return stmt


def chunks(items: Sequence[T], size: int = PER_STATEMENT) -> Iterator[Sequence[T]]:
    """``items`` in consecutive pieces of at most ``size``."""
    for at in range(0, len(items), size):
        yield items[at:at + size]
