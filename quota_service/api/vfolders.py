"""REST handlers for virtual folders, their invitations and shares (issue #5).

The files inside a folder are served by ``handlers/files.py``
(``vfolders/{id}/files``, ``upload``, ``download``, ``tus``, ``mkdir``, ``move``).
"""

from __future__ import annotations

from ..core import db
from ..storage import folders, shares
from ..core.schemas import InvitationCreate, VFolderCreate, VFolderUpdate, parse
from .base import APIHandler


class HostsHandler(APIHandler):
    resource = "vfolder-host"

    def get(self):
        """The storage hosts the caller may make folders on, with their capabilities."""
        with self.transaction() as s:
            self.finish_json(folders.list_hosts(s, self.principal,
                                                 self.service.vfolder_hosts_resolved))


class FoldersHandler(APIHandler):
    resource = "vfolder"
    bodies = {"post": VFolderCreate}
    queries = {"get": {"status": "active (default), trashed or all",
                       "project": "only this project's folders (name or domain/name)"}}

    def get(self):
        """The folders the caller may see."""
        with self.transaction() as s:
            self.finish_json(folders.list_folders(
                s, self.principal, self.get_query_argument("status", None),
                self.get_query_argument("project", None)))

    def post(self):
        """Create a folder (refused past the owner's max_vfolder_count)."""
        body = parse(VFolderCreate, self.json_body())
        self.audit_target = body.name
        # the ledger lock serialises creates: two cannot both take the last place
        with db.ledger_transaction(self.service.session_factory) as s:
            model = folders.create(s, self.principal, body, self.now(),
                                    self.service.vfolder_storage)
        self.audit_target, self.audit_domain = model["id"], model["owner"]["domain"]
        self.created(model, self.service.api_url("vfolders", model["id"]))


class FolderHandler(APIHandler):
    resource = "vfolder"
    bodies = {"patch": VFolderUpdate}

    def get(self, folder_id):
        """One folder (a trashed one only for those holding wd)."""
        self.audit_target = folder_id
        with self.transaction() as s:
            self.finish_json(folders.get(s, self.principal, folder_id))

    def patch(self, folder_id):
        """Rename a folder (wd); its files and mounts stay where they are."""
        self.audit_target = folder_id
        body = parse(VFolderUpdate, self.json_body())
        with self.transaction() as s:
            model = folders.rename(s, self.principal, folder_id, body.name)
        self.audit_domain = model["owner"]["domain"]
        self.finish_json(model)

    def delete(self, folder_id):
        """Move a folder to the trash (wd); restore or purge it later."""
        self.audit_target = folder_id
        with self.transaction() as s:
            self.audit_domain = folders.trash(s, self.principal, folder_id, self.now())
        self.no_content()


class RestoreHandler(APIHandler):
    resource = "vfolder"
    success = {"post": "200"}

    def post(self, folder_id):
        """Take a folder out of the trash (wd)."""
        self.audit_target = folder_id
        with self.transaction() as s:
            model = folders.restore(s, self.principal, folder_id)
        self.audit_domain = model["owner"]["domain"]
        self.finish_json(model)

    def audit_action(self, method: str) -> str:
        return "vfolder.restore"


class PurgeHandler(APIHandler):
    resource = "vfolder"
    success = {"post": "204"}

    def post(self, folder_id):
        """Delete a trashed folder and its files for good (wd)."""
        self.audit_target = folder_id
        with self.transaction() as s:
            self.audit_domain = folders.purge(s, self.principal, folder_id,
                                               self.service.vfolder_hosts_resolved)
        self.no_content()

    def audit_action(self, method: str) -> str:
        return "vfolder.purge"


class FolderInvitationsHandler(APIHandler):
    resource = "vfolder-invitation"
    bodies = {"post": InvitationCreate}

    def post(self, folder_id):
        """Invite a user of the folder's domain (wd on a user folder)."""
        self.audit_target = folder_id
        body = parse(InvitationCreate, self.json_body())
        with self.transaction() as s:
            model = shares.invite(s, self.principal, folder_id, body, self.now())
        self.audit_target = f"{folder_id}:{model['invitee']}"
        self.audit_domain = model["owner"]["domain"]
        self.created(model, self.service.api_url("invitations", model["id"]))


class SharesHandler(APIHandler):
    resource = "vfolder-share"

    def get(self, folder_id):
        """Who the folder is shared with, and how (wd)."""
        self.audit_target = folder_id
        with self.transaction() as s:
            self.finish_json(shares.list_shares(s, self.principal, folder_id))


class ShareHandler(APIHandler):
    resource = "vfolder-share"

    def delete(self, folder_id, user):
        """Revoke a share (wd), or leave it (its user)."""
        self.audit_target = f"{folder_id}:{user}"
        with self.transaction() as s:
            self.audit_domain = shares.revoke(s, self.principal, folder_id, user)
        self.no_content()


class InvitationsHandler(APIHandler):
    resource = "vfolder-invitation"
    queries = {"get": {"direction": "received (default) or sent",
                       "state": "pending, accepted, rejected or canceled"}}

    def get(self):
        """The caller's invitations, received or sent."""
        with self.transaction() as s:
            self.finish_json(shares.list_invitations(
                s, self.principal, self.get_query_argument("direction", None),
                self.get_query_argument("state", None)))


class InvitationHandler(APIHandler):
    resource = "vfolder-invitation"

    def delete(self, invitation_id):
        """Cancel a pending invitation (its inviter, or an admin)."""
        self.audit_target = invitation_id
        with self.transaction() as s:
            self.audit_domain = shares.cancel(s, self.principal, invitation_id, self.now())
        self.no_content()


class AnswerHandler(APIHandler):
    """The invitee accepts or rejects an invitation."""

    resource = "vfolder-invitation"
    success = {"post": "200"}
    verb = "accept"

    def post(self, invitation_id):
        self.audit_target = invitation_id
        with self.transaction() as s:
            model = getattr(shares, self.verb)(s, self.principal, invitation_id, self.now())
        self.audit_domain = model["owner"]["domain"]
        self.finish_json(model)

    def audit_action(self, method: str) -> str:
        return f"vfolder-invitation.{self.verb}"


class AcceptHandler(AnswerHandler):
    verb = "accept"

    def post(self, invitation_id):
        """Accept an invitation (the invitee): the folder is shared with you."""
        super().post(invitation_id)


class RejectHandler(AnswerHandler):
    verb = "reject"

    def post(self, invitation_id):
        """Reject an invitation (the invitee)."""
        super().post(invitation_id)


ID = r"([^/]+)"

routes = [
    (r"vfolder-hosts", HostsHandler),
    (r"vfolders", FoldersHandler),
    (rf"vfolders/{ID}", FolderHandler),
    (rf"vfolders/{ID}/restore", RestoreHandler),
    (rf"vfolders/{ID}/purge", PurgeHandler),
    (rf"vfolders/{ID}/invitations", FolderInvitationsHandler),
    (rf"vfolders/{ID}/shares", SharesHandler),
    (rf"vfolders/{ID}/shares/{ID}", ShareHandler),
    # files API routes: handlers/files.py
    (r"invitations", InvitationsHandler),
    (rf"invitations/{ID}", InvitationHandler),
    (rf"invitations/{ID}/accept", AcceptHandler),
    (rf"invitations/{ID}/reject", RejectHandler),
]
