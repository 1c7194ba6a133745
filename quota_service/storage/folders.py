"""Virtual folders: per-user and per-project storage.

Same shape as ``tenancy.accounts``: functions over one session and the caller, plain
dicts out, refusals as ApiErrors; the caller commits (``db.transaction``), so
a refusal leaves no row -- and no directory: a folder's directory is made
last and removed again if its transaction rolls back; a purged folder's tree
is deleted only once the row's deletion has committed.

Who may do what with a folder (``permission_of``):

- the owner of a user folder: ``wd`` (read, write, delete);
- members of a project, on the project's folders: the folder's
  ``project_permission`` (chosen at creation);
- users a folder is shared with (an accepted invitation): the permission the
  inviter chose;
- admins of the folder's domain and superadmins: ``wd`` (they manage every
  folder of their domain);
- anybody else: nothing, and the folder answers 404 as if it did not exist.

``read`` needs ro, ``write`` rw, ``delete`` (and renaming, trashing,
restoring, purging, sharing) wd. A trashed folder is invisible (404) except
to those with wd, who may list, restore or purge it.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sqlalchemy import case, event, func, or_, select
from sqlalchemy.orm import Session

from . import hosts as storage
from ..core.authz import Principal
from ..core.errors import Conflict, Denied, Hidden, Invalid, Unavailable
from ..core.foldermodels import VFolder, VFolderShare
from ..core.models import Domain, Project, User
from ..scheduling.ledger import policy_of
from ..core.orm import flush, iso, user_named

PERMISSIONS = ("ro", "rw", "wd")
RANK = {"ro": 1, "rw": 2, "wd": 3}
#: what each need requires
NEEDS = {"read": "ro", "write": "rw", "delete": "wd"}
USAGE_MODES = ("general", "data", "model")
STATUSES = ("active", "trashed")
FOLDER_ID = re.compile(r"[0-9a-f]{32}")


class StorageUnavailable(Unavailable):
    """The folder's storage host is not configured or its directory is gone."""

    reason = "storage-unavailable"


@dataclass(frozen=True)
class FolderAccess:
    """What a caller may do with one folder, and where its files are."""

    folder_id: str
    name: str
    #: absolute directory holding the folder's files (exists)
    root: Path
    #: directory on the same filesystem as root, outside every folder, for partial uploads
    staging: Path
    #: "ro" | "rw" | "wd": what the caller may do
    perm: str
    #: "user:<name>" or "project:<domain>/<project>": folders sharing one size limit
    quota_key: str
    #: bytes for all folders of quota_key together; None: unlimited
    size_limit: int | None
    #: cached usage of all folders of quota_key, bytes
    used: int


# --- transaction outcomes ------------------------------------------------------

def on_outcome(s: Session, *, commit: Callable[[], None] | None = None,
               rollback: Callable[[], None] | None = None) -> None:
    """Run ``commit`` after the session's transaction commits, or
    ``rollback`` after it rolls back -- once, whichever comes first."""
    pending = s.info.get(_OUTCOME)
    if pending is None:
        pending = s.info[_OUTCOME] = []
        event.listen(s, "after_commit", lambda session: _settle(session, 0))
        event.listen(s, "after_rollback", lambda session: _settle(session, 1))
    pending.append((commit, rollback))


_OUTCOME = "hubgrid_on_outcome"


def _settle(s: Session, which: int) -> None:
    pending, s.info[_OUTCOME] = s.info.get(_OUTCOME, []), []
    for actions in pending:
        if actions[which] is not None:
            actions[which]()


# --- reading --------------------------------------------------------------------

def folder_domain(s: Session, f: VFolder) -> Domain:
    if f.owner_user_id is not None:
        return s.get(User, f.owner_user_id).domain
    return s.get(Project, f.owner_project_id).domain


def owner_model(s: Session, f: VFolder) -> dict:
    if f.owner_user_id is not None:
        u = s.get(User, f.owner_user_id)
        return {"kind": "user", "user": u.name, "domain": u.domain.name}
    proj = s.get(Project, f.owner_project_id)
    return {"kind": "project", "project": proj.name, "domain": proj.domain.name}


def quota_key(s: Session, f: VFolder) -> str:
    owner = owner_model(s, f)
    if owner["kind"] == "user":
        return f"user:{owner['user']}"
    return f"project:{owner['domain']}/{owner['project']}"


def permission_of(s: Session, p: Principal, f: VFolder) -> str | None:
    """The caller's permission on ``f`` (None: they may not see it), whatever its status."""
    domain = folder_domain(s, f)
    if p.administers(domain.name):
        return "wd"
    if p.domain != domain.name:
        return None
    if f.owner_project_id is not None:
        proj = s.get(Project, f.owner_project_id)
        return f.project_permission if (domain.name, proj.name) in p.projects else None
    owner = s.get(User, f.owner_user_id)
    if owner.name == p.name:
        return "wd"
    share = s.scalar(select(VFolderShare).join(User, VFolderShare.user_id == User.id)
                     .where(VFolderShare.folder_id == f.id, User.name == p.name))
    return share.permission if share is not None else None


def _not_found(folder_id: str) -> Hidden:
    shown = folder_id if len(folder_id) <= 40 else folder_id[:40] + "..."
    return Hidden(f"vfolder {shown!r} not found")


def find(s: Session, p: Principal, folder_id: str, *, trashed: bool | None = False
         ) -> tuple[VFolder, str]:
    """The folder and the caller's permission; Hidden when they cannot see it.

    ``trashed``: False (the default) -- only active folders; True -- only
    trashed ones (restore, purge); None -- either. A trashed folder is seen
    only by those holding wd on it."""
    f = s.get(VFolder, folder_id) if FOLDER_ID.fullmatch(folder_id) else None
    if f is None:
        raise _not_found(folder_id)
    perm = permission_of(s, p, f)
    if perm is None or (f.status == "trashed" and perm != "wd"):
        raise _not_found(folder_id)
    if trashed is not None and (f.status == "trashed") != trashed:
        if trashed:
            raise Conflict(f"vfolder {f.name!r} is not in the trash")
        raise _not_found(folder_id)
    return f, perm


def require(perm: str, need: str, f: VFolder) -> None:
    """Denied (403) unless ``perm`` covers ``need`` (read | write | delete)."""
    if RANK[perm] < RANK[NEEDS[need]]:
        raise Denied(f"your permission on vfolder {f.name!r} is {perm}: "
                     f"{need} needs {NEEDS[need]}")


def owner_limits(s: Session, f_or_owner) -> tuple[int | None, int | None, str]:
    """(max folder count, max total bytes, where they come from) of an owner
    (a User or a Project). A user's resource policy that does not exist
    allows nothing (as in admission)."""
    if isinstance(f_or_owner, Project):
        return (f_or_owner.max_vfolder_count, f_or_owner.max_vfolder_size,
                f"project {f_or_owner.domain.name}/{f_or_owner.name}")
    pol = policy_of(s, f_or_owner.resource_policy)
    if pol is None:
        return 0, 0, f"resource policy {f_or_owner.resource_policy!r} (missing)"
    return pol.max_vfolder_count, pol.max_vfolder_size, f"resource policy {pol.name!r}"


def _owner_filter(owner):
    if isinstance(owner, Project):
        return VFolder.owner_project_id == owner.id
    return VFolder.owner_user_id == owner.id


def owner_of(s: Session, f: VFolder) -> User | Project:
    if f.owner_user_id is not None:
        return s.get(User, f.owner_user_id)
    return s.get(Project, f.owner_project_id)


def total_usage(s: Session, owner: User | Project) -> int:
    """Cached bytes of every folder of ``owner`` (trashed ones too)."""
    return int(s.scalar(select(func.coalesce(func.sum(VFolder.usage_bytes), 0))
                        .where(_owner_filter(owner))))


def folder_count(s: Session, owner: User | Project) -> int:
    """Folders of ``owner`` that count against max_vfolder_count: all not
    purged, trashed ones included."""
    return int(s.scalar(select(func.count()).select_from(VFolder).where(_owner_filter(owner))))


def host_of(hosts: dict[str, storage.Host], f: VFolder) -> storage.Host:
    host = hosts.get(f.host)
    if host is None:
        raise StorageUnavailable(f"storage host {f.host!r} of vfolder {f.name!r} is not "
                                 "configured; ask an admin")
    return host


def access(s: Session, p: Principal, folder_id: str, need: str,
           hosts: dict[str, storage.Host]) -> FolderAccess:
    """What the caller may do with an active folder, and where its files are.

    need: "read" | "write" | "delete". Hidden (404) when the caller cannot
    see the folder (also when it is in the trash), Denied (403) when they see
    it but lack the permission; StorageUnavailable (503) when its host is
    not configured or its directory is missing."""
    if need not in NEEDS:
        raise ValueError(f"need must be one of {', '.join(NEEDS)}")
    f, perm = find(s, p, folder_id)
    require(perm, need, f)
    return _reach(s, f, perm, hosts)


def access_published(s: Session, folder_id: str, hosts: dict[str, storage.Host]
                     ) -> FolderAccess:
    """A model folder published in the Model Store, as an endpoint deployed
    from it reaches it: read only, with no permission of the caller's own
    (who may deploy is the publication's rule, ``serving/store.py``).
    Hidden (404) when it is gone (in the trash or purged)."""
    f = s.get(VFolder, folder_id) if FOLDER_ID.fullmatch(folder_id) else None
    if f is None or f.status == "trashed":
        raise Hidden("the published model folder is gone (in the trash or purged); "
                     "ask an admin")
    return _reach(s, f, "ro", hosts)


def _reach(s: Session, f: VFolder, perm: str, hosts: dict[str, storage.Host]
           ) -> FolderAccess:
    host = host_of(hosts, f)
    root = host.folder_dir(f.id)
    if not root.is_dir():
        raise StorageUnavailable(f"the directory of vfolder {f.name!r} is missing on host "
                                 f"{f.host!r}; ask an admin")
    owner = owner_of(s, f)
    _count, size, _source = owner_limits(s, owner)
    return FolderAccess(folder_id=f.id, name=f.name, root=root, staging=host.staging,
                        perm=perm, quota_key=quota_key(s, f), size_limit=size,
                        used=total_usage(s, owner))


def add_usage(s: Session, folder_id: str, delta: int) -> None:
    """Keep the cached usage right after a write (delta > 0) or a delete
    (delta < 0); never below 0. The next scan corrects any drift."""
    s.execute(VFolder.__table__.update().where(VFolder.id == folder_id).values(
        usage_bytes=case((VFolder.usage_bytes + delta < 0, 0),
                         else_=VFolder.usage_bytes + delta)))


def measure(s: Session, folder_id: str, hosts: dict[str, storage.Host],
            now: dt.datetime) -> int | None:
    """Scan a folder's tree and cache its usage; None when its host or
    directory is gone (the cache is left as it was)."""
    f = s.get(VFolder, folder_id)
    host = hosts.get(f.host) if f is not None else None
    if host is None or not host.folder_dir(f.id).is_dir():
        return None
    f.usage_bytes = storage.measure(host.folder_dir(f.id))
    f.usage_measured_at = now
    s.flush()
    return f.usage_bytes


# --- models ----------------------------------------------------------------------

def folder_model(s: Session, f: VFolder, perm: str) -> dict:
    return {
        "id": f.id,
        "name": f.name,
        "host": f.host,
        "owner": owner_model(s, f),
        "usage_mode": f.usage_mode,
        "permission": perm,
        "project_permission": f.project_permission,
        "status": f.status,
        "auto_mount": f.name.startswith("."),
        "usage_bytes": f.usage_bytes,
        "usage_measured_at": iso(f.usage_measured_at),
        "created_at": iso(f.created_at),
        "trashed_at": iso(f.trashed_at),
    }


# --- hosts -------------------------------------------------------------------------

def allowed_hosts(s: Session, domain: Domain, configured, *, user: User | None = None,
                  project: Project | None = None) -> list[str]:
    """The configured hosts a folder may be made on: the union of the
    domain's, the project's (a project folder) or the user's projects' (a
    user folder) and the user's resource policy's ``allowed_vfolder_hosts``.
    An empty list adds nothing; when every list is empty, every configured
    host is allowed."""
    union = set(domain.allowed_vfolder_hosts or [])
    if project is not None:
        union |= set(project.allowed_vfolder_hosts or [])
    if user is not None:
        pol = policy_of(s, user.resource_policy)
        if pol is not None:
            union |= set(pol.allowed_vfolder_hosts or [])
        for m in user.memberships:
            union |= set(m.project.allowed_vfolder_hosts or [])
    return sorted(set(configured) & union if union else set(configured))


def list_hosts(s: Session, p: Principal, hosts: dict[str, storage.Host]) -> list[dict]:
    """The hosts the caller may make folders on, with their capabilities;
    superadmins: every host, with its path."""
    if p.is_superadmin:
        return [storage.host_model(h, True) for _n, h in sorted(hosts.items())]
    user = user_named(s, p.name)
    names = allowed_hosts(s, user.domain, hosts, user=user)
    return [storage.host_model(hosts[n], False) for n in names]


# --- the verbs -------------------------------------------------------------------

def _project_of(s: Session, p: Principal, text: str) -> Project:
    """``name`` (in the caller's domain) or ``domain/name``, visible to the caller."""
    domain, _, name = text.rpartition("/")
    domain = domain or p.domain
    proj = s.scalar(select(Project).join(Domain).where(Domain.name == domain,
                                                       Project.name == name))
    if proj is None or not (p.administers(domain) or (domain, name) in p.projects):
        raise Hidden(f"project {domain}/{name} not found")
    return proj


@dataclass(frozen=True)
class Storage:
    """What creating a folder needs besides the database."""

    hosts: dict[str, storage.Host]
    default_host: str = "local"
    uid: int | None = None
    gid: int | None = None
    quota: storage.QuotaApplier | None = None


def create(s: Session, p: Principal, body, now: dt.datetime, st: Storage) -> dict:
    """A new folder of the caller (or, for admins, of a project), its
    directory made last; refused past the owner's max_vfolder_count."""
    if body.project is not None:
        project = _project_of(s, p, body.project)
        if not p.administers(project.domain.name):
            raise Denied(f"only an admin of domain {project.domain.name!r} may create "
                         "project folders")
        owner, domain = project, project.domain
        names = allowed_hosts(s, domain, st.hosts, project=project)
        permission = body.permission or "rw"
    else:
        if body.permission is not None:
            raise Invalid("permission: only project folders take a permission "
                          "(share user folders by invitation)")
        owner = user_named(s, p.name)
        domain = owner.domain
        names = allowed_hosts(s, domain, st.hosts, user=owner)
        permission = None
    host_name = body.host or st.default_host
    if host_name not in names:
        raise Invalid(f"host: storage host {host_name!r} is not available to you "
                      f"(available: {', '.join(names) or 'none'})")
    max_count, max_size, source = owner_limits(s, owner)
    have = folder_count(s, owner)
    if max_count is not None and have >= max_count:
        whose = f"project {domain.name}/{owner.name}" if isinstance(owner, Project) \
            else f"user {owner.name}"
        raise Invalid(f"vfolder count limit reached: {whose} has {have} folder(s), at most "
                      f"{max_count} ({source}; trashed folders count until purged)")
    where = f"project {domain.name}/{owner.name}" if isinstance(owner, Project) else "you"
    if s.scalar(select(VFolder.id).where(_owner_filter(owner), VFolder.name == body.name)):
        raise Conflict(f"{where} already have a vfolder named {body.name!r}"
                       if where == "you" else f"{where} already has a vfolder named {body.name!r}")
    f = VFolder(id=uuid.uuid4().hex, name=body.name, host=host_name,
                owner_user_id=owner.id if isinstance(owner, User) else None,
                owner_project_id=owner.id if isinstance(owner, Project) else None,
                usage_mode=body.usage_mode, project_permission=permission, status="active",
                created_at=now, usage_bytes=0, usage_measured_at=now)
    s.add(f)
    flush(s, f"a vfolder named {body.name!r} was just created; choose another name")
    host = st.hosts[host_name]
    folder_dir = storage.make_folder_dir(host, f.id, st.uid, st.gid)
    on_outcome(s, rollback=lambda: storage.remove_tree(host, f.id))
    if st.quota is not None:
        st.quota.new_folder(host, folder_dir, quota_key(s, f), owner.id, max_size)
    return folder_model(s, f, permission_of(s, p, f))


def list_folders(s: Session, p: Principal, status: str | None = None,
                 project: str | None = None) -> list[dict]:
    """Every folder the caller sees: their own, their projects', those shared
    with them; a domain admin every folder of the domain; a superadmin all.
    ``status``: active (default), trashed or all (trashed ones only where
    the caller holds wd); ``project``: only that project's folders."""
    if status not in (None, "active", "trashed", "all"):
        raise Invalid("status: must be active, trashed or all")
    status = status or "active"
    q = select(VFolder).order_by(VFolder.name, VFolder.id)
    if project is not None:
        q = q.where(VFolder.owner_project_id == _project_of(s, p, project).id)
    if not p.is_superadmin:
        q = q.outerjoin(User, VFolder.owner_user_id == User.id).outerjoin(
            Project, VFolder.owner_project_id == Project.id)
        domain = s.scalar(select(Domain).where(Domain.name == p.domain))
        q = q.where(or_(User.domain_id == domain.id, Project.domain_id == domain.id))
        if not p.administers(p.domain):
            me = user_named(s, p.name)
            shared = select(VFolderShare.folder_id).where(VFolderShare.user_id == me.id)
            mine = [proj.id for proj in s.scalars(select(Project).where(
                Project.domain_id == domain.id)) if (p.domain, proj.name) in p.projects]
            q = q.where(or_(VFolder.owner_user_id == me.id, VFolder.owner_project_id.in_(mine),
                            VFolder.id.in_(shared)))
    if status != "all":
        q = q.where(VFolder.status == status)
    out = []
    for f in s.scalars(q):
        perm = permission_of(s, p, f)
        if perm is None or (f.status == "trashed" and perm != "wd"):
            continue
        out.append(folder_model(s, f, perm))
    return out


def get(s: Session, p: Principal, folder_id: str) -> dict:
    """One folder (active, or trashed for those holding wd)."""
    f, perm = find(s, p, folder_id, trashed=None)
    return folder_model(s, f, perm)


def rename(s: Session, p: Principal, folder_id: str, name: str) -> dict:
    f, perm = find(s, p, folder_id)
    require(perm, "delete", f)
    if name != f.name:
        owner = owner_of(s, f)
        if s.scalar(select(VFolder.id).where(_owner_filter(owner), VFolder.name == name)):
            raise Conflict(f"the owner of vfolder {f.name!r} already has a vfolder named {name!r}")
        f.name = name
        flush(s, f"a vfolder named {name!r} was just created; choose another name")
    return folder_model(s, f, perm)


def trash(s: Session, p: Principal, folder_id: str, now: dt.datetime) -> str:
    """Move a folder to the trash (its files stay until purged); returns its domain.
    Running sessions keep their mounts; new sessions no longer get it."""
    f, perm = find(s, p, folder_id)
    require(perm, "delete", f)
    f.status, f.trashed_at = "trashed", now
    s.flush()
    return folder_domain(s, f).name


def restore(s: Session, p: Principal, folder_id: str) -> dict:
    f, perm = find(s, p, folder_id, trashed=True)
    require(perm, "delete", f)
    f.status, f.trashed_at = "active", None
    s.flush()
    return folder_model(s, f, perm)


def purge(s: Session, p: Principal, folder_id: str, hosts: dict[str, storage.Host]) -> str:
    """Delete a trashed folder for good: its row now, its directory tree once
    that has committed. Returns its domain."""
    f, perm = find(s, p, folder_id, trashed=True)
    require(perm, "delete", f)
    domain = folder_domain(s, f).name
    host = hosts.get(f.host)
    s.delete(f)
    s.flush()
    if host is not None:
        fid = f.id
        on_outcome(s, commit=lambda: storage.remove_tree(host, fid))
    return domain
