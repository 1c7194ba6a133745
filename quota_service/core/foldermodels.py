"""The storage folders' tables: vfolders, invitations to share one, and shares.

Kept apart from ``models.py`` by concern, on the same ``Base``; ``core/db.py``
imports this module so that the schema, the migrations' check and the tests'
resets know these tables wherever ``Base`` is used. Managed by
``storage/folders.py`` and ``storage/shares.py``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, utcnow


class VFolder(Base):
    """A storage folder owned by a user or by a project. Its files live in
    ``<host path>/<id>``; purging deletes the row and the directory."""

    __tablename__ = "vfolders"
    __table_args__ = (
        CheckConstraint("(owner_user_id IS NULL) <> (owner_project_id IS NULL)",
                        name="ck_vfolders_one_owner"),
        # NULLs never collide: each constraint binds the folders of one kind of owner
        UniqueConstraint("owner_user_id", "name", name="uq_vfolders_user_name"),
        UniqueConstraint("owner_project_id", "name", name="uq_vfolders_project_name"),
    )

    #: uuid4 hex
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column(String(64))
    owner_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    owner_project_id: Mapped[int | None] = mapped_column(
        ForeignKey("projects.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    usage_mode: Mapped[str] = mapped_column(String(16), default="general")  # general | data | model
    #: what members get of a project folder: ro | rw | wd (None for user folders)
    project_permission: Mapped[str | None] = mapped_column(String(2), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active | trashed
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    trashed_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    #: cached usage in bytes, measured by a scan and kept right by the files API
    usage_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    usage_measured_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)


class VFolderInvitation(Base):
    """An invitation to share a user's folder with another user of its domain."""

    __tablename__ = "vfolder_invitations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    folder_id: Mapped[str] = mapped_column(
        ForeignKey("vfolders.id", ondelete="CASCADE"), index=True
    )
    inviter_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    invitee_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(2))  # ro | rw | wd
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | accepted | rejected | canceled
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class VFolderShare(Base):
    """A user's access to a folder shared with them (an accepted invitation)."""

    __tablename__ = "vfolder_shares"
    __table_args__ = (UniqueConstraint("folder_id", "user_id", name="uq_vfolder_shares"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    folder_id: Mapped[str] = mapped_column(
        ForeignKey("vfolders.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(2))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
