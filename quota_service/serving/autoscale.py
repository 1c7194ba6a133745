"""Autoscaling of an endpoint's replicas: the decision, pure.

A rule, as Backend.AI's: when a metric of the endpoint compares to a
threshold (``requests_per_second`` or ``in_flight`` per routed replica,
from the gateway's reports), change the replicas by ``step`` (positive:
out, negative: in), within ``min_replicas`` and ``max_replicas``, and no
sooner than ``cooldown`` seconds after the endpoint's last change. Every
outcome is a ``Decision`` with its reason, recorded on the endpoint, the
refusals too: a step that would cross a bound is clamped to it and says
so; one that cannot move at all (already at the bound) says that; a step
within the cooldown waits and says until when; a step up that the creator's
limits cannot hold is clamped to what they leave, or refused (``quota``)
when they leave room for none (``within_limits``). ``min_replicas`` 0 allows
scaling to zero; a call to an endpoint at zero asks for one replica
(``wake``), whatever the cooldown.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

METRICS = ("requests_per_second", "in_flight")
COMPARATORS = {"gt": lambda v, t: v > t, "ge": lambda v, t: v >= t,
               "lt": lambda v, t: v < t, "le": lambda v, t: v <= t}
SYMBOL = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


class RuleError(ValueError):
    """A rule that cannot work (its message names the field)."""


@dataclass(frozen=True)
class Rule:
    metric: str
    comparator: str
    threshold: Decimal
    step: int
    cooldown_s: int
    min_replicas: int
    max_replicas: int

    def check(self) -> "Rule":
        if self.metric not in METRICS:
            raise RuleError(f"metric: one of {', '.join(METRICS)}, not {self.metric!r}")
        if self.comparator not in COMPARATORS:
            raise RuleError(f"comparator: one of {', '.join(COMPARATORS)}")
        if not isinstance(self.threshold, Decimal) or not self.threshold.is_finite() \
                or self.threshold < 0:
            raise RuleError("threshold: a number >= 0")
        if self.step == 0 or not -64 <= self.step <= 64:
            raise RuleError("step: a whole number of replicas, -64 to 64, not 0")
        if not 0 <= self.cooldown_s <= 86400:
            raise RuleError("cooldown: 0 to 86400 seconds")
        if not 0 <= self.min_replicas <= self.max_replicas <= 64:
            raise RuleError("min_replicas and max_replicas: 0 <= min <= max <= 64")
        return self


@dataclass(frozen=True)
class Decision:
    replicas: int | None   # the new desired count; None: no change
    outcome: str           # scaled | clamped | at-bound | cooldown | quota | idle | wake
    reason: str


def decide(rule: Rule, value: Decimal | None, replicas: int, last_change: dt.datetime | None,
           now: dt.datetime) -> Decision:
    """What ``rule`` does with the metric's ``value`` (None: not measured)
    for an endpoint of ``replicas`` desired, last changed at ``last_change``."""
    if value is None:
        return Decision(None, "idle", f"{rule.metric} not measured yet")
    sym = SYMBOL[rule.comparator]
    if not COMPARATORS[rule.comparator](value, rule.threshold):
        return Decision(None, "idle", f"{rule.metric} {value} is not {sym} {rule.threshold}")
    why = f"{rule.metric} {value} {sym} {rule.threshold}"
    target = replicas + rule.step
    bounded = min(rule.max_replicas, max(rule.min_replicas, target))
    if bounded == replicas:
        bound = "max_replicas" if rule.step > 0 else "min_replicas"
        return Decision(None, "at-bound", f"{why}: already at {bound} {replicas}")
    if last_change is not None and rule.cooldown_s:
        ready = last_change + dt.timedelta(seconds=rule.cooldown_s)
        if now < ready:
            return Decision(None, "cooldown", f"{why}: in cooldown until {ready.isoformat()}")
    if bounded != target:
        bound = "max_replicas" if target > bounded else "min_replicas"
        return Decision(bounded, "clamped", f"{why}: {replicas} -> {bounded} replicas "
                        f"(a step of {rule.step:+d} clamped to {bound} {bounded})")
    return Decision(target, "scaled", f"{why}: {replicas} -> {target} replicas "
                    f"(step {rule.step:+d})")


def within_limits(d: Decision, replicas: int, room: int, why: str) -> Decision:
    """``d`` held to what the creator's limits leave: ``room`` more replicas
    fit (``why`` says which limit binds). A step up past it is clamped to it,
    or refused (``quota``) when none fits; anything else is ``d``."""
    if d.replicas is None or d.replicas <= replicas or replicas + room >= d.replicas:
        return d
    if room <= 0:
        return Decision(None, "quota", f"{d.reason}: refused, the creator's limits leave room "
                        f"for no more replica ({why})")
    return Decision(replicas + room, "clamped", f"{d.reason}: clamped to {replicas + room} by "
                    f"the creator's limits ({why})")


def wake(replicas: int, rule_min: int) -> Decision:
    """A call came to an endpoint scaled to zero: one replica, now (a cold
    start), whatever the cooldown."""
    if replicas > 0:
        return Decision(None, "idle", "replicas are running")
    return Decision(max(1, rule_min), "wake", "a call came while scaled to zero: cold start")


def rate(calls_before: int | None, calls_now: int, seconds: Decimal) -> Decimal | None:
    """Requests per second between two readings of a call counter; None
    without a previous reading or time between them."""
    if calls_before is None or seconds <= 0 or calls_now < calls_before:
        return None
    return (Decimal(calls_now - calls_before) / seconds).quantize(Decimal("0.001"))
