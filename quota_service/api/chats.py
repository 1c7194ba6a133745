"""REST handlers of the chat history: each user's conversations
with served models, kept on the server so that every browser sees them.

Only a conversation's owner ever sees it (others get 404, superadmins
too). Creating, renaming and deleting one are in the access log; adding
messages is not (only a refusal is), since a chat adds two per answer.
"""

from __future__ import annotations

from ..core.chatschemas import ChatAppend, ChatCreate, ChatUpdate
from ..core.errors import Hidden
from ..core.schemas import parse
from ..serving import chats
from .base import APIHandler


class ChatsHandler(APIHandler):
    resource = "chat"
    bodies = {"post": ChatCreate}

    async def get(self):
        """The caller's conversations (no messages), the most recently changed first."""
        self.finish_json(await self.db(lambda s: chats.list_chats(s, self.principal)))

    async def post(self):
        """Start a conversation (title, endpoint and model, first messages)."""
        body = parse(ChatCreate, self.json_body())
        now = self.now()
        model = await self.db(lambda s: chats.create(s, self.principal, body, now))
        self.audit_target = model["id"]
        self.created(model, self.api_url("chats", model["id"]))


class ChatHandler(APIHandler):
    resource = "chat"
    bodies = {"patch": ChatUpdate}

    async def get(self, chat_id):
        """One conversation with its messages in order."""
        self.audit_target = chat_id
        self.finish_json(await self.db(lambda s: chats.get(s, self.principal, chat_id)))

    async def patch(self, chat_id):
        """Rename it, or change the endpoint and model it talks to."""
        self.audit_target = chat_id
        body = parse(ChatUpdate, self.json_body())
        now = self.now()
        self.finish_json(await self.db(
            lambda s: chats.update(s, self.principal, chat_id, body, now)))

    async def delete(self, chat_id):
        """Delete it with its messages."""
        self.audit_target = chat_id
        await self.db(lambda s: chats.delete(s, self.principal, chat_id))
        self.no_content()


class MessagesHandler(APIHandler):
    resource = "chat"
    bodies = {"post": ChatAppend}
    success = {"post": "200"}

    async def post(self, chat_id):
        """Add messages at the end of a conversation: the messages as kept (with ``seq``)."""
        self.audit_target = chat_id
        body = parse(ChatAppend, self.json_body())
        now = self.now()
        self.finish_json(await self.db(
            lambda s: chats.append(s, self.principal, chat_id, body, now)))

    def audit_record(self):
        # a conversation's traffic, not a change of anything shared: only a refusal
        if self.get_status() in (401, 403) or isinstance(getattr(self, "_api_error", None), Hidden):
            return super().audit_record()
        return None

    def audit_action(self, method: str) -> str:
        return "chat.append"
