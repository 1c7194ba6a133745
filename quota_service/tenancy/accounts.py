"""Tenancy manager: domains, projects, memberships, users and keypairs.

Every function takes the open session of one transaction and the caller;
it checks the caller with ``authz``, reads and writes the ORM, and returns
plain JSON-able dicts. Nothing here knows about HTTP; the caller commits
(``db.transaction``), so a refusal leaves nothing behind.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import authz, db, keys
from ..core.orm import aware, flush, iso, user_named
from . import superadmins
from .policies import check_policy_within_domain, check_within_domain
from ..core.authz import Principal
from ..core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from ..core.models import Domain, Keypair, Membership, Project, Role, User
from ..core.schemas import (
    DomainCreate,
    DomainUpdate,
    KeypairCreate,
    KeypairUpdate,
    ProjectCreate,
    ProjectUpdate,
    UserCreate,
    UserUpdate,
    changes,
)




# --- serialisers -----------------------------------------------------------

def domain_model(d: Domain) -> dict:
    return {
        "name": d.name,
        "description": d.description,
        "active": d.active,
        "total_resource_slots": d.total_resource_slots,
        "allowed_vfolder_hosts": d.allowed_vfolder_hosts,
        "allowed_images": d.allowed_images,
        "allow_first_login": d.allow_first_login,
        "created_at": iso(d.created_at),
    }


def project_model(p: Project) -> dict:
    return {
        "domain": p.domain.name,
        "name": p.name,
        "description": p.description,
        "active": p.active,
        "total_resource_slots": p.total_resource_slots,
        "hub_group": hub_group_name(p.domain.name, p.name),
        "max_concurrent_sessions": p.max_concurrent_sessions,
        "max_vfolder_count": p.max_vfolder_count,
        "max_vfolder_size": p.max_vfolder_size,
        "allowed_vfolder_hosts": p.allowed_vfolder_hosts,
        "created_at": iso(p.created_at),
    }


def user_model(u: User) -> dict:
    return {
        "name": u.name,
        "domain": u.domain.name,
        "role": u.role.value,
        "active": u.active,
        "resource_policy": u.resource_policy,
        "projects": sorted(m.project.name for m in u.memberships),
        "created_at": iso(u.created_at),
    }


def keypair_model(k: Keypair) -> dict:
    return {
        "access_key": k.access_key,
        "user": k.user.name,
        "domain": k.user.domain.name,
        "resource_policy": k.resource_policy,
        "active": k.active,
        "expires_at": iso(k.expires_at),
        "last_used_at": iso(k.last_used_at),
        "created_at": iso(k.created_at),
    }


def hub_group_name(domain: str, project: str) -> str:
    """The JupyterHub group that mirrors a project."""
    return f"{domain}.{project}"


# --- lookups ---------------------------------------------------------------

def _domain(s: Session, name: str) -> Domain | None:
    return s.scalar(select(Domain).where(Domain.name == name))



def _project(s: Session, domain: str, name: str) -> Project | None:
    return s.scalar(
        select(Project).join(Domain).where(Domain.name == domain, Project.name == name)
    )


def visible_domain(s: Session, p: Principal, name: str) -> Domain:
    authz.require_see_domain(p, name)
    d = _domain(s, name)
    if d is None:
        raise NotFound(f"domain {name!r} not found")
    return d


def visible_project(s: Session, p: Principal, domain: str, name: str) -> Project:
    authz.require_see_project(p, domain, name)
    proj = _project(s, domain, name)
    if proj is None:
        raise NotFound(f"project {domain}/{name} not found")
    return proj


def visible_user(s: Session, p: Principal, name: str) -> User:
    u = user_named(s, name)
    if u is None:
        raise NotFound(f"user {name!r} not found")
    if not authz.can_see_user(p, name, u.domain.name):
        raise Hidden(f"user {name!r} not found")
    return u



# --- principals ------------------------------------------------------------

def principal_for(s: Session, user: User, credential: str) -> Principal:
    """The caller behind a hub token or keypair; inactive ones are refused."""
    return caller(user.name, user.role, user.active, user.domain.name, user.domain.active,
                  (m.project.name for m in user.memberships), credential)


def caller(name: str, role: Role, active: bool, domain: str, domain_active: bool,
           projects, credential: str) -> Principal:
    """The caller a user's row makes (``projects``: the names of the
    projects they are a member of); an inactive user or domain is refused."""
    if not active:
        raise Denied(f"user {name!r} is inactive")
    if not domain_active:
        raise Denied(f"domain {domain!r} is inactive")
    return Principal(name=name, role=role, domain=domain,
                     projects=frozenset((domain, project) for project in projects),
                     credential=credential)


def principal_for_hub_user(s: Session, name: str) -> Principal:
    """``principal_for`` the hub user ``name``, read in one query of narrow
    rows (the user with their domain, a row per project), no objects: the
    hub's spawners ask for it with every start, hundreds at once when a
    class presses Start."""
    rows = s.execute(select(User.role, User.active, Domain.name, Domain.active, Project.name)
                     .join(Domain, Domain.id == User.domain_id)
                     .outerjoin(Membership, Membership.user_id == User.id)
                     .outerjoin(Project, Project.id == Membership.project_id)
                     .where(User.name == name)).all()
    if not rows:
        raise Denied(
            f"user {name!r} is not registered in hubgrid: log in to the hub once, "
            "or ask an admin to add you"
        )
    role, active, domain, domain_active, _ = rows[0]
    projects = [project for *_, project in rows if project is not None]
    return caller(name, role, active, domain, domain_active, projects, "token")


def me(s: Session, p: Principal) -> dict:
    u = user_named(s, p.name)
    model = user_model(u)
    model["credential"] = p.credential
    model["projects"] = [
        project_model(m.project) for m in sorted(u.memberships, key=lambda m: m.project.name)
    ]
    model["domain_detail"] = domain_model(u.domain)
    return model


# --- domains ---------------------------------------------------------------

def list_domains(s: Session, p: Principal) -> list[dict]:
    q = select(Domain).order_by(Domain.name)
    if not p.is_superadmin:
        q = q.where(Domain.name == p.domain)
    return [domain_model(d) for d in s.scalars(q)]


def get_domain(s: Session, p: Principal, name: str) -> dict:
    return domain_model(visible_domain(s, p, name))


def create_domain(s: Session, p: Principal, body: DomainCreate) -> dict:
    authz.require_manage_domains(p)
    if _domain(s, body.name) is not None:
        raise Conflict(f"domain {body.name!r} already exists")
    d = Domain(**body.model_dump())
    s.add(d)
    flush(s, f"domain {body.name!r} already exists")
    return domain_model(d)


def update_domain(s: Session, p: Principal, name: str, body: DomainUpdate) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    d = visible_domain(s, p, name)
    authz.require_manage_domains(p)
    change = changes(body)
    if change.get("active") is False and d.name == p.domain:
        raise Denied("you may not deactivate your own domain: it would lock you out")
    for key, value in change.items():
        setattr(d, key, value)
    s.flush()
    if change.get("active") is False:
        superadmins.require_one_left(s, f"deactivating domain {name!r}")
    return domain_model(d)


def delete_domain(s: Session, p: Principal, name: str) -> None:
    d = visible_domain(s, p, name)
    authz.require_manage_domains(p)
    if d.users:
        raise Conflict(
            f"domain {name!r} still has {len(d.users)} user(s): move or delete them first"
        )
    s.delete(d)
    s.flush()


# --- projects --------------------------------------------------------------

def list_projects(s: Session, p: Principal, domain: str | None = None) -> list[dict]:
    q = select(Project).join(Domain).order_by(Domain.name, Project.name)
    if domain is not None:
        q = q.where(Domain.name == domain)
    return [
        project_model(proj)
        for proj in s.scalars(q)
        if authz.can_see_project(p, proj.domain.name, proj.name)
    ]


def get_project(s: Session, p: Principal, domain: str, name: str) -> dict:
    return project_model(visible_project(s, p, domain, name))


def create_project(s: Session, p: Principal, domain: str, body: ProjectCreate) -> dict:
    d = visible_domain(s, p, domain)
    authz.require_administer(p, domain, "create projects in it")
    check_within_domain(p, d, body.total_resource_slots, f"project {body.name}")
    if _project(s, domain, body.name) is not None:
        raise Conflict(f"project {domain}/{body.name} already exists")
    proj = Project(domain=d, **body.model_dump())
    s.add(proj)
    flush(s, f"project {domain}/{body.name} already exists")
    return project_model(proj)


def update_project(
    s: Session, p: Principal, domain: str, name: str, body: ProjectUpdate
) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    proj = visible_project(s, p, domain, name)
    authz.require_administer(p, domain, "change its projects")
    change = changes(body)
    if "total_resource_slots" in change:
        check_within_domain(p, proj.domain, change["total_resource_slots"], f"project {name}")
    for key, value in change.items():
        setattr(proj, key, value)
    s.flush()
    return project_model(proj)


def delete_project(s: Session, p: Principal, domain: str, name: str) -> None:
    proj = visible_project(s, p, domain, name)
    authz.require_administer(p, domain, "delete its projects")
    s.delete(proj)
    flush(s, f"project {domain}/{name} has sessions in the ledger's history: deactivate it instead")


# --- memberships -----------------------------------------------------------

def list_members(s: Session, p: Principal, domain: str, project: str) -> list[dict]:
    proj = visible_project(s, p, domain, project)
    return [
        {"user": m.user.name, "role": m.user.role.value, "active": m.user.active}
        for m in sorted(proj.memberships, key=lambda m: m.user.name)
    ]


def add_member(s: Session, p: Principal, domain: str, project: str, user: str) -> bool:
    """Add ``user`` to the project; True if newly added (False: already was)."""
    proj = visible_project(s, p, domain, project)
    authz.require_administer(p, domain, "change project members")
    u = visible_user(s, p, user)
    if u.domain_id != proj.domain_id:
        raise Conflict(
            f"user {user!r} belongs to domain {u.domain.name!r}; "
            f"project {domain}/{project} is in domain {domain!r}"
        )
    if any(m.project_id == proj.id for m in u.memberships):
        return False
    s.add(Membership(user=u, project=proj))
    flush(s, f"user {user!r} is already a member of {domain}/{project}")
    return True


def remove_member(s: Session, p: Principal, domain: str, project: str, user: str) -> None:
    proj = visible_project(s, p, domain, project)
    authz.require_administer(p, domain, "change project members")
    for m in proj.memberships:
        if m.user.name == user:
            s.delete(m)
            s.flush()
            return
    raise NotFound(f"user {user!r} is not a member of {domain}/{project}")


# --- users -----------------------------------------------------------------

def list_users(s: Session, p: Principal, domain: str | None = None) -> list[dict]:
    scope = authz.user_listing_scope(p)
    q = select(User).join(Domain).order_by(User.name)
    if scope is not None:
        if domain is not None and domain != scope:
            raise Hidden(f"domain {domain!r} not found")
        domain = scope
    if domain is not None:
        q = q.where(Domain.name == domain)
    return [user_model(u) for u in s.scalars(q)]


def get_user(s: Session, p: Principal, name: str) -> dict:
    return user_model(visible_user(s, p, name))


def create_user(s: Session, p: Principal, body: UserCreate) -> dict:
    d = visible_domain(s, p, body.domain)
    authz.require_create_user(p, body.domain, body.role)
    if user_named(s, body.name) is not None:
        raise Conflict(f"user {body.name!r} already exists")
    u = User(name=body.name, domain=d, role=body.role, active=body.active)
    s.add(u)
    flush(s, f"user {body.name!r} already exists")
    return user_model(u)


def update_user(s: Session, p: Principal, name: str, body: UserUpdate) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    u = visible_user(s, p, name)
    change = changes(body)
    authz.require_change_user(p, u.domain.name, u.role, change)
    was_superadmin = authz.is_superadmin_role(u.role)
    if "domain" in change and change["domain"] != u.domain.name:
        d = visible_domain(s, p, change["domain"])
        # memberships never cross domains: moving a user ends them
        for m in list(u.memberships):
            s.delete(m)
        u.domain = d
    if "role" in change:
        u.role = change["role"]
    if "active" in change:
        u.active = change["active"]
    if "resource_policy" in change:
        check_policy_within_domain(s, p, u.domain, change["resource_policy"])
        u.resource_policy = change["resource_policy"]
    s.flush()
    if was_superadmin:
        superadmins.require_one_left(s, superadmins.describe(name, change))
    s.refresh(u)
    return user_model(u)


def delete_user(s: Session, p: Principal, name: str) -> str:
    """Delete a user (memberships and keypairs with it); returns its domain."""
    u = visible_user(s, p, name)
    domain = u.domain.name
    authz.require_delete_user(p, domain, u.role)
    if u.name == p.name:
        raise Denied("you may not delete yourself")
    was_superadmin = authz.is_superadmin_role(u.role)
    s.delete(u)
    flush(s, f"user {name!r} has sessions in the ledger's history: deactivate them instead")
    if was_superadmin:
        superadmins.require_one_left(s, f"deleting superadmin {name!r}")
    return domain


# --- login (called by the hub's authenticator) ----------------------------

def resolve_login(
    s: Session, name: str, default_domain: str | None, default_project: str | None = None
) -> User:
    """The user logging in; created in ``default_domain`` on first login.

    A user created here joins ``default_project`` of that domain, if it exists.
    Refuses (Denied, with a message for the login page) unknown users when
    the default domain does not allow first-login users, inactive users and
    users of inactive domains.
    """
    from ..core.names import check_user_name

    try:
        check_user_name(name)
    except ValueError as e:
        raise Denied(str(e)) from None
    u = user_named(s, name)
    if u is None:
        d = _domain(s, default_domain) if default_domain else None
        if d is None or not d.allow_first_login or not d.active:
            raise Denied(
                f"user {name!r} is not registered in hubgrid; ask an admin to add you"
            )
        u = User(name=name, domain=d, role=Role.user, active=True)
        s.add(u)
        flush(s, f"user {name!r} already exists")
        project = _project(s, d.name, default_project) if default_project else None
        if project is not None:  # new users start in the default project
            s.add(Membership(user=u, project=project))
            s.flush()
    if not u.active:
        raise Denied(f"user {name!r} is deactivated; ask an admin of your domain")
    if not u.domain.active:
        raise Denied(f"domain {u.domain.name!r} is deactivated")
    return u


def identity(s: Session, u: User) -> dict:
    """What the hub needs to know of a user: domain, role, projects, groups.

    ``hub_groups`` are the groups the user is in (the domain's group and one
    per project); ``domain_hub_groups``, for domain admins, every group of
    their domain, to which their hub role is filtered.
    """
    domain = u.domain.name
    projects = sorted(m.project.name for m in u.memberships)
    model = {
        "name": u.name,
        "domain": domain,
        "role": u.role.value,
        "active": u.active,
        "admin": authz.is_superadmin_role(u.role),
        "domain_admin": authz.is_domain_admin_role(u.role),
        "projects": projects,
        "hub_groups": [domain] + [hub_group_name(domain, p) for p in projects],
        "domain_hub_groups": [],
    }
    if model["domain_admin"]:
        model["domain_hub_groups"] = [domain] + [
            hub_group_name(domain, p.name) for p in sorted(u.domain.projects, key=lambda p: p.name)
        ]
    return model


def identity_of(s: Session, name: str) -> dict:
    """The identity of an existing, active user (Denied otherwise)."""
    u = user_named(s, name)
    if u is None:
        raise Denied(f"user {name!r} is not registered in hubgrid")
    principal_for(s, u, "token")  # refuses inactive users and domains
    return identity(s, u)


# --- keypairs --------------------------------------------------------------

def list_keypairs(s: Session, p: Principal, user: str | None = None) -> list[dict]:
    owner = visible_user(s, p, user or p.name)
    authz.require_manage_keypairs_of(p, owner.name, owner.domain.name, owner.role)
    return [keypair_model(k) for k in sorted(owner.keypairs, key=lambda k: k.created_at)]


def _visible_keypair(s: Session, p: Principal, access_key: str) -> Keypair:
    k = s.scalar(select(Keypair).where(Keypair.access_key == access_key))
    if k is None:
        raise NotFound(f"keypair {access_key!r} not found")
    if not authz.can_manage_keypairs_of(p, k.user.name, k.user.domain.name, k.user.role):
        raise Hidden(f"keypair {access_key!r} not found")
    return k


def get_keypair(s: Session, p: Principal, access_key: str) -> dict:
    return keypair_model(_visible_keypair(s, p, access_key))


def create_keypair(
    s: Session, p: Principal, body: KeypairCreate, now: dt.datetime
) -> dict:
    owner = visible_user(s, p, body.user or p.name)
    authz.require_manage_keypairs_of(p, owner.name, owner.domain.name, owner.role)
    if body.resource_policy is not None:
        authz.require_set_resource_policy(p, owner.domain.name)
        check_policy_within_domain(s, p, owner.domain, body.resource_policy)
    if body.expires_at is not None and aware(body.expires_at) <= now:
        raise Invalid("expires_at: must be in the future")
    access_key, secret = keys.new_keypair()
    k = Keypair(
        access_key=access_key,
        secret_hash=keys.hash_secret(secret),
        user=owner,
        resource_policy=body.resource_policy or owner.resource_policy,
        expires_at=body.expires_at,
        created_at=now,
    )
    s.add(k)
    flush(s, "access key collision, try again")
    model = keypair_model(k)
    model["secret_key"] = secret  # shown once, never stored
    return model


def update_keypair(
    s: Session, p: Principal, access_key: str, body: KeypairUpdate, now: dt.datetime
) -> dict:
    """Change a keypair; ``"expires_at": null`` clears the expiry."""
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    k = _visible_keypair(s, p, access_key)
    change = changes(body)
    expiry_given = "expires_at" in body.model_fields_set
    if expiry_given:
        change["expires_at"] = body.expires_at
        if body.expires_at is not None and aware(body.expires_at) <= now:
            raise Invalid("expires_at: must be in the future")
    current = aware(k.expires_at) if k.expires_at is not None else None
    authz.require_change_keypair(p, k.user.domain.name, change, current, expiry_given)
    if "resource_policy" in change:
        check_policy_within_domain(s, p, k.user.domain, change["resource_policy"])
    for key, value in change.items():
        setattr(k, key, value)
    s.flush()
    return keypair_model(k)


def delete_keypair(s: Session, p: Principal, access_key: str) -> str:
    """Delete a keypair; returns its owner's domain."""
    k = _visible_keypair(s, p, access_key)
    domain = k.user.domain.name
    s.delete(k)
    s.flush()
    return domain


