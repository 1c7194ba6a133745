"""The Domains and projects page's totals: what a domain and each of its
projects hold now (running and pending, per slot) next to their limits,
with member counts and folder limits. Admins of the domain only."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from . import accounts
from ..core import authz
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.models import Membership, Project
from ..scheduling import holdings


def _figures(held: holdings.Held | None, limits: dict) -> dict:
    held = held or holdings.Held()
    return {"limits": limits, "used": slotlib.to_text(held.used), "sessions": held.sessions,
            "pending": slotlib.to_text(held.pending), "pending_sessions": held.pending_sessions}


def domain_totals(s: Session, p: Principal, domain: str) -> dict:
    """The domain's and its projects' use against their limits."""
    d = accounts.visible_domain(s, p, domain)
    authz.require_administer(p, domain, "read its totals")
    held = holdings.domain_usage(s, d.id)
    members = dict(s.execute(select(Membership.project_id, func.count())
                             .join(Project, Project.id == Membership.project_id)
                             .where(Project.domain_id == d.id)
                             .group_by(Membership.project_id)).all())
    projects = []
    for proj in sorted(d.projects, key=lambda x: x.name):
        projects.append({
            "name": proj.name, "active": proj.active,
            **_figures(held.get(("project", proj.id)), proj.total_resource_slots),
            "max_concurrent_sessions": proj.max_concurrent_sessions,
            "members": members.get(proj.id, 0),
            "max_vfolder_count": proj.max_vfolder_count,
            "max_vfolder_size": proj.max_vfolder_size,
            "allowed_vfolder_hosts": proj.allowed_vfolder_hosts,
        })
    return {"domain": d.name, "active": d.active,
            **_figures(held.get(("domain", d.id)), d.total_resource_slots),
            "users": len(d.users), "allowed_vfolder_hosts": d.allowed_vfolder_hosts,
            "projects": projects}
