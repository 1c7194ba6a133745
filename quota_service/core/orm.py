"""Small ORM helpers every manager shares: UTC times, ISO text, a flush that
answers a uniqueness race with 409, and the user by name."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
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
