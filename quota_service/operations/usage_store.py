"""The usage record's IO: append a session's interval when it ends, and read
the intervals of a period (the recorded ones and the sessions running now).

``usage_intervals`` is append-only: a row is written once, by ``record``,
when an allocation that ran is released (``ledger.release_allocation``), and
never changed. Running sessions are not recorded: they are read from the
ledger (allocated allocations, from ``admitted_at``) and counted up to now.
The database filters (indexes on ``ended_at``, by domain and by user); the
sums are taken exactly in ``operations.usage``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from ..core import laterrows
from ..core.models import Allocation, Domain, Project, ResourceGroup, User
from ..core.orm import aware
from ..core.usagemodels import UsageInterval
from .usage import Interval


def record(s: Session, a: Allocation) -> dict | None:
    """Append the interval of ``a``, a session that ran and has just ended
    (its columns; None when it never ran). Its end is never before its
    start. Written in the transaction of ``s`` (a plain INSERT: the ORM's
    unit of work for one row cost a release more than its decision), with
    the batch's others at its end (``core/laterrows``)."""
    if a.admitted_at is None or a.ended_at is None:
        return None
    start = aware(a.admitted_at)
    row = dict(
        allocation_id=a.id, user_id=a.user_id, project_id=a.project_id,
        domain_id=a.domain_id, resource_group_id=a.resource_group_id,
        session_type=a.session_type, slots=dict(a.slots or {}), gpus=list(a.gpus or []),
        started_at=start, ended_at=max(aware(a.ended_at), start),
    )
    laterrows.insert(s, UsageInterval.__table__, row)
    return row


def _names(table, *where):
    return (select(table.allocation_id if table is UsageInterval else table.id,
                   User.name, Domain.name, Project.name, ResourceGroup.name, table.slots)
            .join(User, User.id == table.user_id)
            .join(Domain, Domain.id == table.domain_id)
            .join(Project, Project.id == table.project_id)
            .join(ResourceGroup, ResourceGroup.id == table.resource_group_id)
            .where(*where))


def _scope(table, domain_id: int | None, user_id: int | None) -> list:
    out = []
    if domain_id is not None:
        out.append(table.domain_id == domain_id)
    if user_id is not None:
        out.append(table.user_id == user_id)
    return out


def _slots(raw: dict, seen: dict | None = None) -> dict[str, Decimal]:
    """The slot map as Decimals; ``seen``: parsed maps by their text (few
    sessions ask for something nobody asked for before)."""
    items = tuple((raw or {}).items())
    if seen is not None and items in seen:
        return seen[items]
    parsed = {k: Decimal(v) for k, v in items}
    if seen is not None:
        seen[items] = parsed
    return parsed


def intervals(s: Session, start: dt.datetime, end: dt.datetime, *,
              domain_id: int | None = None, user_id: int | None = None) -> list[Interval]:
    """Every session that may touch ``[start, end)``: the recorded intervals
    ending at or after ``start`` and starting before ``end``, and the
    sessions running now that started before ``end``; narrowed to a domain
    and/or a user."""
    out: list[Interval] = []
    seen: dict = {}
    closed = _names(UsageInterval, UsageInterval.ended_at >= start,
                    UsageInterval.started_at < end,
                    *_scope(UsageInterval, domain_id, user_id)
                    ).add_columns(UsageInterval.started_at, UsageInterval.ended_at)
    for aid, user, domain, project, rg, slots, started, ended in s.execute(closed):
        out.append(Interval(aid, user, domain, project, rg, _slots(slots, seen),
                            aware(started), aware(ended)))
    running = _names(Allocation, and_(Allocation.state == "allocated",
                                      Allocation.admitted_at.is_not(None)),
                     Allocation.admitted_at < end,
                     *_scope(Allocation, domain_id, user_id)
                     ).add_columns(Allocation.admitted_at)
    for aid, user, domain, project, rg, slots, started in s.execute(running):
        out.append(Interval(aid, user, domain, project, rg, _slots(slots, seen),
                            aware(started)))
    return out


def recorded(s: Session) -> list[Interval]:
    """Every recorded interval (the raw record, for rebuilding and checks)."""
    rows = s.execute(_names(UsageInterval).add_columns(UsageInterval.started_at,
                                                        UsageInterval.ended_at))
    return [Interval(aid, user, domain, project, rg, _slots(slots), aware(st), aware(en))
            for aid, user, domain, project, rg, slots, st, en in rows]
