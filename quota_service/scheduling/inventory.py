"""The cluster's inventory: resource groups (with their grants) and nodes.

Same shape as ``tenancy.accounts``: functions over one session and the caller,
plain dicts out, refusals as ApiErrors. Writes are for superadmins; users
see the groups granted to them (to their domain, a project of theirs, or
themselves) and the nodes of those groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import authz
from ..core import db
from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import Conflict, Hidden, Invalid, NotFound
from ..core.models import (
    Allocation,
    Device,
    Domain,
    Node,
    Project,
    ResourceGroup,
    ResourceGroupGrant,
    User,
)
from ..core.schemas import changes
from ..core.names import format_amount
from ..core.orm import flush, iso

ZERO = Decimal(0)


# --- resource groups -----------------------------------------------------------

def _grant_model(s: Session, g: ResourceGroupGrant) -> dict:
    if g.domain_id is not None:
        return {"domain": s.get(Domain, g.domain_id).name}
    if g.project_id is not None:
        proj = s.get(Project, g.project_id)
        return {"project": f"{proj.domain.name}/{proj.name}"}
    return {"user": s.get(User, g.user_id).name}


def group_model(s: Session, rg: ResourceGroup, with_grants: bool) -> dict:
    model = {
        "name": rg.name,
        "description": rg.description,
        "active": rg.active,
        "session_types": rg.session_types,
        "queue_order": rg.queue_order,
        "hol_passes": rg.hol_passes,
        "pending_timeout": rg.pending_timeout,
        "nodes": sorted(n.name for n in rg.nodes),
        "created_at": iso(rg.created_at),
    }
    if with_grants:
        model["grants"] = [_grant_model(s, g) for g in rg.grants]
    return model


def can_see_group(s: Session, p: Principal, rg: ResourceGroup) -> bool:
    if p.is_superadmin:
        return True
    user = s.scalar(select(User).where(User.name == p.name))
    project_ids = {
        proj.id for proj in s.scalars(select(Project).where(Project.domain_id == user.domain_id))
        if (p.domain, proj.name) in p.projects or p.administers(p.domain)
    }
    for g in rg.grants:
        if g.domain_id == user.domain_id or g.project_id in project_ids or g.user_id == user.id:
            return True
        if p.administers(p.domain) and g.user_id is not None:
            if s.get(User, g.user_id).domain_id == user.domain_id:
                return True
    return False


def _group(s: Session, p: Principal, name: str) -> ResourceGroup:
    rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == name))
    if rg is None:
        if p.is_superadmin:
            raise NotFound(f"resource group {name!r} not found")
        raise Hidden(f"resource group {name!r} not found")
    if not can_see_group(s, p, rg):
        raise Hidden(f"resource group {name!r} not found")
    return rg


def list_groups(s: Session, p: Principal) -> list[dict]:
    return [
        group_model(s, rg, p.is_superadmin)
        for rg in s.scalars(select(ResourceGroup).order_by(ResourceGroup.name))
        if can_see_group(s, p, rg)
    ]


def get_group(s: Session, p: Principal, name: str) -> dict:
    return group_model(s, _group(s, p, name), p.is_superadmin)


def create_group(s: Session, p: Principal, body) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    authz.require_superadmin(p, "create resource groups")
    if s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.name)):
        raise Conflict(f"resource group {body.name!r} already exists")
    rg = ResourceGroup(**body.model_dump())
    s.add(rg)
    flush(s, f"resource group {body.name!r} already exists")
    return group_model(s, rg, True)


def update_group(s: Session, p: Principal, name: str, body) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    rg = _group(s, p, name)
    authz.require_superadmin(p, "change resource groups")
    for key, value in changes(body).items():
        setattr(rg, key, value)
    s.flush()
    return group_model(s, rg, True)


def delete_group(s: Session, p: Principal, name: str) -> None:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    rg = _group(s, p, name)
    authz.require_superadmin(p, "delete resource groups")
    if rg.nodes:
        raise Conflict(f"resource group {name!r} still has nodes: move or delete them first")
    if s.scalar(select(Allocation.id).where(Allocation.resource_group_id == rg.id).limit(1)):
        raise Conflict(f"resource group {name!r} has sessions in its history; deactivate it instead")
    s.delete(rg)
    s.flush()


def _grantee(s: Session, body) -> dict:
    given = [k for k in ("domain", "project", "user") if getattr(body, k) is not None]
    if len(given) != 1:
        raise Invalid("give exactly one of domain, project or user")
    kind = given[0]
    if kind == "domain":
        d = s.scalar(select(Domain).where(Domain.name == body.domain))
        if d is None:
            raise NotFound(f"domain {body.domain!r} not found")
        return {"domain_id": d.id}
    if kind == "project":
        dname, pname = body.project.split("/", 1)
        proj = s.scalar(select(Project).join(Domain).where(Domain.name == dname,
                                                            Project.name == pname))
        if proj is None:
            raise NotFound(f"project {body.project} not found")
        return {"project_id": proj.id}
    u = s.scalar(select(User).where(User.name == body.user))
    if u is None:
        raise NotFound(f"user {body.user!r} not found")
    return {"user_id": u.id}


def grant(s: Session, p: Principal, name: str, body) -> bool:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    rg = _group(s, p, name)
    authz.require_superadmin(p, "grant resource groups")
    who = _grantee(s, body)
    for g in rg.grants:
        if all(getattr(g, k) == v for k, v in who.items()) and sum(
            getattr(g, k) is not None for k in ("domain_id", "project_id", "user_id")
        ) == 1:
            return False
    rg.grants.append(ResourceGroupGrant(**who))
    flush(s, "grant exists already")
    return True


def revoke(s: Session, p: Principal, name: str, body) -> None:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    rg = _group(s, p, name)
    authz.require_superadmin(p, "revoke resource group grants")
    who = _grantee(s, body)
    for g in rg.grants:
        if all(getattr(g, k) == v for k, v in who.items()):
            s.delete(g)
            s.flush()
            return
    raise NotFound("no such grant")


# --- nodes ---------------------------------------------------------------------

@dataclass
class NodeUse:
    """What the running allocations of a node hold, without saying whose:
    slots in all, and the GPU share taken of each device (by index)."""

    slots: dict[str, Decimal] = field(default_factory=dict)
    shares: dict[int, Decimal] = field(default_factory=dict)


def node_use(s: Session, node_ids: list[int]) -> dict[int, NodeUse]:
    """The use of each node in ``node_ids`` by allocated sessions (one query)."""
    use = {i: NodeUse() for i in node_ids}
    rows = s.execute(select(Allocation.node_id, Allocation.slots, Allocation.gpus).where(
        Allocation.state == "allocated", Allocation.node_id.in_(node_ids)))
    for node_id, slots, gpus in rows:
        u = use[node_id]
        u.slots = slotlib.add(u.slots, slotlib.from_text(slots))
        for g in gpus or []:
            u.shares[g["index"]] = u.shares.get(g["index"], ZERO) + Decimal(g["share"])
    return use


def shares_model(n: Node) -> dict:
    """Whether the node's GPU shares are enforced: ``mode`` (how: mps, hami,
    framework, "" not said), ``enforced`` (its mode can
    hold them now), ``reason`` (why not), ``taken`` (it takes shares: when
    enforced, or when an admin marked it ``not_enforced_allowed``),
    ``declared`` (its GPUs are declared in configuration, none found by the
    driver: no UUID, like Backend.AI's mock accelerator; nothing on the node
    holds a share to its size)."""
    enforced = not n.share_check
    return {"mode": n.sharing_mode or "", "enforced": enforced, "reason": n.share_check,
            "not_enforced_allowed": n.shares_unenforced,
            "taken": enforced or n.shares_unenforced,
            "declared": bool(n.devices) and not any(d.uuid for d in n.devices)}


def node_model(n: Node, use: NodeUse) -> dict:
    """A node: capacity and devices, what is held on it (``used``) and the
    share taken of each GPU (``taken``): exact text, and whose, never."""
    return {
        "name": n.name,
        "resource_group": n.resource_group.name,
        "capacity": n.capacity,
        "devices": [{"index": d.index, "uuid": d.uuid, "model": d.model, "memory": d.memory,
                     "taken": format_amount(use.shares.get(d.index, ZERO))} for d in n.devices],
        "used": slotlib.to_text(use.slots),
        "schedulable": n.schedulable,
        "shares": shares_model(n),
        "backend_url": n.backend_url,
        "created_at": iso(n.created_at),
    }


def _node(s: Session, p: Principal, name: str) -> Node:
    n = s.scalar(select(Node).where(Node.name == name))
    if n is None or not can_see_group(s, p, n.resource_group):
        raise (NotFound if p.is_superadmin else Hidden)(f"node {name!r} not found")
    return n


def _check_capacity(capacity: dict) -> dict:
    unknown = set(capacity) - {"cpu", "mem"}
    if unknown:
        raise Invalid(f"capacity: give cpu and mem; GPUs are listed as devices ({sorted(unknown)})")
    return capacity


def _devices(devices) -> list[Device]:
    indexes = [d.index for d in devices]
    if len(set(indexes)) != len(indexes):
        raise Invalid("devices: indexes must be unique")
    uuids = [d.uuid for d in devices if d.uuid]
    if len(set(uuids)) != len(uuids):
        raise Invalid("devices: UUIDs must be unique")
    return [Device(index=d.index, model=d.model, memory=d.memory, uuid=d.uuid) for d in devices]


def list_nodes(s: Session, p: Principal) -> list[dict]:
    nodes = [n for n in s.scalars(select(Node).order_by(Node.name))
             if can_see_group(s, p, n.resource_group)]
    use = node_use(s, [n.id for n in nodes])
    return [node_model(n, use[n.id]) for n in nodes]


def get_node(s: Session, p: Principal, name: str) -> dict:
    n = _node(s, p, name)
    return node_model(n, node_use(s, [n.id])[n.id])


def create_node(s: Session, p: Principal, body) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    authz.require_superadmin(p, "add nodes")
    rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.resource_group))
    if rg is None:
        raise NotFound(f"resource group {body.resource_group!r} not found")
    if s.scalar(select(Node).where(Node.name == body.name)):
        raise Conflict(f"node {body.name!r} already exists")
    n = new_node(rg, body)
    s.add(n)
    flush(s, f"node {body.name!r} already exists")
    return node_model(n, NodeUse())


def new_node(rg: ResourceGroup, body) -> Node:
    """A checked Node from a NodeCreate body (the API and the configuration)."""
    return Node(name=body.name, resource_group=rg, capacity=_check_capacity(body.capacity),
                schedulable=body.schedulable, backend_url=body.backend_url,
                share_check=body.share_check, shares_unenforced=body.shares_unenforced,
                sharing_mode=body.sharing_mode,
                devices=_devices(body.devices))


def update_node(s: Session, p: Principal, name: str, body) -> dict:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    n = _node(s, p, name)
    authz.require_superadmin(p, "change nodes")
    change = changes(body)
    if "capacity" in change:
        n.capacity = _check_capacity(change["capacity"])
    if "devices" in change:
        if s.scalar(select(Allocation.id).where(Allocation.node_id == n.id,
                                                Allocation.state == "allocated").limit(1)):
            raise Conflict(f"node {name!r} has running sessions: drain it before changing devices")
        n.devices = _devices(body.devices)
    for key in ("schedulable", "backend_url", "share_check", "shares_unenforced",
                "sharing_mode"):
        if key in change:
            setattr(n, key, change[key])
    s.flush()
    return node_model(n, node_use(s, [n.id])[n.id])


def delete_node(s: Session, p: Principal, name: str) -> None:
    db.hold_ledger_lock(s)  # capacity changes are decided in turn with admissions
    n = _node(s, p, name)
    authz.require_superadmin(p, "remove nodes")
    if s.scalar(select(Allocation.id).where(Allocation.node_id == n.id).limit(1)):
        raise Conflict(f"node {name!r} has sessions in its history; mark it unschedulable instead")
    s.delete(n)
    s.flush()

