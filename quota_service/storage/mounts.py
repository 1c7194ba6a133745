"""Which vfolders a session mounts.

``resolve`` is pure: from the folders a user may mount in a project (plain
records) and the names or ids the session asks for, the mount list, or an
Invalid naming what is wrong. ``candidates`` reads those records in the
ledger's transaction.

A session mounts the folders it asks for, plus every dot-folder (a name
starting with '.') it may mount. It may mount its user's own folders, the
folders of the session's project (not of the user's other projects) and
folders shared with the user -- active ones only; admins get no more than
anybody else. A folder is mounted read-only when the user's permission is
ro, else read-write.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from ..core.errors import Invalid
from ..core.foldermodels import VFolder, VFolderShare
from ..core.models import Project, User

#: when two dot-folders would mount at one name, the first kind wins
PRECEDENCE = ("own", "project", "shared")


@dataclass(frozen=True)
class Candidate:
    id: str
    name: str
    #: the directory on the storage host
    path: str
    perm: str  # ro | rw | wd
    kind: str  # own | project | shared
    active: bool = True


def _short(text: str) -> str:
    return repr(text if len(text) <= 64 else text[:64] + "...")


def resolve(candidates: list[Candidate], requested: list[str]) -> list[dict]:
    """``[{"folder", "name", "path", "mode"}]``: the requested folders in
    their order, then the dot-folders not asked for, by name."""
    active = [c for c in candidates if c.active]
    chosen: list[Candidate] = []
    for item in requested:
        by_id = [c for c in active if c.id == item]
        matches = by_id or [c for c in active if c.name == item]
        if not matches:
            if any(c.id == item or c.name == item for c in candidates):
                raise Invalid(f"vfolders: {_short(item)} is in the trash: restore it to mount it")
            raise Invalid(f"vfolders: no vfolder {_short(item)} you may mount in this project")
        if len(matches) > 1:
            ids = ", ".join(sorted(c.id for c in matches))
            raise Invalid(f"vfolders: {_short(item)} names {len(matches)} folders you may mount "
                          f"({ids}): ask for one by its id")
        folder = matches[0]
        if folder in chosen:
            raise Invalid(f"vfolders: {_short(folder.name)} is asked for twice")
        clash = next((c for c in chosen if c.name == folder.name), None)
        if clash is not None:
            raise Invalid(f"vfolders: two folders would mount at {_short(folder.name)} "
                          f"({clash.id}, {folder.id}): rename one")
        chosen.append(folder)
    taken = {c.name for c in chosen}
    auto = sorted((c for c in active if c.name.startswith(".") and c not in chosen),
                  key=lambda c: (c.name, PRECEDENCE.index(c.kind), c.id))
    for c in auto:
        if c.name not in taken:
            chosen.append(c)
            taken.add(c.name)
    return [{"folder": c.id, "name": c.name, "path": c.path,
             "mode": "ro" if c.perm == "ro" else "rw"} for c in chosen]


def candidates(s: Session, user: User, project: Project, hosts) -> list[Candidate]:
    """The folders ``user`` may mount in a session of ``project`` (trashed
    ones too, marked, so a refusal can say so). Folders on hosts no longer
    configured are left out."""
    out: dict[str, Candidate] = {}

    def add(f: VFolder, perm: str, kind: str) -> None:
        host = hosts.get(f.host)
        if host is None or f.id in out:
            return
        out[f.id] = Candidate(f.id, f.name, str(host.folder_dir(f.id)), perm, kind,
                              f.status == "active")

    # one query for the three kinds (every start asks: a class pressing Start
    # at once paid three statements a start); a folder of several kinds
    # counts as the first of own, project, shared
    same_domain = project.domain_id == user.domain_id
    mine = [VFolder.owner_user_id == user.id, VFolderShare.user_id.is_not(None)]
    if same_domain:
        mine.append(VFolder.owner_project_id == project.id)
    rows = s.execute(select(VFolder, VFolderShare.permission).outerjoin(
        VFolderShare, and_(VFolderShare.folder_id == VFolder.id,
                           VFolderShare.user_id == user.id)).where(or_(*mine))).all()
    for kind in PRECEDENCE:
        for f, perm in rows:
            if kind == "own" and f.owner_user_id == user.id:
                add(f, "wd", "own")
            elif kind == "project" and same_domain and f.owner_project_id == project.id:
                add(f, f.project_permission or "ro", "project")
            elif kind == "shared" and perm is not None:
                owner = s.get(User, f.owner_user_id) if f.owner_user_id is not None else None
                if owner is None or owner.domain_id == user.domain_id:
                    add(f, perm, "shared")
    return sorted(out.values(), key=lambda c: (c.name, c.id))


def public(mounts: list[dict]) -> list[dict]:
    """The mounts as users see them: no host paths; ``live`` marks a
    folder mounted while the session ran (storage/livemounts.py)."""
    return [{"folder": m["folder"], "name": m["name"], "mode": m["mode"],
             **({"live": True} if m.get("live") else {})} for m in mounts]
