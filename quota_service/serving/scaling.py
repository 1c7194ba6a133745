"""Autoscaling applied to endpoints: an IO edge over the decision.

After each report of the gateway (``POST internal/serving/report``), every
endpoint with rules is judged on what the gateway measured
(``health.Reports.measures``: requests per second and calls in flight, each
per routed replica), rule by rule in order (``autoscale.decide``): the first
rule that changes the replicas does so (the endpoint's ``replicas`` and
``desired_at``, so the serving controller starts or stops them and the
cooldown counts from now). Every decision but "idle" is recorded on the
endpoint (``scaling_events``, the last 20): scaled, clamped to a bound,
refused at a bound, held by the cooldown, clamped or refused by the
creator's limits (``quota``: the replicas asked for and not yet admitted
count as held); a refusal repeated pass after pass is one event with its
count, first and last time and latest reason.

An endpoint whose rules allow zero replicas (a rule's ``min_replicas`` is 0)
is scaled to zero like any other step; the next call through the gateway
wakes it (``wake``: one replica at once, whatever the cooldown, recorded as
a ``wake`` event), and the gateway holds that call until the replica serves
(gateway/coldstart.py). An endpoint set to zero replicas by hand, with no
such rule, is not woken: its calls are refused with why.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import autoscale
from .autoscale import Rule, RuleError
from . import checks, fit
from ..core import slots as slotlib
from ..core.errors import Conflict, Hidden, Invalid
from ..core.models import Project, User
from ..core.orm import aware
from ..core.servingmodels import Endpoint

EVENTS = 20


def rule_of(i: int, d: dict) -> Rule:
    """The rule of a request body's ``autoscaling[i]``; Invalid names the field."""
    try:
        return Rule(d["metric"], d["comparator"], Decimal(str(d["threshold"])), int(d["step"]),
                    int(d.get("cooldown", d.get("cooldown_s", 300))), int(d["min_replicas"]),
                    int(d["max_replicas"])).check()
    except RuleError as e:
        raise Invalid(f"autoscaling[{i}].{e}") from None


def rule_json(r: Rule) -> dict:
    return {"metric": r.metric, "comparator": r.comparator, "threshold": str(r.threshold),
            "step": r.step, "cooldown": r.cooldown_s, "min_replicas": r.min_replicas,
            "max_replicas": r.max_replicas}


def record(events: list[dict], rule: int, d: autoscale.Decision, before: int,
           now: dt.datetime) -> list[dict]:
    """``events`` with decision ``d`` of rule ``rule`` added (a repeat of the
    last refusal counts up instead), the last ``EVENTS`` kept."""
    at = now.isoformat()
    last = events[-1] if events else None
    if d.replicas is None and last and (last["rule"], last["outcome"]) == (rule, d.outcome):
        return [*events[:-1], {**last, "count": last.get("count", 1) + 1, "last_at": at,
                               "reason": d.reason}]
    event = {"at": at, "rule": rule, "outcome": d.outcome, "reason": d.reason,
             "replicas_before": before,
             "replicas_after": d.replicas if d.replicas is not None else before}
    return [*events, event][-EVENTS:]


def room(s: Session, e: Endpoint, wanted: int) -> tuple[int, str]:
    """How many of ``wanted`` more replicas of ``e`` its creator's limits hold
    (their policy, the project, the domain; the replicas asked for and not yet
    admitted count as held), and the binding limit's words when not all."""
    owner = s.scalar(select(User).where(User.name == e.created_by))
    project = s.get(Project, e.project_id)
    if owner is None or project is None:
        return wanted, ""
    held = checks.held_replicas(s, e)
    slots = slotlib.from_text(e.slots)
    left = checks.room_left(s, owner, owner.resource_policy, project, slots)
    why = ""
    for k in range(wanted, -1, -1):
        problems = fit.problems(slots, e.replicas + k, *left, held=held,
                                whose="the creator's limits")
        if not problems:
            return k, why
        why = why or "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return 0, why


def judge(e: Endpoint, measures: dict, now: dt.datetime, limits=None) -> bool:
    """Apply ``e``'s rules to its ``measures``; True when its replicas changed.
    ``limits(e, n)``: how many of ``n`` more replicas fit, and why not all (``room``)."""
    if e.state == "terminating" or not e.autoscaling:
        return False
    events = list(e.scaling_events or [])
    last_change = aware(e.desired_at) if e.desired_at else None
    changed = False
    for i, r in enumerate(e.autoscaling):
        rule = rule_of(i, r)
        value = measures.get(rule.metric)
        d = autoscale.decide(rule, value, e.replicas, last_change, now)
        if d.outcome == "idle":
            continue
        if limits is not None and d.replicas is not None and d.replicas > e.replicas:
            d = autoscale.within_limits(d, e.replicas, *limits(e, d.replicas - e.replicas))
        events = record(events, i, d, e.replicas, now)
        if d.replicas is not None:
            e.replicas, e.desired_at, changed = d.replicas, now, True
            break
    if events != (e.scaling_events or []):
        e.scaling_events = events
    return changed


def apply(s: Session, measures: dict[str, dict], now: dt.datetime) -> list[str]:
    """Judge every endpoint with rules; the ids of those whose replicas changed."""
    out = []
    for e in s.scalars(select(Endpoint).where(Endpoint.autoscaling.is_not(None))
                       .order_by(Endpoint.id)):
        if judge(e, measures.get(e.id, {}), now, lambda e, n: room(s, e, n)):
            out.append(e.id)
    return out


def may_wake(e: Endpoint) -> bool:
    """Whether a call may start ``e`` from zero: it is at zero and one of its
    rules allows zero replicas (scale to zero is on)."""
    return (e.replicas == 0 and e.state != "terminating"
            and any(int(r.get("min_replicas", 1)) == 0 for r in e.autoscaling or ()))


def wake(s: Session, endpoint_id: str, now: dt.datetime) -> dict:
    """A call came to ``endpoint_id`` through the gateway: at zero, one replica
    now (``autoscale.wake``), recorded; with replicas already, nothing. Hidden
    (404) when it is gone; Conflict when it is at zero by hand."""
    e = s.get(Endpoint, endpoint_id, with_for_update=True)
    if e is None or e.state == "terminating":
        raise Hidden("no such endpoint")
    if e.replicas > 0:
        return {"replicas": e.replicas, "woken": False}
    if not may_wake(e):
        raise Conflict(f"endpoint {e.name!r} is scaled to zero and no autoscaling rule of it "
                       "allows zero replicas: its owner or an admin must scale it up")
    d = autoscale.wake(0, 1)
    e.scaling_events = record(list(e.scaling_events or []), None, d, 0, now)
    e.replicas, e.desired_at = d.replicas, now
    return {"replicas": e.replicas, "woken": True}
