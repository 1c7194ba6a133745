"""Chat history kept on the server, per user: the manager behind ``api/chats.py``.

An IO edge: ORM over one session (the handler's transaction). A
conversation is its owner's alone (``authz.require_chat_owner``: anyone
else gets 404, superadmins too). It names the endpoint and model it talks
to; the endpoint must be one the caller may use when it is chosen, and a
conversation whose endpoint is deleted later still reads
(``endpoint_gone``).
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import delete as sa_delete
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from . import endpoints
from ..core import authz
from ..core.authz import Principal
from ..core.chatmodels import Chat, ChatMessage
from ..core.chatschemas import MAX_CHATS, MAX_MESSAGES
from ..core.errors import Conflict, Hidden, Invalid
from ..core.models import User
from ..core.orm import iso
from ..core.servingmodels import Endpoint

CHAT_ID_LENGTH = 32
DEFAULT_TITLE = "New chat"


def chat_model(s: Session, c: Chat, owner: str) -> dict:
    return {"id": c.id, "owner": owner, "title": c.title, "endpoint": c.endpoint_id,
            "endpoint_name": c.endpoint_name, "model": c.model,
            "endpoint_gone": c.endpoint_id is not None and s.get(Endpoint, c.endpoint_id) is None,
            "messages_count": message_count(s, c.id),
            "created_at": iso(c.created_at), "updated_at": iso(c.updated_at)}


def message_model(m: ChatMessage) -> dict:
    return {"seq": m.seq, "role": m.role, "content": m.content, "created_at": iso(m.created_at)}


def message_count(s: Session, chat_id: str) -> int:
    return s.scalar(select(func.count()).select_from(ChatMessage)
                    .where(ChatMessage.chat_id == chat_id)) or 0


def _user(s: Session, p: Principal) -> User:
    u = s.scalar(select(User).where(User.name == p.name))
    if u is None:  # the principal was resolved from this row a moment ago
        raise Hidden(f"user {p.name!r} not found")
    return u


def find(s: Session, p: Principal, chat_id: str) -> Chat:
    """The caller's conversation; Hidden (404) for any other, whoever asks."""
    c = s.get(Chat, chat_id) if len(chat_id) == CHAT_ID_LENGTH else None
    owner = s.get(User, c.user_id).name if c is not None else None
    if c is None:
        raise Hidden(f"conversation {chat_id[:40]!r} not found")
    authz.require_chat_owner(p, owner, chat_id)
    return c


def _endpoint_name(s: Session, p: Principal, endpoint_id: str) -> str:
    """The name of an endpoint the caller may use; Invalid (422) otherwise."""
    try:
        e, _project = endpoints.find(s, p, endpoint_id)
    except Hidden:
        raise Invalid(f"endpoint: no endpoint {endpoint_id!r} you may use",
                      detail=[f"endpoint: no endpoint {endpoint_id!r} you may use"]) from None
    return e.name


def _append(s: Session, c: Chat, messages, now: dt.datetime) -> list[ChatMessage]:
    have = message_count(s, c.id)
    if have + len(messages) > MAX_MESSAGES:
        raise Conflict(f"a conversation holds at most {MAX_MESSAGES} messages; this one has "
                       f"{have}: start a new one")
    rows = [ChatMessage(chat_id=c.id, seq=have + i + 1, role=m.role, content=m.content,
                        created_at=now) for i, m in enumerate(messages)]
    s.add_all(rows)
    c.updated_at = now
    s.flush()
    return rows


def list_chats(s: Session, p: Principal) -> list[dict]:
    """The caller's conversations, the most recently changed first."""
    u = _user(s, p)
    rows = s.scalars(select(Chat).where(Chat.user_id == u.id)
                     .order_by(Chat.updated_at.desc(), Chat.id))
    return [chat_model(s, c, u.name) for c in rows]


def create(s: Session, p: Principal, body, now: dt.datetime) -> dict:
    u = _user(s, p)
    have = s.scalar(select(func.count()).select_from(Chat).where(Chat.user_id == u.id)) or 0
    if have >= MAX_CHATS:
        raise Conflict(f"you keep at most {MAX_CHATS} conversations: delete some first")
    c = Chat(id=uuid.uuid4().hex, user_id=u.id, title=body.title or DEFAULT_TITLE,
             endpoint_id=body.endpoint, model=body.model, created_at=now, updated_at=now,
             endpoint_name=_endpoint_name(s, p, body.endpoint) if body.endpoint else "")
    s.add(c)
    s.flush()
    _append(s, c, body.messages, now)
    return get_model(s, c, u.name)


def get_model(s: Session, c: Chat, owner: str) -> dict:
    msgs = s.scalars(select(ChatMessage).where(ChatMessage.chat_id == c.id)
                     .order_by(ChatMessage.seq))
    return chat_model(s, c, owner) | {"messages": [message_model(m) for m in msgs]}


def get(s: Session, p: Principal, chat_id: str) -> dict:
    """One conversation with every message, in order."""
    return get_model(s, find(s, p, chat_id), p.name)


def update(s: Session, p: Principal, chat_id: str, body, now: dt.datetime) -> dict:
    c = find(s, p, chat_id)
    if body.title is not None:
        c.title = body.title
    if body.endpoint is not None and body.endpoint != c.endpoint_id:
        c.endpoint_name = _endpoint_name(s, p, body.endpoint)
        c.endpoint_id = body.endpoint
    if body.model is not None:
        c.model = body.model
    c.updated_at = now
    s.flush()
    return chat_model(s, c, p.name)


def append(s: Session, p: Principal, chat_id: str, body, now: dt.datetime) -> list[dict]:
    """Add messages at the end; they are numbered after the last one."""
    c = find(s, p, chat_id)
    return [message_model(m) for m in _append(s, c, body.messages, now)]


def delete(s: Session, p: Principal, chat_id: str) -> None:
    c = find(s, p, chat_id)
    s.execute(sa_delete(ChatMessage).where(ChatMessage.chat_id == c.id))
    s.execute(sa_delete(Chat).where(Chat.id == c.id))
