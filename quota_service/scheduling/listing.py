"""Which allocations a caller lists: the caller's scope (``authz``), the
state and user asked for, and at most the ``limit`` that began or ended
last, all in the query, so a list costs what it returns rather than the
whole ledger.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core import authz
from ..core.authz import Principal
from ..core.errors import ApiError
from ..core.models import Allocation, Domain, User
from ..core.orm import aware
from .ledger import allocation_model

STATES = ("pending", "allocated", "released", "cancelled")


def parse_states(text: str | None) -> tuple[str, ...] | None:
    """``state``: one state or several, comma-separated; None for all."""
    if not text:
        return None
    states = tuple(dict.fromkeys(x.strip() for x in text.split(",")))
    bad = [x for x in states if x not in STATES]
    if bad:
        raise ApiError(f"state: {bad[0][:40]!r} is not one of {', '.join(STATES)}")
    return states


@dataclass(frozen=True)
class Listing:
    allocations: list[dict]
    #: how many there are in all (``limit`` may have left some out)
    total: int


def list_allocations(s: Session, p: Principal, states: tuple[str, ...] | None,
                     user: str | None, base_url: str = "/", limit: int | None = None) -> Listing:
    """The allocations ``p`` may see, oldest first: with ``limit``, only the
    ``limit`` that began or ended last (a long session that just ended is
    among the newest)."""
    q = select(Allocation).join(User, User.id == Allocation.user_id)
    domain, who = authz.session_listing_scope(p)
    if domain is not None:
        q = q.join(Domain, Domain.id == User.domain_id).where(Domain.name == domain)
    for name in (who, user):
        if name is not None:
            q = q.where(User.name == name)
    if states:
        q = q.where(Allocation.state.in_(states))
    total = None
    if limit is not None:
        total = s.scalar(select(func.count()).select_from(q.subquery()))
        latest = func.coalesce(Allocation.released_at, Allocation.created_at)
        q = q.order_by(latest.desc(), Allocation.created_at.desc(), Allocation.id.desc())
        rows = sorted(s.scalars(q.limit(limit)).all(), key=lambda a: (aware(a.created_at), a.id))
    else:
        rows = s.scalars(q.order_by(Allocation.created_at, Allocation.id)).all()
    out = [allocation_model(s, a, base_url) for a in rows]
    return Listing(out, len(out) if total is None else total)
