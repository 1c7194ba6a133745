"""REST handlers for virtual folders, their invitations and shares.

The files inside a folder are served by ``api/files.py`` and ``api/uploads.py``
(``vfolders/{folder_id}/files``, ``upload``, ``download``, ``tus``, ``mkdir``, ``move``).
"""

from __future__ import annotations

from ..storage import folders, shares
from ..core.schemas import InvitationCreate, VFolderCreate, VFolderUpdate, parse
from .base import APIHandler


class HostsHandler(APIHandler):
    resource = "vfolder-host"

    async def get(self):
        """The storage hosts the caller may make folders on, with their capabilities."""
        hosts = self.vfolder_hosts
        self.finish_json(await self.db(lambda s: folders.list_hosts(s, self.principal, hosts)))


class FoldersHandler(APIHandler):
    resource = "vfolder"
    bodies = {"post": VFolderCreate}
    queries = {"get": {"status": "active (default), trashed or all",
                       "project": "only this project's folders (name or domain/name)"}}
    query_schemas = {"get": {"status": {"type": "string",
                                        "enum": ["active", "trashed", "all"]}}}

    async def get(self):
        """The folders the caller may see."""
        status = self.get_query_argument("status", None)
        project = self.get_query_argument("project", None)
        self.finish_json(await self.db(
            lambda s: folders.list_folders(s, self.principal, status, project)))

    async def post(self):
        """Create a folder (refused past the owner's max_vfolder_count)."""
        body = parse(VFolderCreate, self.json_body())
        self.audit_target = body.name
        now, storage = self.now(), self.vfolder_storage
        # the ledger lock serialises creates: two cannot both take the last place
        model = await self.db(lambda s: folders.create(s, self.principal, body, now, storage),
                              ledger=True)
        self.audit_target, self.audit_domain = model["id"], model["owner"]["domain"]
        self.created(model, self.api_url("vfolders", model["id"]))


class FolderHandler(APIHandler):
    resource = "vfolder"
    bodies = {"patch": VFolderUpdate}

    async def get(self, folder_id):
        """One folder (a trashed one only for those holding wd)."""
        self.audit_target = folder_id
        self.finish_json(await self.db(lambda s: folders.get(s, self.principal, folder_id)))

    async def patch(self, folder_id):
        """Rename a folder (wd); its files and mounts stay where they are."""
        self.audit_target = folder_id
        body = parse(VFolderUpdate, self.json_body())
        model = await self.db(lambda s: folders.rename(s, self.principal, folder_id, body.name))
        self.audit_domain = model["owner"]["domain"]
        self.finish_json(model)

    async def delete(self, folder_id):
        """Move a folder to the trash (wd); restore or purge it later."""
        self.audit_target = folder_id
        now = self.now()
        self.audit_domain = await self.db(
            lambda s: folders.trash(s, self.principal, folder_id, now))
        self.no_content()

    def audit_action(self, method: str) -> str:
        # DELETE only moves it to the trash: "vfolder.purge" deletes for good
        return {"DELETE": "vfolder.trash", "PATCH": "vfolder.rename"}.get(
            method, super().audit_action(method))


class RestoreHandler(APIHandler):
    resource = "vfolder"
    success = {"post": "200"}

    async def post(self, folder_id):
        """Take a folder out of the trash (wd)."""
        self.audit_target = folder_id
        model = await self.db(lambda s: folders.restore(s, self.principal, folder_id))
        self.audit_domain = model["owner"]["domain"]
        self.finish_json(model)

    def audit_action(self, method: str) -> str:
        return "vfolder.restore"


class PurgeHandler(APIHandler):
    resource = "vfolder"
    success = {"post": "204"}

    async def post(self, folder_id):
        """Delete a trashed folder and its files for good (wd)."""
        self.audit_target = folder_id
        hosts = self.vfolder_hosts
        self.audit_domain = await self.db(
            lambda s: folders.purge(s, self.principal, folder_id, hosts))
        self.no_content()

    def audit_action(self, method: str) -> str:
        return "vfolder.purge"


class FolderInvitationsHandler(APIHandler):
    resource = "vfolder-invitation"
    bodies = {"post": InvitationCreate}

    async def post(self, folder_id):
        """Invite a user of the folder's domain (wd on a user folder)."""
        self.audit_target = folder_id
        body = parse(InvitationCreate, self.json_body())
        now = self.now()
        model = await self.db(lambda s: shares.invite(s, self.principal, folder_id, body, now))
        self.audit_target = f"{folder_id}:{model['invitee']}"
        self.audit_domain = model["owner"]["domain"]
        self.created(model, self.api_url("invitations", model["id"]))


class SharesHandler(APIHandler):
    resource = "vfolder-share"

    async def get(self, folder_id):
        """Who the folder is shared with, and how (wd)."""
        self.audit_target = folder_id
        self.finish_json(await self.db(
            lambda s: shares.list_shares(s, self.principal, folder_id)))


class ShareHandler(APIHandler):
    resource = "vfolder-share"

    async def delete(self, folder_id, user):
        """Revoke a share (wd), or leave it (its user)."""
        self.audit_target = f"{folder_id}:{user}"
        self.audit_domain = await self.db(
            lambda s: shares.revoke(s, self.principal, folder_id, user))
        self.no_content()


class InvitationsHandler(APIHandler):
    resource = "vfolder-invitation"
    queries = {"get": {"direction": "received (default) or sent",
                       "state": "pending, accepted, rejected or canceled"}}
    query_schemas = {"get": {"direction": {"type": "string", "enum": ["received", "sent"]},
                             "state": {"type": "string", "enum": list(shares.STATES)}}}

    async def get(self):
        """The caller's invitations, received or sent."""
        direction = self.get_query_argument("direction", None)
        state = self.get_query_argument("state", None)
        self.finish_json(await self.db(
            lambda s: shares.list_invitations(s, self.principal, direction, state)))


class InvitationHandler(APIHandler):
    resource = "vfolder-invitation"

    async def delete(self, invitation_id):
        """Cancel a pending invitation (its inviter, or an admin)."""
        self.audit_target = invitation_id
        now = self.now()
        self.audit_domain = await self.db(
            lambda s: shares.cancel(s, self.principal, invitation_id, now))
        self.no_content()


class AnswerHandler(APIHandler):
    """The invitee accepts or rejects an invitation."""

    resource = "vfolder-invitation"
    success = {"post": "200"}
    verb = "accept"

    async def answer(self, invitation_id):
        self.audit_target = invitation_id
        now, answer = self.now(), getattr(shares, self.verb)
        model = await self.db(lambda s: answer(s, self.principal, invitation_id, now))
        self.audit_domain = model["owner"]["domain"]
        self.finish_json(model)

    def audit_action(self, method: str) -> str:
        return f"vfolder-invitation.{self.verb}"


class AcceptHandler(AnswerHandler):
    verb = "accept"

    async def post(self, invitation_id):
        """Accept an invitation (the invitee): the folder is shared with you."""
        await self.answer(invitation_id)


class RejectHandler(AnswerHandler):
    verb = "reject"

    async def post(self, invitation_id):
        """Reject an invitation (the invitee)."""
        await self.answer(invitation_id)
