"""The usage record's table: one immutable row per session that ran.

Kept apart from ``models.py`` by concern, on the same ``Base``; ``core/db.py``
imports this module so that the schema, the migrations' check and the tests'
resets know the table wherever ``Base`` is used. Written at release
(``scheduling/ledger.py``), read by ``operations/usage_store.py``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base


class UsageInterval(Base):
    """The append-only usage record: one immutable row per session that ran,
    written when it ends (``ledger.release_allocation``): who held what, from
    when to when. Sessions still running are counted from the ledger."""

    __tablename__ = "usage_intervals"
    __table_args__ = (
        CheckConstraint("ended_at >= started_at", name="ck_usage_intervals_order"),
        Index("ix_usage_intervals_ended_started", "ended_at", "started_at"),
        Index("ix_usage_intervals_domain_ended", "domain_id", "ended_at"),
        Index("ix_usage_intervals_user_ended", "user_id", "ended_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: the allocation it records (no foreign key: the record outlives the ledger)
    allocation_id: Mapped[str] = mapped_column(String(36), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id", ondelete="RESTRICT"))
    resource_group_id: Mapped[int] = mapped_column(
        ForeignKey("resource_groups.id", ondelete="RESTRICT"))
    session_type: Mapped[str] = mapped_column(String(16))
    #: the slots it held, slot name to decimal string (as ``Allocation.slots``)
    slots: Mapped[dict] = mapped_column(JSON, default=dict)
    #: the GPUs it held: [{"index": 0, "share": "0.5"}, ...]
    gpus: Mapped[list] = mapped_column(JSON, default=list)
    started_at: Mapped[dt.datetime] = mapped_column()
    ended_at: Mapped[dt.datetime] = mapped_column()
