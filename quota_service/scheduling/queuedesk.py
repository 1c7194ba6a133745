"""The scheduler page's reading and writing of a resource group's pending
queue: the queue in the scheduler's order (``queue.queue_order``), and an
admin's change of a request's priority or place (``queueadmin``) or its
cancellation. Writers run holding the ledger lock (the handler's
``db(..., ledger=True)``), the lock every queue pass holds: a move is
never half-seen by a pass.

Who sees whose: a superadmin every request; a domain admin their domain's
requests in full and every other request as a bare place in the line
(``{"position", "visible": false}``: not whose, not how much).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import inventory, ledger, lineplaces, queue as queueing, queueadmin
from ..core import authz
from ..core.authz import Principal
from ..core.errors import Conflict, Hidden
from ..core.models import Allocation, Domain, Project, ResourceGroup, User
from ..core.orm import aware, iso


def _group(s: Session, p: Principal, name: str) -> ResourceGroup:
    rg = inventory._group(s, p, name)  # 404 for a group the caller may not see
    authz.admin_page_scope(p, "see or change the scheduler's queue")
    return rg


def _pending(s: Session, rg: ResourceGroup):
    """The group's pending requests in queue order, with (user, domain, project) names."""
    rows = s.execute(
        select(Allocation, User.name, Domain.name, Project.name)
        .join(User, User.id == Allocation.user_id)
        .join(Domain, Domain.id == Allocation.domain_id)
        .join(Project, Project.id == Allocation.project_id)
        .where(Allocation.resource_group_id == rg.id, Allocation.state == "pending")).all()
    names = {a.id: (user, domain, project) for a, user, domain, project in rows}
    running = []
    if rg.queue_order == "drf":
        running = list(s.scalars(select(Allocation).where(
            Allocation.resource_group_id == rg.id, Allocation.state == "allocated")))
    ordered = queueing.queue_order(rg, [a for a, *_ in rows], running)
    return ordered, names


def _entry(position: int, a: Allocation, names, rg: ResourceGroup) -> dict:
    user, domain, project = names
    reasons = a.reasons or []
    return {
        "position": position,
        "visible": True,
        "id": a.id,
        "user": user,
        "domain": domain,
        "project": project,
        "slots": a.slots,
        "gpu_models": a.gpu_models,
        "session_type": a.session_type,
        "server_name": a.server_name or "",
        "priority": a.priority,
        "created_at": iso(a.created_at),
        "queue_at": iso(a.queue_at),
        "passes": a.passes,
        # waiting for the group's capacity (and holding the head of the line
        # for hol_passes passes), or for its own limits
        "waits_for": waits_for(reasons),
        "holds_line": bool(reasons) and a.passes < rg.hol_passes and all(
            r.get("level") == "resource-group" for r in reasons),
        "reasons": reasons,
        "origin": a.origin,
    }


def waits_for(reasons: list[dict]) -> str | None:
    """What a pending request waits for: ``capacity`` (its resource group's
    free room) or ``limits`` (its own policies), None when not judged yet."""
    if not reasons:
        return None
    return "capacity" if all(r.get("level") == "resource-group" for r in reasons) else "limits"


def line_rows(s: Session, group: str) -> tuple[str, list[lineplaces.Row]] | None:
    """(queue order, the pending requests of ``group`` in queue order) for
    ``lineplaces``; None when there is no such group."""
    rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == group))
    if rg is None:
        return None
    return rg.queue_order, [_row(a, rg.name) for a in _pending(s, rg)[0]]


#: what ``lineplaces`` reads of a changed request (no whole row, no joins)
ROW_COLUMNS = (Allocation.id, ResourceGroup.name, Allocation.state, Allocation.queue_at,
               Allocation.created_at, Allocation.priority, Allocation.reasons)
ROWS_PER_QUERY = 500


def line_changes(s: Session, ids: list[str]) -> list[lineplaces.Row]:
    """The rows ``lineplaces`` reads of the allocations ``ids`` (those that exist)."""
    out = []
    for at in range(0, len(ids), ROWS_PER_QUERY):
        for i, group, state, queue_at, created, priority, reasons in s.execute(
                select(*ROW_COLUMNS).join(ResourceGroup,
                                          ResourceGroup.id == Allocation.resource_group_id)
                .where(Allocation.id.in_(ids[at:at + ROWS_PER_QUERY]))):
            out.append(lineplaces.Row(i, group, state, aware(queue_at or created), priority,
                                      waits_for(reasons or [])))
    return out


def _row(a: Allocation, group: str) -> lineplaces.Row:
    return lineplaces.Row(a.id, group, a.state, aware(a.queue_at or a.created_at), a.priority,
                          waits_for(a.reasons or []))


def list_queue(s: Session, p: Principal, group: str) -> dict:
    """The pending queue of ``group`` in the order the scheduler judges it."""
    rg = _group(s, p, group)
    ordered, names = _pending(s, rg)
    entries = []
    for i, a in enumerate(ordered):
        who = names[a.id]
        if authz.sees_whose(p, who[1]):
            entries.append(_entry(i, a, who, rg))
        else:
            entries.append({"position": i, "visible": False})
    return {
        "resource_group": rg.name,
        "queue_order": rg.queue_order,
        "hol_passes": rg.hol_passes,
        "pending_timeout": rg.pending_timeout,
        "pending": len(entries),
        "hidden": sum(1 for e in entries if not e["visible"]),
        "entries": entries,
    }


def _queued(s: Session, p: Principal, rg: ResourceGroup, alloc_id: str):
    ordered, names = _pending(s, rg)
    a = next((x for x in ordered if x.id == alloc_id), None)
    if a is None:
        other = s.get(Allocation, alloc_id)
        if other is not None and other.resource_group_id == rg.id and authz.sees_whose(
                p, s.get(Domain, other.domain_id).name):
            raise Conflict(f"request {alloc_id} is not pending (it is {other.state})")
        raise Hidden(f"pending request {alloc_id!r} not found in {rg.name}")
    authz.require_manage_queued(p, names[a.id][1], alloc_id)
    return a, ordered, names


def change(s: Session, p: Principal, group: str, alloc_id: str, body) -> tuple[dict, str]:
    """Set a pending request's priority and/or move it; (its entry, what
    changed as text for the access log: before -> after)."""
    rg = _group(s, p, group)
    a, ordered, names = _queued(s, p, rg, alloc_id)
    before = (a.priority, ordered.index(a))
    if body.priority is not None:
        a.priority = body.priority
    target = queueadmin.Target(body.before, body.after, body.position)
    if any(x is not None for x in (body.before, body.after, body.position)):
        scope = authz.admin_page_scope(p, "change the scheduler's queue")
        queued = [queueadmin.Queued(x.id, aware(x.queue_at or x.created_at), x.priority,
                                    x.user_id, scope is None or names[x.id][1] == scope)
                  for x in ordered]
        by_id = {x.id: x for x in ordered}
        for other, key in queueadmin.move(rg.queue_order, queued, alloc_id, target).items():
            by_id[other].queue_at = key
    s.flush()
    ordered, names = _pending(s, rg)
    after = (a.priority, ordered.index(a))
    detail = (f"priority {before[0]} -> {after[0]}; position {before[1]} -> {after[1]} "
              f"of {len(ordered)} in {rg.name}")
    return _entry(after[1], a, names[a.id], rg), detail


def cancel(s: Session, p: Principal, group: str, alloc_id: str, now: dt.datetime) -> tuple[str, str]:
    """Cancel a pending request; (its domain, what it was, for the access log)."""
    rg = _group(s, p, group)
    a, ordered, names = _queued(s, p, rg, alloc_id)
    place = ordered.index(a)
    ledger.release_allocation(s, a, now, f"cancelled by {p.name} from the queue")
    return names[a.id][1], (f"cancelled: was position {place} of {len(ordered)} in {rg.name}, "
                            f"priority {a.priority}, user {names[a.id][0]}")
