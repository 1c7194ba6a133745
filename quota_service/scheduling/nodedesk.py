"""The node page's reading: a node's sessions and per-device GPU map for
admins (``devicemap``), with how long until it is empty at its sessions'
lifetime limits. A domain admin sees their domain's sessions in full; other
domains' sessions count in ``taken`` and ``others`` only, and in
``other_sessions`` (how many)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import devicemap, inventory, ledger
from ..core import authz
from ..core.authz import Principal
from ..core.errors import ApiError
from ..core.models import Allocation, Domain, Keypair, Node, Project, User
from ..core.orm import aware, iso


def running(s: Session, node: Node) -> list[devicemap.Running]:
    """The sessions allocated on ``node``, each with its lifetime end."""
    rows = s.execute(
        select(Allocation, User.name, User.resource_policy, Domain.name, Project.name)
        .join(User, User.id == Allocation.user_id)
        .join(Domain, Domain.id == Allocation.domain_id)
        .join(Project, Project.id == Allocation.project_id)
        .where(Allocation.node_id == node.id, Allocation.state == "allocated")
        .order_by(Allocation.admitted_at, Allocation.id)).all()
    keys = {a.keypair for a, *_ in rows if a.keypair}
    key_policy = dict(s.execute(select(Keypair.access_key, Keypair.resource_policy)
                                .where(Keypair.access_key.in_(keys))).all()) if keys else {}
    lifetimes: dict[str, int | None] = {}
    out = []
    for a, user, user_policy, domain, project in rows:
        name = key_policy.get(a.keypair) or user_policy
        if name not in lifetimes:
            pol = ledger.policy_of(s, name)
            lifetimes[name] = pol.max_session_lifetime if pol is not None else None
        started = aware(a.admitted_at or a.created_at)
        ends = None
        if lifetimes[name]:
            ends = started + dt.timedelta(seconds=lifetimes[name])
            kept = aware(a.kept_until)
            if kept is not None and kept > ends:
                ends = kept
        out.append(devicemap.Running(a.id, user, domain, project, a.slots, a.gpus or [],
                                     started, ends, a.server_name or "", a.origin))
    return out


def node_sessions(s: Session, p: Principal, name: str, now: dt.datetime) -> dict:
    """A node for the admin pages: its model (``inventory.node_model``), the
    GPU map with holders, the sessions on it and ``until_empty``."""
    n = inventory._node(s, p, name)  # 404 for a node the caller may not see
    authz.admin_page_scope(p, "see the sessions on a node")
    sessions = running(s, n)
    model = inventory.node_model(n, inventory.node_use(s, [n.id])[n.id])

    def sees(domain: str) -> bool:
        return authz.sees_whose(p, domain)

    model["devices"] = devicemap.holders(
        [(d.index, d.model, d.memory) for d in n.devices], sessions, sees)
    model["sessions"] = [
        {"id": r.id, "user": r.user, "domain": r.domain, "project": r.project,
         "server_name": r.server_name, "origin": r.origin, "slots": r.slots, "gpus": r.gpus, "started_at": iso(r.started), "ends_at": iso(r.ends)}
        for r in sessions if sees(r.domain)]
    model["other_sessions"] = len(sessions) - len(model["sessions"])
    model["until_empty"] = devicemap.until_empty(now, sessions)
    return model


#: the most nodes one ``GET node-sessions`` reads
MAX_NODES = 200


def nodes_sessions(s: Session, p: Principal, names: list[str], now: dt.datetime) -> list[dict]:
    """``node_sessions`` of several nodes in one read (the admin Groups
    page's GPU maps): each as alone, in the order asked, a node named twice
    once; any node the caller may not see answers for the whole read."""
    wanted = list(dict.fromkeys(n for n in names if n))
    if not wanted:
        raise ApiError("names: the nodes to read, comma-separated")
    if len(wanted) > MAX_NODES:
        raise ApiError(f"names: at most {MAX_NODES} nodes at once, not {len(wanted)}")
    return [node_sessions(s, p, name, now) for name in wanted]


def node_for(s: Session, p: Principal, name: str, now: dt.datetime) -> dict:
    """``GET nodes/{node}``: the node (``inventory.get_node``) and, for
    admins, ``until_empty`` (how long a drain takes at its sessions' limits)."""
    model = inventory.get_node(s, p, name)
    if authz.reads_every_policy(p):  # superadmins and domain admins
        n = s.scalar(select(Node).where(Node.name == name))
        model["until_empty"] = devicemap.until_empty(now, running(s, n))
    return model
