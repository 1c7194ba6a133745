"""Writes a ledger batch holds back and runs together, before anything
could read what they change.

Every admission of a batch inserts its allocation (``rowinsert``) and every
end updates one (``rowupdate``): one statement, one round trip to
PostgreSQL (and its parse and plan there) per request, a third of the
service's CPU in an admission storm. In a batch without savepoints
(``core/groupcommit``), ``hold`` and ``hold_update`` keep them instead, and
``release`` runs all that are held: one INSERT per table, then one
executemany per UPDATE statement. What a held write changes is never missed:

- any other statement the session runs that may read a held table or the
  counters its triggers move (``do_orm_execute``: a SELECT, a lazy load,
  text SQL, whose tables cannot be told) releases the held writes first, so
  it sees them as if they had been run at once; so does a flush with
  anything to write (``before_flush``);
- ``rowupdate`` of a row with a write still held releases them first; one
  of another row is held too, or goes ahead (``UNRELATED``: it cannot read
  the held rows);
- a held write counts as a write (``db.writes``) and marks its table
  written (``generations``), exactly as running it would;
- the batch releases what is left after its last write, before its later
  rows (which may refer to them) and before it reads what to keep.

A release that fails (a constraint) fails the write that was running then,
as a database error: its batch runs again with a savepoint per write, where
nothing is held and the row's own write fails alone. Statements run
directly on the connection (``laterrows``, a key's last use) do not release
them: they never read the held tables.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, TextClause, event
from sqlalchemy.orm import Session
from sqlalchemy.sql.util import find_tables

from . import db, generations, statements

KEY = "hubgrid_held_rows"
#: execution option of a statement that cannot read the held rows (an UPDATE
#: of another row by its key: ``rowupdate``): they stay held
UNRELATED = "hubgrid_unrelated_to_held"
#: execution option of a released UPDATE's executemany: what each of its
#: rows was held with (``hold_update``'s ``note``), in order
NOTES = "hubgrid_held_notes"


class _Held:
    """What one transaction holds: new rows by table, then UPDATEs by
    statement, and the (table, key) of every row either touches."""

    __slots__ = ("inserts", "updates", "keys", "tables")

    def __init__(self) -> None:
        self.inserts: dict[Table, list[dict]] = {}
        self.updates: dict[Any, list[tuple[dict, Any]]] = {}
        self.keys: set[tuple[str, tuple]] = set()
        self.tables: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.keys)

    def _add(self, s: Session, table: Table, key: tuple) -> None:
        self.keys.add((table.name, key))
        self.tables.add(table.name)
        db.count_write(s)
        generations.mark_written(s, {table.name})


def start(s: Session) -> None:
    """Hold the rows ``hold`` is given in ``s``'s transaction until ``release``."""
    s.info[KEY] = _Held()


def hold(s: Session, table: Table, key: tuple, row: dict) -> bool:
    """Keep new ``row`` (of ``table``, primary key ``key``) to insert later,
    if ``s`` holds rows (else False: the caller inserts it now)."""
    held = s.info.get(KEY)
    if held is None:
        return False
    held.inserts.setdefault(table, []).append(row)
    held._add(s, table, key)
    return True


def hold_update(s: Session, table: Table, key: tuple, stmt, params: dict, note) -> bool:
    """Keep an UPDATE of row ``key`` of ``table`` (``stmt`` with ``params``)
    to run later with the others of ``stmt``, if ``s`` holds rows and holds
    nothing of that row yet (else False: the caller runs it now, which
    releases what is held first: ``UNRELATED`` only when it holds nothing
    of that row)."""
    held = s.info.get(KEY)
    if held is None or (table.name, key) in held.keys:
        return False
    held.updates.setdefault(stmt, []).append((params, note))
    held._add(s, table, key)
    return True


def holds(s: Session, table: Table, key: tuple) -> bool:
    """Whether row ``key`` of ``table`` has a write held, not yet run."""
    held = s.info.get(KEY)
    return bool(held) and (table.name, key) in held.keys


def release(s: Session) -> int:
    """Run every held write now: the new rows (one INSERT a table), then the
    UPDATEs (one executemany a statement); how many rows."""
    held = s.info.get(KEY)
    if not held:
        return 0
    s.info[KEY] = _Held()  # (before running: its own statements release nothing)
    before, n = db.writes(s), 0
    for table, rows in held.inserts.items():
        s.execute(statements.insert(table), rows)
        n += len(rows)
    for stmt, updates in held.updates.items():
        s.execute(stmt, [params for params, _ in updates],
                  execution_options={NOTES: [note for _, note in updates]})
        n += len(updates)
    # (counted when held: a write that only read them, then raised, wrote nothing)
    db.counted_already(s, before)
    return n


def stop(s: Session) -> int:
    """``release`` and hold nothing more in ``s``'s transaction."""
    n = release(s)
    s.info.pop(KEY, None)
    return n


#: tables the triggers of held tables write (the counters of ``generations``):
#: reading them reads what the held rows change too
MOVED_BY_TRIGGERS = frozenset({"ledger_counters"})


def _may_read(statement, held) -> bool:
    """Whether ``statement`` may read a held table (or what its triggers
    move): yes unless every table it names is another (text SQL names none
    that can be told: yes)."""
    if isinstance(statement, TextClause):
        return True
    names = {table.name for table in find_tables(statement, include_crud=True)}
    return not names or not names.isdisjoint(MOVED_BY_TRIGGERS | held.tables)


@event.listens_for(Session, "do_orm_execute")
def _before_statement(state) -> None:
    held = state.session.info.get(KEY)
    if held and not state.execution_options.get(UNRELATED) and _may_read(state.statement, held):
        release(state.session)


@event.listens_for(Session, "before_flush")
def _before_flush(session, _context, _instances) -> None:
    if session.info.get(KEY) and (session.new or session.dirty or session.deleted):
        release(session)
