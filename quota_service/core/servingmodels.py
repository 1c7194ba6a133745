"""Model serving's tables: endpoints and their bearer tokens.

Kept apart from ``models.py`` by concern, on the same ``Base`` (as the Model
Store's ``storemodels.py``); ``core/db.py`` imports this module so that the
schema, the migrations' check and the tests' resets know these tables
wherever ``Base`` is used. Managed by ``serving/endpoints.py``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, Boolean, CheckConstraint, ForeignKey, Integer, String, Text
from sqlalchemy import UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, utcnow


class Endpoint(Base):
    """A project's model served by replicas (``inference`` allocations) of an image."""

    __tablename__ = "endpoints"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_endpoints_project_name"),
        CheckConstraint("state IN ('provisioning', 'running', 'degraded', 'terminating', "
                        "'failed')", name="ck_endpoints_state"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # uuid4 hex
    name: Mapped[str] = mapped_column(String(64))
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="RESTRICT"), index=True)
    resource_group_id: Mapped[int] = mapped_column(
        ForeignKey("resource_groups.id", ondelete="RESTRICT"))
    image: Mapped[str] = mapped_column(String(384))
    #: the model folder's id (no foreign key: a purged folder leaves the endpoint failed)
    model_folder: Mapped[str] = mapped_column(String(32))
    #: one replica's slots, slot name to decimal string
    slots: Mapped[dict] = mapped_column(JSON, default=dict)
    replicas: Mapped[int] = mapped_column(Integer, default=1)
    public: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), default="provisioning")
    state_reason: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    desired_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)  # serving/replicas.py
    autoscaling: Mapped[list | None] = mapped_column(JSON, nullable=True)  # its rules
    scaling_events: Mapped[list | None] = mapped_column(JSON, nullable=True)  # serving/scaling


class EndpointToken(Base):
    """A bearer token of one endpoint: only its SHA-256 is kept."""

    __tablename__ = "endpoint_tokens"

    #: uuid4 hex (what revoking names; not the secret)
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    endpoint_id: Mapped[str] = mapped_column(
        ForeignKey("endpoints.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column()
    revoked_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
