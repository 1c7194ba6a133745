"""Small ORM helpers every manager shares: UTC times, ISO text, a flush that
answers a uniqueness race with 409, the user by name, and rows kept for a
whole transaction."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import event, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .errors import Conflict
from .models import User


def aware(t: dt.datetime | None) -> dt.datetime | None:
    """SQLite returns naive datetimes; they are UTC."""
    if t is not None and t.tzinfo is None:
        return t.replace(tzinfo=dt.timezone.utc)
    return t


def iso(t: dt.datetime | None) -> str | None:
    """An aware datetime as ISO 8601 text, or None."""
    t = aware(t)
    return t.isoformat() if t is not None else None


def flush(s: Session, conflict: str) -> None:
    """Flush, turning a uniqueness race into a 409 instead of a 500."""
    try:
        s.flush()
    except IntegrityError:
        raise Conflict(conflict) from None


def user_named(s: Session, name: str) -> User | None:
    """The user called ``name``, or None."""
    return s.scalar(select(User).where(User.name == name))


#: ``Session.info`` key: the objects the transaction keeps (``hold_loaded``)
_HELD = "hubgrid_held"


def hold_loaded(s: Session) -> None:
    """Keep every object ``s`` loads until its transaction ends. A session
    holds its objects weakly: a row one step of a batch read (a request's
    user, project, node) is gone when that step returns, and the next step
    that asks for it by key loads it again; a batch of requests would read
    the same rows many times over."""
    s.info.setdefault(_HELD, [])


@event.listens_for(Session, "loaded_as_persistent")
def _loaded(session, instance) -> None:
    hold(session, instance)


def hold(session: Session, instance) -> None:
    """Keep ``instance`` until ``session``'s transaction ends, when it holds
    what it loads (``hold_loaded``)."""
    held = session.info.get(_HELD)
    if held is not None:
        held.append(instance)


@event.listens_for(Session, "after_transaction_end")
def _released(session, transaction) -> None:
    if transaction.parent is None:
        session.info.pop(_HELD, None)


def written(session: Session, instance) -> None:
    """Tell ``session``'s transaction that ``instance``'s row was written
    without a flush (``rowinsert``, ``rowupdate``), as a flush would: a
    rollback of the transaction, or of the savepoint it was written in,
    expires the object, so what it holds is read again from the database
    instead of what was taken back. (SQLAlchemy has no public call for
    this: ``Session._register_altered`` is what its flush calls;
    tests/test_rowupdate.py fails if it stops doing so.)"""
    session._register_altered([inspect(instance)])
