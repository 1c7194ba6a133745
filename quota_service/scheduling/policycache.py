"""Resource policies as decisions read them, kept in memory.

Every ledger batch read the policies of its requesters once (a query per
policy and batch: in an admission storm a query for every other request).
These are read-only rows of every column of ``resource_policies`` (the
attribute names of ``ResourcePolicy``, so either serves a reader), kept per
database at the policies' generation (``ledger_counters`` row ``policies``,
which triggers move with every change to the table, whoever makes it:
migration 0023, ``core/rowcache``). A change committed before a transaction
reads is seen by it; a transaction that wrote to the policies reads them
from the database.

They are for reading: code that changes a policy loads the ORM object.
"""

from __future__ import annotations

from dataclasses import make_dataclass

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from ..core import rowcache
from ..core.models import ResourcePolicy

TABLES = frozenset({ResourcePolicy.__tablename__})
_ATTRS = tuple(p.key for p in inspect(ResourcePolicy).column_attrs)
_SELECT = select(*(getattr(ResourcePolicy, k) for k in _ATTRS))

#: one policy's columns, by ``ResourcePolicy``'s attribute names
PolicyRow = make_dataclass("PolicyRow", _ATTRS, frozen=True, eq=False)
PolicyRow.__module__ = __name__
PolicyRow.__doc__ = "A resource policy's columns, read-only (``policy``)."


def _cache(s: Session) -> rowcache.RowCache:
    return rowcache.of(s, "policies", lambda: rowcache.RowCache("policies", TABLES))


def _read(s: Session, name: str):
    row = s.execute(_SELECT.where(ResourcePolicy.name == name)).first()
    return PolicyRow(*row) if row is not None else None


def policy(s: Session, name: str):
    """The policy ``name`` as ``s``'s transaction sees it (a ``PolicyRow``),
    or None when there is none."""
    return _cache(s).get(s, name, lambda: _read(s, name))
