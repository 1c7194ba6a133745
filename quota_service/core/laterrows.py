"""Rows a ledger batch inserts at its end, one statement per table.

Every session's start or end appends its record (``sessionaudit``), and an
end of one that ran its usage interval (``usage_store``): one INSERT each,
for every write of a batch, each a round trip to PostgreSQL and
SQLAlchemy's cost of a statement. In a batch without savepoints
(``core/groupcommit``, ``collect``), they are kept and inserted before the
COMMIT (``flush``): one executemany per table, in the order they came.
Nothing a decision reads is in them (the access log and the usage record
are read by people, after the COMMIT).

A kept row counts as a write (``db.writes``): a write that raises after
keeping one makes its batch run again with a savepoint per write, where
rows are inserted at once (a savepoint rolled back takes them back).
Outside a batch (queue passes, the hub's calls) they are inserted at once.

``later`` keeps other writes of that kind the same way (a keypair's last
use: ``tenancy/keycache``), by key, for one call of their writer at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from sqlalchemy import Table
from sqlalchemy.orm import Session

from . import db, statements

KEY = "hubgrid_later_rows"


def collect(s: Session) -> None:
    """Keep the rows ``insert`` is given in ``s``'s transaction until ``flush``."""
    s.info[KEY] = {}


def insert(s: Session, table: Table, row: dict) -> None:
    """``row`` into ``table`` in ``s``'s transaction: kept while collecting,
    else at once."""
    kept = s.info.get(KEY)
    if kept is None:
        s.connection().execute(statements.insert(table), row)
        return
    kept.setdefault(table, []).append(row)
    db.count_write(s)


def later(s: Session, write: Callable[[Session, dict], Any], key: Hashable, value) -> bool:
    """While collecting, keep ``value`` under ``key`` (the last one given
    wins) for one ``write(s, {key: value, ...})`` at ``flush``, and say so;
    False when not collecting (the caller writes it now)."""
    kept = s.info.get(KEY)
    if kept is None:
        return False
    kept.setdefault(write, {})[key] = value
    db.count_write(s)
    return True


def flush(s: Session) -> int:
    """Insert the kept rows, make the kept writes, and stop collecting; how
    many rows and writes there were."""
    kept = s.info.pop(KEY, None) or {}
    for target, rows in kept.items():
        if isinstance(target, Table):
            s.connection().execute(statements.insert(target), rows)
        else:
            target(s, rows)
    return sum(len(rows) for rows in kept.values())
