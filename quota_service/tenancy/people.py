"""Users, projects and their domains as decisions read them, kept in memory.

Every admission, release and queue pass reads the requester's user (with
their domain) and project, and every session record names them: as ORM
objects, read from the database each time, they were a third of the
service's CPU in an admission storm. These are read-only rows of the columns
those readers use (the attribute names of the ORM classes, so either serves
them), kept per database at the accounts' generation (``ledger_counters``
row ``tenancy``, which triggers move with every change to domains, projects,
users, memberships and keypairs: ``core/rowcache``). A change committed
before a transaction reads is seen by it, whoever made it.

They are for reading: code that changes a user or a project loads the ORM
object, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import rowcache, statements
from ..core.models import Domain, Project, User
from .keycache import TABLES



@dataclass(frozen=True, eq=False)
class DomainRow:
    id: int
    name: str
    active: bool
    total_resource_slots: dict
    allowed_vfolder_hosts: list
    allowed_images: list


@dataclass(frozen=True, eq=False)
class UserRow:
    id: int
    name: str
    domain_id: int
    role: object  # core.models.Role
    active: bool
    resource_policy: str
    domain: DomainRow


@dataclass(frozen=True, eq=False)
class ProjectRow:
    id: int
    domain_id: int
    name: str
    active: bool
    total_resource_slots: dict
    max_concurrent_sessions: int | None
    allowed_vfolder_hosts: list


_USER = (User.id, User.name, User.domain_id, User.role, User.active, User.resource_policy,
         Domain.id, Domain.name, Domain.active, Domain.total_resource_slots,
         Domain.allowed_vfolder_hosts, Domain.allowed_images)
_PROJECT = (Project.id, Project.domain_id, Project.name, Project.active,
            Project.total_resource_slots, Project.max_concurrent_sessions,
            Project.allowed_vfolder_hosts)


def _user_row(r) -> UserRow:
    return UserRow(r[0], r[1], r[2], r[3], r[4], r[5],
                   DomainRow(r[6], r[7], r[8], r[9] or {}, r[10] or [], r[11] or []))


def _project_row(r) -> ProjectRow:
    return ProjectRow(r[0], r[1], r[2], r[3], r[4] or {}, r[5], r[6] or [])


def _users(s: Session, where) -> list[UserRow]:
    return [_user_row(r) for r in s.execute(
        select(*_USER).join(Domain, Domain.id == User.domain_id).where(where))]


def _projects(s: Session, where) -> list[ProjectRow]:
    return [_project_row(r) for r in s.execute(select(*_PROJECT).where(where))]


def _cache(s: Session) -> rowcache.RowCache:
    return rowcache.of(s, "people", lambda: rowcache.RowCache("tenancy", TABLES))


def _one(rows: list):
    return rows[0] if rows else None


def user_named(s: Session, name: str) -> UserRow | None:
    return _cache(s).get(s, ("user", name), lambda: _one(_users(s, User.name == name)))


def user(s: Session, user_id: int) -> UserRow | None:
    return _cache(s).get(s, ("user#", user_id), lambda: _one(_users(s, User.id == user_id)))


def project_named(s: Session, domain_id: int, name: str) -> ProjectRow | None:
    return _cache(s).get(s, ("project", domain_id, name), lambda: _one(_projects(
        s, (Project.domain_id == domain_id) & (Project.name == name))))


def project(s: Session, project_id: int) -> ProjectRow | None:
    return _cache(s).get(s, ("project#", project_id),
                         lambda: _one(_projects(s, Project.id == project_id)))


def _by_ids(s: Session, kind: str, ids: Iterable[int], read) -> None:
    def load(keys: list) -> dict:
        found = {}
        wanted = [k[1] for k in keys]
        for chunk in statements.chunks(wanted):
            for row in read(chunk):
                found[(kind, row.id)] = row
        return found
    _cache(s).get_many(s, [(kind, i) for i in sorted(set(ids))], load)


def preload(s: Session, user_ids: Iterable[int], project_ids: Iterable[int]) -> None:
    """Read the users and projects of ``user_ids`` and ``project_ids`` that
    are not kept yet in one query each (a queue pass's requesters)."""
    _by_ids(s, "user#", user_ids, lambda chunk: _users(s, User.id.in_(chunk)))
    _by_ids(s, "project#", project_ids, lambda chunk: _projects(s, Project.id.in_(chunk)))


def warm(s: Session, limit: int) -> int:
    """Keep up to ``limit`` users (by id) and projects, each under the
    keys readers ask by, in one query each (a service's start:
    ``tenancy/warm``); how many rows were kept."""
    def load() -> dict:
        found: dict = {}
        for u in _users(s, User.id.in_(select(User.id).order_by(User.id).limit(limit)
                                         .scalar_subquery())):
            found[("user", u.name)] = found[("user#", u.id)] = u
        for p in _projects(s, Project.id.in_(select(Project.id).order_by(Project.id)
                                             .limit(limit).scalar_subquery())):
            found[("project", p.domain_id, p.name)] = found[("project#", p.id)] = p
        return found
    return _cache(s).fill(s, load) // 2
