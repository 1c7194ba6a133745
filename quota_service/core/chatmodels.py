"""Chat history kept on the server, per user: ORM classes.

A conversation (``Chat``) belongs to one user and is seen by that user only
(``authz.require_chat_owner``); it names the endpoint and model it talks to
without a foreign key, so a conversation whose endpoint is gone still
reads. Its messages are numbered in order (``seq``). Deleting the user
deletes their conversations (``ON DELETE CASCADE``).

``core.db`` imports this module, so ``Base.metadata`` knows these tables
wherever the schema is built or compared.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import CheckConstraint, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, utcnow


class Chat(Base):
    """One conversation of one user with a served model."""

    __tablename__ = "chats"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # uuid4 hex
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    #: the endpoint's id and name when chosen (no foreign key: it may be deleted)
    endpoint_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    endpoint_name: Mapped[str] = mapped_column(String(64), default="")
    model: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ChatMessage(Base):
    """One message of a conversation, in its place (``seq`` from 1)."""

    __tablename__ = "chat_messages"
    __table_args__ = (
        UniqueConstraint("chat_id", "seq", name="uq_chat_messages_chat_seq"),
        CheckConstraint("role IN ('system', 'user', 'assistant')", name="ck_chat_messages_role"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    chat_id: Mapped[str] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
