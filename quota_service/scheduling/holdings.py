"""What the users, projects and domain of one domain hold, read as columns.

Admission compares every level's limits with what that level holds: its
allocated amounts and sessions, and its pending ones. A domain may have
thousands of pending requests; ``domain_usage`` sums them from five columns
in one query (no ORM objects), so judging a request costs the same however
long the queue is.
"""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

from sqlalchemy import Text, cast, func, select
from sqlalchemy.orm import Session

from . import admission
from ..core import slots as slotlib
from ..core.models import Allocation

ACTIVE = ("pending", "allocated")

#: (level, id): ("user", user id), ("project", project id), ("domain", domain id)
Key = tuple[str, int]


@dataclasses.dataclass
class Held:
    """What one level holds."""

    used: dict[str, Decimal] = dataclasses.field(default_factory=dict)
    sessions: int = 0
    pending: dict[str, Decimal] = dataclasses.field(default_factory=dict)
    pending_sessions: int = 0

    def add(self, state: str, amounts: dict[str, Decimal], sign: int = 1) -> None:
        """Count ``sign`` allocations of ``amounts`` each (negative: remove them)."""
        signed = {k: v * sign for k, v in amounts.items()}
        if state == "allocated":
            self.used = slotlib.add(self.used, signed)
            self.sessions += sign
        elif state == "pending":
            self.pending = slotlib.add(self.pending, signed)
            self.pending_sessions += sign

    def usage(self, minus: dict[str, Decimal] | None = None) -> admission.Usage:
        """As admission sees it; ``minus``: a pending request's own amounts,
        left out of the pending (it is judged, not counted)."""
        if minus is None:
            return admission.Usage(dict(self.used), self.sessions, dict(self.pending),
                                   self.pending_sessions)
        pending = slotlib.add(self.pending, {k: -v for k, v in minus.items()})
        return admission.Usage(dict(self.used), self.sessions, pending,
                               self.pending_sessions - 1)


def keys(user_id: int, project_id: int, domain_id: int) -> tuple[Key, Key, Key]:
    return ("user", user_id), ("project", project_id), ("domain", domain_id)


def count(held: dict[Key, Held], user_id: int, project_id: int, domain_id: int, state: str,
          amounts: dict[str, Decimal], sign: int = 1) -> None:
    for key in keys(user_id, project_id, domain_id):
        held.setdefault(key, Held()).add(state, amounts, sign)


def domain_usage(s: Session, domain_id: int, exclude: str | None = None) -> dict[Key, Held]:
    """What every user, project and the domain hold (pending and allocated).
    Requests of the same size are counted by the database (as text: JSON
    has no equality in PostgreSQL), so a long queue of them is one row."""
    held: dict[Key, Held] = {}
    slots = cast(Allocation.slots, Text)
    columns = (Allocation.user_id, Allocation.project_id, Allocation.state, slots)
    q = (select(*columns, func.count()).where(Allocation.domain_id == domain_id,
                                              Allocation.state.in_(ACTIVE))
         .group_by(*columns))
    if exclude is not None:
        q = q.where(Allocation.id != exclude)
    for user_id, project_id, state, text, n in s.execute(q):
        count(held, user_id, project_id, domain_id, state, slotlib.from_text(json.loads(text)), n)
    return held
