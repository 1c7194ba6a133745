"""The Model Store's tables: model folders an admin published,
and which endpoint was deployed from which entry.

Kept out of ``models.py`` (at its size limit) on the same ``Base``;
``core/db.py`` imports this module so that the schema, the migrations'
check and the tests' resets know these tables wherever ``Base`` is used.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, utcnow


class StoreModel(Base):
    """A model folder published in the Model Store: to every domain (no
    domain, a superadmin's) or to one domain (its admins')."""

    __tablename__ = "store_models"
    __table_args__ = (
        UniqueConstraint("domain_id", "folder_id", name="uq_store_models_domain_folder"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # uuid4 hex
    #: the published vfolder's id (no foreign key, as endpoints: a purged
    #: folder leaves the entry unusable, shown so)
    folder_id: Mapped[str] = mapped_column(String(32), index=True)
    #: None: every domain sees it
    domain_id: Mapped[int | None] = mapped_column(
        ForeignKey("domains.id", ondelete="CASCADE"), nullable=True, index=True)
    #: what a deploy names the endpoint unless told (a project name)
    name: Mapped[str] = mapped_column(String(64))
    image: Mapped[str] = mapped_column(String(384))
    #: one replica's slots, slot name to decimal string
    slots: Mapped[dict] = mapped_column(JSON, default=dict)
    #: the definition's metadata as read at publish (or at a refresh)
    card: Mapped[dict] = mapped_column(JSON, default=dict)
    published_by: Mapped[str] = mapped_column(String(255))
    published_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class StoreDeployment(Base):
    """An endpoint deployed from a store entry: its replicas mount the
    entry's folder through the publication, not through the creator's own
    rights on the folder."""

    __tablename__ = "store_deployments"

    endpoint_id: Mapped[str] = mapped_column(
        ForeignKey("endpoints.id", ondelete="CASCADE"), primary_key=True)
    store_model_id: Mapped[str] = mapped_column(
        ForeignKey("store_models.id", ondelete="RESTRICT"), index=True)
