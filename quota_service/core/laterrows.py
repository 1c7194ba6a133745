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
"""

from __future__ import annotations

from sqlalchemy import Table
from sqlalchemy.orm import Session

from . import db

KEY = "hubgrid_later_rows"


def collect(s: Session) -> None:
    """Keep the rows ``insert`` is given in ``s``'s transaction until ``flush``."""
    s.info[KEY] = {}


def insert(s: Session, table: Table, row: dict) -> None:
    """``row`` into ``table`` in ``s``'s transaction: kept while collecting,
    else at once."""
    kept = s.info.get(KEY)
    if kept is None:
        s.connection().execute(table.insert(), [row])
        return
    kept.setdefault(table, []).append(row)
    db.count_write(s)


def flush(s: Session) -> int:
    """Insert the kept rows and stop collecting; how many there were."""
    kept = s.info.pop(KEY, None) or {}
    for table, rows in kept.items():
        s.connection().execute(table.insert(), rows)
    return sum(len(rows) for rows in kept.values())
