"""Resource policies, resource groups (with their grants) and nodes.

Same shape as ``tenancy``: functions over one session and the caller,
plain dicts out, refusals as ApiErrors. Writes are for superadmins; users
see the groups granted to them (to their domain, a project of theirs, or
themselves) and the nodes of those groups.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..core import slots as slotlib
from ..core.authz import Principal
from ..core.errors import Conflict, Denied, Hidden, Invalid, NotFound
from ..core.models import (
    Allocation,
    Device,
    Domain,
    Keypair,
    Node,
    Project,
    ResourceGroup,
    ResourceGroupGrant,
    ResourcePolicy,
    User,
)
from ..core.names import format_amount
from ..core.schemas import changes
from ..tenancy.accounts import _flush, _iso, check_within_domain


def require_superadmin(p: Principal, what: str) -> None:
    if not p.is_superadmin:
        raise Denied(f"only a superadmin may {what}")


# --- policies ----------------------------------------------------------------

def policy_model(pol: ResourcePolicy) -> dict:
    return {
        "name": pol.name,
        "total_resource_slots": pol.total_resource_slots,
        "unspecified_limited": pol.unspecified_limited,
        "max_concurrent_sessions": pol.max_concurrent_sessions,
        "max_session_lifetime": pol.max_session_lifetime,
        "idle_timeout": pol.idle_timeout,
        "max_pending_sessions": pol.max_pending_sessions,
        "max_pending_resource_slots": pol.max_pending_resource_slots,
        "max_gpus_per_session": pol.max_gpus_per_session,
        "allowed_resource_groups": pol.allowed_resource_groups,
        "max_vfolder_count": pol.max_vfolder_count,
        "max_vfolder_size": pol.max_vfolder_size,
        "allowed_vfolder_hosts": pol.allowed_vfolder_hosts,
        "created_at": _iso(pol.created_at),
    }


def _policy_values(values: dict) -> dict:
    if values.get("max_gpus_per_session") is not None:
        values["max_gpus_per_session"] = format_amount(values["max_gpus_per_session"])
    return values


def _policy(s: Session, p: Principal, name: str) -> ResourcePolicy:
    if not (p.is_superadmin or p.role.value == "domain-admin" or p.policy == name
            or _user_policy(s, p) == name):
        raise Hidden(f"resource policy {name!r} not found")
    pol = s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == name))
    if pol is None:
        raise NotFound(f"resource policy {name!r} not found")
    return pol


def _user_policy(s: Session, p: Principal) -> str | None:
    return s.scalar(select(User.resource_policy).where(User.name == p.name))


def list_policies(s: Session, p: Principal) -> list[dict]:
    if p.is_superadmin or p.role.value == "domain-admin":
        q = select(ResourcePolicy)
    else:
        q = select(ResourcePolicy).where(
            ResourcePolicy.name.in_({_user_policy(s, p), p.policy} - {None}))
    return [policy_model(x) for x in s.scalars(q.order_by(ResourcePolicy.name))]


def get_policy(s: Session, p: Principal, name: str) -> dict:
    return policy_model(_policy(s, p, name))


def create_policy(s: Session, p: Principal, body) -> dict:
    require_superadmin(p, "create resource policies")
    if s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == body.name)):
        raise Conflict(f"resource policy {body.name!r} already exists")
    pol = ResourcePolicy(**_policy_values(body.model_dump()))
    s.add(pol)
    _flush(s, f"resource policy {body.name!r} already exists")
    return policy_model(pol)


def update_policy(s: Session, p: Principal, name: str, body) -> dict:
    pol = _policy(s, p, name)
    require_superadmin(p, "change resource policies")
    for key, value in _policy_values(changes(body)).items():
        setattr(pol, key, value)
    s.flush()
    return policy_model(pol)


def delete_policy(s: Session, p: Principal, name: str) -> None:
    pol = _policy(s, p, name)
    require_superadmin(p, "delete resource policies")
    if s.scalar(select(User.id).where(User.resource_policy == name).limit(1)) or s.scalar(
        select(Keypair.id).where(Keypair.resource_policy == name).limit(1)
    ):
        raise Conflict(f"resource policy {name!r} is still assigned to users or keypairs")
    s.delete(pol)
    s.flush()


def check_policy_within_domain(s: Session, p: Principal, domain: Domain, name: str) -> None:
    pol = s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == name))
    if pol is None:
        raise Invalid(f"resource_policy: no policy named {name!r}")
    check_within_domain(p, domain, pol.total_resource_slots, f"policy {name}")


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
        "created_at": _iso(rg.created_at),
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
    require_superadmin(p, "create resource groups")
    if s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.name)):
        raise Conflict(f"resource group {body.name!r} already exists")
    rg = ResourceGroup(**body.model_dump())
    s.add(rg)
    _flush(s, f"resource group {body.name!r} already exists")
    return group_model(s, rg, True)


def update_group(s: Session, p: Principal, name: str, body) -> dict:
    rg = _group(s, p, name)
    require_superadmin(p, "change resource groups")
    for key, value in changes(body).items():
        setattr(rg, key, value)
    s.flush()
    return group_model(s, rg, True)


def delete_group(s: Session, p: Principal, name: str) -> None:
    rg = _group(s, p, name)
    require_superadmin(p, "delete resource groups")
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
    rg = _group(s, p, name)
    require_superadmin(p, "grant resource groups")
    who = _grantee(s, body)
    for g in rg.grants:
        if all(getattr(g, k) == v for k, v in who.items()) and sum(
            getattr(g, k) is not None for k in ("domain_id", "project_id", "user_id")
        ) == 1:
            return False
    rg.grants.append(ResourceGroupGrant(**who))
    _flush(s, "grant exists already")
    return True


def revoke(s: Session, p: Principal, name: str, body) -> None:
    rg = _group(s, p, name)
    require_superadmin(p, "revoke resource group grants")
    who = _grantee(s, body)
    for g in rg.grants:
        if all(getattr(g, k) == v for k, v in who.items()):
            s.delete(g)
            s.flush()
            return
    raise NotFound("no such grant")


# --- nodes ---------------------------------------------------------------------

def node_model(n: Node) -> dict:
    return {
        "name": n.name,
        "resource_group": n.resource_group.name,
        "capacity": n.capacity,
        "devices": [{"index": d.index, "model": d.model, "memory": d.memory} for d in n.devices],
        "schedulable": n.schedulable,
        "backend_url": n.backend_url,
        "created_at": _iso(n.created_at),
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
    return [Device(index=d.index, model=d.model, memory=d.memory) for d in devices]


def list_nodes(s: Session, p: Principal) -> list[dict]:
    return [node_model(n) for n in s.scalars(select(Node).order_by(Node.name))
            if can_see_group(s, p, n.resource_group)]


def get_node(s: Session, p: Principal, name: str) -> dict:
    return node_model(_node(s, p, name))


def create_node(s: Session, p: Principal, body) -> dict:
    require_superadmin(p, "add nodes")
    rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.resource_group))
    if rg is None:
        raise NotFound(f"resource group {body.resource_group!r} not found")
    if s.scalar(select(Node).where(Node.name == body.name)):
        raise Conflict(f"node {body.name!r} already exists")
    n = new_node(rg, body)
    s.add(n)
    _flush(s, f"node {body.name!r} already exists")
    return node_model(n)


def new_node(rg: ResourceGroup, body) -> Node:
    """A checked Node from a NodeCreate body (the API and the configuration)."""
    return Node(name=body.name, resource_group=rg, capacity=_check_capacity(body.capacity),
                schedulable=body.schedulable, backend_url=body.backend_url,
                devices=_devices(body.devices))


def update_node(s: Session, p: Principal, name: str, body) -> dict:
    n = _node(s, p, name)
    require_superadmin(p, "change nodes")
    change = changes(body)
    if "capacity" in change:
        n.capacity = _check_capacity(change["capacity"])
    if "devices" in change:
        if s.scalar(select(Allocation.id).where(Allocation.node_id == n.id,
                                                Allocation.state == "allocated").limit(1)):
            raise Conflict(f"node {name!r} has running sessions: drain it before changing devices")
        n.devices = _devices(body.devices)
    for key in ("schedulable", "backend_url"):
        if key in change:
            setattr(n, key, change[key])
    s.flush()
    return node_model(n)


def delete_node(s: Session, p: Principal, name: str) -> None:
    n = _node(s, p, name)
    require_superadmin(p, "remove nodes")
    if s.scalar(select(Allocation.id).where(Allocation.node_id == n.id).limit(1)):
        raise Conflict(f"node {name!r} has sessions in its history; mark it unschedulable instead")
    s.delete(n)
    s.flush()

