"""There is always an active superadmin: the guard, and the repair at start.

A superadmin counts when they are active and their domain is active (the
service refuses everyone else as a caller). Every change that can take the
last one away -- a demotion, a deactivation, a move into an inactive
domain, a deletion, deactivating their domain -- calls ``require_one_left``
after making the change (flushed) and before committing, and is refused
with a 409 when none would remain.

Race-free only under the ledger lock (``db.ledger_transaction``): two
superadmins demoting each other at once are then decided one after the
other, and the second sees the first's change. The handlers that make such
changes use it.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..core import authz
from ..core.errors import Conflict
from ..core.models import Domain, Membership, Project, Role, User


def active_count(s: Session) -> int:
    """How many superadmins may act now (active, in an active domain)."""
    return s.scalar(
        select(func.count()).select_from(User).join(Domain, User.domain_id == Domain.id)
        .where(User.role == Role.superadmin, User.active.is_(True), Domain.active.is_(True))
    )


def require_one_left(s: Session, change: str) -> None:
    """Refuse ``change`` (already flushed in ``s``) if it leaves no active superadmin."""
    s.flush()
    if active_count(s) == 0:
        raise Conflict(
            f"{change} would leave no active superadmin, and nobody could administer "
            "hubgrid any more: make another user superadmin first"
        )


def describe(name: str, change: dict) -> str:
    """What a user update does to superadmin ``name``, in words."""
    verbs = []
    if "role" in change and not authz.is_superadmin_role(change["role"]):
        verbs.append(f"making superadmin {name!r} a {change['role'].value}")
    if change.get("active") is False:
        verbs.append(f"deactivating superadmin {name!r}")
    if "domain" in change and not verbs:
        verbs.append(f"moving superadmin {name!r} to domain {change['domain']!r} (inactive)")
    return " and ".join(verbs) or f"changing superadmin {name!r}"


def restore(s: Session, name: str, domain: Domain, project: str | None) -> str | None:
    """At start: if no superadmin may act, make ``name`` one (created in
    ``domain`` and its ``project`` if new; re-activated if deactivated).
    Returns what was done, for the log, or None if nothing was needed."""
    if not name or active_count(s) > 0:
        return None
    user = s.scalar(select(User).where(User.name == name))
    if user is None:
        user = User(name=name, domain=domain, role=Role.superadmin)
        s.add(user)
        p = s.scalar(select(Project).where(Project.domain_id == domain.id, Project.name == project)
                     ) if project else None
        if p is not None:
            s.add(Membership(user=user, project=p))
        s.flush()
        return f"created {name} as the superadmin (there was no active one)"
    user.role, user.active = Role.superadmin, True
    if not user.domain.active:
        # a superadmin of an inactive domain still could not act: move them home
        for m in list(user.memberships):
            s.delete(m)
        user.domain = domain
    s.flush()
    return f"made {name} an active superadmin (there was no active one)"
