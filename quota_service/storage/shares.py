"""Sharing virtual folders: invitations and shares.

A user folder is shared by invitation with users of its domain: whoever
holds wd on it (its owner, an invitee given wd, an admin of the domain)
invites a user with ro, rw or wd; the invitee accepts (a share is made with
that permission) or rejects; the inviter (or an admin) cancels a pending
invitation. A share is revoked by whoever holds wd on the folder, or left by
its user. Project folders are shared through project membership instead.

Invitations are seen by their inviter and invitee and by the admins of the
folder's domain; anyone else gets 404.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import folders
from ..core.authz import Principal
from ..core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from ..core.foldermodels import VFolder, VFolderInvitation, VFolderShare
from ..core.models import User
from ..core.orm import flush, iso, user_named

STATES = ("pending", "accepted", "rejected", "canceled")


def invitation_model(s: Session, inv: VFolderInvitation) -> dict:
    f = s.get(VFolder, inv.folder_id)
    return {
        "id": inv.id,
        "folder": f.id,
        "folder_name": f.name,
        "owner": folders.owner_model(s, f),
        "inviter": s.get(User, inv.inviter_id).name,
        "invitee": s.get(User, inv.invitee_id).name,
        "permission": inv.permission,
        "state": inv.state,
        "created_at": iso(inv.created_at),
        "updated_at": iso(inv.updated_at),
    }


def share_model(s: Session, share: VFolderShare) -> dict:
    return {"user": s.get(User, share.user_id).name, "permission": share.permission,
            "created_at": iso(share.created_at)}


def invite(s: Session, p: Principal, folder_id: str, body, now: dt.datetime) -> dict:
    """Invite ``body.user`` (of the folder's domain) with ``body.permission``."""
    f, perm = folders.find(s, p, folder_id)
    folders.require(perm, "delete", f)
    if f.owner_project_id is not None:
        raise Invalid("project folders are shared with the project's members: add the user "
                      "to the project instead")
    owner = s.get(User, f.owner_user_id)
    invitee = user_named(s, body.user)
    if invitee is None or invitee.domain_id != owner.domain_id:
        # one answer for unknown users and users of other domains: no leak
        raise Invalid(f"user: no user {body.user!r} in domain {owner.domain.name!r}")
    if invitee.id == owner.id:
        raise Invalid(f"user: {body.user!r} owns vfolder {f.name!r}")
    if invitee.name == p.name:
        raise Invalid("user: you cannot invite yourself")
    share = s.scalar(select(VFolderShare).where(VFolderShare.folder_id == f.id,
                                                VFolderShare.user_id == invitee.id))
    if share is not None:
        raise Conflict(f"vfolder {f.name!r} is already shared with {body.user!r} "
                       f"({share.permission}); revoke the share to change it")
    if s.scalar(select(VFolderInvitation.id).where(
            VFolderInvitation.folder_id == f.id, VFolderInvitation.invitee_id == invitee.id,
            VFolderInvitation.state == "pending")):
        raise Conflict(f"{body.user!r} already has a pending invitation to vfolder {f.name!r}")
    inviter = user_named(s, p.name)
    inv = VFolderInvitation(id=uuid.uuid4().hex, folder_id=f.id, inviter_id=inviter.id,
                            invitee_id=invitee.id, permission=body.permission, state="pending",
                            created_at=now, updated_at=now)
    s.add(inv)
    flush(s, "an invitation was made at the same time; try again")
    return invitation_model(s, inv)


def list_invitations(s: Session, p: Principal, direction: str | None = None,
                     state: str | None = None) -> list[dict]:
    """The caller's invitations: received (default) or sent; ``state`` narrows."""
    if direction not in (None, "received", "sent"):
        raise Invalid("direction: must be received or sent")
    if state is not None and state not in STATES:
        raise Invalid(f"state: must be one of {', '.join(STATES)}")
    me = user_named(s, p.name)
    column = VFolderInvitation.inviter_id if direction == "sent" else VFolderInvitation.invitee_id
    q = select(VFolderInvitation).where(column == me.id).order_by(
        VFolderInvitation.created_at, VFolderInvitation.id)
    if state is not None:
        q = q.where(VFolderInvitation.state == state)
    return [invitation_model(s, inv) for inv in s.scalars(q)]


def _invitation(s: Session, p: Principal, invitation_id: str) -> VFolderInvitation:
    inv = s.get(VFolderInvitation, invitation_id) \
        if folders.FOLDER_ID.fullmatch(invitation_id) else None
    if inv is not None:
        names = {s.get(User, inv.inviter_id).name, s.get(User, inv.invitee_id).name}
        domain = folders.folder_domain(s, s.get(VFolder, inv.folder_id)).name
        if p.name in names or p.administers(domain):
            return inv
    shown = invitation_id if len(invitation_id) <= 40 else invitation_id[:40] + "..."
    raise Hidden(f"invitation {shown!r} not found")


def _pending(inv: VFolderInvitation) -> None:
    if inv.state != "pending":
        raise Conflict(f"the invitation is {inv.state}, not pending")


def _as_invitee(s: Session, p: Principal, inv: VFolderInvitation, verb: str) -> None:
    if s.get(User, inv.invitee_id).name != p.name:
        raise Denied(f"only the invitee may {verb} an invitation")


def accept(s: Session, p: Principal, invitation_id: str, now: dt.datetime) -> dict:
    """The invitee accepts: the folder is shared with them."""
    inv = _invitation(s, p, invitation_id)
    _as_invitee(s, p, inv, "accept")
    _pending(inv)
    f = s.get(VFolder, inv.folder_id)
    if f.status != "active":
        raise Conflict(f"vfolder {f.name!r} is in the trash; it cannot be accepted now")
    inv.state, inv.updated_at = "accepted", now
    s.add(VFolderShare(folder_id=f.id, user_id=inv.invitee_id, permission=inv.permission,
                       created_at=now))
    flush(s, f"vfolder {f.name!r} is already shared with you")
    return invitation_model(s, inv)


def reject(s: Session, p: Principal, invitation_id: str, now: dt.datetime) -> dict:
    inv = _invitation(s, p, invitation_id)
    _as_invitee(s, p, inv, "reject")
    _pending(inv)
    inv.state, inv.updated_at = "rejected", now
    s.flush()
    return invitation_model(s, inv)


def cancel(s: Session, p: Principal, invitation_id: str, now: dt.datetime) -> str:
    """The inviter (or an admin of the folder's domain) withdraws a pending
    invitation; returns the folder's domain."""
    inv = _invitation(s, p, invitation_id)
    f = s.get(VFolder, inv.folder_id)
    domain = folders.folder_domain(s, f).name
    if s.get(User, inv.inviter_id).name != p.name and not p.administers(domain):
        raise Denied("only the inviter may cancel an invitation (the invitee rejects it)")
    _pending(inv)
    inv.state, inv.updated_at = "canceled", now
    s.flush()
    return domain


def list_shares(s: Session, p: Principal, folder_id: str) -> list[dict]:
    """Who a folder is shared with (for those who may change it: wd)."""
    f, perm = folders.find(s, p, folder_id)
    folders.require(perm, "delete", f)
    shares = s.scalars(select(VFolderShare).join(User, VFolderShare.user_id == User.id)
                       .where(VFolderShare.folder_id == f.id).order_by(User.name))
    return [share_model(s, x) for x in shares]


def revoke(s: Session, p: Principal, folder_id: str, user: str) -> str:
    """End a share: by whoever holds wd on the folder, or by its user
    (leaving). Running sessions keep their mount until they end. Returns
    the folder's domain."""
    f, perm = folders.find(s, p, folder_id)
    if user != p.name:
        folders.require(perm, "delete", f)
    share = s.scalar(select(VFolderShare).join(User, VFolderShare.user_id == User.id)
                     .where(VFolderShare.folder_id == f.id, User.name == user))
    if share is None:
        raise NotFound(f"vfolder {f.name!r} is not shared with {user!r}")
    s.delete(share)
    s.flush()
    return folders.folder_domain(s, f).name
