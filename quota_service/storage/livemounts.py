"""Folders mounted into a running session ("mount now"), and what is left
of them as permissions change.

A session whose spawner can (``Allocation.live_mounts``: a Docker session
on an engine of the hub's machine, spawner/livemounts.py) may have folders
mounted while it runs. The service checks each with the rules of a start
(``mounts.resolve`` over ``mounts.candidates``) and records it in the
allocation's ``mounts`` with ``"live": true``; the spawner reads the list
(``effective``) and applies it on the node.

Permissions are read again at every read, not only at the mount: a live
mount whose folder the user may no longer mount (a share revoked, the folder
moved to the trash or deleted, the project left) is no longer in the list,
and one whose permission became ro is ro, so the spawner unmounts or
remounts it read-only at its next look (and a dropped one stays dropped).
Folders mounted at the start stay
as Docker mounted them until the session ends.

``add`` and ``effective`` are pure; ``mount_now`` and ``current`` read and
write in the caller's transaction.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from ..core import authz
from ..core.authz import Principal
from ..core.errors import Conflict, Invalid
from ..core.models import Allocation, Project, User
from . import mounts
from .mounts import Candidate

#: why a session cannot have folders mounted while it runs
NOT_LIVE = ("this session cannot have folders mounted while it runs (its backend cannot: "
            "Slurm sessions and Docker engines on other machines): stop it and start it "
            "again with the folder in 'Folders to mount'")


def effective(mount_list: list[dict], candidates: list[Candidate]) -> list[dict]:
    """``mount_list`` as permissions stand now: each live mount of a folder
    still active among ``candidates`` (the folders the session's user may
    mount in its project), ro unless the user may write it now; live mounts
    of other folders left out. Mounts made at the start are kept as they are."""
    active = {c.id: c for c in candidates if c.active}
    out = []
    for m in mount_list:
        if not m.get("live"):
            out.append(m)
            continue
        c = active.get(m["folder"])
        if c is None:
            continue
        out.append({**m, "path": c.path, "mode": "ro" if c.perm == "ro" else "rw"})
    return out


def add(mount_list: list[dict], candidates: list[Candidate], folder: str) -> list[dict]:
    """``mount_list`` (as ``effective`` left it) with ``folder`` (a name or
    an id) mounted now, checked as a start checks it; Invalid or Conflict
    saying why not."""
    resolved = mounts.resolve(candidates, [folder])[0]  # the asked one comes first
    if any(m["folder"] == resolved["folder"] for m in mount_list):
        raise Conflict(f"vfolders: {resolved['name']!r} is mounted in this session already")
    if any(m["name"] == resolved["name"] for m in mount_list):
        raise Conflict(f"vfolders: another folder is mounted at {resolved['name']!r} in this "
                       "session: rename one")
    return [*mount_list, {**resolved, "live": True}]


def _context(s: Session, a: Allocation, hosts) -> list[Candidate]:
    user, project = s.get(User, a.user_id), s.get(Project, a.project_id)
    return mounts.candidates(s, user, project, hosts)


def current(s: Session, a: Allocation, hosts) -> list[dict]:
    """The allocation's mounts as permissions stand now (with host paths).
    A live mount whose permission is gone is dropped from the allocation
    too: a share given again later does not bring it back unasked."""
    if not any(m.get("live") for m in a.mounts or []):
        return list(a.mounts or [])
    out = effective(list(a.mounts or []), _context(s, a, hosts))
    if len(out) != len(a.mounts):
        kept = {m["folder"] for m in out}
        a.mounts = [m for m in a.mounts if m["folder"] in kept]
    return out


def mount_now(s: Session, p: Principal, a: Allocation, owner: str, owner_domain: str,
              folder: str, hosts) -> dict:
    """Mount ``folder`` into the running session ``a`` of ``owner``: its
    owner only; the new mount (no host path)."""
    authz.require_session_owner(p, owner, owner_domain)
    if a.state != "allocated":
        raise Conflict(f"session {a.id} is not running ({a.state})")
    if not a.live_mounts:
        raise Conflict(NOT_LIVE)
    if not isinstance(folder, str) or not folder:
        raise Invalid("vfolders: name the folder to mount ('folder')")
    updated = add(current(s, a, hosts), _context(s, a, hosts), folder)
    a.mounts = updated  # a new list: the JSON column sees the change
    return mounts.public(updated[-1:])[0]
