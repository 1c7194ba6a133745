"""The resource groups as decisions read them, kept in memory between decisions.

Loading a group with its grants, nodes and devices as ORM objects cost more
than judging the request (a fifth of the service's CPU in the storm of issue
22, more on a large cluster). This keeps each group as frozen rows, tagged
with the database's generation of the groups (``ledger_counters``, row
``groups``: triggers of the database move it with every change to groups,
grants, nodes and devices, whoever writes them), and reads a group again
only when the generation moved. Asking for the generation is one row by its
key, in the caller's transaction: a decision holding the ledger lock sees
exactly the groups that committed before it.

One copy per engine (a test process serves many databases); the generation
starts at a random value (migration 0013), so a database made again from
nothing never matches a copy of the old one. A transaction that has written
anything reads its groups from the database but never keeps them (it may
roll back its own change, and the generation with it).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import generations, rowcache
from ..core.models import Device, Node, ResourceGroup, ResourceGroupGrant


@dataclass(frozen=True, eq=False)
class DeviceRow:
    index: int
    model: str
    memory: int
    uuid: str


@dataclass(frozen=True, eq=False)
class NodeRow:
    id: int
    name: str
    capacity: dict
    schedulable: bool
    backend_url: str
    share_check: str
    shares_unenforced: bool
    sharing_mode: str
    devices: tuple[DeviceRow, ...]


@dataclass(frozen=True, eq=False)
class GrantRow:
    domain_id: int | None
    project_id: int | None
    user_id: int | None


@dataclass(frozen=True, eq=False)
class GroupRow:
    """A resource group with its nodes (their devices) and grants, read-only:
    the attributes ``ledger`` and the queue pass read of the ORM objects."""

    id: int
    name: str
    active: bool
    session_types: tuple[str, ...]
    queue_order: str
    hol_passes: int
    pending_timeout: int | None
    nodes: tuple[NodeRow, ...]
    grants: tuple[GrantRow, ...]
    #: what is derived from the rows once (``ledger``'s static views), by name
    memo: dict = field(default_factory=dict, repr=False)

    def node(self, name: str) -> NodeRow:
        by_name = self.memo.get("by_name")
        if by_name is None:
            by_name = self.memo["by_name"] = {n.name: n for n in self.nodes}
        return by_name[name]

    def node_by_id(self, node_id: int) -> NodeRow | None:
        by_id = self.memo.get("by_id")
        if by_id is None:
            by_id = self.memo["by_id"] = {n.id: n for n in self.nodes}
        return by_id.get(node_id)


def load(s: Session, name: str) -> GroupRow | None:
    """The group ``name`` from the database (four queries of the columns a
    ``GroupRow`` holds: no ORM objects, which cost ten times more on a
    group of thousands of nodes), or None."""
    rg = s.execute(select(ResourceGroup.id, ResourceGroup.name, ResourceGroup.active,
                          ResourceGroup.session_types, ResourceGroup.queue_order,
                          ResourceGroup.hol_passes, ResourceGroup.pending_timeout)
                   .where(ResourceGroup.name == name)).first()
    if rg is None:
        return None
    devices: dict[int, list[DeviceRow]] = {}
    for d in s.execute(select(Device.node_id, Device.index, Device.model, Device.memory,
                              Device.uuid).join(Node, Node.id == Device.node_id)
                       .where(Node.resource_group_id == rg.id)
                       .order_by(Device.node_id, Device.index)):
        devices.setdefault(d.node_id, []).append(DeviceRow(d.index, d.model, d.memory, d.uuid))
    nodes = tuple(NodeRow(
        id=n.id, name=n.name, capacity=dict(n.capacity or {}), schedulable=n.schedulable,
        backend_url=n.backend_url, share_check=n.share_check,
        shares_unenforced=n.shares_unenforced, sharing_mode=n.sharing_mode,
        devices=tuple(devices.get(n.id, ())))
        for n in s.execute(select(Node.id, Node.name, Node.capacity, Node.schedulable,
                                  Node.backend_url, Node.share_check, Node.shares_unenforced,
                                  Node.sharing_mode)
                           .where(Node.resource_group_id == rg.id).order_by(Node.id)))
    grants = tuple(GrantRow(g.domain_id, g.project_id, g.user_id) for g in s.execute(
        select(ResourceGroupGrant.domain_id, ResourceGroupGrant.project_id,
               ResourceGroupGrant.user_id)
        .where(ResourceGroupGrant.resource_group_id == rg.id)
        .order_by(ResourceGroupGrant.id)))
    return GroupRow(id=rg.id, name=rg.name, active=rg.active,
                    session_types=tuple(rg.session_types), queue_order=rg.queue_order,
                    hol_passes=rg.hol_passes, pending_timeout=rg.pending_timeout,
                    nodes=nodes, grants=grants)


#: the tables a group is read from (migration 0013 watches them)
TABLES = frozenset({"resource_groups", "resource_group_grants", "nodes", "devices"})


def generation(s: Session) -> int | None:
    """The groups' generation as ``s``'s transaction sees it (None: a
    database without the counter, which is never cached)."""
    return generations.generation(s, "groups", TABLES)


class GroupCache:
    """The groups of one database, each with the generation it was read at."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, tuple[int, GroupRow | None]] = {}

    def get(self, s: Session, name: str) -> GroupRow | None:
        gen = generation(s)  # before the read: a change committed meanwhile moves it
        if gen is not None:
            hit = self._groups.get(name)
            if hit is not None and hit[0] == gen:
                return hit[1]
        row = load(s, name)
        if gen is not None and not generations.wrote(s, TABLES):
            with self._lock:
                if any(g != gen for g, _ in self._groups.values()):
                    self._groups = {k: v for k, v in self._groups.items() if v[0] == gen}
                self._groups[name] = (gen, row)
        return row


def cache_of(s: Session) -> GroupCache:
    """The cache of ``s``'s database (one per engine)."""
    return generations.per_engine(s, "groups", GroupCache)


def group(s: Session, name: str) -> GroupRow | None:
    """The resource group ``name`` as it is in ``s``'s transaction, from
    memory unless it changed."""
    return cache_of(s).get(s, name)


def group_by_id(s: Session, rg_id: int) -> GroupRow | None:
    """The resource group of id ``rg_id`` (an allocation's), as ``group``."""
    names = rowcache.of(s, "group names", lambda: rowcache.RowCache("groups", TABLES))
    name = names.get(s, rg_id, lambda: s.scalar(
        select(ResourceGroup.name).where(ResourceGroup.id == rg_id)))
    return group(s, name) if name is not None else None


def node_of(s: Session, rg: GroupRow | None,
            node_id: int | None) -> NodeRow | Node | None:
    """An allocation's node (``node_id`` in its group ``rg``, from
    ``group_by_id``): the group's row, or the ORM object of a node since
    moved to another group."""
    if node_id is None:
        return None
    row = rg.node_by_id(node_id) if rg is not None else None
    return row if row is not None else s.get(Node, node_id)
