"""Columns of one loaded ORM object written with one plain UPDATE.

A session's end sets five columns of its allocation: the ORM's unit of work
for that one object (its flush: history of every attribute set, dependency
sorting, the state bookkeeping after) cost several times the UPDATE itself,
about a twentieth of the service in a storm (``rowinsert`` did the same for
the start's INSERT). ``update`` runs one UPDATE of the row by its primary key
through the session, so what watches a session's statements sees it
(``generations`` marks the table written, ``db.writes`` counts it, and the
statement says what it changed: ``CHANGE``, which ``waiters`` reads), then
gives the object those values as its loaded state: nothing is read back,
nothing is left to flush. As after a flush, a rollback of the savepoint or
transaction it was written in expires the object (``orm.written``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, inspect
from sqlalchemy import update as sql_update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from . import heldrows, orm

#: execution option of an ``update``: the ``Change`` it makes
CHANGE = "hubgrid_row_change"


@dataclass(frozen=True)
class Change:
    """What one ``update`` changed: the row (its table and primary key) and
    each column's value before and after."""

    table: str
    key: tuple
    before: dict[str, Any]
    after: dict[str, Any]

    def changed(self, column: str) -> bool:
        return column in self.after and self.before.get(column) != self.after[column]


#: (mapper, the attributes it sets) -> its UPDATE, with parameters: made once
#: (building a statement and its cache key cost more than running it)
_STATEMENTS: dict = {}
#: mapper -> its column attributes' columns, by attribute (made once too)
_COLUMNS: dict = {}


def _columns(mapper) -> dict:
    columns = _COLUMNS.get(mapper)
    if columns is None:
        columns = _COLUMNS[mapper] = {p.key: p.columns[0] for p in mapper.column_attrs}
    return columns


def _statement(mapper, names: tuple[str, ...], columns: dict):
    stmt = _STATEMENTS.get((mapper, names))
    if stmt is None:
        table = mapper.local_table
        stmt = _STATEMENTS[(mapper, names)] = sql_update(table).where(*(
            col == bindparam(f"k{i}", type_=col.type)
            for i, col in enumerate(mapper.primary_key))).values({
                columns[k].key: bindparam(f"v_{k}", type_=columns[k].type) for k in names})
    return stmt


def update(s: Session, obj, values: dict[str, Any]) -> Change:
    """Set ``values`` (attribute -> value) of persistent ``obj`` with one
    UPDATE of its row; they are then its loaded values. Raises ValueError
    for an attribute that is not one of its mapped columns."""
    state = inspect(obj)
    mapper = state.mapper
    columns = _columns(mapper)
    unknown = set(values) - columns.keys()
    if unknown:
        raise ValueError(f"{mapper.class_.__name__} has no column {', '.join(sorted(unknown))}")
    key = state.identity
    if key is None:
        raise ValueError(f"{mapper.class_.__name__} is not persistent: nothing to update")
    change = Change(mapper.local_table.name, key,
                    {k: state.dict.get(k) for k in values}, dict(values))
    names = tuple(sorted(values))
    params = {**{f"k{i}": v for i, v in enumerate(key)},
              **{f"v_{k}": values[k] for k in names}}
    stmt = _statement(mapper, names, columns)
    # in a ledger batch, held to run with the batch's others (``heldrows``);
    # run now, a held write of the row goes first, another row's stays held
    if not heldrows.hold_update(s, mapper.local_table, key, stmt, params, change):
        unrelated = not heldrows.holds(s, mapper.local_table, key)
        s.execute(stmt, params, execution_options={CHANGE: change, heldrows.UNRELATED: unrelated})
    for k, v in values.items():
        set_committed_value(obj, k, v)
    orm.written(s, obj)  # (a savepoint rolled back expires it)
    return change
