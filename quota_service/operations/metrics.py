"""What the Prometheus endpoint reports, read from the ledger at scrape time.

``read(s, now)`` takes everything in one transaction with a few aggregate
queries (no ORM objects) and returns ``Readings``: plain maps from label
values to exact amounts (Decimal or int). Floats appear only where
``operations.metrics_export`` hands them to Prometheus.

Labels are bounded by the cluster's shape, never by its users: resource
groups, domains, projects, slot names, reason codes. Per-user maps are read
only when asked (``per_user``): their size grows with the number of users.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import Integer, Numeric, Text, cast, extract, func, literal, select
from sqlalchemy.orm import Session

from ..core import slots as slotlib
from ..core.models import (
    Allocation, Device, Domain, Node, Project, ReclaimEvent, ResourceGroup, User,
)

ZERO = Decimal(0)
MICRO = Decimal(1_000_000)

#: the reason codes of ``scheduling.admission.Reason`` (any other: "other")
REASON_CODES = frozenset({
    "slot-limit", "sessions", "pending-sessions", "pending-slots", "per-session-gpu",
    "access", "session-type", "capacity", "queue", "inactive", "image",
})
#: the levels a reason names (any other: "other")
REASON_LEVELS = frozenset({"keypair", "user", "project", "domain", "resource-group", "image"})
#: GPU slots whose seconds are counted: whole devices, and shares of one
GPU_KINDS = (("gpu", "whole"), ("gpu.shares", "share"))

# (resource group, domain, project)
Place = tuple[str, str, str]


@dataclass(frozen=True)
class Readings:
    """The ledger at ``now``, as maps from label values to exact amounts."""

    now: dt.datetime
    #: (group, domain, project, slot) -> amount held by running sessions
    allocated: dict[tuple[str, str, str, str], Decimal] = field(default_factory=dict)
    #: (group, domain, project) -> running sessions
    running: dict[Place, int] = field(default_factory=dict)
    #: (group, domain, project, kind) -> GPU-seconds held, ended and running
    #: sessions (kind "whole": devices; "share": fractions of one)
    gpu_seconds: dict[tuple[str, str, str, str], Decimal] = field(default_factory=dict)
    #: group -> pending requests
    pending: dict[str, int] = field(default_factory=dict)
    #: (group, reason code, level) -> pending requests waiting for it
    pending_reasons: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: group -> seconds the oldest pending request has waited
    pending_oldest: dict[str, Decimal] = field(default_factory=dict)
    #: (domain, project, slot) -> use counted against the project's limits
    project_used: dict[tuple[str, str, str], Decimal] = field(default_factory=dict)
    project_limit: dict[tuple[str, str, str], Decimal] = field(default_factory=dict)
    #: (domain, project) -> max_concurrent_sessions
    project_sessions_limit: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (domain, slot) -> use counted against the domain's limits
    domain_used: dict[tuple[str, str], Decimal] = field(default_factory=dict)
    domain_limit: dict[tuple[str, str], Decimal] = field(default_factory=dict)
    #: (group, slot) -> capacity of its schedulable nodes
    capacity: dict[tuple[str, str], Decimal] = field(default_factory=dict)
    #: (group, "true" | "false") -> nodes, schedulable or drained
    nodes: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (group, kind, rule) -> reclaim events recorded
    reclaim_events: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: only with ``per_user``: (group, domain, user, slot) and (group, domain, user)
    user_allocated: dict[tuple[str, str, str, str], Decimal] | None = None
    user_running: dict[tuple[str, str, str], int] | None = None


def read(s: Session, now: dt.datetime, *, per_user: bool = False,
         ended: EndedTotals | None = None) -> Readings:
    """Everything the endpoint reports, read in ``s`` at ``now`` (``ended``:
    the GPU-seconds of ended sessions kept between scrapes)."""
    names = _Names.load(s, per_user)
    r = Readings(now=now, user_allocated={} if per_user else None,
                 user_running={} if per_user else None)
    use = _running(s, names, r, per_user)
    _ended_gpu_seconds(s, names, r, ended)
    _pending(s, names, r)
    _quotas(s, names, r, use)
    _capacity(s, names, r)
    _reclaims(s, names, r)
    return r


# --- names -------------------------------------------------------------------


@dataclass(frozen=True)
class _Names:
    groups: dict[int, str]
    domains: dict[int, str]
    projects: dict[int, str]
    users: dict[int, str]

    @classmethod
    def load(cls, s: Session, per_user: bool) -> _Names:
        users = dict(s.execute(select(User.id, User.name)).all()) if per_user else {}
        return cls(dict(s.execute(select(ResourceGroup.id, ResourceGroup.name)).all()),
                   dict(s.execute(select(Domain.id, Domain.name)).all()),
                   dict(s.execute(select(Project.id, Project.name)).all()), users)

    def place(self, rg: int, domain: int, project: int) -> Place:
        return self.groups.get(rg, str(rg)), self.domains.get(domain, str(domain)), \
            self.projects.get(project, str(project))


def _add(target: dict, key, amount) -> None:
    target[key] = target.get(key, 0) + amount


# --- running sessions ---------------------------------------------------------


#: ("project" | "domain", id) -> the slots its running sessions hold
Use = dict[tuple[str, int], dict[str, Decimal]]


def _running(s: Session, names: _Names, r: Readings, per_user: bool) -> Use:
    """Slots and sessions of running sessions, and their GPU-seconds so far;
    returns what each project and domain holds. Sessions of one size in one
    place are summed once (their held time as integer microseconds)."""
    cols = (Allocation.resource_group_id, Allocation.domain_id, Allocation.project_id,
            cast(Allocation.slots, Text), Allocation.admitted_at)
    if per_user:
        cols += (Allocation.user_id,)
    same: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])  # [sessions, microseconds]
    for rg, domain, project, text, admitted_at, *user in s.execute(
            select(*cols).where(Allocation.state == "allocated")):
        held = same[(rg, domain, project, text, user[0] if user else None)]
        held[0] += 1
        held[1] += _micros(admitted_at, r.now)
    use: Use = defaultdict(dict)
    parsed: dict[str, dict[str, Decimal]] = {}
    for (rg, domain, project, text, user), (n, micros) in same.items():
        place = names.place(rg, domain, project)
        if text not in parsed:
            parsed[text] = slotlib.from_text(json.loads(text))
        amounts = {k: v * n for k, v in parsed[text].items()}
        who = names.users.get(user, str(user))
        for slot, amount in amounts.items():
            _add(r.allocated, (*place, slot), amount)
            if per_user:
                _add(r.user_allocated, (place[0], place[1], who, slot), amount)
        _add(r.running, place, n)
        if per_user:
            _add(r.user_running, (place[0], place[1], who), n)
        for key in (("project", project), ("domain", domain)):
            use[key] = slotlib.add(use[key], amounts)
        for slot, kind in GPU_KINDS:
            if slot in parsed[text]:
                _add(r.gpu_seconds, (*place, kind), parsed[text][slot] * Decimal(micros) / MICRO)
    return use


def _micros(start: dt.datetime | None, now: dt.datetime) -> int:
    """Whole microseconds from ``start`` to ``now`` (0 if it is later)."""
    if start is None:
        return 0
    if start.tzinfo is None:  # SQLite keeps UTC without its zone
        start = start.replace(tzinfo=dt.timezone.utc)
    return max((now - start) // dt.timedelta(microseconds=1), 0)


def _seconds(start: dt.datetime | None, now: dt.datetime) -> Decimal:
    """Exact seconds from ``start`` to ``now`` (0 if it is later)."""
    return Decimal(_micros(start, now)) / MICRO


# --- ended sessions: GPU-seconds summed by the database ------------------------


#: (resource group id, domain id, project id, kind) -> GPU-seconds
IdSums = dict[tuple[int, int, int, str], Decimal]


def _ended_gpu_seconds(s: Session, names: _Names, r: Readings,
                       ended: EndedTotals | None) -> None:
    sums = ended.read(s, r.now) if ended is not None else ended_sums(s)
    for (rg, domain, project, kind), total in sums.items():
        if total:
            _add(r.gpu_seconds, (*names.place(rg, domain, project), kind), total)


def ended_sums(s: Session, after: dt.datetime | None = None,
               until: dt.datetime | None = None) -> IdSums:
    """GPU-seconds of the sessions that ran and were released in
    (``after``, ``until``] (None: unbounded), summed exactly by the database:
    PostgreSQL in numeric; SQLite in integers (hundredths of a device times
    whole seconds, plus times microseconds), so nothing is rounded."""
    end = func.coalesce(Allocation.ended_at, Allocation.released_at)
    where = [Allocation.admitted_at.is_not(None), Allocation.state != "allocated",
             Allocation.released_at.is_not(None)]
    if after is not None:
        where.append(Allocation.released_at > _utc(after))
    if until is not None:
        where.append(Allocation.released_at <= _utc(until))
    group = (Allocation.resource_group_id, Allocation.domain_id, Allocation.project_id)
    sqlite = s.get_bind().dialect.name == "sqlite"
    sums = []
    for slot, _kind in GPU_KINDS:
        amount = Allocation.slots[slot].as_string()
        if sqlite:
            centi = cast(func.round(cast(amount, Numeric) * 100), Integer)
            whole = cast(func.strftime("%s", end), Integer) - cast(
                func.strftime("%s", Allocation.admitted_at), Integer)
            micro = cast(func.substr(end, 21, 6), Integer) - cast(
                func.substr(Allocation.admitted_at, 21, 6), Integer)
            sums += [func.sum(centi * whole), func.sum(centi * micro)]
        else:
            seconds = extract("epoch", end - Allocation.admitted_at)
            sums += [func.sum(cast(amount, Numeric) * seconds), literal(0)]
    out: IdSums = {}
    for rg, domain, project, *parts in s.execute(
            select(*group, *sums).where(*where).group_by(*group)).all():
        for i, (_slot, kind) in enumerate(GPU_KINDS):
            first, second = parts[2 * i] or 0, parts[2 * i + 1] or 0
            if sqlite:  # hundredths x (seconds, microseconds)
                total = (Decimal(first) * MICRO + Decimal(second)) / (100 * MICRO)
            else:
                total = Decimal(first)
            if total:
                out[(rg, domain, project, kind)] = total
    return out


def _utc(t: dt.datetime) -> dt.datetime:
    return t.astimezone(dt.timezone.utc) if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


class EndedTotals:
    """The GPU-seconds of ended sessions, kept between scrapes: sessions
    released more than ``margin`` before a scrape are folded into running
    totals once, so a scrape sums only those released since (a history of
    any length costs one pass, at the first scrape). The margin covers a
    release whose transaction commits after a scrape that read past its
    instant. Thread-safe."""

    def __init__(self, margin: dt.timedelta = dt.timedelta(minutes=5)):
        self.margin = margin
        self.watermark: dt.datetime | None = None
        self.totals: IdSums = {}
        self._lock = threading.Lock()

    def read(self, s: Session, now: dt.datetime) -> IdSums:
        """Every ended session's GPU-seconds, as ``ended_sums(s)`` would say."""
        with self._lock:
            fold_until = now - self.margin
            # fold at most once a margin: between folds a scrape reads one window
            if self.watermark is None or fold_until - self.watermark >= self.margin:
                for key, v in ended_sums(s, self.watermark, fold_until).items():
                    self.totals[key] = self.totals.get(key, ZERO) + v
                self.watermark = fold_until
            out, after = dict(self.totals), self.watermark
        for key, v in ended_sums(s, after).items():
            out[key] = out.get(key, ZERO) + v
        return out


# --- the queue -----------------------------------------------------------------


def _pending(s: Session, names: _Names, r: Readings) -> None:
    """Pending requests per group, by reason code and level (a request
    waiting for several reasons counts under each), and the oldest's wait."""
    cols = (Allocation.resource_group_id, cast(Allocation.reasons, Text))
    rows = s.execute(select(*cols, func.count(), func.min(Allocation.created_at))
                     .where(Allocation.state == "pending").group_by(*cols)).all()
    for rg, text, n, oldest in rows:
        group = names.groups.get(rg, str(rg))
        _add(r.pending, group, n)
        waited = _seconds(oldest, r.now)
        r.pending_oldest[group] = max(r.pending_oldest.get(group, ZERO), waited)
        for code, level in reason_labels(json.loads(text) if text else []):
            _add(r.pending_reasons, (group, code, level), n)


def reason_labels(reasons: list) -> set[tuple[str, str]]:
    """The bounded (code, level) pairs of a request's reasons ("none" when
    the queue has not judged it yet; unknown codes and levels: "other")."""
    out = set()
    for reason in reasons:
        if not isinstance(reason, dict):
            continue
        code, level = reason.get("code"), reason.get("level")
        out.add((code if code in REASON_CODES else "other",
                 level if level in REASON_LEVELS else "other"))
    return out or {("none", "none")}


# --- quotas -------------------------------------------------------------------


def counted_use(use: dict[str, Decimal], limits: dict[str, Decimal]) -> dict[str, Decimal]:
    """Use as admission counts it against ``limits``: a device limit
    (``gpu``) counts whole devices and shares together, a share limit
    (``gpu.shares``) the shares alone. Every slot in use or limited."""
    reg = slotlib.registry()
    shares_of = {t.device: name for name, t in reg.items() if t.device}
    out = {}
    for slot in sorted(set(use) | set(limits)):
        out[slot] = use.get(slot, ZERO) + use.get(shares_of.get(slot, ""), ZERO)
    return out


def _quotas(s: Session, names: _Names, r: Readings, use: Use) -> None:
    """Project and domain use (``_running``'s) against their limits."""
    for pid, did, limits, max_sessions in s.execute(select(
            Project.id, Project.domain_id, Project.total_resource_slots,
            Project.max_concurrent_sessions)).all():
        key = (names.domains.get(did, str(did)), names.projects[pid])
        limit = slotlib.from_text(limits or {})
        for slot, v in counted_use(use.get(("project", pid), {}), limit).items():
            r.project_used[(*key, slot)] = v
        r.project_limit.update({(*key, slot): v for slot, v in limit.items()})
        if max_sessions is not None:
            r.project_sessions_limit[key] = max_sessions
    for did, limits in s.execute(select(Domain.id, Domain.total_resource_slots)).all():
        domain = names.domains[did]
        limit = slotlib.from_text(limits or {})
        for slot, v in counted_use(use.get(("domain", did), {}), limit).items():
            r.domain_used[(domain, slot)] = v
        r.domain_limit.update({(domain, slot): v for slot, v in limit.items()})


# --- capacity and reclaims ----------------------------------------------------


def _capacity(s: Session, names: _Names, r: Readings) -> None:
    """Each group's schedulable capacity (cpu, mem, gpu devices) and nodes."""
    devices = (select(Device.node_id, func.count().label("n")).group_by(Device.node_id)
               .subquery())
    rows = s.execute(select(Node.resource_group_id, Node.schedulable, Node.capacity,
                            func.coalesce(devices.c.n, 0))
                     .outerjoin(devices, devices.c.node_id == Node.id)).all()
    for rg, schedulable, capacity, gpus in rows:
        group = names.groups.get(rg, str(rg))
        _add(r.nodes, (group, "true" if schedulable else "false"), 1)
        if not schedulable:
            continue
        amounts = slotlib.from_text(capacity or {})
        if gpus:
            amounts["gpu"] = Decimal(gpus)
        for slot, v in amounts.items():
            _add(r.capacity, (group, slot), v)


def _reclaims(s: Session, names: _Names, r: Readings) -> None:
    """Reclaim warnings, keeps, reclaims and shadow reclaims, by rule."""
    cols = (ReclaimEvent.resource_group_id, ReclaimEvent.kind, ReclaimEvent.rule)
    for rg, kind, rule, n in s.execute(select(*cols, func.count()).group_by(*cols)).all():
        _add(r.reclaim_events, (names.groups.get(rg, str(rg)), kind, rule), n)

