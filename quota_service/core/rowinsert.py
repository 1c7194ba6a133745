"""A new ORM object written with one plain INSERT, then persistent as if read.

A session's start adds one allocation: the ORM's unit of work for that one
object (dependency sorting, orphan checks, per-column history, the state
bookkeeping after) cost more than the INSERT itself, about a twentieth of
the service in a storm. ``insert`` gives every column its value (the
object's own, else its column's Python default), runs one INSERT through the
session (so what watches a session's statements sees it: ``generations``
marks the table written, ``waiters`` learns of the row, ``db.writes``
counts it), and makes the object persistent in the session with those
values as its loaded state: nothing is read back and nothing is expired.
In a ledger batch the INSERT is held to run with the batch's others
(``heldrows``), before anything could read the row.
"""

from __future__ import annotations

from sqlalchemy import inspect
from sqlalchemy.orm import Session, make_transient_to_detached

from . import heldrows, orm, statements


def row_of(obj) -> dict:
    """Every column of new ``obj``: its value, else its column's Python
    default (a column with neither is None, as the INSERT would make it)."""
    state = inspect(obj)
    row = {}
    for prop in state.mapper.column_attrs:
        col = prop.columns[0]
        if prop.key in state.dict:
            row[col.key] = state.dict[prop.key]
        elif col.default is not None and col.default.is_scalar:
            row[col.key] = col.default.arg
        elif col.default is not None and col.default.is_callable:
            row[col.key] = col.default.arg(None)  # (SQLAlchemy's wrapper takes a context)
        elif col.server_default is not None:
            raise ValueError(f"{col.key}: a server default only; give it a value")
        else:
            row[col.key] = None
    return row


def insert(s: Session, obj) -> None:
    """INSERT new ``obj`` (its primary key set) and make it persistent in ``s``."""
    state = inspect(obj)
    mapper = state.mapper
    row = row_of(obj)
    table = mapper.local_table
    key = tuple(row[col.key] for col in mapper.primary_key)
    if not heldrows.hold(s, table, key, row):  # (in a batch: inserted with its others)
        s.execute(statements.insert(table), row)
    for prop in mapper.column_attrs:  # its loaded state (no history: it is committed next)
        state.dict[prop.key] = row[prop.columns[0].key]
    make_transient_to_detached(obj)
    s.add(obj)
    orm.hold(s, obj)
    orm.written(s, obj)  # (a savepoint rolled back expires it: its row is gone)
