"""Request bodies of the chat history API, with its bounds.

Every bound is a clear 422 naming the field (``schemas.parse``); the
counts (conversations per user, messages per conversation) are checked by
``serving.chats`` against the database.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictStr

from .schemas import Body

#: the most one user keeps, and one conversation holds
MAX_CHATS = 500
MAX_MESSAGES = 2000
MAX_CONTENT = 65536  # characters of one message
MAX_APPEND = 16  # messages in one append

Title = Annotated[StrictStr, Field(min_length=1, max_length=200)]
EndpointId = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{32}$")]
ModelName = Annotated[StrictStr, Field(max_length=255)]


class ChatMessageIn(Body):
    role: Literal["system", "user", "assistant"]
    content: Annotated[StrictStr, Field(max_length=MAX_CONTENT)]


class ChatCreate(Body):
    """A new conversation: a title (default "New chat"), the endpoint (one
    the caller may use) and model it talks to, and its first messages."""

    title: Title | None = None
    endpoint: EndpointId | None = None
    model: ModelName = ""
    messages: Annotated[list[ChatMessageIn], Field(max_length=MAX_APPEND)] = []


class ChatUpdate(Body):
    """Rename, or change the endpoint and model of the next answers."""

    title: Title | None = None
    endpoint: EndpointId | None = None
    model: ModelName | None = None


class ChatAppend(Body):
    """Messages to add at the end, in order."""

    messages: Annotated[list[ChatMessageIn], Field(min_length=1, max_length=MAX_APPEND)]
