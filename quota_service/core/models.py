"""The service database: the single owner of tenancy facts.

This module holds ``Base`` and the tables the tenancy, the inventory and
the ledger share; the tables of one concern each are defined apart on the
same ``Base``: storage folders (``foldermodels``), the usage record
(``usagemodels``), model serving (``servingmodels``), the Model Store
(``storemodels``), chats (``chatmodels``). ``core/db.py`` imports them all.
Every table is created by an Alembic migration (quota_service/migrations);
``tests/test_migrations.py`` checks that these modules and the migrated
schema agree. Resource amounts are stored as maps of slot name to a decimal string,
so no float ever touches them.
"""

from __future__ import annotations

import datetime as dt
import enum

from sqlalchemy import false as sa_false
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Role(str, enum.Enum):
    user = "user"
    domain_admin = "domain-admin"
    superadmin = "superadmin"


class Base(DeclarativeBase):
    type_annotation_map = {
        dt.datetime: DateTime(timezone=True),
    }


class Domain(Base):
    __tablename__ = "domains"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    total_resource_slots: Mapped[dict] = mapped_column(JSON, default=dict)
    allowed_vfolder_hosts: Mapped[list] = mapped_column(JSON, default=list)
    allowed_images: Mapped[list] = mapped_column(JSON, default=list)
    allow_first_login: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    projects: Mapped[list[Project]] = relationship(
        back_populates="domain", cascade="all, delete-orphan", passive_deletes=True
    )
    users: Mapped[list[User]] = relationship(back_populates="domain")


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("domain_id", "name", name="uq_projects_domain_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    domain_id: Mapped[int] = mapped_column(
        ForeignKey("domains.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    total_resource_slots: Mapped[dict] = mapped_column(JSON, default=dict)
    max_concurrent_sessions: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_vfolder_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_vfolder_size: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: storage hosts this project's folders and members may use
    allowed_vfolder_hosts: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    domain: Mapped[Domain] = relationship(back_populates="projects")
    memberships: Mapped[list[Membership]] = relationship(
        back_populates="project", cascade="all, delete-orphan", passive_deletes=True
    )


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    domain_id: Mapped[int] = mapped_column(
        ForeignKey("domains.id", ondelete="RESTRICT"), index=True
    )
    role: Mapped[Role] = mapped_column(
        Enum(Role, name="user_role", values_callable=lambda e: [m.value for m in e],
             validate_strings=True),
        default=Role.user,
    )
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    resource_policy: Mapped[str] = mapped_column(String(64), default="default")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    domain: Mapped[Domain] = relationship(back_populates="users")
    memberships: Mapped[list[Membership]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )
    keypairs: Mapped[list[Keypair]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )


class Membership(Base):
    __tablename__ = "memberships"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship(back_populates="memberships")
    project: Mapped[Project] = relationship(back_populates="memberships")


class Keypair(Base):
    __tablename__ = "keypairs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    access_key: Mapped[str] = mapped_column(String(32), unique=True)
    secret_hash: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    resource_policy: Mapped[str] = mapped_column(String(64), default="default")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    expires_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship(back_populates="keypairs")


class AuditEntry(Base):
    """One access-log record: a login, an API write or a denial."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_time", "timestamp"),
        Index("ix_audit_log_domain_time", "domain", "timestamp"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    timestamp: Mapped[dt.datetime] = mapped_column(default=utcnow)
    actor: Mapped[str | None] = mapped_column(String(255), nullable=True, index=True)
    # the actor's domain and the target's domain, so a domain admin's view
    # can be filtered without joins
    actor_domain: Mapped[str | None] = mapped_column(String(64), nullable=True)
    domain: Mapped[str | None] = mapped_column(String(64), nullable=True)
    credential: Mapped[str] = mapped_column(String(16), default="none")
    source: Mapped[str | None] = mapped_column(String(64), nullable=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str] = mapped_column(String(512), default="")
    outcome: Mapped[str] = mapped_column(String(16))
    status: Mapped[int] = mapped_column(Integer)
    detail: Mapped[str] = mapped_column(Text, default="")


# --- scheduling -------------------------------------------------


class ResourcePolicy(Base):
    """A keypair/user resource policy (Backend.AI's keypair resource policy)."""

    __tablename__ = "resource_policies"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    total_resource_slots: Mapped[dict] = mapped_column(JSON, default=dict)
    unspecified_limited: Mapped[bool] = mapped_column(Boolean, default=False)
    max_concurrent_sessions: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_session_lifetime: Mapped[int | None] = mapped_column(Integer, nullable=True)
    idle_timeout: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_pending_sessions: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_pending_resource_slots: Mapped[dict] = mapped_column(JSON, default=dict)
    max_gpus_per_session: Mapped[str | None] = mapped_column(String(32), nullable=True)
    allowed_resource_groups: Mapped[list] = mapped_column(JSON, default=list)
    max_vfolder_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_vfolder_size: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: storage hosts users of this policy may use
    allowed_vfolder_hosts: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    # --- idle reclamation ---
    #: seconds over which utilization is averaged; None: no utilization rule
    utilization_window: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: seconds after the session's start before the utilization rule applies
    utilization_grace: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: {"cpu" | "mem" | "gpu_util" | "gpu_mem": percent as a decimal string}
    utilization_thresholds: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    #: "and": idle when every measured resource is below its threshold;
    #: "or": idle when any is
    utilization_operator: Mapped[str] = mapped_column(
        String(3), default="and", server_default="and")
    #: seconds before a reclaim at which the owner is warned
    reclaim_warning: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: seconds one "keep it" adds, and how many times a session may be kept
    keep_extension: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_keeps: Mapped[int | None] = mapped_column(Integer, nullable=True)


class LedgerCounter(Base):
    """A counter the database itself moves: ``groups`` moves with every change
    to resource groups, their grants, nodes and devices (triggers of
    migration 0013), so an in-memory copy of them knows when it is stale."""

    __tablename__ = "ledger_counters"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class ResourceGroup(Base):
    __tablename__ = "resource_groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    #: every type by default (0017 gave inference to the groups that ran every type before)
    session_types: Mapped[list] = mapped_column(
        JSON, default=lambda: ["interactive", "batch", "inference"])
    queue_order: Mapped[str] = mapped_column(String(16), default="fifo")
    hol_passes: Mapped[int] = mapped_column(Integer, default=3)
    pending_timeout: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    nodes: Mapped[list[Node]] = relationship(back_populates="resource_group")
    grants: Mapped[list[ResourceGroupGrant]] = relationship(
        back_populates="resource_group", cascade="all, delete-orphan", passive_deletes=True
    )


class ResourceGroupGrant(Base):
    """Access to a resource group for a whole domain, a project or a user."""

    __tablename__ = "resource_group_grants"
    __table_args__ = (
        UniqueConstraint("resource_group_id", "domain_id", "project_id", "user_id",
                         name="uq_rg_grants"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_group_id: Mapped[int] = mapped_column(
        ForeignKey("resource_groups.id", ondelete="CASCADE"), index=True
    )
    domain_id: Mapped[int | None] = mapped_column(
        ForeignKey("domains.id", ondelete="CASCADE"), nullable=True
    )
    project_id: Mapped[int | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), nullable=True
    )
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )

    resource_group: Mapped[ResourceGroup] = relationship(back_populates="grants")


class Node(Base):
    __tablename__ = "nodes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    resource_group_id: Mapped[int] = mapped_column(
        ForeignKey("resource_groups.id", ondelete="RESTRICT"), index=True
    )
    #: cpu (cores) and mem (bytes) as decimal strings
    capacity: Mapped[dict] = mapped_column(JSON, default=dict)
    schedulable: Mapped[bool] = mapped_column(Boolean, default=True)
    backend_url: Mapped[str] = mapped_column(String(1024), default="")
    #: why GPU shares cannot be enforced on it now ("" when they can): it then
    #: takes no share, unless ``shares_unenforced`` (an admin's mark)
    share_check: Mapped[str] = mapped_column(String(200), default="", server_default="")
    shares_unenforced: Mapped[bool] = mapped_column(Boolean, default=False,
                                                    server_default=sa_false())
    #: how its GPU shares are enforced (``mps``, ``hami``, ``framework``; ""
    #: not said): what the service's share check looks at
    sharing_mode: Mapped[str] = mapped_column(String(16), default="", server_default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    resource_group: Mapped[ResourceGroup] = relationship(back_populates="nodes")
    devices: Mapped[list[Device]] = relationship(
        back_populates="node", cascade="all, delete-orphan", passive_deletes=True,
        order_by="Device.index",
    )


class Device(Base):
    """One GPU of a node (from configuration, the API, or NVML discovery)."""

    __tablename__ = "devices"
    __table_args__ = (UniqueConstraint("node_id", "index", name="uq_devices_node_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(64))
    memory: Mapped[int] = mapped_column(BigInteger, default=0)
    #: the driver's UUID (NVML discovery; "" when declared without one)
    uuid: Mapped[str] = mapped_column(String(96), default="", server_default="")

    node: Mapped[Node] = relationship(back_populates="devices")


class Allocation(Base):
    """The ledger: one row per session request, from pending to released."""

    __tablename__ = "allocations"
    __table_args__ = (
        Index("ix_allocations_rg_state", "resource_group_id", "state"),
        Index("ix_allocations_domain_state", "domain_id", "state"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"), index=True)
    keypair: Mapped[str | None] = mapped_column(String(32), nullable=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id", ondelete="RESTRICT"))
    resource_group_id: Mapped[int] = mapped_column(
        ForeignKey("resource_groups.id", ondelete="RESTRICT")
    )
    node_id: Mapped[int | None] = mapped_column(
        ForeignKey("nodes.id", ondelete="RESTRICT"), nullable=True
    )
    session_type: Mapped[str] = mapped_column(String(16), default="interactive")
    slots: Mapped[dict] = mapped_column(JSON, default=dict)
    #: [{"index": 0, "share": "0.5"}, ...] for the GPUs held
    gpus: Mapped[list] = mapped_column(JSON, default=list)
    gpu_models: Mapped[list] = mapped_column(JSON, default=list)
    state: Mapped[str] = mapped_column(String(16))  # pending | allocated | released | cancelled
    priority: Mapped[int] = mapped_column(Integer, default=0)
    passes: Mapped[int] = mapped_column(Integer, default=0)
    reasons: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    admitted_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    released_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    release_reason: Mapped[str] = mapped_column(String(255), default="")
    #: who holds it: "api" (a client of the API) or "hub" (a hub server)
    origin: Mapped[str] = mapped_column(String(8), default="api")
    # --- the session ---
    #: the registry image it runs (a name, not a key: the history outlives images)
    image: Mapped[str | None] = mapped_column(String(384), nullable=True)
    #: the JupyterHub named server holding it; "" for the default server
    server_name: Mapped[str] = mapped_column(String(255), default="", server_default="")
    #: what a batch session runs
    command: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: how the session's main process ended, as the spawner reported at release
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: when a session that ran ended: set with released_at when an allocated
    #: session is released (the same instant); None for sessions that never ran
    ended_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    #: when its log was deleted by the retention rule
    log_purged_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    #: its vfolders ({"folder", "name", "path", "mode", "live"}) and whether it can get more while it runs (storage/livemounts.py)
    mounts: Mapped[list] = mapped_column(JSON, default=list)
    live_mounts: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    # --- idle reclamation ---
    #: the session's latest activity report (the Lab extension):
    #: {"reported_at", "last_activity", "busy_kernels", "kernels", "terminals", ...}
    activity: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    #: the reclaim announced to the owner: {rule, deadline, reason, numbers, warned_at}
    reclaim_notice: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    #: how many times the owner kept it, and until when no rule reclaims it
    keeps: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    kept_until: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    # --- an endpoint's replica: its fields say serving/replicas.py
    endpoint_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    service: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    serving_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    # --- the queue's admin ---
    #: where an admin put it in its queue (its order time in place of
    #: created_at; scheduling/queueadmin.py); None: where it was made
    queue_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    #: what it waited for: its reasons at the last pass before it was
    #: admitted (the session's history); None: it never waited
    waited_for: Mapped[list | None] = mapped_column(JSON, nullable=True)


class ReclaimEvent(Base):
    """One decision of idle reclamation: a warning, a keep, a reclaim, or
    (shadow mode) a reclaim that would have happened."""

    __tablename__ = "reclaim_events"
    __table_args__ = (
        CheckConstraint("kind IN ('warning', 'extended', 'reclaimed', 'shadow')",
                        name="ck_reclaim_events_kind"),
        CheckConstraint("rule IN ('idle', 'lifetime', 'utilization')",
                        name="ck_reclaim_events_rule"),
        Index("ix_reclaim_events_at", "at"),
        Index("ix_reclaim_events_domain_at", "domain_id", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    allocation_id: Mapped[str] = mapped_column(
        ForeignKey("allocations.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    rule: Mapped[str] = mapped_column(String(16))
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    resource_group_id: Mapped[int] = mapped_column(Integer)
    project_id: Mapped[int] = mapped_column(Integer)
    domain_id: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(Integer)
    #: the numbers that triggered it (idle seconds, averages, thresholds,
    #: deadline, GPU-hours freed ...)
    details: Mapped[dict] = mapped_column(JSON, default=dict)


# --- images -------------------------------------------------------


class Image(Base):
    """A session image of the registry, found by a scan or added through the API."""

    __tablename__ = "images"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: repository:tag, e.g. hubgrid/base:latest
    name: Mapped[str] = mapped_column(String(384), unique=True)
    #: the image's ai.hubgrid.* labels
    labels: Mapped[dict] = mapped_column(JSON, default=dict)
    #: the smallest request a session of it may make, decimal strings
    min_slots: Mapped[dict] = mapped_column(JSON, default=dict)
    #: [{"name", "protocol", "path"}]
    service_ports: Mapped[list] = mapped_column(JSON, default=list)
    #: the domains that may use it; empty: every domain
    domains: Mapped[list] = mapped_column(JSON, default=list)
    source: Mapped[str] = mapped_column(String(8))  # scan | api
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
