"""What the migrations that add a generation counter share: the counter's
row, the PostgreSQL function that moves it, and the triggers that call it.

A generation (core/generations.py) is a row of ``ledger_counters`` that the
database itself moves with every change to the tables a copy in memory was
read from. PostgreSQL gets one function per counter
(``hubgrid_bump_<counter>``) and one statement-level trigger per table, which
also fires on TRUNCATE; SQLite, which has neither, gets one row-level
trigger per event, named ``<trigger>_<insert|update|delete>``. The names are
the migrations' own (tests check that each trigger fires at head, and each
downgrade drops them by name).
"""

from __future__ import annotations

import secrets

from alembic import op

#: the row events a counter follows; an UPDATE may name its columns
#: (``UPDATE OF a, b``: a change to any other leaves the counter alone)
EVENTS = ("INSERT", "UPDATE", "DELETE")


def _bump(counter: str) -> str:
    return f"UPDATE ledger_counters SET value = value + 1 WHERE name = '{counter}'"


def _postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def add(counter: str) -> None:
    """The counter's row, at a random start: a database made again from
    nothing never repeats a generation that a service may still hold; on
    PostgreSQL, its function too."""
    op.execute(f"INSERT INTO ledger_counters (name, value) "
               f"VALUES ('{counter}', {secrets.randbits(48)})")
    if _postgres():
        op.execute(f"CREATE FUNCTION hubgrid_bump_{counter}() RETURNS trigger "
                   f"LANGUAGE plpgsql AS $$ BEGIN {_bump(counter)}; RETURN NULL; END $$")


def watch(counter: str, trigger: str, table: str, events: tuple[str, ...] = EVENTS) -> None:
    """Move ``counter`` with every ``events`` on ``table``."""
    if _postgres():
        op.execute(f"CREATE TRIGGER {trigger} AFTER {' OR '.join(events)} OR TRUNCATE "
                   f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION hubgrid_bump_{counter}()")
    else:
        for event in events:
            op.execute(f"CREATE TRIGGER {trigger}_{event.split()[0].lower()} AFTER {event} "
                       f"ON {table} BEGIN {_bump(counter)}; END")


def unwatch(trigger: str, table: str) -> None:
    if _postgres():
        op.execute(f"DROP TRIGGER {trigger} ON {table}")
    else:
        for event in EVENTS:
            op.execute(f"DROP TRIGGER {trigger}_{event.lower()}")


def drop(counter: str) -> None:
    """The counter's row, and its function on PostgreSQL (its triggers first)."""
    if _postgres():
        op.execute(f"DROP FUNCTION hubgrid_bump_{counter}()")
    op.execute(f"DELETE FROM ledger_counters WHERE name = '{counter}'")
