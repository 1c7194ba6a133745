"""Idle reclamation's database side: the sessions to judge with the policy
that binds each, and the writes of a decision (the notice on the
allocation, a ``ReclaimEvent``, the release, the access log). Functions over
one SQLAlchemy session; no network."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...core import authz
from ...core.authz import Principal
from ...core.errors import Conflict, Invalid
from ...core.models import Allocation, Domain, Keypair, Node, ReclaimEvent, User
from ...core.orm import aware, iso
from ...scheduling import ledger
from ...scheduling.policycache import PolicyRow
from . import rules


def settings_of(pol: PolicyRow | None, default_warning: int) -> rules.Settings:
    """A policy's reclaim settings (no policy: no rule)."""
    if pol is None:
        return rules.Settings()
    return rules.Settings(
        idle_timeout=pol.idle_timeout,
        max_lifetime=pol.max_session_lifetime,
        utilization_window=pol.utilization_window,
        utilization_grace=pol.utilization_grace or 0,
        thresholds={k: Decimal(str(v)) for k, v in (pol.utilization_thresholds or {}).items()},
        operator=pol.utilization_operator or "and",
        warning=pol.reclaim_warning if pol.reclaim_warning is not None else default_warning,
        keep_extension=pol.keep_extension or 0,
        max_keeps=pol.max_keeps or 0,
    )


def binding_policy(s: Session, a: Allocation, user: User) -> PolicyRow | None:
    """The policy that binds a session: its keypair's, else its user's."""
    name = user.resource_policy
    if a.keypair:
        kp = s.scalar(select(Keypair).where(Keypair.access_key == a.keypair))
        if kp is not None:
            name = kp.resource_policy
    return ledger.policy_of(s, name)


@dataclass(frozen=True)
class Candidate:
    """A running session and what the rules need to judge it."""

    id: str
    user: str
    user_id: int
    domain: str
    domain_id: int
    project_id: int
    resource_group_id: int
    origin: str
    server_name: str
    session_type: str
    started: dt.datetime
    backend_url: str
    gpus: Decimal
    gpu_indices: tuple[int, ...]
    cores: Decimal
    settings: rules.Settings
    notice: dict | None
    activity: dict | None
    keeps: int
    kept_until: dt.datetime | None
    #: judged by the rules (its policy has one, or it has a notice); False:
    #: only read for its live use (``sample_all``), never reclaimed
    judged: bool = True


def candidates(s: Session, default_warning: int, sample_all: bool = False) -> list[Candidate]:
    """Every allocated session bound by a policy with at least one rule, and
    with ``sample_all`` every other one too, not to be judged
    (``judged=False``: its use is read for the session's detail only). An
    endpoint's replicas (``inference``) are not: no rule reclaims them (a
    model server has no kernels or browser, and a replica cut after a
    lifetime would only be started again by its endpoint); their endpoint's
    replica count decides how long they run (docs/serving.md)."""
    out = []
    rows = s.execute(select(Allocation, User).join(User, User.id == Allocation.user_id)
                     .where(Allocation.state == "allocated",
                            Allocation.session_type != "inference"))
    policies: dict[tuple[str, str | None], rules.Settings] = {}
    for a, user in rows:
        key = (user.resource_policy, a.keypair)
        if key not in policies:
            policies[key] = settings_of(binding_policy(s, a, user), default_warning)
        st = policies[key]
        judged = bool(st.any_rule or a.reclaim_notice)
        if not judged and not sample_all:
            continue
        node = s.get(Node, a.node_id) if a.node_id else None
        out.append(Candidate(
            id=a.id, user=user.name, user_id=user.id, domain=user.domain.name,
            domain_id=a.domain_id, project_id=a.project_id,
            resource_group_id=a.resource_group_id, origin=a.origin,
            server_name=a.server_name, session_type=a.session_type,
            started=aware(a.admitted_at or a.created_at),
            backend_url=node.backend_url if node else "",
            gpus=rules.gpu_amount(a.gpus),
            gpu_indices=tuple(int(g["index"]) for g in a.gpus or []), cores=Decimal((a.slots or {}).get("cpu", "0")),
            settings=st, notice=a.reclaim_notice, activity=a.activity, keeps=a.keeps or 0,
            kept_until=aware(a.kept_until), judged=judged))
    return out


def _event(s: Session, a: Allocation, kind: str, rule: str, now: dt.datetime,
           details: dict) -> None:
    s.add(ReclaimEvent(allocation_id=a.id, kind=kind, rule=rule, at=now,
                       resource_group_id=a.resource_group_id, project_id=a.project_id,
                       domain_id=a.domain_id, user_id=a.user_id, details=details))


def release_reason(n: rules.Notice) -> str:
    """What the allocation says it ended for: the rule and its numbers."""
    return f"reclaimed ({n.rule}): {n.reason}"[:255]


def notice_json(n: rules.Notice, st: rules.Settings, shadow: bool = False) -> dict:
    return dict(rules.notice_to_json(n, shadow), max_keeps=st.max_keeps,
                keep_extension=st.keep_extension)


def apply(s: Session, c: Candidate, d: rules.Decision, now: dt.datetime) -> dict | None:
    """Write one decision; returns what the caller must still do for a
    reclaim ({"id", "user", "server_name", "origin", "reason", ...}) or None.
    Nothing is written for a session that is no longer allocated."""
    a = s.get(Allocation, c.id)
    if a is None or a.state != "allocated" or d.action == "none":
        return None
    n = d.notice
    if d.action == "clear":
        a.reclaim_notice = None
    elif d.action in ("warn", "update"):
        a.reclaim_notice = notice_json(n, c.settings)
        if d.action == "warn":
            _event(s, a, "warning", n.rule, now, dict(n.numbers, deadline=iso(n.deadline),
                                                     reason=n.reason))
    elif d.action == "shadow":
        a.reclaim_notice = notice_json(n, c.settings, shadow=True)
        _event(s, a, "shadow", n.rule, now, dict(
            n.numbers, deadline=iso(n.deadline), reason=n.reason, gpus=str(c.gpus),
            gpu_hours_so_far=str(rules.gpu_hours(c.gpus, n.deadline, now))))
    elif d.action == "reclaim":
        reason = release_reason(n)
        recorded = bool((a.reclaim_notice or {}).get("recorded"))
        a.reclaim_notice = dict(notice_json(n, c.settings), reclaimed_at=iso(now),
                                reclaim_reason=reason, recorded=recorded)
        details = dict(n.numbers, deadline=iso(n.deadline), reason=n.reason, gpus=str(c.gpus),
                       late_seconds=round((now - n.deadline).total_seconds(), 3))
        if c.origin != "hub":
            ledger.release_allocation(s, a, now, reason)
            details = record_reclaimed(s, a.id, n.rule, now, details) or details
        s.flush()
        return {"id": a.id, "user": c.user, "server_name": c.server_name,
                "origin": c.origin, "domain": c.domain, "rule": n.rule, "reason": reason,
                "numbers": n.numbers, "details": details}
    s.flush()
    return None


def record_reclaimed(s: Session, alloc_id: str, rule: str, now: dt.datetime,
                     details: dict) -> dict | None:
    """The ``reclaimed`` event of a session that was stopped (released, or
    its hub server's stop accepted): once per allocation, however many
    stops a failing hub needed. It is the final record: at the real stop
    time (the allocation's end when its server's stop released it, which
    is when the container or process was gone; else ``now``) with the
    numbers as of then (``rules.final``), not the warning's. Returns its
    details, or None if it was recorded already."""
    a = s.get(Allocation, alloc_id)
    notice = dict(a.reclaim_notice or {}) if a is not None else {}
    if a is None or notice.get("recorded"):
        return None
    stopped = aware(a.ended_at) or now
    n = rules.notice_from_json(notice)
    if n is not None:
        reason, numbers = rules.final(n, stopped)
        details = dict(details, **numbers, reason=reason)
        notice.update(stopped_at=iso(stopped), final_reason=reason, final_numbers=numbers,
                      reclaim_reason=f"reclaimed ({n.rule}): {reason}"[:255])
    _event(s, a, "reclaimed", rule, stopped, details)
    a.reclaim_notice = dict(notice, recorded=True)
    return dict(details, stopped_at=iso(stopped))


# --- the owner's verbs --------------------------------------------------------

def _owned(s: Session, p: Principal, alloc_id: str) -> tuple[Allocation, User]:
    a = ledger.get_allocation(s, alloc_id)
    owner = s.get(User, a.user_id)
    authz.require_session_owner(p, owner.name, owner.domain.name)
    return a, owner


def report_activity(s: Session, p: Principal, alloc_id: str, report: dict,
                    now: dt.datetime) -> dict:
    """The session's Lab extension reports its kernels and terminals (owner
    only). The answer carries the session's announced reclaim (``reclaim``,
    as on the allocation, or None): the Lab saves its open documents before
    the deadline."""
    a, _owner = _owned(s, p, alloc_id)
    if a.state != "allocated":
        raise Conflict(f"allocation {alloc_id} is {a.state}, not running")
    a.activity = dict(report, reported_at=iso(now))
    return {"id": a.id, "activity": a.activity,
            "reclaim": rules.public(a.reclaim_notice, a.keeps or 0, aware(a.kept_until))}


def keep(s: Session, p: Principal, alloc_id: str, now: dt.datetime,
         default_warning: int) -> dict:
    """"Keep it": push every reclaim deadline by the policy's keep_extension
    (owner only; at most max_keeps times). Returns the allocation's reclaim."""
    a, owner = _owned(s, p, alloc_id)
    if a.state != "allocated":
        raise Conflict(f"allocation {alloc_id} is {a.state}, not running")
    st = settings_of(binding_policy(s, a, owner), default_warning)
    notice = rules.notice_from_json(a.reclaim_notice)
    try:
        until = rules.keep(st, a.keeps or 0, aware(a.kept_until), notice, now)
    except ValueError as e:
        raise Invalid(str(e)) from None
    a.keeps = (a.keeps or 0) + 1
    a.kept_until = until
    details = {"kept_until": iso(until), "keeps": a.keeps, "max_keeps": st.max_keeps,
               "keep_extension": st.keep_extension,
               "deadline_before": iso(notice.deadline) if notice else None}
    rule = notice.rule if notice else ("idle" if st.idle_timeout else
                                       "lifetime" if st.max_lifetime else "utilization")
    _event(s, a, "extended", rule, now, details)
    a.reclaim_notice = None  # the next pass announces the new deadline when it is close
    s.flush()
    return {"id": a.id, "keeps": a.keeps, "max_keeps": st.max_keeps, "kept_until": iso(until),
            "can_keep": rules.can_keep(st, a.keeps)}


def event_model(e: ReclaimEvent, a: Allocation | None, user: str, now: dt.datetime) -> dict:
    out = {"id": e.id, "allocation": e.allocation_id, "kind": e.kind, "rule": e.rule,
           "at": iso(e.at), "user": user, "details": e.details}
    if e.kind == "shadow" and a is not None:
        # what reclaiming it at its deadline would have freed: up to its end (or now)
        gpus = Decimal(e.details.get("gpus", "0"))
        since = dt.datetime.fromisoformat(e.details["deadline"])
        until = aware(a.ended_at) or now
        out["gpu_hours_freed"] = str(rules.gpu_hours(gpus, since, until))
    return out


def list_events(s: Session, p: Principal, kind: str | None, rule: str | None,
                alloc_id: str | None, now: dt.datetime, limit: int = 500) -> dict:
    """Reclaim events the caller may see (their own; an admin's domain), newest
    first; with the GPU-hours shadow mode would have freed."""
    q = select(ReclaimEvent, Allocation, User, Domain).join(
        Allocation, Allocation.id == ReclaimEvent.allocation_id).join(
        User, User.id == ReclaimEvent.user_id).join(Domain, Domain.id == ReclaimEvent.domain_id)
    if kind:
        q = q.where(ReclaimEvent.kind == kind)
    if rule:
        q = q.where(ReclaimEvent.rule == rule)
    if alloc_id:
        q = q.where(ReclaimEvent.allocation_id == alloc_id)
    q = q.order_by(ReclaimEvent.at.desc(), ReclaimEvent.id.desc()).limit(limit)
    events = [event_model(e, a, u.name, now) for e, a, u, d in s.execute(q)
              if authz.can_see_user(p, u.name, d.name)]
    freed = sum((Decimal(e["gpu_hours_freed"]) for e in events if "gpu_hours_freed" in e),
                Decimal(0))
    return {"events": events, "shadow_gpu_hours_freed": str(freed)}
